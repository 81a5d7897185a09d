"""A Kueue queue label on a kind Kueue does not manage (issue 25): one Warning event, with Created."""

from __future__ import annotations

import pytest

from trainop.core.observed import Observed
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)

from .harness import T0

QUEUE = "kueue.x-k8s.io/queue-name"
MESSAGE = (
    "Kueue does not manage kubeflow.org/v1 MPIJobs (Kueue's MPIJob integration is mpi-operator's "
    "kubeflow.org/v2beta1): the kueue.x-k8s.io/queue-name=user-queue label is ignored and the job runs "
    "without waiting in that queue"
)


def warnings(b: JobBuilder) -> list[tuple[str, str, str]]:
    job = b.namespace("ns").build()
    plan = reconcile(job, Observed(job, [], [], {}), REGISTRY.get(job.kind), ServiceTopology(), T0)
    return [(e.type, e.reason, e.message) for e in plan.events if e.reason == "QueueNotManaged"]


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(mpi_job("m").launcher(1).workers(1).labels(**{QUEUE: "user-queue"}),
                     [("Warning", "QueueNotManaged", MESSAGE)], id="v1 MPIJob with the label"),
        pytest.param(mpi_job("m").launcher(1).workers(1).annotations({QUEUE: "user-queue"}),
                     [("Warning", "QueueNotManaged", MESSAGE)], id="the deprecated annotation"),
        pytest.param(mpi_job("m").launcher(1).workers(1), [], id="v1 MPIJob without a queue"),
        pytest.param(mpi_job("m").launcher(1).labels(**{QUEUE: "user-queue"}).condition("Created"), [],
                     id="once: not again after Created"),
        *(
            pytest.param(b.labels(**{QUEUE: "user-queue"}), [], id=f"{b.kind}: Kueue manages it")
            for b in (pytorch_job("j").master(1), tf_job("j").workers(1), xgboost_job("j").master(1),
                      paddle_job("j").master(1), jax_job("j").workers(1))
        ),
    ],
)  # fmt: skip
def test_queue_not_managed_warning(job: JobBuilder, want: list[tuple[str, str, str]]) -> None:
    assert warnings(job) == want
