"""Reconcile one job: observe it through a backend, ask the pure core for a Plan, hand the Plan back.

The backend (Kubernetes here; anything that can observe and apply) owns all I/O; this owns the order
of the steps and the clock. Backend-agnostic.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from trainop.controller.loop import Result
from trainop.core.observed import Observed
from trainop.core.plan import Plan
from trainop.core.topology import Topology
from trainop.frameworks.base import FrameworkPlugin

log = logging.getLogger(__name__)


class ReconcileTarget(Protocol):
    """What a reconcile observes and applies through (the operator's Kubernetes adapter): not a job
    client; front doors use ``backends.base.JobClient``."""

    def pending(self, key: tuple[str, str, str]) -> float | None:
        """Seconds to wait before this job may be reconciled (its last writes are not visible yet)."""
        ...

    def observe(self, key: tuple[str, str, str]) -> Observed | None:
        """The job and what it owns, or None when there is nothing to reconcile (gone, being deleted)."""
        ...

    async def apply(self, key: tuple[str, str, str], observed: Observed, plan: Plan) -> None: ...


ReconcileFn = Callable[[object, Observed, FrameworkPlugin, Topology, datetime], Plan]


class JobReconciler:
    """``key`` is (kind, namespace, name)."""

    def __init__(
        self,
        backend: ReconcileTarget,
        plugins: Callable[[str], FrameworkPlugin],
        topology: Topology,
        *,
        reconcile_fn: ReconcileFn | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if reconcile_fn is None:
            from trainop.core.reconcile import reconcile as core_reconcile

            reconcile_fn = core_reconcile  # type: ignore[assignment]
        assert reconcile_fn is not None
        self.backend = backend
        self.plugins = plugins
        self.topology = topology
        self._reconcile = reconcile_fn
        self._now = now

    async def reconcile(self, key: tuple[str, str, str]) -> Result:
        wait = self.backend.pending(key)
        if wait is not None:
            return Result(requeue_after=wait)
        observed = self.backend.observe(key)
        if observed is None:
            return Result()
        plan = self._reconcile(observed.job, observed, self.plugins(key[0]), self.topology, self._now())
        if not plan.skipped:
            await self.backend.apply(key, observed, plan)
        # One line per completed pass, naming the version it decided on: tests wait for it to prove
        # that a pass has seen a change and decided to do nothing, instead of sleeping.
        log.debug(
            "reconciled %s %s/%s at resourceVersion %s: %d actions",
            *key,
            observed.job.metadata.resource_version,
            0 if plan.skipped else len(plan.actions),
        )
        return Result(requeue_after=None if plan.skipped else plan.requeue_after)
