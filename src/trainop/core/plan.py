"""The result of one reconcile pass: actions to apply, the full desired status, events, a requeue.

Backends apply ``actions`` in order, write ``status`` once if ``status_changed``, then emit ``events``.
Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from trainop.api.common import JobStatus


@dataclass(frozen=True, slots=True)
class CreateObject:
    """Create ``obj`` (a full Kubernetes object dict; ``kind`` inside). AlreadyExists is success."""

    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class UpdateObject:
    """Replace an owned object whose content drifted (MPI ConfigMap / Role, §3.9)."""

    obj: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeleteObject:
    """Delete an owned object by kind and name (same namespace as the job). NotFound is success."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class DeleteJob:
    """Delete the job itself (TTL, §4.9); dependents go through owner-reference garbage collection."""


Action = CreateObject | UpdateObject | DeleteObject | DeleteJob


@dataclass(frozen=True, slots=True)
class Event:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


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
