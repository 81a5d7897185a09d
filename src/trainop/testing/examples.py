"""The kubeflow.org/v1 jobs written under a repository's ``examples/``, as pytest parameters.

Shared by the tests that check every example (the round trip and validation in tests/unit/api, the
storage on a real kube-apiserver in tests/integration/api). Test helper: reads files, writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.constants import API_VERSION
from trainop.api.kinds import JOB_MODELS


def find_example_jobs(root: Path) -> list[Any]:
    """``pytest.param(job_dict, id="examples/<path>#<document index>")`` for every job document in a
    YAML file under ``root/examples``, in path order."""
    params = []
    for path in sorted(
        p for p in (root / "examples").rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
    ):
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue  # not a manifest (a template with placeholders, for instance)
        for i, doc in enumerate(docs):
            if (
                isinstance(doc, dict)
                and doc.get("apiVersion") == API_VERSION
                and doc.get("kind") in JOB_MODELS
            ):
                params.append(pytest.param(doc, id=f"{path.relative_to(root)}#{i}"))
    return params
