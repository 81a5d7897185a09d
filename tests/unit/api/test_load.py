"""Parsing manifests: round trips keep every field; bad input gives field paths, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.errors import InvalidJobError
from trainop.api.load import load_jobs, parse_job
from trainop.api.validation import validate_for_apply
from trainop.testing.builders import mpi_job, pytorch_job, tf_job

FULL_PYTORCH = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {
        "name": "full",
        "namespace": "team",
        "labels": {"app": "x"},
        "annotations": {"a": "b"},
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
    },
    "spec": {
        "runPolicy": {
            "cleanPodPolicy": "All",
            "ttlSecondsAfterFinished": 60,
            "activeDeadlineSeconds": 3600,
            "backoffLimit": 2,
            "suspend": False,
            "managedBy": "kubeflow.org/training-operator",
            "schedulingPolicy": {
                "minAvailable": 2,
                "queue": "q",
                "minResources": {"cpu": "4", "memory": "1Gi"},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 30,
            },
        },
        "elasticPolicy": {
            "minReplicas": 1,
            "maxReplicas": 3,
            "rdzvBackend": "c10d",
            "rdzvPort": 29400,
            "rdzvHost": "h",
            "rdzvId": "id",
            "rdzvConf": [{"key": "timeout", "value": "900"}],
            "standalone": True,
            "maxRestarts": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                }
            ],
        },
        "nprocPerNode": "auto",
        "pytorchReplicaSpecs": {
            "Worker": {
                "replicas": 2,
                "restartPolicy": "OnFailure",
                "template": {
                    "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "img",
                                "resources": {"limits": {"nvidia.com/gpu": 1}},
                                "volumeMounts": [{"name": "d", "mountPath": "/d"}],
                                "someFutureField": {"x": [1, 2]},
                            }
                        ],
                        "volumes": [{"name": "d", "emptyDir": {}}],
                        "nodeSelector": {"k": "v"},
                    },
                },
            }
        },
    },
    "status": {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "message": "m",
                "lastUpdateTime": "2024-01-01T00:00:00Z",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
        "replicaStatuses": {"Worker": {"active": 2, "selector": "a=b"}},
        "startTime": "2024-01-01T00:00:00Z",
    },
}


ROUND_TRIPS = [
    pytest.param(FULL_PYTORCH, id="every PyTorchJob field, status and unknown pod-template fields"),
    pytest.param(
        tf_job("t").ps(1).workers(2).success_policy("AllWorkers").dynamic_worker().build_dict(), id="tf"
    ),
    pytest.param(
        mpi_job("m").launcher(1).workers(2).slots_per_worker(4).spec(main_container="mpi").build_dict(),
        id="mpi",
    ),
    pytest.param(
        {**pytorch_job("p").workers(1).build_dict(), "extraTopLevel": 1},
        id="unknown fields are kept, so validation can report them",
    ),
]


@pytest.mark.parametrize("raw", ROUND_TRIPS)
def test_round_trip(raw: dict[str, Any]) -> None:
    job = parse_job(raw)
    dumped = job.to_dict()
    assert dumped == raw
    assert parse_job(dumped) == job


def test_multi_document_yaml() -> None:
    text = """
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: a}
spec: {jaxReplicaSpecs: {Worker: {replicas: 2, template: {spec: {containers: [{name: jax, image: i}]}}}}}
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: b}
spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}}}
"""
    assert [(j.kind, j.name) for j in load_jobs(text)] == [("JAXJob", "a"), ("TFJob", "b")]


def _with(path: str, value: Any) -> dict[str, Any]:
    d = pytorch_job("a").master(1).workers(2).build_dict()
    node: Any = d
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return d


PARSE_ERRORS = [
    pytest.param(
        _with("spec.pytorchReplicaSpecs.Worker.replicas", "2"),
        [
            'spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: "2": must be an integer: write 2 '
            "without quotes"
        ],
        id="replicas as a string (Kubernetes rejects it too)",
    ),
    pytest.param(
        _with("spec.pytorchReplicaSpecs.Worker.replicas", 2.5),
        ["spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2.5: must be an integer"],
        id="replicas as a float",
    ),
    pytest.param(
        _with("spec.pytorchReplicaSpecs.Worker.replicas", 2**31),
        [
            "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2147483648: must be less than or "
            "equal to 2147483647"
        ],
        id="replicas beyond int32",
    ),
    pytest.param(
        _with("spec.runPolicy", {"suspend": "true"}),
        ['spec.runPolicy.suspend: Invalid value: "true": must be a boolean: write true without quotes'],
        id="suspend as a string",
    ),
    pytest.param(
        _with("spec.runPolicy", {"backoffLimit": True}),
        ["spec.runPolicy.backoffLimit: Invalid value: true: must be an integer"],
        id="backoffLimit as a boolean",
    ),
    pytest.param(
        _with("spec.nprocPerNode", 4),
        ['spec.nprocPerNode: Invalid value: 4: must be a string: quote it, "4"'],
        id="nprocPerNode as a number",
    ),
    pytest.param(
        _with("spec.pytorchReplicaSpecs.Worker", None),
        ['spec.pytorchReplicaSpecs[Worker]: Invalid value: "null": must be an object (a mapping of fields)'],
        id="replica spec null",
    ),
    pytest.param(
        _with("spec.pytorchReplicaSpecs.Worker.template", ["x"]),
        [
            'spec.pytorchReplicaSpecs[Worker].template: Invalid value: ["x"]: must be an object (a '
            "mapping of fields)"
        ],
        id="template a list",
    ),
    pytest.param(
        _with("spec.elasticPolicy", {"rdzvConf": {"key": "a"}}),
        ['spec.elasticPolicy.rdzvConf: Invalid value: {"key":"a"}: must be a list'],
        id="rdzvConf a mapping",
    ),
    pytest.param(
        _with("status", {"conditions": [{"status": "True"}]}),
        ["status.conditions[0].type: Required value"],
        id="condition without type",
    ),
    pytest.param(
        _with("metadata.creationTimestamp", "yesterday"),
        [
            'metadata.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 date-time, e.g. '
            "2024-01-01T00:00:00Z"
        ],
        id="bad timestamp",
    ),
    pytest.param(
        {**_with("kind", "MXJob")},
        [
            'kind: Unsupported value: "MXJob": supported values: "PyTorchJob", "TFJob", "XGBoostJob", '
            '"MPIJob", '
            '"PaddleJob", "JAXJob"'
        ],
        id="unknown kind",
    ),
    pytest.param(
        _with("kind", ["x"]),
        [
            'kind: Unsupported value: ["x"]: supported values: "PyTorchJob", "TFJob", "XGBoostJob", '
            '"MPIJob", '
            '"PaddleJob", "JAXJob"'
        ],
        id="kind a list (issue 10, finding 5: TypeError unhashable)",
    ),
    pytest.param(
        {k: v for k, v in _with("kind", "PyTorchJob").items() if k != "kind"},
        [
            'kind: Required value: must be one of "PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", '
            '"PaddleJob", "JAXJob"'
        ],
        id="no kind",
    ),
    pytest.param(
        _with("apiVersion", "kubeflow.org/v2beta1"),
        ['apiVersion: Unsupported value: "kubeflow.org/v2beta1": supported values: "kubeflow.org/v1"'],
        id="wrong apiVersion",
    ),
]


@pytest.mark.parametrize(("raw", "want"), PARSE_ERRORS)
def test_parse_errors(raw: dict[str, Any], want: list[str]) -> None:
    with pytest.raises(InvalidJobError) as info:
        parse_job(raw)
    assert [str(e) for e in info.value.errors] == want
    assert [str(e) for e in validate_for_apply(raw)] == want


def test_yaml_syntax_error_has_a_position() -> None:
    with pytest.raises(InvalidJobError) as info:
        load_jobs("kind: PyTorchJob\nspec: [unclosed\n")
    assert [str(e) for e in info.value.errors] == [
        "not valid YAML at line 3, column 1: did not find expected "
        "',' or ']'"  # libyaml's words, as kubectl's
    ]


def test_a_control_character_has_a_line_and_column_and_a_fix() -> None:
    """issue 24 item 8: ``name: a\\x01b`` said "not valid YAML at unknown position"."""
    with pytest.raises(InvalidJobError) as info:
        load_jobs("kind: PyTorchJob\nmetadata:\n  name: a\x01b\n", source="job.yaml")
    assert [str(e) for e in info.value.errors] == [
        "job.yaml: not valid YAML at line 3, column 10: character U+0001 is a control character, which YAML "
        'does not allow in a file; remove it, or write it as "\\x01" inside double quotes'
    ]


def test_not_a_mapping() -> None:
    with pytest.raises(InvalidJobError) as info:
        load_jobs("- a\n- b\n")
    assert [str(e) for e in info.value.errors] == ["expected a mapping (a Kubernetes object), got list"]
