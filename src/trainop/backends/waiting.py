"""The one "wait for a condition" loop: read, test, sleep, until the test passes or time runs out.

Every wait in trainop (a backend's ``wait``, the CLI's, the SDK's ``wait_for_job_conditions``) goes
through ``poll_until``; the clock and the sleep are injected, so the loop is unit-tested with a fake
clock and never with real time. It knows nothing about jobs except ``build_job_done``'s rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Generic, TypeVar

from trainop.api.common import TrainingJob
from trainop.backends.base import build_wait_timeout, is_finished

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Clock:
    """Where a wait reads the time and how it sleeps: the system's by default, a fake one in tests."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


SYSTEM_CLOCK = Clock()


class PollTimeout(Exception, Generic[T]):
    """The test never passed within ``timeout`` seconds; ``last`` is the value read last."""

    def __init__(self, last: T, timeout: float) -> None:
        super().__init__(f"not done after {timeout:g}s")
        self.last, self.timeout = last, timeout


def poll_until(
    read: Callable[[], T],
    done: Callable[[T], bool],
    *,
    timeout: float | None,
    interval: float,
    clock: Clock = SYSTEM_CLOCK,
    on_poll: Callable[[T], None] | None = None,
) -> T:
    """Call ``read`` until ``done`` accepts what it returned, and return that value. Each value is
    read before the deadline is checked, so a wait whose condition already holds succeeds even with
    ``timeout=0``; the last sleep is cut to the deadline, so the wait never overruns it by a whole
    interval. ``on_poll`` sees every value read (the SDK's ``callback``). Errors of ``read`` pass
    through (a job deleted while waited for ends the wait at once). Raises PollTimeout."""
    deadline = None if timeout is None else clock.now() + timeout
    while True:
        value = read()
        if on_poll is not None:
            on_poll(value)
        if done(value):
            return value
        if deadline is None:
            clock.sleep(interval)
            continue
        remaining = deadline - clock.now()
        if remaining <= 0:
            raise PollTimeout(value, timeout or 0.0)
        clock.sleep(min(interval, remaining))


def build_job_done(conditions: Collection[str]) -> Callable[[TrainingJob], bool]:
    """The rule a job wait ends on: one of ``conditions`` is True, or the job has finished (Succeeded
    or Failed are terminal, §4.1: a finished job will never reach another condition, so waiting
    longer could only time out). The caller compares the job it gets back with what it wanted."""
    wanted = frozenset(conditions)

    def done(job: TrainingJob) -> bool:
        conds = (job.status.conditions if job.status else None) or []
        return any(c.type in wanted and c.status == "True" for c in conds) or is_finished(job)

    return done


def wait_for_job(
    read: Callable[[], TrainingJob],
    name: str,
    conditions: Collection[str],
    timeout: float | None,
    *,
    interval: float,
    clock: Clock = SYSTEM_CLOCK,
) -> TrainingJob:
    """A backend's ``wait``: ``read`` the job until one of ``conditions`` is True or it finished
    (``build_job_done``). Raises WaitTimeoutError naming the state it was last seen in."""
    try:
        return poll_until(read, build_job_done(conditions), timeout=timeout, interval=interval, clock=clock)
    except PollTimeout as exc:
        raise build_wait_timeout(name, list(conditions), timeout or 0.0, exc.last) from None
