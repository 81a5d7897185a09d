"""Names, labels, selectors and owner references of the objects a job owns (contract §1.2, §3.1, §3.2, §6.2).

Pure string and dict builders shared by core, the framework plugins, the backends and the test builders.
No I/O; every function returns a fresh dict the caller may mutate.
"""

from __future__ import annotations

from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    JOB_ROLE_MASTER,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from trainop.api.kinds import KindInfo
from trainop.api.trainer import TrainJob
from trainop.core.topology import replica_name

__all__ = [
    "build_owner_reference",
    "build_replica_labels",
    "build_selector",
    "replica_name",
]


def build_replica_labels(
    info: KindInfo, job_name: str, rtype: str, index: int | None, *, master: bool = False
) -> dict[str, str]:
    """Labels of replica ``rtype``/``index``: the job labels, the lower-case replica type, the index
    (None for MPI's launcher, §3.9) and ``job-role=master`` on the master-role pod (§3.1).

    A Service's labels and selector are this without ``master`` (§3.2).
    """
    labels = {
        LABEL_OPERATOR_NAME: info.controller_name,
        LABEL_JOB_NAME: job_name,
        LABEL_REPLICA_TYPE: rtype.lower(),
    }
    if index is not None:
        labels[LABEL_REPLICA_INDEX] = str(index)
    if master:
        labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
    return labels


def build_selector(info: KindInfo, job_name: str, rtype: str) -> str:
    """``replicaStatuses[<T>].selector`` (§4.2): the sorted ``k=v`` label selector of one replica type."""
    # Sorted by key, as Go's labels.SelectorFromSet renders it: job-name < operator-name < replica-type.
    return (
        f"{LABEL_JOB_NAME}={job_name},{LABEL_OPERATOR_NAME}={info.controller_name},"
        f"{LABEL_REPLICA_TYPE}={rtype.lower()}"
    )


def build_owner_reference(job: TrainingJob | TrainJob) -> dict[str, Any]:
    """The single controller ownerReference on every object a job (v1, or a TrainJob) owns (§6.2)."""
    return {
        "apiVersion": job.api_version,
        "kind": job.kind,
        "name": job.name,
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }
