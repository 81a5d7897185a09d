"""Status writes once per meaningful change (issue 16): a change of replicaStatuses' counts alone within
a second of the job's last status write waits for the rest of that second; conditions and times are
written at once. Pure, on a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.backends.kubernetes.apply import StatusCoalescer, counts_only_change


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
    assert c.wait("uid", {}, status(1)) == 0.0  # the first status
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
