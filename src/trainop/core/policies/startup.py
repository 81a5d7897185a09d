"""Start deadlines (docs/failure-policy.md; beyond upstream v1): a job whose pods do not all start in
time, or one whose pod sits in an image-pull or configuration error, fails instead of staying Created
forever (restartCount stays 0 there, so backoffLimit never fires, §4.6).

Each pod gets the startup deadline from its own creation (a replica recreated by a restart gets a new
one); a replica with no pod yet counts from the attempt's start (the job's startTime or its last
whole-job restart). Kubernetes records no time for a waiting reason, so a start error counts from the
pod's creation or from the end of the container's last real run. Pure: ``now`` comes in, the seconds
to the next deadline go out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainop.api.constants import ANNOTATION_START_ERROR_DEADLINE, ANNOTATION_STARTUP_DEADLINE
from trainop.core.pods import PHASE_FAILED, PHASE_SUCCEEDED, detect_phase
from trainop.core.status import FALSE, parse_time

_EMPTY: dict[str, Any] = {}

# Waiting reasons of a container that cannot start until someone fixes the pod or the image.
START_ERROR_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
# Terminated reasons of a container whose process never ran (the runtime could not start it: a
# missing command, a bad working directory); the local runner reports StartError as containerd does.
NEVER_RAN_REASONS = frozenset({"StartError", "ContainerCannotRun"})

WORD_STARTUP = "StartupDeadlineExceeded"
WORD_START_ERROR = "StartErrorDeadlineExceeded"


@dataclass(frozen=True, slots=True)
class Violation:
    """A missed deadline: the condition reason's word (after ``<Kind>``), the pod and the message's
    tail after "Job <name> has failed because "."""

    word: str
    pod: str
    detail: str


@dataclass(frozen=True, slots=True)
class Outcome:
    violation: Violation | None = None
    # Seconds until the next deadline of a pod still waiting; None when nothing is waiting.
    remaining: float | None = None


def _created(pod: dict[str, Any]) -> datetime | None:
    return parse_time((pod.get("metadata") or _EMPTY).get("creationTimestamp"))


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or _EMPTY
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def detect_started(pod: dict[str, Any]) -> bool:
    """Whether ``pod`` has started: Succeeded or Failed (the failure rules and §4.5 take it from
    there), a container running, or a container that ran and exited (not one the runtime could not
    start at all)."""
    if detect_phase(pod) in (PHASE_SUCCEEDED, PHASE_FAILED):
        return True
    status = pod.get("status") or _EMPTY
    for cs in status.get("containerStatuses") or ():
        state = cs.get("state") or _EMPTY
        if state.get("running") is not None or cs.get("started") is True:
            return True
        for term in (state.get("terminated"), (cs.get("lastState") or _EMPTY).get("terminated")):
            if term and term.get("reason") not in NEVER_RAN_REASONS:
                return True
    return False


def _container_start_error(
    cs: dict[str, Any], failed: bool, created: datetime | None
) -> tuple[str, str, datetime | None] | None:
    """(reason, message, since when) of one container stuck in a start error, else None."""
    state = cs.get("state") or _EMPTY
    waiting = state.get("waiting") or _EMPTY
    last = (cs.get("lastState") or _EMPTY).get("terminated") or _EMPTY
    reason = str(waiting.get("reason") or "")
    if reason not in START_ERROR_REASONS:
        term = state.get("terminated") or last
        if not term or term.get("reason") not in NEVER_RAN_REASONS or failed:
            return None
        return str(term.get("reason")), str(term.get("message") or ""), created
    since = created
    if last and last.get("reason") not in NEVER_RAN_REASONS:
        ended = parse_time(last.get("finishedAt"))
        if ended is not None and (since is None or ended > since):
            since = ended
    return reason, str(waiting.get("message") or ""), since


def detect_start_error(pod: dict[str, Any]) -> tuple[str, str, str, datetime | None] | None:
    """The first container stuck in a start error: (container, reason, message, since when)."""
    created = _created(pod)
    failed = detect_phase(pod) == PHASE_FAILED
    for cs in _statuses(pod):
        found = _container_start_error(cs, failed, created)
        if found is not None:
            return str(cs.get("name") or ""), *found
    return None


def _said(head: str, msg: Any) -> str:
    return head + (f": {msg}" if msg else "")


def _container_pending_detail(cs: dict[str, Any]) -> str | None:
    """Why one container has not started (waiting with a reason, or a run that never ran), if it says."""
    state = cs.get("state") or _EMPTY
    waiting = state.get("waiting")
    if waiting and waiting.get("reason") not in (None, "", "ContainerCreating", "PodInitializing"):
        return _said(
            f"container {cs.get('name')} is waiting: {waiting.get('reason')}", waiting.get("message")
        )
    last = (cs.get("lastState") or _EMPTY).get("terminated") or state.get("terminated")
    if last and last.get("reason") in NEVER_RAN_REASONS:
        return _said(f"container {cs.get('name')} cannot start: {last.get('reason')}", last.get("message"))
    return None


def build_pending_detail(pod: dict[str, Any] | None) -> str:
    """Why a pod has not started, in Kubernetes' words: a container's waiting reason and message, an
    unschedulable pod's condition, else its phase."""
    if pod is None:
        return "no pod was created"
    for cs in _statuses(pod):
        detail = _container_pending_detail(cs)
        if detail is not None:
            return detail
    status = pod.get("status") or _EMPTY
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == FALSE:
            return _said(f"PodScheduled is False: {cond.get('reason') or 'Unknown'}", cond.get("message"))
    return f"phase {detect_phase(pod) or 'Pending'}"


def compute_start_deadlines(
    startup_seconds: int | None,
    start_error_seconds: int | None,
    replicas: Iterable[tuple[str, dict[str, Any] | None]],
    attempt_start: datetime,
    now: datetime,
) -> Outcome:
    """The first missed deadline over ``replicas`` ((pod name, its observed pod or None when it has
    none yet), in replica order), else the seconds until the nearest one. Start errors are checked
    first: they say more than "did not start"."""
    remaining: float | None = None

    def left(since: datetime | None, seconds: int) -> float:
        base = since if since is not None else attempt_start
        return (base + timedelta(seconds=seconds) - now).total_seconds()

    def nearer(seconds: float) -> None:
        nonlocal remaining
        remaining = seconds if remaining is None else min(remaining, seconds)

    items = list(replicas)
    if start_error_seconds is not None:
        for name, pod in items:
            if pod is None:
                continue
            found = detect_start_error(pod)
            if found is None:
                continue
            container, reason, message, since = found
            rest = left(since, start_error_seconds)
            if rest <= 0:
                detail = (
                    f"pod {name} container {container} has been in {reason} for {start_error_seconds}s "
                    f"({ANNOTATION_START_ERROR_DEADLINE})" + (f": {message}" if message else "")
                )
                return Outcome(Violation(WORD_START_ERROR, name, detail))
            nearer(rest)
    if startup_seconds is not None:
        for name, pod in items:
            if pod is not None and detect_started(pod):
                continue
            rest = left(None if pod is None else _created(pod), startup_seconds)
            if rest <= 0:
                detail = (
                    f"pod {name} did not start within {startup_seconds}s ({ANNOTATION_STARTUP_DEADLINE}): "
                    + build_pending_detail(pod)
                )
                return Outcome(Violation(WORD_STARTUP, name, detail))
            nearer(rest)
    return Outcome(remaining=remaining)
