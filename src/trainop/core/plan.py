"""The result of one reconcile pass: actions to apply, the full desired status, events, a requeue.

Backends apply ``actions`` in order, emitting each action's outcome event (``outcome_event``: e.g.
SuccessfulCreatePod or FailedCreatePod, §6.3), write ``status`` once if ``status_changed``, then emit
``events``. An event with a ``key`` is emitted once per key and job (remember the keys already sent).
Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from trainop.api.common import JobStatus


@dataclass(frozen=True, slots=True)
class Event:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    # Set on events upstream re-emits on every reconcile (ExitedWithCode, abnormal pods; §9.9): the
    # backend emits an event with a given key once per job, so repeated passes add no noise.
    key: str | None = None


# An action's ``on_error`` message holds this placeholder for the API error text.
ERROR_PLACEHOLDER = "{error}"


@dataclass(frozen=True, slots=True)
class CreateObject:
    """Create ``obj`` (a full Kubernetes object dict; ``kind`` inside). AlreadyExists is success."""

    obj: dict[str, Any]
    done: Event | None = None
    on_error: Event | None = None


@dataclass(frozen=True, slots=True)
class UpdateObject:
    """Replace an owned object whose content drifted (MPI ConfigMap / Role, §3.9)."""

    obj: dict[str, Any]
    done: Event | None = None
    on_error: Event | None = None


@dataclass(frozen=True, slots=True)
class DeleteObject:
    """Delete an owned object by kind and name (same namespace as the job). NotFound is success."""

    kind: str
    name: str
    done: Event | None = None
    on_error: Event | None = None


@dataclass(frozen=True, slots=True)
class DeleteJob:
    """Delete the job itself (TTL, §4.9); dependents go through owner-reference garbage collection.

    The plan's status is not written after it (``status_changed`` is False in such a plan)."""

    done: Event | None = None
    on_error: Event | None = None


Action = CreateObject | UpdateObject | DeleteObject | DeleteJob


def outcome_event(action: Action, error: str | None = None) -> Event | None:
    """The event a backend emits once it has applied ``action``: ``done`` on success, ``on_error``
    (with the API error text) on failure; None when the action has none (§6.3)."""
    if error is None:
        return action.done
    if action.on_error is None:
        return None
    ev = action.on_error
    return Event(ev.type, ev.reason, ev.message.replace(ERROR_PLACEHOLDER, error), ev.key)


@dataclass(slots=True)
class Plan:
    actions: list[Action] = field(default_factory=list)
    status: JobStatus = field(default_factory=JobStatus)
    status_changed: bool = False
    events: list[Event] = field(default_factory=list)
    # Seconds until the core wants to look again (deadline, TTL, backoff); None = only on events.
    requeue_after: float | None = None
    # Metric increments (§6.6) such as "jobs_successful", "jobs_failed", "jobs_restarted", "jobs_deleted".
    metrics: list[str] = field(default_factory=list)
    # True when the job is not ours to manage (managedBy, §4.11): the backend writes nothing.
    skipped: bool = False
    # ``status`` as Kubernetes JSON when the pass rendered it (to compare it with the stored one), for
    # the backend to write as is; None: render it. Not part of what a Plan decides.
    status_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def deletes_job(self) -> bool:
        return any(isinstance(a, DeleteJob) for a in self.actions)
