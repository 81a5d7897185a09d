"""Compatibility odds and ends (issue 24 item 9): code written for kubeflow-training finds what it
used in trainop.sdk."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from typing import Any

import pytest

from trainop.sdk import TrainingClient


def test_star_import_of_constants_has_the_storage_initializer_mount(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a copy of the module just executed (nothing built on first use yet), in this process: a fresh
    interpreter cost half a second of the unit tier's CPU for the same check."""
    pytest.importorskip("kubernetes", reason="the mount is a kubernetes.client model, as upstream's")
    spec = importlib.util.find_spec("trainop.sdk.constants")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert "STORAGE_INITIALIZER_VOLUME_MOUNT" not in vars(fresh)
    monkeypatch.setitem(sys.modules, "fresh_sdk_constants", fresh)
    names: dict[str, Any] = {}
    exec("from fresh_sdk_constants import *", names)
    m = names["STORAGE_INITIALIZER_VOLUME_MOUNT"]
    assert (m.name, m.mount_path, "JOB_MODELS_TYPE" in names) == ("storage-initializer", "/workspace", True)


def test_wait_for_job_conditions_defaults_to_a_set_as_upstream() -> None:
    default = (
        inspect.signature(TrainingClient.wait_for_job_conditions).parameters["expected_conditions"].default
    )
    assert (type(default), default) == (set, {"Succeeded"})
