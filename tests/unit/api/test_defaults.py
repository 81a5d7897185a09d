"""apply_defaults against contract §1.4 (steps 1-7): whole-object comparisons, input never mutated."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainop.api.defaults import apply_defaults, container_port, default_container
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job


def c(name: str, *ports: tuple[str, int], image: str = "img") -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image}
    if ports:
        container["ports"] = [{"name": n, "containerPort": p} for n, p in ports]
    return container


def rs(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**fields, "template": {"spec": {"containers": list(containers)}}}


def job(kind: str, specs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "a"},
        "spec": {**spec, KIND_INFO[kind].replica_map: specs},
    }


NONE = {"cleanPodPolicy": "None"}


CASES = [
    pytest.param(
        job("PyTorchJob", {"Master": rs(c("pytorch")), "Worker": rs(c("pytorch"), replicas=3)}),
        job(
            "PyTorchJob",
            {
                "Master": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=1, restartPolicy="OnFailure"),
                "Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=3, restartPolicy="OnFailure"),
            },
            runPolicy=NONE,
            nprocPerNode="auto",
        ),
        id="pytorch: cleanPodPolicy None, replicas 1, OnFailure, port 23456 appended, nprocPerNode auto",
    ),
    pytest.param(
        job("PyTorchJob", {"master": rs(c("pytorch")), "WORKER": rs(c("pytorch"))}),
        job(
            "PyTorchJob",
            {
                "Master": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=1, restartPolicy="OnFailure"),
                "Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=1, restartPolicy="OnFailure"),
            },
            runPolicy=NONE,
            nprocPerNode="auto",
        ),
        id="replica keys are normalised case-insensitively",
    ),
    pytest.param(
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 1234)), replicas=2, restartPolicy="ExitCode")},
            runPolicy={"cleanPodPolicy": "All", "backoffLimit": 3},
            nprocPerNode="2",
        ),
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 1234)), replicas=2, restartPolicy="ExitCode")},
            runPolicy={"cleanPodPolicy": "All", "backoffLimit": 3},
            nprocPerNode="2",
        ),
        id="values the user set are kept; an existing port of that name is not duplicated",
    ),
    pytest.param(
        job("PyTorchJob", {"Worker": rs(c("sidecar"), c("pytorch", ("http", 80)))}),
        job(
            "PyTorchJob",
            {
                "Worker": rs(
                    c("sidecar"),
                    {
                        "name": "pytorch",
                        "image": "img",
                        "ports": [
                            {"name": "http", "containerPort": 80},
                            {"name": "pytorchjob-port", "containerPort": 23456},
                        ],
                    },
                    replicas=1,
                    restartPolicy="OnFailure",
                )
            },
            runPolicy=NONE,
            nprocPerNode="auto",
        ),
        id="the port goes to the default-named container, after its other ports",
    ),
    pytest.param(
        job("PyTorchJob", {"Worker": rs(c("main"), c("other"))}),
        job(
            "PyTorchJob",
            {
                "Worker": rs(
                    c("main", ("pytorchjob-port", 23456)), c("other"), replicas=1, restartPolicy="OnFailure"
                )
            },
            runPolicy=NONE,
            nprocPerNode="auto",
        ),
        id="no default-named container: the port goes to container 0",
    ),
    pytest.param(
        job("PyTorchJob", {"Worker": rs(c("pytorch"), replicas=4)}, elasticPolicy={"maxReplicas": 6}),
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=4, restartPolicy="OnFailure")},
            runPolicy=NONE,
            elasticPolicy={"minReplicas": 6, "maxReplicas": 6},
            nprocPerNode="auto",
        ),
        id="elastic: only max set gives min = max",
    ),
    pytest.param(
        job("PyTorchJob", {"Worker": rs(c("pytorch"), replicas=4)}, elasticPolicy={"minReplicas": 2}),
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=4, restartPolicy="OnFailure")},
            runPolicy=NONE,
            elasticPolicy={"minReplicas": 2, "maxReplicas": 2},
            nprocPerNode="auto",
        ),
        id="elastic: only min set gives max = min",
    ),
    pytest.param(
        job("PyTorchJob", {"worker": rs(c("pytorch"), replicas=4)}, elasticPolicy={"rdzvBackend": "c10d"}),
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=4, restartPolicy="OnFailure")},
            runPolicy=NONE,
            elasticPolicy={"rdzvBackend": "c10d", "minReplicas": 4, "maxReplicas": 4},
            nprocPerNode="auto",
        ),
        id="elastic: neither set gives both = Worker replicas (after key normalisation)",
    ),
    pytest.param(
        job("PyTorchJob", {"Worker": rs(c("pytorch"))}, elasticPolicy={"minReplicas": 1, "nProcPerNode": 2}),
        job(
            "PyTorchJob",
            {"Worker": rs(c("pytorch", ("pytorchjob-port", 23456)), replicas=1, restartPolicy="OnFailure")},
            runPolicy=NONE,
            elasticPolicy={"minReplicas": 1, "maxReplicas": 1, "nProcPerNode": 2},
        ),
        id="deprecated elasticPolicy.nProcPerNode set: nprocPerNode stays unset",
    ),
    pytest.param(
        job(
            "TFJob",
            {
                "ps": rs(c("tensorflow")),
                "chief": rs(c("tensorflow")),
                "Worker": rs(c("tensorflow"), replicas=2),
            },
        ),
        job(
            "TFJob",
            {
                "PS": rs(c("tensorflow", ("tfjob-port", 2222)), replicas=1, restartPolicy="Never"),
                "Chief": rs(c("tensorflow", ("tfjob-port", 2222)), replicas=1, restartPolicy="Never"),
                "Worker": rs(c("tensorflow", ("tfjob-port", 2222)), replicas=2, restartPolicy="Never"),
            },
            runPolicy=NONE,
            successPolicy="",
        ),
        id="tf: successPolicy empty, ps -> PS, chief -> Chief, Never, port 2222",
    ),
    pytest.param(
        job("TFJob", {"Evaluator": rs(c("tensorflow"))}, successPolicy="AllWorkers"),
        job(
            "TFJob",
            {"Evaluator": rs(c("tensorflow", ("tfjob-port", 2222)), replicas=1, restartPolicy="Never")},
            runPolicy=NONE,
            successPolicy="AllWorkers",
        ),
        id="tf: successPolicy kept when set",
    ),
    pytest.param(
        job("XGBoostJob", {"Master": rs(c("xgboost")), "Worker": rs(c("xgboost"), replicas=2)}),
        job(
            "XGBoostJob",
            {
                "Master": rs(c("xgboost", ("xgboostjob-port", 9999)), replicas=1, restartPolicy="Never"),
                "Worker": rs(c("xgboost", ("xgboostjob-port", 9999)), replicas=2, restartPolicy="Never"),
            },
            runPolicy=NONE,
        ),
        id="xgboost: Never, port 9999",
    ),
    pytest.param(
        job("PaddleJob", {"Worker": rs(c("paddle"), replicas=2)}, elasticPolicy={"maxReplicas": 3}),
        job(
            "PaddleJob",
            {"Worker": rs(c("paddle", ("master", 36543)), replicas=2, restartPolicy="OnFailure")},
            runPolicy=NONE,
            elasticPolicy={"minReplicas": 3, "maxReplicas": 3},
        ),
        id="paddle: OnFailure, port named master 36543, elastic min from max",
    ),
    pytest.param(
        job("JAXJob", {"worker": rs(c("jax"))}),
        job(
            "JAXJob",
            {"Worker": rs(c("jax", ("jaxjob-port", 6666)), replicas=1, restartPolicy="Never")},
            runPolicy=NONE,
        ),
        id="jax: Never, port 6666",
    ),
    pytest.param(
        job("MPIJob", {"Launcher": rs(c("mpi")), "Worker": rs(c("mpi"))}),
        job(
            "MPIJob",
            {
                "Launcher": rs(c("mpi"), replicas=1, restartPolicy="Never"),
                "Worker": rs(c("mpi"), replicas=0, restartPolicy="Never"),
            },
            runPolicy=NONE,
            cleanPodPolicy="None",
        ),
        id="mpi: Launcher 1, Worker 0, no port, both cleanPodPolicy fields None",
    ),
    pytest.param(
        job("MPIJob", {"launcher": rs(c("mpi")), "Worker": rs(c("mpi"), replicas=2)}),
        job(
            "MPIJob",
            {"launcher": rs(c("mpi")), "Worker": rs(c("mpi"), replicas=2, restartPolicy="Never")},
            runPolicy=NONE,
            cleanPodPolicy="None",
        ),
        id="mpi: keys are not normalised and unknown keys are not defaulted",
    ),
    pytest.param(
        job("MPIJob", {"Launcher": rs(c("mpi"))}, cleanPodPolicy="Running"),
        job(
            "MPIJob",
            {"Launcher": rs(c("mpi"), replicas=1, restartPolicy="Never")},
            runPolicy={"cleanPodPolicy": "Running"},
            cleanPodPolicy="Running",
        ),
        id="mpi: deprecated spec.cleanPodPolicy alone is copied to runPolicy",
    ),
    pytest.param(
        job(
            "MPIJob",
            {"Launcher": rs(c("mpi"))},
            cleanPodPolicy="Running",
            runPolicy={"cleanPodPolicy": "All"},
        ),
        job(
            "MPIJob",
            {"Launcher": rs(c("mpi"), replicas=1, restartPolicy="Never")},
            runPolicy={"cleanPodPolicy": "All"},
            cleanPodPolicy="All",
        ),
        id="mpi: runPolicy.cleanPodPolicy wins over the deprecated field",
    ),
]


@pytest.mark.parametrize(("raw", "want"), CASES)
def test_apply_defaults(raw: dict[str, Any], want: dict[str, Any]) -> None:
    original = copy.deepcopy(raw)
    job_in = parse_job(raw)
    got = apply_defaults(job_in)
    assert got.to_dict() == want
    assert job_in.to_dict() == original, "the input job must not change"
    assert raw == original, "the parsed dict must not change"
    assert apply_defaults(got).to_dict() == want, "defaulting twice changes nothing"


def test_runpolicy_kept_fields_and_status_survive() -> None:
    raw = job(
        "PyTorchJob",
        {"Worker": rs(c("pytorch"))},
        runPolicy={"suspend": True, "schedulingPolicy": {"queue": "q"}},
    )
    raw["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    got = apply_defaults(parse_job(raw)).to_dict()
    assert got["spec"]["runPolicy"] == {
        "cleanPodPolicy": "None",
        "suspend": True,
        "schedulingPolicy": {"queue": "q"},
    }
    assert got["status"] == raw["status"]


def test_defaulted_template_is_a_copy() -> None:
    job_in = parse_job(job("PyTorchJob", {"Worker": rs(c("pytorch"))}))
    got = apply_defaults(job_in)
    got.replica_specs["Worker"].containers[0]["image"] = "changed"
    assert job_in.replica_specs["Worker"].containers[0]["image"] == "img"
    assert "ports" not in job_in.replica_specs["Worker"].containers[0]


LOOKUPS = [
    pytest.param(
        rs(c("pytorch", ("pytorchjob-port", 29500))), None, "pytorch", 29500, id="default port name"
    ),
    pytest.param(rs(c("pytorch", ("metrics", 9090))), "metrics", "pytorch", 9090, id="named port"),
    pytest.param(rs(c("pytorch", ("metrics", 9090))), None, "pytorch", None, id="no port of that name"),
    pytest.param(
        rs(c("main", ("pytorchjob-port", 1))), None, None, None, id="only the default-named container counts"
    ),
    pytest.param(rs(c("x"), c("pytorch", ("pytorchjob-port", 2))), None, "pytorch", 2, id="second container"),
]


@pytest.mark.parametrize(("spec", "port_name", "want_container", "want_port"), LOOKUPS)
def test_container_lookups(
    spec: dict[str, Any], port_name: str | None, want_container: str | None, want_port: int | None
) -> None:
    info = KIND_INFO["PyTorchJob"]
    replica = parse_job(job("PyTorchJob", {"Worker": spec})).replica_specs["Worker"]
    container = default_container(replica, info)
    assert (container or {}).get("name") == want_container
    assert container_port(replica, info, port_name) == want_port
