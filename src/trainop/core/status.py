"""Job conditions and replica statuses: upstream's ``setCondition`` rules and the §4.2 bookkeeping.

Everything here edits a ``JobStatus`` that the caller owns (a copy of the job's), never the job's own.
Pure: timestamps come from the caller's ``now``; no clock, no I/O.
"""

from __future__ import annotations

from datetime import UTC, datetime

from trainop.api.common import JobCondition, JobStatus, ReplicaStatus
from trainop.api.constants import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
)

TRUE = "True"
FALSE = "False"


def as_utc(value: datetime) -> datetime:
    """A stored timestamp written without a zone is UTC (Kubernetes writes ``Z``; be lenient)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def parse_time(value: object) -> datetime | None:
    """A Kubernetes timestamp string (``...Z``) as an aware datetime; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def build_condition(ctype: str, status: str, reason: str, message: str, now: datetime) -> JobCondition:
    """A new condition stamped ``now`` (both timestamps, as upstream's newCondition)."""
    return JobCondition(
        type=ctype,
        status=status,
        reason=reason,
        message=message,
        last_update_time=now,
        last_transition_time=now,
    )


def detect_condition(status: JobStatus, ctype: str) -> JobCondition | None:
    """The first condition of ``ctype`` (upstream's getCondition), or None."""
    return next((c for c in status.conditions or () if c.type == ctype), None)


def detect_true(status: JobStatus | None, ctype: str) -> bool:
    """Whether a ``ctype`` condition with status True exists (upstream's hasCondition)."""
    return status is not None and any(c.type == ctype and c.status == TRUE for c in status.conditions or ())


def detect_finished(status: JobStatus | None) -> bool:
    """Succeeded or Failed is True (upstream's IsFinished)."""
    return detect_true(status, COND_SUCCEEDED) or detect_true(status, COND_FAILED)


def detect_condition_kept(status: JobStatus, ctype: str, cstatus: str, reason: str | None) -> bool:
    """Whether ``set_condition`` would leave ``status`` as it is for a condition of this type, status
    and reason (Failed is True, or the condition is already there): a pass can skip building it."""
    current = None
    for c in status.conditions or ():
        if c.type == COND_FAILED and c.status == TRUE:
            return True
        if current is None and c.type == ctype:
            current = c
    return current is not None and current.status == cstatus and current.reason == reason


def set_condition(status: JobStatus, cond: JobCondition) -> bool:
    """Apply one condition with upstream's setCondition rules (§4.1); True when ``status`` changed.

    - Once Failed is True nothing changes any more (Failed is terminal).
    - Same type, status and reason: no-op (timestamps and message are kept).
    - Same type and status (new reason): the old lastTransitionTime is kept.
    - The old condition of that type is removed and the new one appended, so the newest is last
      (the ``State`` printer column reads ``conditions[-1:]``).
    - Running removes Restarting and vice versa; Succeeded or Failed flips a Running to False
      (its reason, message and timestamps kept).
    """
    conditions = status.conditions or []
    if any(c.type == COND_FAILED and c.status == TRUE for c in conditions):
        return False
    current = detect_condition(status, cond.type)
    if current is not None and current.status == cond.status:
        if current.reason == cond.reason:
            return False
        cond.last_transition_time = current.last_transition_time
    ctype = cond.type
    kept: list[JobCondition] = []
    for c in conditions:
        if c.type == ctype:
            continue
        if (ctype == COND_RESTARTING and c.type == COND_RUNNING) or (
            ctype == COND_RUNNING and c.type == COND_RESTARTING
        ):
            continue
        if ctype in (COND_SUCCEEDED, COND_FAILED) and c.type == COND_RUNNING and c.status != FALSE:
            c = c.model_copy(update={"status": FALSE})
        kept.append(c)
    kept.append(cond)
    status.conditions = kept
    return True


def build_created(kind: str, name: str, now: datetime) -> JobCondition:
    return build_condition(COND_CREATED, TRUE, f"{kind}Created", f"{kind} {name} is created.", now)


def build_suspended(kind: str, name: str, now: datetime) -> JobCondition:
    return build_condition(COND_SUSPENDED, TRUE, f"{kind}Suspended", f"{kind} {name} is suspended.", now)


def build_resumed(kind: str, name: str, now: datetime) -> JobCondition:
    return build_condition(COND_SUSPENDED, FALSE, f"{kind}Resumed", f"{kind} {name} is resumed.", now)


def build_replica_status(active: int, succeeded: int, failed: int, selector: str | None) -> ReplicaStatus:
    """One ``replicaStatuses`` entry; zero counts are left unset, as Go's ``omitempty`` writes them,
    so a status read back from the API server compares equal to the one computed here."""
    return ReplicaStatus.model_construct(
        active=active or None,
        succeeded=succeeded or None,
        failed=failed or None,
        label_selector=None,
        selector=selector,
    )


def compute_succeeded_fixup(status: JobStatus) -> None:
    """§4.2: after Succeeded, each reconcile moves any ``active`` count into ``succeeded``."""
    for rtype, rs in list((status.replica_statuses or {}).items()):
        if rs.active:
            status.replica_statuses[rtype] = rs.model_copy(  # type: ignore[index]
                update={"succeeded": (rs.succeeded or 0) + rs.active, "active": None}
            )


def compute_suspended_counts(status: JobStatus) -> None:
    """§4.10: a suspended job has no active replicas."""
    for rtype, rs in list((status.replica_statuses or {}).items()):
        if rs.active:
            status.replica_statuses[rtype] = rs.model_copy(update={"active": None})  # type: ignore[index]
