"""The pure half of the progress contract on a cluster (core/progress.py): what each pod of a job gets
with ``--trainer-progress``, and what is stored of a post."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainop.core.progress import (
    ProgressError,
    add_owner,
    build_status_path,
    build_stored_status,
    build_tls_config_map,
    check_trainer_status,
    inject_progress,
)

URL = "https://training-operator.kubeflow.svc/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j/status"


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "j-worker-0"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {
                    "name": "pytorch",
                    "image": "x",
                    "env": [{"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "mine"}],
                },
                {"name": "sidecar", "image": "y", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def test_every_container_gets_the_env_and_the_token_volume() -> None:
    p = pod()
    inject_progress(p, "j", URL)
    spec = p["spec"]
    assert [v["name"] for v in spec["volumes"]] == ["data", "kubeflow-trainer-token"]
    assert spec["volumes"][1]["projected"]["sources"] == [
        {
            "serviceAccountToken": {
                "audience": "trainer.kubeflow.org",
                "expirationSeconds": 3600,
                "path": "token",
            }
        },
        {"configMap": {"name": "j-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    ]
    mount = {
        "name": "kubeflow-trainer-token",
        "mountPath": "/var/run/secrets/kubeflow/trainer",
        "readOnly": True,
    }
    for c in [*spec["initContainers"], *spec["containers"]]:
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["KUBEFLOW_TRAINER_SERVER_CA_CERT"] == "/var/run/secrets/kubeflow/trainer/ca.crt"
        assert env["KUBEFLOW_TRAINER_SERVER_TOKEN"] == "/var/run/secrets/kubeflow/trainer/token"
        assert c["volumeMounts"][-1] == mount
    urls = [
        next(e["value"] for e in c["env"] if e["name"] == "KUBEFLOW_TRAINER_SERVER_URL")
        for c in spec["containers"]
    ]
    assert urls == ["mine", URL]  # what the template sets is the user's
    assert spec["containers"][1]["volumeMounts"][0]["name"] == "data"


def test_injecting_twice_changes_nothing() -> None:
    p = pod()
    inject_progress(p, "j", URL)
    once = copy.deepcopy(p)
    inject_progress(p, "j", URL)
    assert p == once


def test_paths_and_the_config_map() -> None:
    assert build_status_path("trainer.kubeflow.org/v1alpha1", "trainjobs", "ns", "t") == (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t/status"
    )
    owner = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": "j",
        "uid": "u",
        "controller": True,
    }
    cm = build_tls_config_map("j", "ns", "PEM", owner, {"l": "v"})
    assert cm["metadata"] == {
        "name": "j-tls-config",
        "namespace": "ns",
        "labels": {"l": "v"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j", "uid": "u"}],
    }
    assert cm["data"] == {"ca.crt": "PEM"}
    # A TrainJob of the same name adds its reference; a PyTorchJob made again under the name replaces
    # the old one's. None is the controller.
    tj = {**owner, "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "uid": "t"}
    refs = add_owner(cm["metadata"]["ownerReferences"], tj)
    assert [(o["kind"], o["uid"]) for o in refs] == [("PyTorchJob", "u"), ("TrainJob", "t")]
    refs = add_owner(refs, {**owner, "uid": "u2"})
    assert [(o["kind"], o["uid"]) for o in refs] == [("TrainJob", "t"), ("PyTorchJob", "u2")]
    assert not any("controller" in o for o in refs)


def test_what_is_stored_is_upstreams_fields_with_a_time() -> None:
    posted = {
        "progressPercentage": 5,
        "metrics": [{"name": "loss", "value": "1", "extra": 1}],
        "colour": "red",
    }
    assert build_stored_status(posted, "2026-11-27T20:00:00Z") == {
        "progressPercentage": 5,
        "metrics": [{"name": "loss", "value": "1"}],
        "lastUpdatedTime": "2026-11-27T20:00:00Z",
    }
    posted = {"estimatedRemainingSeconds": 0, "lastUpdatedTime": "2026-01-01T00:00:00Z"}
    assert build_stored_status(posted, "later") == posted


def test_a_time_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ProgressError) as info:
        check_trainer_status({"trainerStatus": {"lastUpdatedTime": 5}})
    assert str(info.value).startswith("trainerStatus.lastUpdatedTime: must be an RFC 3339 time")
