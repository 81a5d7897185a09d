"""hack/src_size.py (`make size`): which commits count as a new feature's and which against issue 22's
goal, and that its figures add up on this repository's own history."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "src_size.py"


def load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("src_size", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("subject", "feature"),
    [
        ("trainer v2 (issue 23): TrainJob models", 23),
        ("progress (issues 27, 23): the operator receives progress", 23),
        ("trainop run keeps torchrun's promises (issue 24 items 1, 3, 4): ...", 24),
        ("cli (issue 24 item 8, the rest): run --rm", 24),
        ("core (issue 22): _Pass split into readable steps", None),
        ("manifests (issues 22, 23): generated from the kind table", None),  # 22 named: counts against
        ("tests: test_gang checks PodGroups with kubectl", None),  # untagged: counts against
        ("cli: a fix that names issue 5 of an older wave", None),
    ],
)
def test_a_commit_counts_as_a_feature_only_when_its_subject_names_one(
    subject: str, feature: int | None
) -> None:
    assert load().feature_of(subject) == feature


def test_the_figures_add_up_on_this_repository() -> None:
    if subprocess.run(["git", "cat-file", "-e", "132cbfd"], cwd=REPO, capture_output=True).returncode:
        pytest.skip("a shallow clone without issue 22's base commit")
    out = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "src/**/*.py at 132cbfd: 27,929 lines" in out, out
    # HEAD = base + rest + features: the script's own identity line, checked from its parts.
    head = int(out.split("at HEAD: ")[1].split(" lines")[0].replace(",", ""))
    same = int(out.split("for the same features: ")[1].split(" = ")[1].split(" lines")[0].replace(",", ""))
    features = int(out.split("the features' net ")[1].split(")")[0].replace(",", ""))
    assert head == same + features, out
