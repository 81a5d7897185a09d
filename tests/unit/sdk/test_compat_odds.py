"""Compatibility odds and ends (issue 24 item 9): code written for kubeflow-training finds what it
used in trainop.sdk."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from trainop.sdk import TrainingClient


def test_star_import_of_constants_has_the_storage_initializer_mount() -> None:
    pytest.importorskip("kubernetes", reason="the mount is a kubernetes.client model, as upstream's")
    code = (
        "from trainop.sdk.constants import *\n"
        "m = STORAGE_INITIALIZER_VOLUME_MOUNT\n"
        "print(m.name, m.mount_path, JOB_MODELS_TYPE)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.split()[:2]) == (0, ["storage-initializer", "/workspace"]), out.stderr


def test_wait_for_job_conditions_defaults_to_a_set_as_upstream() -> None:
    default = (
        inspect.signature(TrainingClient.wait_for_job_conditions).parameters["expected_conditions"].default
    )
    assert (type(default), default) == (set, {"Succeeded"})
