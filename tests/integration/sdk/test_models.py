"""The SDK's model helpers: client-model conversion, the Pod view, and the local merge patch. Pure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from lightkube.models.core_v1 import Container, EnvVar

from trainop.api.kinds import PyTorchJob
from trainop.sdk import KubeflowOrgV1PyTorchJob, KubeObject
from trainop.sdk.local import build_merge_patch
from trainop.sdk.models import build_plain


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


def test_sdk_models_are_api_models() -> None:
    job = KubeflowOrgV1PyTorchJob.model_validate(
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {}}
    )
    assert (isinstance(job, PyTorchJob), job.metadata.name, job.to_dict()["kind"]) == (
        True,
        "x",
        "PyTorchJob",
    )
