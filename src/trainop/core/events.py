"""The events of contract §6.3, built as ``Event`` values (reasons and messages as upstream writes them).

Decision events go into ``Plan.events``; create/delete outcome events ride on each action
(``done`` / ``on_error``) so a backend reports what really happened. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from trainop.api.kinds import KindInfo
from trainop.core.gang import POD_GROUP_KIND
from trainop.core.plan import ERROR_PLACEHOLDER, CreateObject, DeleteJob, DeleteObject, Event
from trainop.core.pods import compute_restart_count, detect_name, detect_uid

NORMAL: Final[Literal["Normal"]] = "Normal"
WARNING: Final[Literal["Warning"]] = "Warning"


def build_create_action(info: KindInfo, obj: dict[str, Any]) -> CreateObject:
    """CreateObject with SuccessfulCreatePod/Service or FailedCreatePod/Service (§6.3); a launcher's
    kind words its pods' events itself (``Launcher.build_pod_events``). Other objects carry no event."""
    kind = obj.get("kind")
    if kind in ("Pod", "Service"):
        return CreateObject(
            obj,
            done=Event(NORMAL, f"SuccessfulCreate{kind}", f"Created {kind.lower()}: {detect_name(obj)}"),
            on_error=Event(WARNING, f"FailedCreate{kind}", f"Error creating: {ERROR_PLACEHOLDER}"),
        )
    return CreateObject(obj)


def build_delete_action(kind: str, name: str) -> DeleteObject:
    """DeleteObject with SuccessfulDelete<Kind>/FailedDelete<Kind> for Pods and Services (§6.3), and
    the PodGroup's (§4.8)."""
    if kind in ("Pod", "Service", POD_GROUP_KIND):
        noun = kind if kind == POD_GROUP_KIND else kind.lower()
        return DeleteObject(
            kind,
            name,
            done=Event(NORMAL, f"SuccessfulDelete{kind}", f"Deleted {noun}: {name}"),
            on_error=Event(WARNING, f"FailedDelete{kind}", f"Error deleting: {ERROR_PLACEHOLDER}"),
        )
    return DeleteObject(kind, name)


def build_delete_job_action(info: KindInfo, name: str) -> DeleteJob:
    """TTL deletion (§4.9): SuccessfulDelete<noun>/FailedDelete<noun>, the noun the kind's row names
    (upstream reuses the pod reasons for some kinds)."""
    noun = info.ttl_event_noun
    return DeleteJob(
        done=Event(NORMAL, f"SuccessfulDelete{noun}", f"Deleted job: {name}"),
        on_error=Event(WARNING, f"FailedDelete{noun}", f"Error deleting: {ERROR_PLACEHOLDER}"),
    )


def build_exited_event(namespace: str, pod: dict[str, Any], exit_code: int) -> Event:
    """ExitedWithCode (§4.5). Keyed by pod uid and restart count: emitted once per termination
    instead of on every reconcile (§9.9)."""
    name = detect_name(pod)
    return Event(
        NORMAL,
        "ExitedWithCode",
        f"Pod: {namespace}.{name} exited with code {exit_code}",
        key=f"ExitedWithCode/{detect_uid(pod) or name}/{compute_restart_count(pod)}",
    )


def _container_events(name: str, uid: str, cs: dict[str, Any]) -> list[Event]:
    """One container's warnings: terminated with a non-zero code, waiting with a message."""
    state = cs.get("state") or {}
    cname = cs.get("name", "")
    restarts = cs.get("restartCount") or 0
    out: list[Event] = []
    term = state.get("terminated")
    if term is not None and (term.get("exitCode") or 0) != 0:
        msg = (
            f"Error pod {name} container {cname} exitCode: {term.get('exitCode')} "
            f"terminated message: {term.get('message', '')}"
        )
        reason = str(term.get("reason") or "")
        out.append(Event(WARNING, reason, msg, key=f"abnormal/{uid}/{cname}/{restarts}/{reason}/{msg}"))
    wait = state.get("waiting")
    if wait is not None and wait.get("message"):
        msg = f"Error pod {name} container {cname} waiting message: {wait['message']}"
        reason = str(wait.get("reason") or "")
        out.append(Event(WARNING, reason, msg, key=f"abnormal/{uid}/{cname}/{restarts}/{reason}/{msg}"))
    return out


def build_abnormal_pod_events(pod: dict[str, Any]) -> list[Event]:
    """Warnings for an active pod in trouble (§6.3 "abnormal pods"), keyed by their content so each
    distinct message is emitted once (§9.9).

    Containers that terminated with a non-zero code, or wait with a message; with no container
    statuses, the newest pod condition that is not True.
    """
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or ()
    if statuses and all("running" in (cs.get("state") or ()) for cs in statuses):
        return []  # the common case, every container running: nothing to say
    name = detect_name(pod)
    uid = detect_uid(pod) or name
    if statuses:
        return [event for cs in statuses for event in _container_events(name, uid, cs)]
    # The newest condition that is not True, by lastTransitionTime (RFC 3339 strings of one format sort
    # by time); ties keep the first.
    unmet = [c for c in status.get("conditions") or () if c.get("status") != "True"]
    latest = max(unmet, key=lambda c: str(c.get("lastTransitionTime") or ""), default=None)
    if latest is None:
        return []
    msg = f"Error pod {name} condition message: {latest.get('message', '')}"
    reason = str(latest.get("reason") or "")
    return [Event(WARNING, reason, msg, key=f"abnormal/{uid}/condition/{reason}/{msg}")]
