"""``trainop describe`` says where a job's Kueue queue label leads (issue 25)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from trainop.backends.base import JobDetails
from trainop.cli.describe import print_details
from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job

QUEUE = "kueue.x-k8s.io/queue-name"


def queue_line(b: JobBuilder) -> str | None:
    out = io.StringIO()
    details = JobDetails(
        job=b.namespace("ns").build(), base_dir="", pods=[], objects=[], events=[], processes=[], ports={},
        supervisor=None, cluster="test",
    )  # fmt: skip
    print_details(Console(file=out, width=400, no_color=True), details)
    return next((line for line in out.getvalue().splitlines() if line.startswith("Queue:")), None)


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(pytorch_job("j").master(1).labels(**{QUEUE: "q"}), "Queue:       q (Kueue LocalQueue)",
                     id="a kind Kueue manages"),
        pytest.param(
            mpi_job("m").launcher(1).labels(**{QUEUE: "q"}),
            "Queue:       q - Kueue does not manage kubeflow.org/v1 MPIJobs (Kueue's MPIJob integration is "
            "mpi-operator's kubeflow.org/v2beta1): the kueue.x-k8s.io/queue-name=q label is ignored and the "
            "job runs without waiting in that queue",
            id="v1 MPIJob: not queued",
        ),
        pytest.param(pytorch_job("j").master(1), None, id="no queue: no line"),
    ],
)  # fmt: skip
def test_describe_queue_line(job: JobBuilder, want: str | None) -> None:
    assert queue_line(job) == want
