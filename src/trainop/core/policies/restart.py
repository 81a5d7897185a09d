"""RestartPolicy and exit codes for a Failed pod (contract §4.5; the generic path, not MPI).

Pure decision; the reconcile turns it into a pod deletion (restart) or a Failed condition.
"""

from __future__ import annotations

from typing import Literal

from trainop.api.constants import RESTART_ALWAYS, RESTART_EXIT_CODE, RESTART_ON_FAILURE

RESTART: Literal["restart"] = "restart"
FAIL: Literal["fail"] = "fail"


def detect_restart(policy: str, exit_code: int) -> Literal["restart", "fail"] | None:
    """What to do with a pod in phase Failed under replica restart ``policy`` (§4.5).

    OnFailure and Always, or ExitCode with a retryable code (≥ 128, or the 0xbeef sentinel of a pod
    whose default container never terminated, e.g. an eviction): delete it so it is recreated.
    ExitCode with a permanent code (1-127, or 0): fail the job. Never: leave it to the status rule.
    """
    if policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
        return RESTART
    if policy == RESTART_EXIT_CODE:
        return RESTART if exit_code >= 128 else FAIL  # signals (137 SIGKILL/OOM, 143), and 0xbeef
    return None


def build_restarting_message(job_name: str, rtype: str) -> str:
    """The Restarting condition/event message when a pod is recreated (§4.1)."""
    return f"job {job_name} is restarting because {rtype} replica(s) failed."


def build_exit_code_failed_message(job_name: str, rtype: str) -> str:
    """The Failed condition/event message of the ExitCode-permanent path (§4.1)."""
    return f'job "{job_name}" is failing because "{rtype}" replica(s) failed.'
