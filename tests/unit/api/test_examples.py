"""Every kubeflow.org/v1 job under examples/ parses, dumps back to exactly what was written, and is valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.constants import API_VERSION
from trainop.api.kinds import JOB_MODELS
from trainop.api.load import dump_job, parse_job
from trainop.api.validation import validate_job

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def _documents() -> list[Any]:
    params = []
    for path in sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()):
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
                params.append(pytest.param(doc, id=f"{path.relative_to(ROOT)}#{i}"))
    return params


DOCUMENTS = _documents()


def test_every_kind_has_an_example() -> None:
    kinds = {p.values[0]["kind"] for p in DOCUMENTS}
    assert kinds == set(JOB_MODELS), f"kinds without an example: {sorted(set(JOB_MODELS) - kinds)}"


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_example_round_trips_and_validates(doc: dict[str, Any]) -> None:
    job = parse_job(doc)
    dumped = dump_job(job)
    assert dumped == doc, "the model must keep every field the manifest wrote"
    assert parse_job(dumped) == job
    assert [str(e) for e in validate_job(job)] == []
