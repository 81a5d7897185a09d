"""``trainop run --dry-run`` without YAML prints a PyTorchJob that the real API server accepts
unchanged (a server-side dry run against the generated CRDs): the shortest path to a manifest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainop.testing.testenv import K8sEnv


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(["--nnodes", "3", "--", "python", "train.py", "--lr", "0.1"], id="torchrun's --nnodes"),
        pytest.param(
            [
                "-j",
                "2x2",
                "-e",
                "EPOCHS=3",
                "--gpu",
                "1",
                "--max-restarts",
                "2",
                "--image",
                "example.com/t:1",
                "train.py",
            ],
            id="every option: -j, env, GPUs, restarts, image",
        ),
    ],
)
def test_dry_run_output_applies_unchanged(
    k8s_env: K8sEnv, crds: None, k8s_namespace: str, flags: list[str]
) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "run", "--dry-run", *flags],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    applied = k8s_env.kubectl("apply", "--dry-run=server", "-f", "-", input=printed, namespace=k8s_namespace)
    assert applied.stdout.strip().startswith(
        "pytorchjob.kubeflow.org/train-"
    ) and applied.stdout.strip().endswith("created (server dry run)"), applied.stdout
