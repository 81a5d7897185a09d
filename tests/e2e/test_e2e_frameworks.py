"""Every framework trains for real on the local backend (issue 7).

Each example under examples/ runs as real host processes that find their peers only through the env
the operator injects (contract §3.5 to §3.9). A case checks the job's final conditions and replica
statuses, then the framework's own evidence: the JSON lines its replicas print (see each script).
The elastic PyTorch case, which kills a worker mid-run, is in test_e2e_pytorch_elastic.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from e2e_harness import (
    EXAMPLES,
    Report,
    events,
    log_tails,
    read_reports,
    require_command,
    require_module,
    run_example,
    succeeded_conditions,
    summarize_conditions,
    summarize_replicas,
    wait_for,
)

from trainop.backends.base import JobDetails
from trainop.backends.local.api import LocalBackend

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

JOB_TIMEOUT = 600.0  # generous: a CI machine of 2 cores may also be building the test control plane
LOOPBACK = "127.0.0.1"
PROCESS_EXIT_TIMEOUT = 120.0  # after the job finished: the last replicas end their training step

Evidence = Callable[[JobDetails, list[Report]], tuple[Any, Any]]  # → (want, got)


@dataclass(frozen=True, slots=True)
class Case:
    example: str  # path under examples/
    module: str  # must be importable here (the replicas use this interpreter)
    extra: str  # the pyproject extra that installs it: make extra-<extra>
    succeeded: dict[str, int]  # replicaStatuses[type].succeeded at the end
    evidence: Evidence
    commands: tuple[tuple[str, str], ...] = field(default=())  # (command, how to install it)


def all_exited(details: JobDetails) -> JobDetails | None:
    """``details`` once none of the job's processes is still running."""
    return None if any(p.finished_at is None for p in details.processes) else details


def replica_names(details: JobDetails) -> list[str]:
    """``worker-0``, ``chief-0``, … for every replica of the (explicit-replicas) example job."""
    return sorted(
        f"{rtype.lower()}-{i}"
        for rtype, rs in details.job.replica_specs.items()
        for i in range(rs.replicas or 0)
    )


def converged(r: Report) -> bool:
    return (
        float(r.data["max_error"]) < 0.01 and float(r.data["final_loss"]) < float(r.data["first_loss"]) / 100
    )


def tensorflow_evidence(details: JobDetails, reports: list[Report]) -> tuple[Any, Any]:
    """TensorFlow resolved the default TF_CONFIG layout: every type's host:port list (loopback and
    each replica's own port here) and this replica's task; all replicas ended with the same weights."""
    counts = {rtype: rs.replicas or 0 for rtype, rs in details.job.replica_specs.items()}
    cluster = {
        rtype.lower(): [f"{LOOPBACK}:{details.ports[(rtype, i)]}" for i in range(n)]
        for rtype, n in counts.items()
    }
    names = replica_names(details)
    want = {
        "resolved": {
            name: {
                "cluster_spec": cluster,
                "task": [name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1])],
                "num_replicas_in_sync": sum(counts.values()),
            }
            for name in names
        },
        "done": names,
        "distinct_weights": 1,
        "converged": True,
    }
    done = events(reports, "done")
    got = {
        "resolved": {
            r.replica: {
                "cluster_spec": r.data["cluster_spec"],
                "task": [r.data["task_type"], r.data["task_id"]],
                "num_replicas_in_sync": r.data["num_replicas_in_sync"],
            }
            for r in events(reports, "resolved")
        },
        "done": sorted(r.replica for r in done),
        "distinct_weights": len({r.data["weights_sha256"] for r in done}),
        "converged": bool(done) and all(converged(r) for r in done),
    }
    return want, got


def xgboost_evidence(details: JobDetails, reports: list[Report]) -> tuple[Any, Any]:
    """Master and Worker joined one collective (rank = RANK, allreduce of rank+1 = 3), trained on
    disjoint shards of all 455 training rows, and ended with byte-identical models."""
    done = events(reports, "done")
    want = {
        "joined": {
            "master-0": {"rank": 0, "collective_rank": 0, "world_size": 2, "allreduce": 3.0},
            "worker-0": {"rank": 1, "collective_rank": 1, "world_size": 2, "allreduce": 3.0},
        },
        "rows": 455,
        "distinct_models": 1,
        "accurate": True,
    }
    got = {
        "joined": {
            r.replica: {k: r.data[k] for k in ("rank", "collective_rank", "world_size", "allreduce")}
            for r in events(reports, "joined")
        },
        "rows": sum(int(r.data["rows"]) for r in done),
        "distinct_models": len({r.data["model_sha256"] for r in done}),
        "accurate": len(done) == 2 and all(float(r.data["test_accuracy"]) >= 0.9 for r in done),
    }
    return want, got


def jax_evidence(details: JobDetails, reports: list[Report]) -> tuple[Any, Any]:
    """Both processes formed one 2-device mesh; the cross-process all-reduce (1+2) and all-gather
    agree; the data-parallel regression converged to the same parameters on both."""
    done = events(reports, "done")
    joined = {"process_count": 2, "global_devices": 2, "allreduce_sum": 3.0, "allgather": [0, 1]}
    want = {
        "joined": {"worker-0": {**joined, "process_id": 0}, "worker-1": {**joined, "process_id": 1}},
        "done": ["worker-0", "worker-1"],
        "distinct_params": 1,
        "converged": True,
    }
    got = {
        "joined": {
            r.replica: {k: r.data[k] for k in (*joined, "process_id")} for r in events(reports, "joined")
        },
        "done": sorted(r.replica for r in done),
        "distinct_params": len({r.data["params_sha256"] for r in done}),
        "converged": bool(done) and all(converged(r) for r in done),
    }
    return want, got


def paddle_evidence(details: JobDetails, reports: list[Report]) -> tuple[Any, Any]:
    """paddle.distributed.launch formed one gloo group of 2 from PADDLE_MASTER/PADDLE_NNODES (which
    replica gets which rank is the launcher's choice); all_reduce gave 1+2; DataParallel training
    converged to the same weights on both ranks."""
    joined, done = events(reports, "joined"), events(reports, "done")
    want = {
        "ranks": [0, 1],
        "replicas": ["worker-0", "worker-1"],
        "joined": [{"world_size": 2, "allreduce_sum": 3.0, "backend": "gloo"}] * 2,
        "distinct_params": 1,
        "converged": True,
    }
    got = {
        "ranks": sorted(int(r.data["rank"]) for r in joined),
        "replicas": sorted(r.replica for r in joined),
        "joined": [{k: r.data[k] for k in ("world_size", "allreduce_sum", "backend")} for r in joined],
        "distinct_params": len({r.data["params_sha256"] for r in done}),
        "converged": len(done) == 2 and all(converged(r) for r in done),
    }
    return want, got


def mpi_evidence(details: JobDetails, reports: list[Report]) -> tuple[Any, Any]:
    """The launcher's mpirun started one rank in each Worker (through the hostfile and the local rsh
    agent: each rank reports the replica it runs in) and the allreduces are right."""
    workers = [f"{details.job.name}-worker-{i}" for i in range(2)]
    want = {
        rank: {"size": 2, "sum": 3, "expected_sum": 3, "vector": [0.0, 3.0, 6.0, 9.0], "hosts": workers}
        for rank in (0, 1)
    }
    got = {
        int(r.data["rank"]): {k: r.data[k] for k in ("size", "sum", "expected_sum", "vector")}
        | {"hosts": sorted(r.data["hosts"])}
        for r in events(reports, "allreduce")
        if r.replica == "launcher"
    }
    return want, got


CASES = [
    pytest.param(
        Case(
            "tensorflow/multi-worker/tfjob.yaml",
            "tensorflow",
            "tensorflow",
            {"Worker": 2},
            tensorflow_evidence,
        ),
        id="TFJob: 2 workers resolve TF_CONFIG and train in sync",
    ),
    pytest.param(
        Case(
            "tensorflow/multi-worker/tfjob-chief.yaml",
            "tensorflow",
            "tensorflow",
            {"Chief": 1, "Worker": 2},
            tensorflow_evidence,
        ),
        id="TFJob: a Chief and 2 workers resolve chief+worker clusters",
    ),
    pytest.param(
        Case("xgboost/xgboostjob.yaml", "xgboost", "xgboost", {"Master": 1, "Worker": 1}, xgboost_evidence),
        id="XGBoostJob: the master's tracker joins both ranks; same model everywhere",
    ),
    pytest.param(
        Case("jax/jaxjob.yaml", "jax", "jax", {"Worker": 2}, jax_evidence),
        id="JAXJob: jax.distributed on CPU, cross-process all-reduce",
    ),
    pytest.param(
        Case("paddle/paddlejob.yaml", "paddle", "paddle", {"Worker": 2}, paddle_evidence),
        id="PaddleJob: collective launch on CPU with gloo",
    ),
    pytest.param(
        Case(
            "mpi/mpijob.yaml",
            "mpi4py",
            "mpi",
            {"Launcher": 1, "Worker": 2},
            mpi_evidence,
            commands=(("mpirun", "make openmpi"),),
        ),
        id="MPIJob: mpirun reaches both workers through the rsh agent",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_example_trains(backend: LocalBackend, case: Case, request: pytest.FixtureRequest) -> None:
    require_module(case.module, case.extra)
    for command, install in case.commands:
        require_command(command, install)

    name, job = run_example(backend, EXAMPLES / case.example, request.node.callspec.id, JOB_TIMEOUT)
    details = backend.describe(name)
    tails = log_tails(backend, name)

    got_status = {"conditions": summarize_conditions(job), "replicas": summarize_replicas(job)}
    want_status = {
        "conditions": succeeded_conditions(job.kind),
        "replicas": {
            rtype: {"active": 0, "succeeded": n, "failed": 0} for rtype, n in case.succeeded.items()
        },
    }
    assert got_status == want_status, tails

    # The job may finish before every replica has: with a Chief it succeeds when the Chief does (§4.4)
    # and the Workers (cleanPodPolicy None) print their last evidence line just after. Read the logs
    # once every replica's processes have exited, so that line is there when it was printed at all.
    details = wait_for(
        lambda: all_exited(backend.describe(name)), "every replica's processes to exit", PROCESS_EXIT_TIMEOUT
    )
    want, got = case.evidence(details, read_reports(details))
    assert got == want, log_tails(backend, name)
