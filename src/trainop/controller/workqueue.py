"""A keyed work queue with client-go's semantics, for asyncio.

A key waiting in the queue is stored once however often it is added (de-duplication); a key being
processed is never handed to a second worker (one reconcile at a time per key) and is re-queued on
``done`` if it was added meanwhile. Failures back off per key (5 ms doubling to 1000 s, like
client-go's default controller rate limiter) and timers (``add_after``) keep only the earliest
deadline per key. No I/O; the clock is injectable.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

K = TypeVar("K")


class QueueMetrics(Protocol):
    """What the queue reports (workqueue_* metrics in operator/metrics.py)."""

    def depth(self, n: int) -> None: ...
    def added(self) -> None: ...
    def queued_for(self, seconds: float) -> None: ...
    def worked_for(self, seconds: float) -> None: ...
    def retried(self) -> None: ...


class _NoMetrics:
    def depth(self, n: int) -> None:
        pass

    def added(self) -> None:
        pass

    def queued_for(self, seconds: float) -> None:
        pass

    def worked_for(self, seconds: float) -> None:
        pass

    def retried(self) -> None:
        pass


@dataclass
class ExponentialBackoff(Generic[K]):
    """Per-key failure delay ``base * 2**failures`` capped at ``cap``.

    client-go's ItemExponentialFailureRateLimiter.
    """

    base: float = 0.005
    cap: float = 1000.0
    failures: dict[K, int] = field(default_factory=dict)

    def when(self, key: K) -> float:
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        # 2**n overflows float long after the cap is reached; stop the exponent early.
        return min(self.cap, self.base * float(2 ** min(n, 64)))

    def forget(self, key: K) -> None:
        self.failures.pop(key, None)

    def retries(self, key: K) -> int:
        return self.failures.get(key, 0)


class ShutDown(Exception):
    """``get`` on a queue that was shut down."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        backoff: ExponentialBackoff[K] | None = None,
        metrics: QueueMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutdown = False
        self.backoff: ExponentialBackoff[K] = backoff or ExponentialBackoff()
        self._metrics: QueueMetrics = metrics or _NoMetrics()
        self._clock = clock

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    def add(self, key: K) -> None:
        """Queue ``key`` now (a no-op if it is already waiting)."""
        if self._shutdown or key in self._dirty:
            return
        self._metrics.added()
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock())
        if key in self._processing:
            return  # re-queued by done(); never two workers on one key
        self._queue.append(key)
        self._metrics.depth(len(self._queue))
        self._wake()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds; of several pending timers only the earliest is kept."""
        if self._shutdown:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = self._clock() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._timers[key] = (due, loop.call_later(delay, self._fire, key))

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its per-key backoff; returns the delay chosen."""
        self._metrics.retried()
        delay = self.backoff.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (call after a successful reconcile)."""
        self.backoff.forget(key)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def _wake(self) -> None:
        # add() is synchronous (informer handlers call it), so wake one idle worker directly.
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    async def get(self) -> K:
        """The next key to process; the caller must call ``done(key)`` afterwards."""
        while not self._queue:
            if self._shutdown:
                raise ShutDown
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if not fut.done():
                    fut.cancel()
        key = self._queue.popleft()
        self._metrics.depth(len(self._queue))
        now = self._clock()
        added = self._added_at.pop(key, now)
        self._metrics.queued_for(now - added)
        self._started_at[key] = now
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None:
            self._metrics.worked_for(self._clock() - started)
        if key in self._dirty:
            self._queue.append(key)
            self._metrics.depth(len(self._queue))
            self._wake()

    async def shutdown(self) -> None:
        """Stop handing out keys; waiting ``get`` calls raise ShutDown."""
        self._shutdown = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)

    def pending_timer(self, key: K) -> float | None:
        """Seconds until ``key``'s timer fires, or None (for tests and debugging)."""
        pending = self._timers.get(key)
        return None if pending is None else max(0.0, pending[0] - self._clock())
