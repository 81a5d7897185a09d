"""The one Plan executor both backends use (issue 14): actions in order, the status once, then events.

A backend supplies a ``PlanWriter`` (how to apply a batch of actions, write the status, emit an event,
count a metric); the order and the failure rule live here only. The rule is upstream's (§4.3, §6.1,
§6.3): each attempted action emits its outcome event (SuccessfulCreatePod, or FailedCreatePod with
the error); after a batch with a failed action nothing more is applied, and neither the status, the
plan's events nor its metrics are written: ``ApplyError`` is raised and the reconcile is retried with
back-off, the next pass recomputing them from what then exists (the Go operator returns the error
from ReconcileJobs before its status update, and controller-runtime requeues the job rate-limited).
So no condition or counter ever records a transition whose writes failed. No decisions of the core's.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Coroutine, Iterator, Sequence
from typing import Any, Protocol, TypeVar

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

T = TypeVar("T")

# Objects a pod may need at admission or start (its ServiceAccount, RBAC for the MPI launcher, a
# ConfigMap volume): created before the rest of their group.
PREREQUISITE_KINDS = frozenset({"ServiceAccount", "Role", "RoleBinding", "ConfigMap"})


class ApplyError(Exception):
    """Some actions failed; the ones before them were applied. The reconcile is retried with back-off."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class PlanWriter(Protocol):
    """A backend's writes. ``apply_batch`` may apply its actions concurrently (they never depend on
    each other); it returns, per action, None or the error text, and raises only what must stop the
    whole reconcile (cancellation)."""

    def apply_batch(self, batch: Sequence[Action]) -> Awaitable[list[str | None]]: ...

    def write_status(self, plan: Plan) -> Awaitable[None]: ...

    def emit(self, event: Event) -> None: ...

    def count(self, metric: str) -> None: ...


def _prerequisite(action: Action) -> bool:
    return isinstance(action, CreateObject) and action.obj.get("kind") in PREREQUISITE_KINDS


def build_batches(actions: Sequence[Action]) -> Iterator[list[Action]]:
    """Groups of actions that may be applied concurrently, in order: consecutive creates (prerequisite
    kinds in a group of their own first), consecutive deletes; updates and the job's deletion one by one."""
    for kind, run in itertools.groupby(actions, key=type):
        for group in [[a] for a in run] if kind in (UpdateObject, DeleteJob) else [list(run)]:
            split = ([a for a in group if _prerequisite(a)], [a for a in group if not _prerequisite(a)])
            yield from (batch for batch in split if batch)


def describe_action(action: Action) -> str:
    """``create Pod a-worker-0`` (what an ApplyError names)."""
    if isinstance(action, CreateObject | UpdateObject):
        verb = "create" if isinstance(action, CreateObject) else "update"
        return f"{verb} {action.obj.get('kind')} {(action.obj.get('metadata') or {}).get('name')}"
    if isinstance(action, DeleteObject):
        return f"delete {action.kind} {action.name}"
    return "delete the job"


async def execute_plan(plan: Plan, writer: PlanWriter) -> None:
    """Apply ``plan`` through ``writer`` (see the module docstring for the order and the failure rule).
    A skipped plan (managedBy, §4.11) writes nothing; a plan that deletes the job writes no status."""
    if plan.skipped:
        return
    errors: list[str] = []
    for batch in build_batches(plan.actions):
        results = await writer.apply_batch(batch)
        for action, error in zip(batch, results, strict=True):
            if error is not None:
                errors.append(f"{describe_action(action)}: {error}")
            event = outcome_event(action, error)
            if event is not None:
                writer.emit(event)
        if errors:
            break  # later actions may depend on these (the MPI launcher on its Role)
    if errors:
        raise ApplyError(errors)
    if plan.status_changed and not plan.deletes_job:
        await writer.write_status(plan)
    for metric in plan.metrics:
        writer.count(metric)
    for event in plan.events:
        writer.emit(event)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (a synchronous writer's ``execute_plan``) to its end, without
    an event loop: the local supervisor is a single-threaded select() loop that owns its signals."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a synchronous PlanWriter suspended (it awaited real I/O)")
