"""manifests/base's ClusterRole and webhook configuration are what ``make crds`` generates from the
kind table (operator/manifests.py), as manifests/crds is (test_crds.py): a stale file fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainop.operator.manifests import build_files

BASE = Path(__file__).resolve().parents[3] / "manifests" / "base"


@pytest.mark.parametrize(("name", "text"), sorted(build_files().items()))
def test_committed_manifest_is_current(name: str, text: str) -> None:
    assert (BASE / name).read_text() == text, f"manifests/base/{name} is out of date: run `make crds`"
