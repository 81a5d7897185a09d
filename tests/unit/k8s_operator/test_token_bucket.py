"""The client-side QPS/burst limiter: burst first, then qps per second, higher priority first."""

from __future__ import annotations

import asyncio

import pytest

from trainop.backends.kubernetes.client import (
    EVENT_SHARE,
    PRIORITY_EVENT,
    PRIORITY_STATUS,
    PRIORITY_WRITE,
    Activity,
    Limiter,
    TokenBucket,
)


class FakeClock:
    """A monotonic clock that stands still, so no token is refilled while the test looks (or moves on
    ``step`` at each reading)."""

    def __init__(self) -> None:
        self.t = 0.0
        self.step = 0.0  # how far each reading moves it on

    def __call__(self) -> float:
        self.t += self.step
        return self.t


@pytest.mark.parametrize(
    ("burst", "requests", "want_immediate"),
    [
        pytest.param(5, 3, 3, id="under the burst: no waiting"),
        pytest.param(5, 8, 5, id="over the burst: the rest wait"),
    ],
)
def test_burst(burst: int, requests: int, want_immediate: int) -> None:
    async def go() -> int:
        clock = FakeClock()
        bucket = TokenBucket(qps=1.0, burst=burst, clock=clock)
        tasks = [asyncio.create_task(bucket.acquire()) for _ in range(requests)]
        for _ in range(3):  # let every task run until it has its token or waits (no wall clock)
            await asyncio.sleep(0)
        done = sum(t.done() for t in tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return done

    assert asyncio.run(go()) == want_immediate


def test_waiters_served_by_priority_then_arrival() -> None:
    async def go() -> list[str]:
        bucket = TokenBucket(qps=100.0, burst=1)
        await bucket.acquire()  # empty the bucket: everyone below waits for refills
        order: list[str] = []

        async def want(name: str, prio: int) -> None:
            await bucket.acquire(prio)
            order.append(name)

        await asyncio.wait_for(
            asyncio.gather(
                want("event-1", PRIORITY_EVENT),
                want("pod-1", PRIORITY_WRITE),
                want("event-2", PRIORITY_EVENT),
                want("pod-2", PRIORITY_WRITE),
            ),
            5,
        )
        return order

    assert asyncio.run(go()) == ["pod-1", "pod-2", "event-1", "event-2"]


def test_zero_qps_means_unlimited() -> None:
    """With the clock standing still no token is ever refilled: only an unlimited bucket lets every
    request past the burst of one through."""

    async def go() -> int:
        bucket = TokenBucket(qps=0, burst=1, clock=FakeClock())
        tasks = [asyncio.create_task(bucket.acquire()) for _ in range(1000)]
        await asyncio.sleep(0)
        done = sum(t.done() for t in tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return done

    assert asyncio.run(go()) == 1000


def test_status_writes_go_before_a_creation_burst() -> None:
    """A job's status write is one request after its creates: it never waits behind other jobs'."""

    async def go() -> list[str]:
        bucket = TokenBucket(qps=200.0, burst=1)
        await bucket.acquire()
        order: list[str] = []

        async def want(name: str, prio: int) -> None:
            await bucket.acquire(prio)
            order.append(name)

        await asyncio.wait_for(
            asyncio.gather(
                *(want(f"pod-{i}", PRIORITY_WRITE) for i in range(3)), want("status", PRIORITY_STATUS)
            ),
            5,
        )
        return order

    assert asyncio.run(go()) == ["status", "pod-0", "pod-1", "pod-2"]


def test_events_get_a_fair_share_under_a_sustained_burst() -> None:
    """Every EVENT_SHARE-th token goes to a waiting event, so events are late, never starved. The clock
    stands still until every request waits, then each reading of it is one token later (on the real
    clock, a loaded machine let a token refill before the first request queued: it went first)."""

    async def go() -> list[str]:
        clock = FakeClock()
        bucket = TokenBucket(qps=1000.0, burst=1, clock=clock)
        await bucket.acquire()
        order: list[str] = []

        async def want(name: str, prio: int) -> None:
            await bucket.acquire(prio)
            order.append(name)

        n = 2 * EVENT_SHARE
        wanted = [asyncio.create_task(want("event-0", PRIORITY_EVENT))]
        wanted += [asyncio.create_task(want(f"pod-{i}", PRIORITY_WRITE)) for i in range(n)]
        for _ in range(3):
            await asyncio.sleep(0)
        clock.step = 1 / bucket.qps
        await asyncio.wait_for(asyncio.gather(*wanted), 5)
        return order

    order = asyncio.run(go())
    assert order.index("event-0") == EVENT_SHARE - 1


def test_events_have_a_bucket_of_their_own_of_the_same_size() -> None:
    """As client-go's recorder: events spend their own tokens, never those pods and Services wait for."""

    async def go() -> tuple[int, int]:
        limiter = Limiter(qps=1.0, burst=3, clock=FakeClock())
        events = [asyncio.create_task(limiter.acquire(PRIORITY_EVENT)) for _ in range(5)]
        writes = [asyncio.create_task(limiter.acquire(PRIORITY_WRITE)) for _ in range(5)]
        for _ in range(3):
            await asyncio.sleep(0)
        done = sum(t.done() for t in events), sum(t.done() for t in writes)
        for t in events + writes:
            t.cancel()
        await asyncio.gather(*events, *writes, return_exceptions=True)
        return done

    assert asyncio.run(go()) == (3, 3)  # each its own burst of 3, with the clock standing still


def test_while_other_requests_go_events_get_a_tenth_of_their_rate() -> None:
    """Best effort: during a burst events neither take the API server from pods and status nor pile
    up to flood it right after; once the other requests pause, they have their whole rate."""

    async def go(busy: bool) -> int:
        clock = FakeClock()
        activity = Activity(clock=clock)
        if busy:
            activity.inflight = 1  # a create waiting for its token
        else:
            clock.t = 100.0  # the last request ended long ago
        limiter = Limiter(qps=10.0, burst=30, clock=clock, activity=activity)
        events = [asyncio.create_task(limiter.acquire(PRIORITY_EVENT)) for _ in range(40)]
        for _ in range(3):
            await asyncio.sleep(0)
        done = sum(t.done() for t in events)
        for t in events:
            t.cancel()
        await asyncio.gather(*events, return_exceptions=True)
        return done

    assert asyncio.run(go(busy=True)) == 3  # a tenth of the burst: 30 // EVENT_SHARE
    assert asyncio.run(go(busy=False)) == 30


def test_waits_are_reported_for_requests_not_events() -> None:
    """Limiter.on_wait (rest_client_rate_limiter_duration_seconds) hears how long each request other
    than an Event waited for its token: nothing for the burst, the wait of the one over it."""

    async def go() -> list[float]:
        waits: list[float] = []
        limiter = Limiter(qps=1000.0, burst=2)
        limiter.on_wait = waits.append
        for _ in range(3):
            await limiter.acquire(PRIORITY_WRITE)
        await limiter.acquire(PRIORITY_EVENT)
        return waits

    waits = asyncio.run(go())
    assert len(waits) == 3
    assert waits[2] > 0.0 and waits[2] > waits[0]
