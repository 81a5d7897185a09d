"""Gang scheduling on the local backend (issue 11, contract §5's meaning without a gang scheduler).

A job whose gang needs GPUs starts all of its pods together or none: before any of its pods is
scheduled, the store admits the whole gang in one transaction (core/admission.py decides: free GPUs,
then priority, queue and creation order) and reserves its GPUs; until then every pod of the job stays
Pending, PodScheduled False (Unschedulable) with a message that says why, as a gang scheduler leaves
a PodGroup's pods. Jobs whose gang needs no GPU are scheduled pod by pod as before. This module is the
runner's ``SchedulingGate``; it decides nothing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainop.api.constants import ENV_TRAINOP_GANG_SCHEDULER_NAME
from trainop.backends.base import BackendError
from trainop.backends.local.render import build_gpu_wants
from trainop.backends.local.runner import NO_GPU_HINT, REFUSAL_PREFIX
from trainop.backends.local.store import Store
from trainop.core.admission import Admission, GangRequest
from trainop.core.gang import GangScheduler


def build_local_gang_scheduler(env: Mapping[str, str]) -> GangScheduler | None:
    """``$TRAINOP_GANG_SCHEDULER_NAME`` of the submitting shell: ``yunikorn`` gives every pod the labels
    and annotations YuniKorn reads (core/gang.py), as the operator's ``--gang-scheduler-name=yunikorn``
    does, so a job's pods read the same here and on a cluster; the gang itself is still this module's.
    Volcano and scheduler-plugins gang through a PodGroup object, which only a cluster has: refused."""
    gang = GangScheduler.from_flag(env.get(ENV_TRAINOP_GANG_SCHEDULER_NAME, ""))
    if gang is not None and not gang.yunikorn:
        raise BackendError(
            f"{ENV_TRAINOP_GANG_SCHEDULER_NAME}={gang.scheduler_name}: the local backend schedules a job's "
            "gang itself and can only label its pods for YuniKorn; set it to yunikorn or unset it "
            "(Volcano and scheduler-plugins need a PodGroup, which exists only on a cluster)"
        )
    return gang


def build_pod_refusal(pod: Mapping[str, Any], inventory: tuple[str, ...], admission: Admission) -> str:
    """The scheduler's refusal of one pod of a gang that waits: the pod's own need, then the gang's
    reason (``"0/1 nodes are available: insufficient nvidia.com/gpu: pod a-worker-0 needs 1; gang of 2
    pods needs 2 GPUs at once, 0 of 2 are free (held by default/b: 2); ..."``)."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    n = sum(count for _, count in build_gpu_wants(pod))
    own = f"pod {name} needs {n}" if n else f"pod {name} needs no GPU but starts with its gang"
    if not inventory:
        own += f" and this machine has none ({NO_GPU_HINT})"
    return f"{REFUSAL_PREFIX}{own}; {admission.message}"


class GangGate:
    """The job-level admission in front of the runner's per-pod scheduling: ``request`` is the job's
    gang (None: it needs no GPU, nothing to admit), kept current by the supervisor. While a pod waits
    to be scheduled the store is asked, at most once per tick; it answers at once for a job already
    admitted that still holds GPUs, and queues anew one whose pods have all given theirs back (a
    whole-job restart, a recovery), so that a gang never restarts partly either."""

    def __init__(self, store: Store, inventory: tuple[str, ...]) -> None:
        self.store = store
        self.inventory = inventory
        self.request: GangRequest | None = None
        self._admission: Admission | None = None  # this tick's answer, once asked

    def begin_tick(self) -> None:
        self._admission = None

    def refusal(self, pod: Mapping[str, Any]) -> str | None:
        if self.request is None:
            return None
        if self._admission is None:
            self._admission = self.store.admit_gang(self.request, self.inventory)
        if self._admission.admit:
            return None
        return build_pod_refusal(pod, self.inventory, self._admission)
