"""The SDK's model helpers: client-model conversion, the Pod view, and the local merge patch. Pure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from lightkube.models.core_v1 import Container, EnvVar

from trainop.backends.local.api import build_merge_patch
from trainop.sdk import KubeflowOrgV1PyTorchJob, KubeflowOrgV1PyTorchJobList, KubeObject
from trainop.sdk.models import build_job_model, build_plain


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(
            k8s.V1Container(name="c", image_pull_policy="Always", env=[k8s.V1EnvVar(name="A", value="1")]),
            {"name": "c", "imagePullPolicy": "Always", "env": [{"name": "A", "value": "1"}]},
            id="kubernetes.client model: camelCase keys, unset fields dropped",
        ),
        pytest.param(
            Container(name="c", imagePullPolicy="Never", env=[EnvVar(name="B", value="2")]),
            {"name": "c", "imagePullPolicy": "Never", "env": [{"name": "B", "value": "2"}]},
            id="lightkube model",
        ),
        pytest.param(
            {"when": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "items": (1, "x", None)},
            {"when": "2024-01-02T03:04:05Z", "items": [1, "x", None]},
            id="plain containers, times in RFC 3339",
        ),
        pytest.param(
            KubeObject({"metadata": {"name": "p"}}),
            {"metadata": {"name": "p"}},
            id="a view gives its JSON back",
        ),
    ],
)
def test_build_plain(value: Any, want: Any) -> None:
    assert build_plain(value) == want


def test_kube_object_reads_like_a_client_model() -> None:
    pod = KubeObject(
        {
            "metadata": {"name": "j-master-0", "labels": {"a": "b"}},
            "status": {
                "phase": "Running",
                "containerStatuses": [{"restartCount": 2, "state": {"running": {}}}],
            },
        }
    )
    got = (
        pod.metadata.name,
        pod.status.phase,
        pod.status.container_statuses[0].restart_count,
        pod.status.containerStatuses[0].restartCount,
        pod.spec,
        pod["metadata"]["labels"]["a"],
        pod.to_dict()["status"]["phase"],
    )
    assert got == ("j-master-0", "Running", 2, 2, None, "b", "Running")


@pytest.mark.parametrize(
    ("target", "patch", "want"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, id="maps merge"
        ),
        pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null deletes"),
        pytest.param({"l": [1, 2]}, {"l": [3]}, {"l": [3]}, id="lists replace"),
        pytest.param({"a": {"b": 1}}, {"a": 5}, {"a": 5}, id="a scalar replaces a map"),
    ],
)
def test_build_merge_patch(target: dict[str, Any], patch: dict[str, Any], want: dict[str, Any]) -> None:
    assert build_merge_patch(target, patch) == want


JOB_JSON: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "x", "namespace": "ns", "creationTimestamp": "2024-01-02T03:04:05Z"},
    "spec": {
        "runPolicy": {"schedulingPolicy": {"minAvailable": 2}},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "img", "args": ["a"]}]}},
            }
        },
    },
    "status": {"conditions": [{"type": "Created", "status": "True", "reason": "r"}]},
}


def test_job_json_becomes_upstreams_model_shape() -> None:
    job = build_job_model(JOB_JSON)
    template = job.spec.pytorch_replica_specs["Master"].template
    got = (
        type(job),
        type(job.metadata),
        type(template),
        template.spec.containers[0].image,
        job._metadata.name,
        job.metadata.creation_timestamp,
        job.spec.run_policy.scheduling_policy.min_available,
        job.status.conditions[0].type,
    )
    want = (
        KubeflowOrgV1PyTorchJob,
        k8s.V1ObjectMeta,
        k8s.V1PodTemplateSpec,
        "img",
        "x",
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        2,
        "Created",
    )
    assert got == want


def test_job_model_to_dict_is_snake_case_and_converts_back() -> None:
    job = build_job_model(JOB_JSON)
    master = job.to_dict()["spec"]["pytorch_replica_specs"]["Master"]
    assert master["template"]["spec"]["containers"][0]["image"] == "img"
    assert "image_pull_policy" in master["template"]["spec"]["containers"][0]
    assert build_plain(job) == {**JOB_JSON, "metadata": {**JOB_JSON["metadata"]}}


def test_job_model_required_fields_as_upstream() -> None:
    with pytest.raises(ValueError, match=r"Invalid value for `items`, must not be `None`"):
        KubeflowOrgV1PyTorchJobList(items=None)
