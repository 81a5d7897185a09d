"""Every kubeflow.org/v1 job under examples/ parses, dumps back to exactly what was written, and is valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainop.api.kinds import JOB_MODELS
from trainop.api.load import parse_job
from trainop.api.validation import validate_job
from trainop.testing.examples import find_example_jobs

ROOT = Path(__file__).resolve().parents[3]


DOCUMENTS = find_example_jobs(ROOT)


def test_every_kind_has_an_example() -> None:
    kinds = {p.values[0]["kind"] for p in DOCUMENTS}
    assert kinds == set(JOB_MODELS), f"kinds without an example: {sorted(set(JOB_MODELS) - kinds)}"


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_example_round_trips_and_validates(doc: dict[str, Any]) -> None:
    job = parse_job(doc)
    dumped = job.to_dict()
    assert dumped == doc, "the model must keep every field the manifest wrote"
    assert parse_job(dumped) == job
    assert [str(e) for e in validate_job(job)] == []
