"""Apply a core Plan to the cluster: actions in order, one /status write if it changed, then events.

The core decides; this only writes. Creates are idempotent (deterministic names: AlreadyExists is
success), deletes too (NotFound is success). Consecutive creates (or deletes) run concurrently, so a
job's pods and Services cost one round trip, not eight; what a pod needs at admission (MPI's
ServiceAccount, Role, RoleBinding, ConfigMap) is created first. The status is written through ``/status`` with optimistic concurrency and
re-applied onto a fresh read on conflict while the spec is unchanged. I/O adapter.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    PRIORITY_STATUS,
    PRIORITY_WRITE,
    KubeClient,
    api_status_code,
    request_priority,
)
from trainop.core.plan import (
    Action,
    CreateObject,
    DeleteJob,
    DeleteObject,
    Event,
    Plan,
    UpdateObject,
    outcome_event,
)

log = logging.getLogger(__name__)

ObjRef = tuple[str, str]  # (Kubernetes kind, name)

STATUS_CONFLICT_RETRIES = 3


class ApplyError(Exception):
    """Some actions failed; the rest were applied. The reconcile is retried with backoff."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass
class ApplyOutcome:
    created: list[ObjRef] = field(default_factory=list)  # newly created (not AlreadyExists)
    deleted: list[ObjRef] = field(default_factory=list)  # deleted now (not NotFound)
    status_written: dict[str, Any] | None = None  # the job as the apiserver returned it
    job_deleted: bool = False
    events: list[Event] = field(default_factory=list)  # what was emitted, failures included


# Objects a pod may need at admission or start (its ServiceAccount, RBAC for the MPI launcher, a
# ConfigMap volume): created before the rest of their group.
PREREQUISITE_KINDS = frozenset({"ServiceAccount", "Role", "RoleBinding", "ConfigMap"})


def _prerequisite(action: Action) -> bool:
    return isinstance(action, CreateObject) and action.obj.get("kind") in PREREQUISITE_KINDS


def _batches(actions: list[Action]) -> Iterator[list[Action]]:
    """Groups of actions applied concurrently, in order: consecutive creates (prerequisite kinds in a
    group of their own first), consecutive deletes; updates and the job's deletion one by one."""
    group: list[Action] = []

    def flush() -> Iterator[list[Action]]:
        first: list[Action] = [a for a in group if _prerequisite(a)]
        rest: list[Action] = [a for a in group if not _prerequisite(a)]
        yield from (b for b in (first, rest) if b)

    for a in actions:
        if group and (type(a) is not type(group[0]) or isinstance(a, UpdateObject | DeleteJob)):
            yield from flush()
            group = []
        group.append(a)
    if group:
        yield from flush()


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

    async def apply(self, job: dict[str, Any], plan: Plan) -> ApplyOutcome:
        meta = job.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        out = ApplyOutcome()
        errors: list[str] = []
        for batch in _batches(plan.actions):
            results = await asyncio.gather(
                *(self._one(job, ns, a, out) for a in batch), return_exceptions=True
            )
            for action, res in zip(batch, results, strict=True):
                if isinstance(res, asyncio.CancelledError):
                    raise res
                error = _error_text(res) if isinstance(res, BaseException) else None
                if error is not None:
                    verb, kind, name = _describe(action)
                    errors.append(f"{verb} {kind} {name}: {error}")
                ev = outcome_event(action, error)
                if ev is not None:
                    self._send(job, ev, out)
            if errors:
                break  # later kinds may depend on these (MPI launcher on its Role); retry the reconcile
        if errors:
            # No status, plan events or metrics: the next pass recomputes them from what now exists,
            # so a counter is never incremented for a transition that was not written.
            raise ApplyError(errors)
        if plan.status_changed and not out.job_deleted:
            out.status_written = await self.write_status(job, plan)
            self._remember_job(out.status_written)
        for name in plan.metrics:
            self._count(name, job)
        for ev in plan.events:
            self._send(job, ev, out)
        return out

    def _send(self, job: dict[str, Any], ev: Event, out: ApplyOutcome) -> None:
        out.events.append(ev)
        self._emit(job, ev)

    async def _one(self, job: dict[str, Any], ns: str, action: Action, out: ApplyOutcome) -> None:
        api = self.client.api
        with request_priority(PRIORITY_WRITE):
            if isinstance(action, CreateObject):
                obj = copy.copy(action.obj)
                obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
                res = r.resource_for_kind(obj["kind"])
                try:
                    await api.create(res(obj))
                    out.created.append((obj["kind"], obj["metadata"].get("name", "")))
                except Exception as exc:
                    if api_status_code(exc) != 409:  # AlreadyExists: deterministic names make this success
                        raise
            elif isinstance(action, UpdateObject):
                obj = copy.copy(action.obj)
                obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
                res = r.resource_for_kind(obj["kind"])
                await api.replace(res(obj))
            elif isinstance(action, DeleteObject):
                try:
                    await api.delete(r.resource_for_kind(action.kind), action.name, namespace=ns)
                    out.deleted.append((action.kind, action.name))
                except Exception as exc:
                    if api_status_code(exc) != 404:
                        raise
            elif isinstance(action, DeleteJob):
                meta = job.get("metadata") or {}
                try:
                    # Default propagation (background for custom resources): GC removes the dependents.
                    await api.delete(r.JOB_RESOURCES[job["kind"]], meta["name"], namespace=ns)
                except Exception as exc:
                    if api_status_code(exc) != 404:
                        raise
                out.job_deleted = True
            else:  # pragma: no cover - Action is a closed union
                raise TypeError(f"unknown action {action!r}")

    async def write_status(self, job: dict[str, Any], plan: Plan) -> dict[str, Any]:
        """PUT /status with the job's resourceVersion; on 409 re-read and retry while the spec is the same."""
        kind = job["kind"]
        res = r.JOB_RESOURCES[kind]
        meta = job.get("metadata") or {}
        ns, name = meta.get("namespace") or "default", meta["name"]
        status = plan.status.to_dict()
        current = job
        for attempt in range(STATUS_CONFLICT_RETRIES + 1):
            body = {**current, "status": status}
            try:
                with request_priority(PRIORITY_STATUS):
                    written = await self.client.api.replace(res.Status(body), name, namespace=ns)
                return dict(written)
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


def _describe(action: Action) -> tuple[str, str, str]:
    if isinstance(action, CreateObject):
        return "create", str(action.obj.get("kind")), str((action.obj.get("metadata") or {}).get("name"))
    if isinstance(action, UpdateObject):
        return "update", str(action.obj.get("kind")), str((action.obj.get("metadata") or {}).get("name"))
    if isinstance(action, DeleteObject):
        return "delete", action.kind, action.name
    return "delete", "Job", ""


def _error_text(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    message = getattr(status, "message", None)
    return str(message or exc)
