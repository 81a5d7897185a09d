"""The one wait loop (backends/waiting.py) against a fake clock: when it reads, how long it sleeps,
when it gives up, and the job rule (a wanted condition, or finished) that every job wait ends on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from trainop.api.common import TrainingJob
from trainop.backends.base import WaitTimeoutError
from trainop.backends.waiting import Clock, PollTimeout, build_job_done, poll_until, wait_for_job
from trainop.testing.builders import pytorch_job


@dataclass
class FakeClock:
    """Time moves only when the loop sleeps; every sleep is recorded."""

    t: float = 100.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    @property
    def clock(self) -> Clock:
        return Clock(now=self.now, sleep=self.sleep)


def values(*items: int) -> Callable[[], int]:
    """A read that returns ``items`` in turn, then the last one forever."""
    it = iter(items)
    last = [items[0]]

    def read() -> int:
        last[0] = next(it, last[0])
        return last[0]

    return read


@pytest.mark.parametrize(
    ("reads", "timeout", "interval", "want", "want_sleeps"),
    [
        pytest.param((3,), 0.0, 1.0, 3, [], id="already done: no sleep, even with timeout 0"),
        pytest.param((0, 0, 3), 10.0, 2.0, 3, [2.0, 2.0], id="done on the third read: two intervals"),
        pytest.param((0, 0, 0, 0, 3), None, 0.5, 3, [0.5] * 4, id="no timeout: waits as long as it takes"),
    ],
)
def test_poll_until_returns_the_first_accepted_value(
    reads: tuple[int, ...], timeout: float | None, interval: float, want: int, want_sleeps: list[float]
) -> None:
    fake = FakeClock()
    got = poll_until(values(*reads), lambda v: v >= 3, timeout=timeout, interval=interval, clock=fake.clock)
    assert (got, fake.sleeps) == (want, want_sleeps)


def test_poll_until_times_out_at_the_deadline_with_the_last_value() -> None:
    fake = FakeClock()
    seen: list[int] = []
    with pytest.raises(PollTimeout) as info:
        poll_until(
            values(0, 1, 2),
            lambda v: v >= 3,
            timeout=5.0,
            interval=2.0,
            clock=fake.clock,
            on_poll=seen.append,
        )
    # 0 → sleep 2, 1 → sleep 2, 2 → sleep 1 (cut to the deadline), 2 → past it: give up.
    assert (fake.sleeps, seen, info.value.last, info.value.timeout) == ([2.0, 2.0, 1.0], [0, 1, 2, 2], 2, 5.0)
    assert fake.t == 105.0  # never past the deadline


def test_poll_until_lets_read_errors_through() -> None:
    def read() -> int:
        raise LookupError("gone")

    with pytest.raises(LookupError, match="gone"):
        poll_until(read, lambda v: True, timeout=5.0, interval=1.0, clock=FakeClock().clock)


def _job(*conditions: tuple[str, str]) -> TrainingJob:
    b = pytorch_job("w").master(1)
    for ctype, status in conditions:
        b = b.condition(ctype, status)
    return b.build()


@pytest.mark.parametrize(
    ("job", "wanted", "want"),
    [
        pytest.param(_job(), ["Running"], False, id="no condition yet: wait"),
        pytest.param(_job(("Created", "True")), ["Running"], False, id="another condition: wait"),
        pytest.param(_job(("Created", "True"), ("Running", "True")), ["Running"], True, id="wanted and True"),
        pytest.param(_job(("Running", "False")), ["Running"], False, id="wanted but False: wait"),
        pytest.param(
            _job(("Running", "False"), ("Failed", "True")), ["Succeeded"], True, id="finished otherwise: stop"
        ),
        pytest.param(
            _job(("Running", "False"), ("Succeeded", "True")), ["Running"], True, id="finished past it: stop"
        ),
        pytest.param(
            _job(("Suspended", "True")), ["Succeeded", "Failed"], False, id="suspended is not finished"
        ),
    ],
)
def test_job_done_rule(job: TrainingJob, wanted: list[str], want: bool) -> None:
    assert build_job_done(wanted)(job) is want


def test_a_job_wait_reads_until_the_condition() -> None:
    jobs = iter([_job(), _job(("Created", "True")), _job(("Created", "True"), ("Running", "True"))])
    fake = FakeClock()
    got = poll_until(
        lambda: next(jobs), build_job_done(["Running"]), timeout=60, interval=0.2, clock=fake.clock
    )
    assert (got.status is not None and [c.type for c in got.status.conditions or []], fake.sleeps) == (
        ["Created", "Running"],
        [0.2, 0.2],
    )


def test_a_backend_wait_that_times_out_names_the_state_it_last_saw() -> None:
    fake = FakeClock()
    with pytest.raises(WaitTimeoutError) as err:
        wait_for_job(lambda: _job(("Created", "True")), "j", ["Running"], 1.0, interval=0.4, clock=fake.clock)
    assert (str(err.value), fake.sleeps) == (
        'timed out after 1s waiting for "j" to be Running (it is Created)',
        [0.4, 0.4, pytest.approx(0.2)],
    )
