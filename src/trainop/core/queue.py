"""Kueue's queue label on a kind Kueue does not manage (issue 25): said out loud, never a silent bypass.

Kueue v0.17 integrates five kubeflow.org/v1 kinds (``KindInfo.kueue_framework``); its MPIJob
integration is mpi-operator's kubeflow.org/v2beta1, so a v1 MPIJob with a ``kueue.x-k8s.io/queue-name``
label is never suspended, queued or admitted by Kueue: it runs at once. Pure: no I/O, no clock.
"""

from __future__ import annotations

from trainop.api.common import TrainingJob
from trainop.api.constants import API_VERSION, LABEL_KUEUE_QUEUE
from trainop.api.kinds import KindInfo
from trainop.api.rules import detect_queue_name

REASON_QUEUE_NOT_MANAGED = "QueueNotManaged"


def build_queue_not_managed_message(job: TrainingJob, info: KindInfo) -> str | None:
    """Why the job's queue label does nothing, or None when it has none or Kueue manages the kind."""
    queue = detect_queue_name(job)
    if not queue or info.kueue_framework:
        return None
    return (
        f"Kueue does not manage {API_VERSION} {info.kind}s (Kueue's MPIJob integration is mpi-operator's "
        f"kubeflow.org/v2beta1): the {LABEL_KUEUE_QUEUE}={queue} label is ignored and the job runs "
        "without waiting in that queue"
    )
