"""trainer.kubeflow.org/v1alpha1 models: parsing, defaults, validation messages and the CRDs.

The manifests are written in the shape of kubeflow/trainer@v2.3.0's own (examples/yaml/*.yaml,
manifests/base/runtimes/*.yaml); the messages are the API server's and the webhook's for the rules of
pkg/apis/trainer/v1alpha1 and pkg/webhooks/trainingruntime_webhook.go.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.crds import build_trainer_crd
from trainop.api.errors import InvalidJobError
from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import (
    default_runtime,
    default_trainjob,
    load_trainer_object,
    parse_trainer_object,
    validate_runtime,
    validate_trainjob,
)

RUNTIMES = Path(__file__).resolve().parents[3] / "manifests" / "runtimes"


def trainjob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    base.update(spec)
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "demo"},
        "spec": base,
    }


# The shape of kubeflow/trainer@v2.3.0 examples/yaml/05-multi-step.yaml's TrainingRuntime.
MULTI_STEP_RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "with-data", "labels": {"trainer.kubeflow.org/framework": "torch"}},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "dataset-initializer",
                        "template": {
                            "metadata": {
                                "labels": {
                                    "trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"
                                }
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {"name": "dataset-initializer", "image": "example/init"}
                                        ]
                                    }
                                }
                            },
                        },
                    },
                    {
                        "name": "node",
                        "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}],
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {"spec": {"containers": [{"name": "node", "image": "example/t"}]}}
                            },
                        },
                    },
                ]
            }
        },
    },
}


def test_trainjob_round_trips_every_field() -> None:
    doc = trainjob(
        initializer={
            "dataset": {"storageUri": "hf://org/data", "env": [{"name": "A", "value": "1"}]},
            "model": {"storageUri": "s3://bucket/m", "secretRef": {"name": "creds"}},
        },
        trainer={
            "image": "img",
            "command": ["torchrun", "train.py"],
            "args": ["--epochs", "1"],
            "env": [{"name": "B", "value": "2"}],
            "numNodes": 2,
            "resourcesPerNode": {"limits": {"cpu": "2"}},
            "numProcPerNode": 2,
        },
        runtimePatches=[
            {
                "manager": "example.com/me",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ],
        suspend=True,
        activeDeadlineSeconds=60,
        managedBy="kueue.x-k8s.io/multikueue",
    )
    job = parse_trainer_object(doc)
    assert isinstance(job, TrainJob)
    assert job.to_dict() == doc
    assert validate_trainjob(job) == []


def test_defaults() -> None:
    job = parse_trainer_object(trainjob())
    assert isinstance(job, TrainJob)
    got = default_trainjob(job).to_dict()["spec"]
    assert got == {
        "runtimeRef": {
            "name": "torch-distributed",
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
        },
        "suspend": False,
        "managedBy": "trainer.kubeflow.org/trainjob-controller",
    }
    assert job.spec.suspend is None, "defaulting copies"


def test_runtime_defaults_mpi_and_coscheduling() -> None:
    doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "m"},
        "spec": {"mlPolicy": {"mpi": {}}, "podGroupPolicy": {"coscheduling": {}}},
    }
    rt = parse_trainer_object(doc)
    assert isinstance(rt, TrainingRuntime)
    got = default_runtime(rt).to_dict()["spec"]
    assert got == {
        "mlPolicy": {
            "mpi": {
                "numProcPerNode": 1,
                "mpiImplementation": "OpenMPI",
                "sshAuthMountPath": "/root/.ssh",
                "runLauncherAsNode": False,
            }
        },
        "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 60}},
    }


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "want"),
    [
        pytest.param(
            "metadata.name",
            "Demo",
            ['Invalid value: "object": metadata.name must match RFC 1035 DNS label format'],
            id="name not an RFC 1035 label",
        ),
        pytest.param(
            "metadata.name",
            "a" * 64,
            ['Invalid value: "object": metadata.name must be no more than 63 characters'],
            id="name too long",
        ),
        pytest.param("spec.runtimeRef", None, ["spec.runtimeRef: Required value"], id="no runtimeRef"),
        pytest.param(
            "spec.runtimeRef",
            {"name": ""},
            [
                'spec.runtimeRef.name: Invalid value: "": spec.runtimeRef.name in body should be at least '
                "1 chars long"
            ],
            id="empty runtime name",
        ),
        pytest.param(
            "spec.activeDeadlineSeconds",
            0,
            [
                "spec.activeDeadlineSeconds: Invalid value: 0: spec.activeDeadlineSeconds in body should be "
                "greater than or equal to 1"
            ],
            id="deadline below 1",
        ),
        pytest.param(
            "spec.managedBy",
            "me",
            [
                'spec.managedBy: Invalid value: "string": ManagedBy must be '
                "trainer.kubeflow.org/trainjob-controller "
                "or kueue.x-k8s.io/multikueue if set"
            ],
            id="unknown managedBy",
        ),
        pytest.param(
            "spec.trainer",
            {"numProcPerNode": 0},
            [
                'spec.trainer.numProcPerNode: Invalid value: "integer": numProcPerNode must be greater '
                "than or equal to 1"
            ],
            id="numProcPerNode below 1",
        ),
        pytest.param(
            "spec.trainer",
            {"numNodes": -1},
            [
                "spec.trainer.numNodes: Invalid value: -1: spec.trainer.numNodes in body should be greater "
                "than or equal to 0"
            ],
            id="negative numNodes",
        ),
        pytest.param(
            "spec.initializer",
            {"model": {"storageUri": "just-a-path"}},
            [
                'spec.initializer.model.storageUri: Invalid value: "string": storageUri may be empty, or '
                "it must be a "
                "valid URI (scheme://...)"
            ],
            id="storageUri without a scheme",
        ),
        pytest.param(
            "spec.runtimePatches",
            [{"manager": "nodomain"}],
            [
                'spec.runtimePatches.manager: Invalid value: "nodomain": must be a domain-prefixed path '
                "(such as "
                '"acme.io/foo")'
            ],
            id="manager not domain-prefixed",
        ),
        pytest.param(
            "spec.trainer",
            {"env": [{"name": "A"}, {"name": "A"}]},
            ['spec.trainer.env[1]: Duplicate value: {"name":"A"}'],
            id="duplicate env name",
        ),
    ],
)
def test_trainjob_rules(path: str, value: Any, want: list[str]) -> None:
    doc = trainjob()
    if value is None:
        parent, _, leaf = path.rpartition(".")
        node: Any = doc
        for part in parent.split("."):
            node = node[part]
        del node[leaf]
    else:
        doc = _set(doc, path, value)
    job = parse_trainer_object(doc)
    assert isinstance(job, TrainJob)
    assert [str(e) for e in validate_trainjob(job)] == want


def test_immutable_fields_on_update() -> None:
    old = parse_trainer_object(trainjob(trainer={"numNodes": 1}))
    new = parse_trainer_object(trainjob(trainer={"numNodes": 2}, suspend=True))
    assert isinstance(old, TrainJob) and isinstance(new, TrainJob)
    assert [str(e) for e in validate_trainjob(new, old)] == [
        'spec.trainer: Invalid value: "object": field is immutable'
    ]


def test_bad_types_are_field_errors() -> None:
    with pytest.raises(InvalidJobError) as exc:
        parse_trainer_object(trainjob(trainer={"numNodes": "2"}))
    assert [str(e) for e in exc.value.errors] == [
        'spec.trainer.numNodes: Invalid value: "2": must be an integer: write 2 without quotes'
    ]


def test_wrong_api_version() -> None:
    doc = trainjob()
    doc["apiVersion"] = "kubeflow.org/v1"
    with pytest.raises(InvalidJobError) as exc:
        parse_trainer_object(doc)
    assert str(exc.value.errors[0]) == (
        'apiVersion: Unsupported value: "kubeflow.org/v1": supported values: "trainer.kubeflow.org/v1alpha1"'
    )


@pytest.mark.parametrize(
    ("edit", "want"),
    [
        pytest.param(lambda d: d, [], id="upstream's multi-step runtime is valid"),
        pytest.param(
            lambda d: _set(
                d,
                "spec.template.spec.replicatedJobs",
                [{**d["spec"]["template"]["spec"]["replicatedJobs"][1], "replicas": 2, "dependsOn": None}],
            ),
            ["spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"],
            id="trainer job with two replicas",
        ),
        pytest.param(
            lambda d: _set(
                d,
                "spec.template.spec.replicatedJobs",
                [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {"template": {"spec": {"containers": [{"name": "main"}]}}},
                        },
                    }
                ],
            ),
            [
                "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: "
                '[{"name":"main"}]: must contain the required container for the ancestor: trainer'
            ],
            id="trainer job without a node container",
        ),
        pytest.param(
            lambda d: _set(d, "spec.mlPolicy", {"torch": {}, "mpi": {}}),
            ['spec.mlPolicy: Invalid value: "object": Only one of the policy can be configured'],
            id="two ML policies",
        ),
        pytest.param(
            lambda d: _set(d, "spec.mlPolicy", {"mpi": {"mpiImplementation": "Intel"}}),
            [
                'spec.mlPolicy.mpi.mpiImplementation: Unsupported value: "Intel": supported values: '
                '"OpenMPI", ""'
            ],
            id="MPI implementation the CRD refuses",
        ),
    ],
)
def test_runtime_rules(edit: Any, want: list[str]) -> None:
    rt = parse_trainer_object(edit(copy.deepcopy(MULTI_STEP_RUNTIME)))
    assert isinstance(rt, TrainingRuntime)
    assert [str(e) for e in validate_runtime(rt)] == want


def test_load_reports_every_error_at_once() -> None:
    doc = trainjob(activeDeadlineSeconds=0, managedBy="x")
    with pytest.raises(InvalidJobError) as exc:
        load_trainer_object(doc)
    assert [e.path for e in exc.value.errors] == ["spec.activeDeadlineSeconds", "spec.managedBy"]
    assert "TrainJob 'demo' is invalid" in str(exc.value)


@pytest.mark.parametrize("kind", ["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"])
def test_crd_shape(kind: str) -> None:
    crd = build_trainer_crd(kind)
    assert crd["spec"]["group"] == "trainer.kubeflow.org"
    assert crd["spec"]["scope"] == ("Cluster" if kind == "ClusterTrainingRuntime" else "Namespaced")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    text = yaml.safe_dump(schema)
    assert "$ref" not in text and "anyOf" not in text
    if kind == "TrainJob":
        spec = schema["properties"]["spec"]
        assert spec["required"] == ["runtimeRef"]
        assert spec["properties"]["suspend"]["default"] is False
        assert spec["properties"]["runtimeRef"]["properties"]["kind"]["default"] == "ClusterTrainingRuntime"
        assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    else:
        template_spec = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
        assert template_spec["x-kubernetes-preserve-unknown-fields"] is True
