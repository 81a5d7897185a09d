"""Status writes once per meaningful change (issue 16): a change of replicaStatuses' counts alone within
a second of the job's last status write waits for the rest of that second, and a job's first status
waits up to a second while its replicas are still starting; other conditions and times are written at
once. Pure, on a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.backends.kubernetes.apply import (
    StatusCoalescer,
    counts_only_change,
    still_starting,
    wanted_replicas,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


RUNNING = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]


def status(active: int, conditions: list[dict[str, Any]] = RUNNING, **more: Any) -> dict[str, Any]:
    return {
        "conditions": conditions,
        "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": active}},
        "startTime": "2026-01-01T00:00:00Z",
        **more,
    }


def test_what_counts_as_a_counts_only_change() -> None:
    assert counts_only_change(status(1), status(2))
    assert not counts_only_change(status(1, RUNNING[:1]), status(2))  # a new condition
    assert not counts_only_change(status(1), status(1, completionTime="2026-01-01T00:01:00Z"))
    assert not counts_only_change({}, status(1))  # the first status


def test_a_counts_only_change_waits_one_window_from_when_it_was_first_seen() -> None:
    clock = Clock()
    c = StatusCoalescer(window=1.0, clock=clock)
    assert c.wait("uid", status(1), status(2)) == pytest.approx(1.0)
    clock.now += 0.4
    assert c.wait("uid", status(1), status(3)) == pytest.approx(0.6)  # a later count rides on it
    clock.now += 0.6
    assert c.wait("uid", status(1), status(3)) == 0.0
    c.written("uid")
    clock.now += 0.3
    # and one window after the job's last write
    assert c.wait("uid", status(3), status(2)) == pytest.approx(1.0)
    clock.now += 5.0
    assert c.wait("uid", status(3), status(1)) == pytest.approx(0.0)


def test_conditions_are_written_at_once_with_the_held_counts() -> None:
    clock = Clock()
    c = StatusCoalescer(window=1.0, clock=clock)
    assert c.wait("uid", status(1), status(2)) > 0
    clock.now += 0.1
    done = [*RUNNING, {"type": "Succeeded", "status": "True"}]
    assert c.wait("uid", status(1), status(0, done)) == 0.0
    assert c.wait("uid", {}, status(1), 2) == 0.0  # a first status: every replica already runs
    c.written("uid")
    clock.now += 0.1
    assert c.wait("uid", status(1), status(1, completionTime="2026-01-01T00:01:00Z")) == 0.0


def test_jobs_have_separate_windows_and_old_entries_are_forgotten() -> None:
    clock = Clock()
    c = StatusCoalescer(window=1.0, clock=clock)
    c.written("a")
    clock.now += 0.5
    c.written("b")
    assert c.wait("a", status(1), status(2)) == pytest.approx(1.0)  # held from now
    clock.now += 0.6
    assert c.wait("b", status(1), status(2)) == pytest.approx(1.0)
    assert list(c._written) == ["b"]  # a's write is older than a window: forgotten
    clock.now += 20
    c.wait("c", {}, status(1))
    assert not c._written and not c._held  # the held changes of jobs that went away, too


def test_a_starting_jobs_status_waits_while_its_replicas_start() -> None:
    """Created alone, or Running with some pods still starting: held up to a window from when first
    computed; once every replica is active, or after the window, it is written."""
    created = status(0, RUNNING[:1])
    assert still_starting({}, created, 4)
    assert still_starting({"replicaStatuses": {}}, created, None)
    assert still_starting({}, status(1), 4)  # Running, 2 of 4 active
    assert not still_starting({}, status(3), 4)  # every replica active
    assert not still_starting({}, status(1), None)  # Running, and how many are wanted is unknown
    assert still_starting(created, status(1), 4)  # Running added to a written Created, 2 of 4 active
    assert not still_starting(created, status(3), 4)
    assert not still_starting(status(1), status(2), 4)  # Running was written: a counts-only change
    assert not still_starting({}, status(0, [*RUNNING[:1], {"type": "Suspended", "status": "True"}]), 4)
    assert not still_starting({}, status(0, [*RUNNING, {"type": "Succeeded", "status": "True"}]), 4)
    assert not still_starting({}, status(0, []), 4)
    clock = Clock()
    c = StatusCoalescer(window=1.0, clock=clock)
    assert c.wait("uid", {}, created, 4) == pytest.approx(1.0)
    clock.now += 0.4
    assert c.wait("uid", {}, status(1), 4) == pytest.approx(0.6)  # the master runs: still held
    assert c.wait("uid", {}, status(3), 4) == 0.0  # all four run: Created, Running, counts in one write
    clock.now += 0.6
    assert c.wait("uid", {}, status(2), 4) == 0.0  # a window passed: written as it is


def test_the_replicas_a_job_wants_come_from_its_spec() -> None:
    job = {"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}}}
    assert wanted_replicas(job) == 4
    assert wanted_replicas({"spec": {"tfReplicaSpecs": {"PS": {}, "Worker": {"replicas": 2}}}}) == 3
    assert wanted_replicas({"spec": {}}) is None
