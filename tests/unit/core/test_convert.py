"""``trainop convert``'s core: a kubeflow.org/v1 job → a TrainJob on the matching runtime, whole
manifests compared, and the notes for what has no TrainJob field (docs/v1-to-v2.md)."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.load import parse_job
from trainop.api.trainer import TrainJob
from trainop.api.trainer_rules import parse_trainer_object, validate_trainjob
from trainop.core.convert import NoTrainJobEquivalentError, build_trainjob
from trainop.frameworks.registry import REGISTRY


def _container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "img:1", **extra}


def _job(kind: str, field: str, replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "j", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {field: replicas, **spec},
    }


def convert(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    job = parse_job(doc)
    conv = build_trainjob(job, REGISTRY.get(job.kind))
    parsed = parse_trainer_object(conv.trainjob)
    assert isinstance(parsed, TrainJob)
    assert validate_trainjob(parsed) == [], "the output is a valid TrainJob"
    return conv.trainjob, conv.notes


def test_pytorchjob_master_and_workers() -> None:
    template = {
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {
            "containers": [
                _container(
                    "pytorch",
                    command=["python", "train.py"],
                    args=["--lr", "0.1"],
                    env=[{"name": "EPOCHS", "value": "3"}],
                    resources={"limits": {"cpu": "2"}},
                    volumeMounts=[{"name": "data", "mountPath": "/data"}],
                    ports=[{"containerPort": 23456, "name": "pytorchjob-port"}],
                )
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "nodeSelector": {"pool": "cpu"},
        },
    }
    doc = _job(
        "PyTorchJob",
        "pytorchReplicaSpecs",
        {"Master": {"replicas": 1, "template": template}, "Worker": {"replicas": 3, "template": template}},
        nprocPerNode="2",
        runPolicy={"suspend": True, "activeDeadlineSeconds": 600, "backoffLimit": 3},
    )
    got, notes = convert(doc)
    assert got == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
                "name": "torch-distributed",
            },
            "trainer": {
                "image": "img:1",
                "command": ["torchrun", "--no-python", "python", "train.py"],
                "args": ["--lr", "0.1"],
                "numNodes": 4,
                "numProcPerNode": 2,
                "env": [{"name": "EPOCHS", "value": "3"}],
                "resourcesPerNode": {"limits": {"cpu": "2"}},
            },
            "runtimePatches": [
                {
                    "manager": "trainer.kubeflow.org/trainop-convert",
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {
                                            "spec": {
                                                "template": {
                                                    "metadata": {
                                                        "annotations": {"sidecar.istio.io/inject": "false"}
                                                    },
                                                    "spec": {
                                                        "volumes": [{"name": "data", "emptyDir": {}}],
                                                        "nodeSelector": {"pool": "cpu"},
                                                        "containers": [
                                                            {
                                                                "name": "node",
                                                                "volumeMounts": [
                                                                    {"name": "data", "mountPath": "/data"}
                                                                ],
                                                            }
                                                        ],
                                                    },
                                                }
                                            }
                                        },
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
            "suspend": True,
            "activeDeadlineSeconds": 600,
        },
    }
    assert notes == [
        "command: 'python' ran once per pod with the operator's rank variables; under the torch-distributed "
        "runtime it runs under torchrun --no-python, which gives each process the same variables",
        "runPolicy.backoffLimit 3: no TrainJob field (the runtime's Job templates set backoffLimit; JobSet's "
        "failurePolicy.maxRestarts restarts the whole job)",
    ]


@pytest.mark.parametrize(
    ("doc", "runtime", "nodes", "nproc"),
    [
        pytest.param(
            _job(
                "PyTorchJob",
                "pytorchReplicaSpecs",
                {
                    "Worker": {
                        "replicas": 2,
                        "template": {
                            "spec": {"containers": [_container("pytorch", command=["torchrun", "t.py"])]}
                        },
                    }
                },
            ),
            "torch-distributed",
            2,
            1,
            id="PyTorchJob without Master, torchrun kept",
        ),
        pytest.param(
            _job(
                "JAXJob",
                "jaxReplicaSpecs",
                {
                    "Worker": {
                        "replicas": 3,
                        "template": {"spec": {"containers": [_container("jax", command=["python", "t.py"])]}},
                    }
                },
            ),
            "jax-distributed",
            3,
            None,
            id="JAXJob",
        ),
        pytest.param(
            _job(
                "XGBoostJob",
                "xgbReplicaSpecs",
                {
                    "Master": {
                        "replicas": 1,
                        "template": {
                            "spec": {"containers": [_container("xgboost", command=["python", "t.py"])]}
                        },
                    },
                    "Worker": {
                        "replicas": 2,
                        "template": {
                            "spec": {"containers": [_container("xgboost", command=["python", "t.py"])]}
                        },
                    },
                },
            ),
            "xgboost-distributed",
            3,
            None,
            id="XGBoostJob",
        ),
        pytest.param(
            _job(
                "MPIJob",
                "mpiReplicaSpecs",
                {
                    "Launcher": {
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    _container("mpi", command=["mpirun", "-n", "4", "python", "t.py"])
                                ]
                            }
                        },
                    },
                    "Worker": {"replicas": 2, "template": {"spec": {"containers": [_container("mpi")]}}},
                },
                slotsPerWorker=2,
            ),
            "deepspeed-distributed",
            3,
            2,
            id="MPIJob: launcher as a node",
        ),
    ],
)
def test_each_framework_gets_its_runtime(
    doc: dict[str, Any], runtime: str, nodes: int, nproc: int | None
) -> None:
    got, _ = convert(doc)
    spec = got["spec"]
    assert spec["runtimeRef"]["name"] == runtime
    assert spec["trainer"]["numNodes"] == nodes
    assert spec["trainer"].get("numProcPerNode") == nproc
    assert spec["trainer"]["command"][0] in ("torchrun", "python", "mpirun")


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(
            _job(
                "TFJob",
                "tfReplicaSpecs",
                {"Worker": {"replicas": 1, "template": {"spec": {"containers": [_container("tensorflow")]}}}},
            ),
            id="TFJob",
        ),
        pytest.param(
            _job(
                "PaddleJob",
                "paddleReplicaSpecs",
                {"Worker": {"replicas": 1, "template": {"spec": {"containers": [_container("paddle")]}}}},
            ),
            id="PaddleJob",
        ),
    ],
)
def test_no_v2_runtime(doc: dict[str, Any]) -> None:
    job = parse_job(doc)
    with pytest.raises(NoTrainJobEquivalentError) as exc:
        build_trainjob(job, REGISTRY.get(job.kind))
    assert f"{job.kind} has no Kubeflow Trainer v2 runtime" in str(exc.value)
    assert "kubeflow/trainer#2699" in str(exc.value)


def test_differing_templates_and_dropped_fields_are_noted() -> None:
    master = {
        "spec": {
            "containers": [_container("pytorch", command=["torchrun", "t.py"], workingDir="/w")],
            "hostNetwork": True,
        }
    }
    worker = {"spec": {"containers": [_container("pytorch", command=["torchrun", "t.py"], image="other")]}}
    doc = _job(
        "PyTorchJob",
        "pytorchReplicaSpecs",
        {"Master": {"replicas": 1, "template": master}, "Worker": {"replicas": 1, "template": worker}},
        nprocPerNode="auto",
        runPolicy={"cleanPodPolicy": "All", "schedulingPolicy": {"minAvailable": 2}},
    )
    got, notes = convert(doc)
    assert "numProcPerNode" not in got["spec"]["trainer"]
    assert notes == [
        "nprocPerNode 'auto': numProcPerNode takes a number; unset, the torch policy counts the GPUs "
        "(or CPUs) of resourcesPerNode",
        "container pytorch: workingDir has no TrainJob field; it is dropped",
        "Worker: its pod template differs from Master's; a TrainJob has one template for every node, so "
        "Master's is used",
        "pod spec: hostNetwork is not among the fields a runtime patch may set; it is dropped",
        "runPolicy.cleanPodPolicy All: no TrainJob field",
        "runPolicy.schedulingPolicy: no TrainJob field; gang scheduling is the runtime's podGroupPolicy "
        "(coscheduling or volcano)",
    ]
