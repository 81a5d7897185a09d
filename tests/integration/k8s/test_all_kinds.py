"""Every kind reaches Succeeded on the real control plane (issue 11), MPIJob included: its launcher's
init container requests ephemeral-storage (5Gi, as upstream's), so the kwok nodes must declare it or
the launcher is never scheduled. kwok plays each pod's fate from the SIM_* annotations."""

from __future__ import annotations

import pytest
from k8s_harness import Cluster, OperatorProcess, annotate

from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)
from trainop.testing.testenv import SIM_OUTCOME, SIM_RUN_DURATION

SUCCEED = annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"})
# MPI's job ends with its launcher; workers run until it is done (kwok: no outcome = run on).
LAUNCHER_SUCCEEDS = annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "2s"})


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(pytorch_job("pt").master(1).workers(2).template(SUCCEED), id="PyTorchJob"),
        pytest.param(tf_job("tf").chief(1).workers(2).template(SUCCEED), id="TFJob"),
        pytest.param(xgboost_job("xgb").master(1).workers(2).template(SUCCEED), id="XGBoostJob"),
        pytest.param(
            mpi_job("mpi").launcher(1).workers(2).template(LAUNCHER_SUCCEEDS, "Launcher"), id="MPIJob"
        ),
        pytest.param(paddle_job("pd").master(1).workers(2).template(SUCCEED), id="PaddleJob"),
        pytest.param(jax_job("jax").workers(3).template(SUCCEED), id="JAXJob"),
    ],
)
def test_every_kind_succeeds(operator: OperatorProcess, cluster: Cluster, job: JobBuilder) -> None:
    created = cluster.create(job.build_dict())
    name = created["metadata"]["name"]
    got = cluster.watch_condition(job.kind, name, "Succeeded", since=created, timeout=120)
    assert got["reason"] == f"{job.kind}Succeeded"
    # Every replica was really scheduled on a (kwok) node: nothing was left Pending.
    assert all(p["spec"].get("nodeName") for p in cluster.pods(name)), [
        (p["metadata"]["name"], p["status"].get("phase")) for p in cluster.pods(name)
    ]
