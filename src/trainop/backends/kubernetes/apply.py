"""Apply a core Plan to the cluster through the shared executor (backends/executor.py: its order and
its one failure rule): this module is only the Kubernetes writes.

Creates are idempotent (deterministic names: AlreadyExists is success), deletes too (NotFound is
success). A batch's actions run concurrently, so a job's pods and Services cost one round trip, not
eight. The status is written through ``/status`` with optimistic concurrency and re-applied onto a
fresh read on conflict while the spec is unchanged. I/O adapter.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainop.backends.executor import ApplyError, execute_plan
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    PRIORITY_STATUS,
    PRIORITY_WRITE,
    KubeClient,
    api_status_code,
    request_priority,
    tolerate,
)
from trainop.core.plan import (
    Action,
    CreateObject,
    DeleteJob,
    DeleteObject,
    Event,
    Plan,
    UpdateObject,
)

__all__ = ["ApplyError", "ApplyOutcome", "PlanApplier"]

log = logging.getLogger(__name__)

ObjRef = tuple[str, str]  # (Kubernetes kind, name)

STATUS_CONFLICT_RETRIES = 3

# A status write that only changes replicaStatuses' counts waits this long from when the change was
# first seen, and as long after the job's last status write: a 1+3 job's pods start and end within a
# second or two of each other, and at high QPS each one was a write of its own (issue 16: 5.9 status
# writes per job at 100 x (1+3), 200/400, against upstream's 3.3). Conditions, start and completion
# times are written at once, with whatever counts are held back. (Holding a first status that was only
# Created for Running to join it saved ~500 writes at 500 x (1+3) but made Running later: all Running
# 1.08x upstream's at 200/400 where it was 0.88x, and 1 x 500's 0.64x where 0.42x; not kept.)
STATUS_COALESCE_S = 1.0


class StatusCoalescer:
    """How long a job's counts-only status change waits before it is written. Pure."""

    def __init__(
        self, window: float = STATUS_COALESCE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window
        self._clock = clock
        self._written: OrderedDict[str, float] = OrderedDict()  # job uid -> last write, oldest first
        self._held: OrderedDict[str, float] = OrderedDict()  # job uid -> counts change first held

    def wait(self, uid: str, stored: dict[str, Any], new: dict[str, Any]) -> float:
        """Seconds to hold back writing ``new`` over ``stored`` (0: write now)."""
        now = self._clock()
        self._forget_old(now)
        if not counts_only_change(stored, new):
            return 0.0
        held = self._held.setdefault(uid, now)
        due = max(held, self._written.get(uid, held)) + self.window
        return max(0.0, due - now)

    def written(self, uid: str) -> None:
        self._held.pop(uid, None)
        self._written[uid] = self._clock()
        self._written.move_to_end(uid)

    def _forget_old(self, now: float) -> None:
        # A write is only remembered for one window; a held change is written one window after it
        # was held unless its job went away, so what is older than that is a gone job's.
        for entries, keep in ((self._written, self.window), (self._held, 10 * self.window)):
            while entries:
                uid, at = next(iter(entries.items()))
                if now - at < keep:
                    break
                del entries[uid]


def counts_only_change(stored: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when ``new`` differs from ``stored`` in replicaStatuses only (conditions, times the same)."""
    keys = (stored.keys() | new.keys()) - {"replicaStatuses"}
    return all(stored.get(k) == new.get(k) for k in keys)


@dataclass
class ApplyOutcome:
    created: list[ObjRef] = field(default_factory=list)  # newly created (not AlreadyExists)
    deleted: list[ObjRef] = field(default_factory=list)  # deleted now (not NotFound)
    status_written: dict[str, Any] | None = None  # the job as the apiserver returned it
    events: list[Event] = field(default_factory=list)  # what was emitted, failures included


class PlanApplier:
    def __init__(
        self,
        client: KubeClient,
        *,
        emit: Callable[[dict[str, Any], Event], None],
        remember_job: Callable[[dict[str, Any]], None] = lambda obj: None,
        count_metric: Callable[[str, dict[str, Any]], None] = lambda name, job: None,
    ) -> None:
        self.client = client
        self._emit = emit
        self._remember_job = remember_job
        self._count = count_metric
        self.coalescer = StatusCoalescer()

    async def apply(self, job: dict[str, Any], plan: Plan) -> ApplyOutcome:
        """Raises ApplyError (backends/executor.py) when an action failed."""
        writer = _JobWriter(self, job)
        await execute_plan(plan, writer)
        return writer.out

    async def _one(self, job: dict[str, Any], ns: str, action: Action, out: ApplyOutcome) -> None:
        api = self.client.api
        with request_priority(PRIORITY_WRITE):
            if isinstance(action, CreateObject | UpdateObject):
                obj = copy.copy(action.obj)
                obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
                res = r.resource_for_kind(obj["kind"])
                if isinstance(action, UpdateObject):
                    await api.replace(res(obj))
                # AlreadyExists (409): deterministic names make this success
                elif await tolerate(self.client.create(res, ns, obj), 409):
                    out.created.append((obj["kind"], obj["metadata"].get("name", "")))
                    if obj["kind"] == "Pod":
                        self._count("pods_created", job)
            elif isinstance(action, DeleteObject):
                res = r.resource_for_kind(action.kind)
                if await tolerate(api.delete(res, action.name, namespace=ns), 404):
                    out.deleted.append((action.kind, action.name))
                    if action.kind == "Pod":
                        self._count("pods_deleted", job)
            elif isinstance(action, DeleteJob):
                # Default propagation (background for custom resources): GC removes the dependents.
                name = (job.get("metadata") or {})["name"]
                await tolerate(api.delete(r.JOB_RESOURCES[job["kind"]], name, namespace=ns), 404)
            else:  # pragma: no cover - Action is a closed union
                raise TypeError(f"unknown action {action!r}")

    async def write_status(self, job: dict[str, Any], plan: Plan) -> dict[str, Any] | None:
        """PUT /status with the job's resourceVersion; on 409 re-read and retry while the spec is the same.

        A change of replicaStatuses' counts alone within ``STATUS_COALESCE_S`` of the job's last write
        is not written now: the plan's ``requeue_after`` is cut to when it may be, and that pass (or an
        earlier one) writes the status it then computes. Returns None then."""
        kind = job["kind"]
        res = r.JOB_RESOURCES[kind]
        meta = job.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta["name"]
        status = plan.status_json if plan.status_json is not None else plan.status.to_dict()
        uid = str(meta.get("uid") or "")
        wait = self.coalescer.wait(uid, job.get("status") or {}, status)
        if wait > 0:
            plan.requeue_after = wait if plan.requeue_after is None else min(plan.requeue_after, wait)
            # A held status's metrics would be counted by the pass that writes it (a counts-only change
            # carries none today; jobs_created_total was counted once per pass while a Created was held).
            plan.metrics.clear()
            return None
        current = job
        for attempt in range(STATUS_CONFLICT_RETRIES + 1):
            body = {**current, "status": status}
            try:
                with request_priority(PRIORITY_STATUS):
                    written = await self.client.replace_status(res, ns, name, body)
                self.coalescer.written(uid)
                return written
            except Exception as exc:
                if api_status_code(exc) != 409 or attempt == STATUS_CONFLICT_RETRIES:
                    raise
            with request_priority(PRIORITY_STATUS):
                fresh = dict(await self.client.api.get(res, name, namespace=ns))
            fmeta = fresh.get("metadata") or {}
            if fmeta.get("uid") != meta.get("uid") or fmeta.get("generation") != meta.get("generation"):
                # The spec moved on: this status was computed for an older spec; reconcile again.
                raise ApplyError([f"status of {kind} {ns}/{name}: the job changed while reconciling"])
            current = fresh
        raise AssertionError("unreachable")


class _JobWriter:
    """One job's writes for one Plan (backends/executor.py PlanWriter)."""

    def __init__(self, applier: PlanApplier, job: dict[str, Any]) -> None:
        self.applier = applier
        self.job = job
        self.ns = (job.get("metadata") or {}).get("namespace") or "default"
        self.out = ApplyOutcome()

    async def apply_batch(self, batch: Sequence[Action]) -> list[str | None]:
        results = await asyncio.gather(
            *(self.applier._one(self.job, self.ns, a, self.out) for a in batch), return_exceptions=True
        )
        errors: list[str | None] = []
        for res in results:
            if isinstance(res, asyncio.CancelledError):
                raise res
            errors.append(_error_text(res) if isinstance(res, BaseException) else None)
        return errors

    async def write_status(self, plan: Plan) -> None:
        self.out.status_written = await self.applier.write_status(self.job, plan)
        if self.out.status_written is not None:
            self.applier._remember_job(self.out.status_written)

    def emit(self, event: Event) -> None:
        self.out.events.append(event)
        self.applier._emit(self.job, event)

    def count(self, metric: str) -> None:
        self.applier._count(metric, self.job)


def _error_text(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    message = getattr(status, "message", None)
    return str(message or exc)
