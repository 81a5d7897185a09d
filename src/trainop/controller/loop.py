"""The reconcile loop: N workers take keys from the work queue and call a Reconciler.

Level-triggered (controller-runtime's contract): a key names an object, never an event; the
reconciler reads current state itself. An exception re-queues the key with per-key backoff; a
result's ``requeue_after`` arms a timer (deadlines, TTL). Backend-agnostic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from trainop.controller.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

K = TypeVar("K")
K_contra = TypeVar("K_contra", contravariant=True)


@dataclass(frozen=True, slots=True)
class Result:
    requeue_after: float | None = None  # seconds; None = wait for the next event


class Reconciler(Protocol[K_contra]):
    async def reconcile(self, key: K_contra) -> Result: ...


class ReconcileMetrics(Protocol):
    """controller_runtime_reconcile_* in operator/metrics.py."""

    def observe(self, key: object, result: str, seconds: float) -> None: ...


class _NoReconcileMetrics:
    def observe(self, key: object, result: str, seconds: float) -> None:
        pass


class Controller(Generic[K]):
    def __init__(
        self,
        queue: WorkQueue[K],
        reconciler: Reconciler[K],
        *,
        workers: int = 1,
        metrics: ReconcileMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.queue = queue
        self.reconciler = reconciler
        self.workers = workers
        self._metrics: ReconcileMetrics = metrics or _NoReconcileMetrics()
        self._clock = clock

    async def run(self) -> None:
        """Run the workers until cancelled or the queue is shut down."""
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self._worker(), name=f"reconcile-worker-{i}")

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: K) -> None:
        t0 = self._clock()
        try:
            result = await self.reconciler.reconcile(key)
        except Exception as exc:  # any failure: back off and retry, the loop must survive
            delay = self.queue.add_rate_limited(key)
            self._metrics.observe(key, "error", self._clock() - t0)
            log.warning(
                "reconcile %s failed (retry in %.3fs): %s",
                key,
                delay,
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            return
        self.queue.forget(key)
        if result.requeue_after is not None:
            # A pass the job asked for (held-back status, expectations, a deadline): urgent.
            self.queue.add_after(key, result.requeue_after, urgent=True)
            self._metrics.observe(key, "requeue_after", self._clock() - t0)
        else:
            self._metrics.observe(key, "success", self._clock() - t0)
