"""The event correlator's pure logic (client-go's EventCorrelator semantics), with a fake clock.

What users see of client-go's recorder: identical events become one Event whose ``count`` grows;
after 10 similar events (same object and reason, other messages) the rest are combined into one
"(combined from similar events)" series; each object may send 25 events at once, then one per 5
minutes. Unlike client-go, nothing is ever dropped: a first occurrence is always sent, and a repeat
that the per-object limit holds back is sent later, its count carried.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from trainop.backends.kubernetes.events import (
    COMBINED_PREFIX,
    EventCorrelator,
    EventSpec,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def spec(
    name: str = "job", reason: str = "SuccessfulCreatePod", message: str = "Created pod: p"
) -> EventSpec:
    involved: dict[str, Any] = {"kind": "PyTorchJob", "namespace": "ns", "name": name, "uid": f"uid-{name}"}
    return EventSpec(involved, "Normal", reason, message, "pytorchjob-controller", T0)


def sent_all(c: EventCorrelator, series: list[Any]) -> None:
    """The sender wrote each series as it is now."""
    for s in series:
        c.mark_sent(s, s.count, s.name or f"ev-{id(s)}")


def test_a_first_occurrence_is_sent_even_past_the_per_object_burst() -> None:
    c = EventCorrelator(clock=Clock())
    out = [c.observe(spec(reason=f"R{i}", message="m")) for i in range(40)]
    assert all(s is not None and s.count == 1 for s in out)
    assert len({id(s) for s in out}) == 40


def test_identical_events_become_one_series_with_a_count() -> None:
    c = EventCorrelator(clock=Clock())
    first = c.observe(spec())
    assert first is not None
    # Repeats before the create went out ride on it: nothing more to queue.
    assert c.observe(spec()) is None
    assert first.count == 2
    c.mark_sent(first, first.count, "job.1")
    again = c.observe(spec())
    assert again is first and first.count == 3 and first.name == "job.1" and first.sent == 2


def test_after_ten_similar_events_the_rest_are_combined() -> None:
    c = EventCorrelator(clock=Clock())
    got = [c.observe(spec(message=f"Created pod: p{i}")) for i in range(10)]
    assert [s.message for s in got[:9] if s is not None] == [f"Created pod: p{i}" for i in range(9)]
    combined = got[9]
    assert combined is not None and combined.message == f"{COMBINED_PREFIX}Created pod: p9"
    got += [c.observe(spec(message=f"Created pod: p{i}")) for i in range(10, 13)]
    assert got[10:] == [None, None, None]  # queued already: they only add to its count
    assert combined.count == 4 and combined.message == f"{COMBINED_PREFIX}Created pod: p12"
    assert sum(s.count for s in got[:10] if s is not None) == 13


def test_similar_events_are_counted_afresh_after_ten_minutes() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    for i in range(9):
        c.observe(spec(message=f"m{i}"))
    clock.now += 601
    s = c.observe(spec(message="m-late"))
    assert s is not None and s.message == "m-late"


def test_repeats_past_the_burst_wait_for_the_objects_next_token_and_carry_their_count() -> None:
    clock = Clock()
    c = EventCorrelator(clock=clock)
    s = c.observe(spec())
    assert s is not None
    for _ in range(24):  # the burst: 25 sends for this object, the create included
        c.mark_sent(s, s.count, "job.1")
        assert c.observe(spec()) is s
    c.mark_sent(s, s.count, "job.1")
    assert c.observe(spec()) is None  # over the per-object limit: held back, not dropped
    assert c.observe(spec()) is None
    assert c.ready() == []
    assert c.next_ready() == pytest.approx(clock.now + 300, abs=1)
    clock.now += 301
    assert c.ready() == [s]
    assert s.count == 27 and s.sent == 25  # the patch will carry both held-back repeats


def test_objects_have_separate_limits() -> None:
    c = EventCorrelator(clock=Clock())
    s = c.observe(spec("a"))
    assert s is not None
    for _ in range(30):
        c.mark_sent(s, s.count, "a.1")
        c.observe(spec("a"))
    other = c.observe(spec("b"))
    assert other is not None and other is not s


def test_a_series_is_requeued_when_repeats_arrive_while_it_is_being_sent() -> None:
    c = EventCorrelator(clock=Clock())
    s = c.observe(spec())
    assert s is not None
    c.begin_send(s)
    assert c.observe(spec()) is None  # in flight: remembered as dirty
    assert c.mark_sent(s, 1, "job.1") is s  # sent count 1 < 2: send again
    assert c.mark_sent(s, 2, "job.1") is None


def test_the_cache_evicts_the_oldest_sent_series_and_never_a_pending_one() -> None:
    c = EventCorrelator(clock=Clock(), cache_size=3)
    pending = [c.observe(spec(name=f"p{i}", message="m")) for i in range(2)]  # queued, never sent
    done = [c.observe(spec(name=f"d{i}", message="m")) for i in range(3)]
    sent_all(c, done)
    assert all(s is not None for s in pending + done)
    # Full with pending series in front: each new series evicts the oldest sent one, not them.
    c.observe(spec(name="new1", message="m"))
    c.observe(spec(name="new2", message="m"))
    names = sorted(s.involved["name"] for s in c._series.values())
    assert names == ["new1", "new2", "p0", "p1"]  # over the size: new1/new2 are pending too
    # A repeat of an evicted series starts a new one (a first occurrence again, sent).
    again = c.observe(spec(name="d0", message="m"))
    assert again is not None and again.count == 1
