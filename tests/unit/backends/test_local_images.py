"""The known-image table (images.py) and what it does to a pod: a container of upstream's train()
images with no command runs trainop's program, and /workspace paths become the claim's directory."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.api.errors import FieldError
from trainop.backends.local.images import KNOWN_IMAGES, build_image_entrypoint, build_image_repository
from trainop.backends.local.render import LocalContext, build_pod_processes, detect_pod_errors

PATH = "spec.pytorchReplicaSpecs[Master]"
CLAIM_DIR = "/home/u/.trainop/jobs/default/ft/claims/ft"
CTX = LocalContext(
    host_env={"PATH": "/usr/bin"},
    base_dir="/work",
    hostname="box",
    volume_dirs={"storage-initializer": CLAIM_DIR},
    python="/venv/bin/python",
)
MOUNT = [{"name": "storage-initializer", "mountPath": "/workspace"}]
VOLUME = {"name": "storage-initializer", "persistentVolumeClaim": {"claimName": "ft"}}


@pytest.mark.parametrize(
    ("image", "want"),
    [
        pytest.param(
            "ghcr.io/kubeflow/training-v1/trainer-huggingface",
            "ghcr.io/kubeflow/training-v1/trainer-huggingface",
            id="no tag",
        ),
        pytest.param(
            "ghcr.io/trainop/storage-initializer:0.1.0", "ghcr.io/trainop/storage-initializer", id="a tag"
        ),
        pytest.param("reg:5000/a/b@sha256:00ff", "reg:5000/a/b", id="a registry port and a digest"),
        pytest.param("reg:5000/a/b:v1@sha256:00ff", "reg:5000/a/b", id="a tag and a digest"),
    ],
)
def test_image_repository(image: str, want: str) -> None:
    assert build_image_repository(image) == want


def test_the_table_holds_upstreams_images_and_ours() -> None:
    assert sorted(KNOWN_IMAGES) == [
        "ghcr.io/kubeflow/trainer/dataset-initializer",
        "ghcr.io/kubeflow/trainer/model-initializer",
        "ghcr.io/kubeflow/training-v1/storage-initializer",
        "ghcr.io/kubeflow/training-v1/trainer-huggingface",
        "ghcr.io/trainop/storage-initializer",
        "ghcr.io/trainop/trainer-huggingface",
    ]
    assert build_image_entrypoint("docker.io/library/python:3.11", "py") is None


def train_pod() -> dict[str, Any]:
    """The Master pod of train(), as the core builds it (upstream's args only, no command)."""
    return {
        "metadata": {"name": "ft-master-0", "namespace": "default"},
        "spec": {
            "initContainers": [
                {
                    "name": "storage-initializer",
                    "image": "ghcr.io/kubeflow/training-v1/storage-initializer",
                    "args": [
                        "--model_provider",
                        "hf",
                        "--model_provider_parameters",
                        '{"model_uri": "hf://o/m"}',
                    ],
                    "volumeMounts": MOUNT,
                }
            ],
            "containers": [
                {
                    "name": "pytorch",
                    "image": "ghcr.io/kubeflow/training-v1/trainer-huggingface:latest",
                    "args": [
                        "--model_dir",
                        "/workspace/model",
                        "--training_parameters",
                        '{"output_dir": "/workspace/out", "logging_dir": "/workspaces"}',
                    ],
                    "volumeMounts": MOUNT,
                }
            ],
            "volumes": [VOLUME],
        },
    }


def test_known_images_run_trainops_programs_with_the_claim_in_place_of_workspace() -> None:
    plan = build_pod_processes(train_pod(), CTX, template_init_count=1)
    assert [p.argv for p in (*plan.init, *plan.main)] == [
        (
            "/venv/bin/python",
            "-m",
            "trainop.programs.storage_initializer",
            "--workspace",
            CLAIM_DIR,
            "--model_provider",
            "hf",
            "--model_provider_parameters",
            '{"model_uri": "hf://o/m"}',
        ),
        (
            "/venv/bin/python",
            "-m",
            "trainop.programs.hf_llm_training",
            "--model_dir",
            f"{CLAIM_DIR}/model",
            "--training_parameters",
            # a path inside JSON is rewritten too; a longer name that only starts alike is not
            f'{{"output_dir": "{CLAIM_DIR}/out", "logging_dir": "/workspaces"}}',
        ),
    ]


def test_a_pod_of_known_images_and_a_claim_is_accepted() -> None:
    pod = train_pod()
    assert detect_pod_errors(pod, pod, PATH) == []


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        pytest.param(
            "../x",
            "must consist of lower case alphanumeric characters",
            id="a claim name that would walk the tree",
        ),
        pytest.param("A", "must consist of lower case", id="not a DNS label"),
    ],
)
def test_a_claim_name_must_be_a_label(claim: str, want: str) -> None:
    pod = train_pod()
    pod["spec"]["volumes"] = [{"name": "storage-initializer", "persistentVolumeClaim": {"claimName": claim}}]
    errs = detect_pod_errors(pod, pod, PATH)
    assert [e.path for e in errs] == [f"{PATH}.template.spec.volumes[0].persistentVolumeClaim.claimName"]
    assert want in errs[0].message and isinstance(errs[0], FieldError)
