"""backoffLimit (contract §4.6): the two rules under which a job with a backoffLimit fails.

Pure: reads the defaulted replica specs, the observed pods and the previous status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainop.api.common import JobStatus, ReplicaSpec
from trainop.api.constants import RESTART_ALWAYS, RESTART_EXIT_CODE, RESTART_ON_FAILURE
from trainop.core.pods import (
    PHASE_FAILED,
    PHASE_RUNNING,
    PHASE_SUCCEEDED,
    compute_restart_count,
    detect_deleting,
    detect_phase,
)

_COUNTED_POLICIES = frozenset({RESTART_ON_FAILURE, RESTART_ALWAYS, RESTART_EXIT_CODE})


def build_backoff_message(job_name: str) -> str:
    return f"Job {job_name} has failed because it has reached the specified backoff limit"


def detect_new_failure_past_limit(
    backoff_limit: int, specs: Mapping[str, ReplicaSpec], pods: Iterable[dict[str, Any]], previous: JobStatus
) -> bool:
    """Rule (a): more Failed pods than the previous status counted, not every replica active
    (non-terminated pods that are not being deleted, Pending included), and ``requeues + 1 >
    backoffLimit``. Upstream's requeue count is always 0 there (§9.4), so this is "backoffLimit 0 and
    a new failure"; kept as upstream behaves.
    """
    failed = 0
    active = 0
    for pod in pods:
        phase = detect_phase(pod)
        if phase == PHASE_FAILED:
            failed += 1
        elif phase != PHASE_SUCCEEDED and not detect_deleting(pod):
            active += 1
    previous_failed = sum(rs.failed or 0 for rs in (previous.replica_statuses or {}).values())
    total = sum(spec.replicas or 0 for spec in specs.values())
    requeues = 0  # upstream reads a fake work queue's requeue count, always 0
    return failed > previous_failed and active != total and requeues + 1 > backoff_limit


def detect_restarts_past_limit(
    backoff_limit: int, specs: Mapping[str, ReplicaSpec], pods_by_type: Mapping[str, list[dict[str, Any]]]
) -> bool:
    """Rule (b): the restartCount of every init and regular container of Running pods, over the types
    whose restartPolicy restarts (OnFailure, Always, ExitCode), is ≥ backoffLimit (> 0 when it is 0)."""
    total = 0
    for rtype, spec in specs.items():
        if spec.restart_policy not in _COUNTED_POLICIES:
            continue
        for pod in pods_by_type.get(rtype, ()):
            if detect_phase(pod) == PHASE_RUNNING:
                total += compute_restart_count(pod)
    return total > 0 if backoff_limit == 0 else total >= backoff_limit
