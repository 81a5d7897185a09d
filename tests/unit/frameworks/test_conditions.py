"""The success/failure rule of every kind (§4.4) as ordered condition updates, with upstream's
reasons, messages (§4.1), events and metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import pytest

from trainop.api.common import TrainingJob
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pod,
    pytorch_job,
    tf_job,
    xgboost_job,
)

from .helpers import defaulted, with_pods


def rc(
    replicas: int, active: int = 0, succeeded: int = 0, failed: int = 0, policy: str = "OnFailure"
) -> ReplicaCounts:
    return ReplicaCounts(
        replicas=replicas, active=active, succeeded=succeeded, failed=failed, restart_policy=policy
    )


def running(kind: str, ref: str) -> ConditionUpdate:
    return ConditionUpdate("Running", f"{kind}Running", f"{kind} {ref} is running.")


def succeeded(kind: str, message: str) -> ConditionUpdate:
    return ConditionUpdate(
        "Succeeded", f"{kind}Succeeded", message, event="Normal", metric="jobs_successful", complete=True
    )


def restarting(kind: str, message: str) -> ConditionUpdate:
    return ConditionUpdate(
        "Restarting", f"{kind}Restarting", message, event="Warning", metric="jobs_restarted"
    )


def failed(kind: str, message: str, reason: str | None = None) -> ConditionUpdate:
    return ConditionUpdate(
        "Failed",
        reason or f"{kind}Failed",
        message,
        event="Normal",
        metric="jobs_failed",
        complete=True,
        event_reason=f"{kind}Failed",
    )


def event(type_: Literal["Normal", "Warning"], reason: str, message: str) -> ConditionUpdate:
    return ConditionUpdate("", reason, message, event=type_, set_condition=False)


NoPods: Callable[[TrainingJob], list[dict[str, Any]]] = lambda j: []  # noqa: E731

PT, TF, XGB, PD, JX, MP = "PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"

CASES = [
    # --- PyTorch ---
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        {"Master": rc(1, active=1), "Worker": rc(2)},
        NoPods,
        [running(PT, "a")],
        id="pytorch with Master: running once the master runs (pending workers do not matter)",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        {"Master": rc(1, succeeded=1), "Worker": rc(2, failed=2)},
        NoPods,
        [succeeded(PT, "PyTorchJob a is successfully completed.")],
        id="pytorch with Master: master done is success; workers are not looked at",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        {"Master": rc(1, active=1), "Worker": rc(2, active=1, failed=1)},
        NoPods,
        [running(PT, "a"), restarting(PT, "PyTorchJob a is restarting because 1 Worker replica(s) failed.")],
        id="pytorch OnFailure worker failure: restarting",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        {"Master": rc(1, active=1), "Worker": rc(2, active=1, failed=1, policy="Never")},
        NoPods,
        [running(PT, "a"), failed(PT, "PyTorchJob a is failed because 1 Worker replica(s) failed.")],
        id="pytorch Never worker failure: failed",
    ),
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        {"Master": rc(1, active=1), "Worker": rc(2, active=1, succeeded=1, failed=1, policy="Never")},
        NoPods,
        [running(PT, "a")],
        id="pytorch: a failure covered by succeeded + running replicas is ignored",
    ),
    pytest.param(
        pytorch_job("a").workers(2),
        {"Worker": rc(2, succeeded=2)},
        NoPods,
        [succeeded(PT, "PyTorchJob default/a successfully completed.")],
        id="pytorch without Master: all workers done, <ns>/<name> message",
    ),
    pytest.param(
        pytorch_job("a").workers(3),
        {"Worker": rc(3, active=2, succeeded=1)},
        NoPods,
        [running(PT, "default/a")],
        id="pytorch without Master, not elastic: one worker done is not success",
    ),
    pytest.param(
        pytorch_job("a").workers(3).elastic(min=1, max=3),
        {"Worker": rc(3, active=2, succeeded=1)},
        NoPods,
        [succeeded(PT, "PyTorchJob default/a successfully completed.")],
        id="pytorch elastic: any worker succeeded is success",
    ),
    # --- TF ---
    pytest.param(
        tf_job("t").chief(1).ps(1).workers(2),
        {"Chief": rc(1, active=1), "PS": rc(1, active=1), "Worker": rc(2, active=2)},
        NoPods,
        [running(TF, "default/t")],
        id="tf with Chief: running follows the chief",
    ),
    pytest.param(
        tf_job("t").chief(1).ps(1).workers(2),
        {"Chief": rc(1, succeeded=1), "PS": rc(1, active=1), "Worker": rc(2, active=2)},
        NoPods,
        [succeeded(TF, "TFJob default/t successfully completed.")],
        id="tf with Chief: chief done is success",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(2),
        {"PS": rc(1, active=1), "Worker": rc(2, active=1, succeeded=1)},
        lambda j: [pod(j, "Worker", 0).succeeded().build(), pod(j, "Worker", 1).running().build()],
        [succeeded(TF, "TFJob default/t successfully completed.")],
        id="tf default success policy: worker 0 exited 0 is success",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(2).success_policy("AllWorkers"),
        {"PS": rc(1, active=1), "Worker": rc(2, active=1, succeeded=1)},
        lambda j: [pod(j, "Worker", 0).succeeded().build(), pod(j, "Worker", 1).running().build()],
        [running(TF, "default/t")],
        id="tf AllWorkers: worker 0 alone is not enough",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(2).success_policy("AllWorkers"),
        {"PS": rc(1, active=1), "Worker": rc(2, succeeded=2)},
        NoPods,
        [succeeded(TF, "TFJob default/t successfully completed.")],
        id="tf AllWorkers: all workers done",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(2),
        {"PS": rc(1, active=1), "Worker": rc(2, active=1, succeeded=1)},
        lambda j: [pod(j, "Worker", 0).phase("Succeeded").terminated(3).build()],
        [running(TF, "default/t")],
        id="tf default policy: worker 0 must have exit code 0",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(2),
        {"PS": rc(1, failed=1, policy="Never"), "Worker": rc(2, active=2)},
        NoPods,
        [
            failed(TF, "TFJob default/t has failed because 1 PS replica(s) failed."),
            running(TF, "default/t"),
        ],
        id="tf: a failed PS fails the job ('has failed', <ns>/<name>)",
    ),
    pytest.param(
        tf_job("t").ps(1).workers(3).dynamic_worker(),
        {"PS": rc(1, active=1), "Worker": rc(3, active=2, failed=1, policy="Never")},
        NoPods,
        [running(TF, "default/t")],
        id="tf enableDynamicWorker: worker failures are skipped",
    ),
    pytest.param(
        tf_job("t")
        .ps(1)
        .workers(2)
        .condition("Restarting", reason="TFJobRestarting", message="restarted before"),
        {"PS": rc(1, active=1), "Worker": rc(2, active=1, failed=1)},
        NoPods,
        [
            running(TF, "default/t"),
            ConditionUpdate("Restarting", "TFJobRestarting", "restarted before", metric="jobs_restarted"),
        ],
        id="tf keeps an existing Restarting: re-set after Running, no event",
    ),
    pytest.param(
        tf_job("t").ps(2).evaluator(1),
        {"PS": rc(2, succeeded=2), "Evaluator": rc(1, succeeded=1)},
        NoPods,
        [],
        id="tf without Chief/Master/Worker never succeeds",
    ),
    # --- XGBoost ---
    pytest.param(
        xgboost_job("x").master(1).workers(2),
        {"Master": rc(1, active=1, policy="Never"), "Worker": rc(2, active=2, policy="Never")},
        NoPods,
        [running(XGB, "x")],
        id="xgboost: master running, no Running condition yet",
    ),
    pytest.param(
        xgboost_job("x").master(1).workers(2).condition("Running", message="XGBoostJob x is running."),
        {"Master": rc(1, active=1, policy="Never"), "Worker": rc(2, active=2, policy="Never")},
        NoPods,
        [],
        id="xgboost: an existing Running condition is left alone",
    ),
    pytest.param(
        xgboost_job("x").master(1).workers(2),
        {"Master": rc(1, succeeded=1, policy="Never"), "Worker": rc(2, policy="Never")},
        NoPods,
        [running(XGB, "x"), succeeded(XGB, "XGBoostJob x is successfully completed.")],
        id="xgboost: master done sets Running first, then Succeeded",
    ),
    pytest.param(
        xgboost_job("x").master(1).workers(2).restart_policy("OnFailure"),
        {"Master": rc(1, active=1), "Worker": rc(2, active=2, failed=1)},
        NoPods,
        [running(XGB, "x"), failed(XGB, "XGBoostJob x is failed because 1 Worker replica(s) failed.")],
        id="xgboost: any failed pod fails the job, even under OnFailure (§9.7)",
    ),
    pytest.param(
        xgboost_job("x").master(1).workers(2).restart_policy("ExitCode"),
        {
            "Master": rc(1, active=1, policy="ExitCode"),
            "Worker": rc(2, active=1, failed=1, policy="ExitCode"),
        },
        NoPods,
        [
            running(XGB, "x"),
            restarting(XGB, "XGBoostJob x is restarting because 1 Worker replica(s) failed."),
        ],
        id="xgboost: ExitCode is the only policy that restarts",
    ),
    # --- Paddle ---
    pytest.param(
        paddle_job("p").master(1).workers(2),
        {"Master": rc(1, active=1), "Worker": rc(2, active=2)},
        NoPods,
        [running(PD, "p")],
        id="paddle PS mode: master running, <name> message",
    ),
    pytest.param(
        paddle_job("p").workers(2),
        {"Worker": rc(2, succeeded=2)},
        NoPods,
        [succeeded(PD, "PaddleJob default/p successfully completed.")],
        id="paddle collective: all workers done",
    ),
    pytest.param(
        paddle_job("p").workers(2).elastic(min=1, max=2),
        {"Worker": rc(2, active=1, succeeded=1)},
        NoPods,
        [running(PD, "default/p")],
        id="paddle: no elastic shortcut",
    ),
    pytest.param(
        paddle_job("p").workers(2),
        {"Worker": rc(2, active=1, failed=1, policy="Never")},
        NoPods,
        [running(PD, "default/p"), failed(PD, "PaddleJob p is failed because 1 Worker replica(s) failed.")],
        id="paddle Never failure",
    ),
    # --- JAX ---
    pytest.param(
        jax_job("j").workers(2),
        {"Worker": rc(2, active=2, policy="Never")},
        NoPods,
        [running(JX, "default/j")],
        id="jax running",
    ),
    pytest.param(
        jax_job("j").workers(2),
        {"Worker": rc(2, succeeded=2, policy="Never")},
        NoPods,
        [succeeded(JX, "JAXJob default/j successfully completed.")],
        id="jax: all workers done",
    ),
    pytest.param(
        jax_job("j").workers(2),
        {"Worker": rc(2, active=1, failed=1, policy="Never")},
        NoPods,
        [running(JX, "default/j"), failed(JX, "JAXJob j is failed because 1 Worker replica(s) failed.")],
        id="jax Never failure",
    ),
    pytest.param(
        jax_job("j").workers(2),
        {"Worker": rc(2, active=1, failed=1, policy="OnFailure")},
        NoPods,
        [
            running(JX, "default/j"),
            restarting(JX, "JAXJob j is restarting because 1 Worker replica(s) failed."),
        ],
        id="jax OnFailure failure restarts",
    ),
    # --- MPI ---
    pytest.param(
        mpi_job("m").launcher().workers(2),
        {"Launcher": rc(1, active=1, policy="Never"), "Worker": rc(2, active=2, policy="Never")},
        lambda j: [
            pod(j, "Launcher", 0).running().build(),
            pod(j, "Worker", 0).running().build(),
            pod(j, "Worker", 1).running().build(),
        ],
        [event("Normal", "MPIJobRunning", "MPIJob default/m is running"), running(MP, "m")],
        id="mpi: launcher and every worker running",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2),
        {"Launcher": rc(1, active=1, policy="Never"), "Worker": rc(2, active=1, policy="Never")},
        lambda j: [pod(j, "Launcher", 0).running().build(), pod(j, "Worker", 0).running().build()],
        [running(MP, "m")],
        id="mpi: a missing worker pod holds back the helper's running event",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2),
        {"Launcher": rc(1, succeeded=1, policy="Never"), "Worker": rc(2, policy="Never")},
        lambda j: [pod(j, "Launcher", 0).succeeded().build()],
        [
            event("Normal", "mpijobsSucceeded", "MPIJob default/m successfully completed."),
            succeeded(MP, "MPIJob m is successfully completed."),
        ],
        id="mpi: launcher done is success",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2),
        {"Launcher": rc(1, failed=1, policy="Never"), "Worker": rc(2, policy="Never")},
        lambda j: [pod(j, "Launcher", 0).failed(exit_code=1).build()],
        [
            event("Warning", "MPIJobFailed", "MPIJob default/m has failed"),
            failed(
                MP, "MPIJob m is failed because 1 Launcher replica(s) failed.", reason="MPIJobMPIJobFailed"
            ),
        ],
        id="mpi: launcher failed, reason MPIJobMPIJobFailed (§9.6)",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2),
        {"Launcher": rc(1, active=1, policy="Never"), "Worker": rc(2, active=1, failed=1, policy="Never")},
        lambda j: [
            pod(j, "Launcher", 0).running().build(),
            pod(j, "Worker", 0).running().build(),
            pod(j, "Worker", 1).failed(exit_code=137).reason("Evicted").build(),
        ],
        [
            event("Warning", "MPIJobEvicted", "1/2 workers are evicted"),
            running(MP, "m"),
            failed(MP, "MPIJob m is failed because 1 Worker replica(s) failed.", reason="MPIJobMPIJobFailed"),
        ],
        id="mpi: an evicted worker: eviction event, then the generic failure",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2).restart_policy("ExitCode"),
        {
            "Launcher": rc(1, active=1, policy="ExitCode"),
            "Worker": rc(2, active=1, failed=1, policy="ExitCode"),
        },
        lambda j: [pod(j, "Launcher", 0).running().build(), pod(j, "Worker", 0).running().build()],
        [running(MP, "m"), restarting(MP, "MPIJob m is restarting because 1 Worker replica(s) failed.")],
        id="mpi: ExitCode restarts",
    ),
]


@pytest.mark.parametrize(("builder", "counts", "pods", "want"), CASES)
def test_compute_conditions(
    builder: JobBuilder,
    counts: dict[str, ReplicaCounts],
    pods: Callable[[TrainingJob], list[dict[str, Any]]],
    want: list[ConditionUpdate],
) -> None:
    job = defaulted(builder)
    got = REGISTRY.get(job.kind).compute_conditions(job, with_pods(counts, pods(job)))
    assert got == want
