"""Everything about a framework lives in its plugin (issue 14): no module outside ``frameworks/`` names
a kind, read from the source with ``ast`` (nothing is imported).

A kind is named by a string constant that is a name, not prose: no whitespace and one of the six kinds
or their plurals in it (``"MPIJob"``, ``"MPIJobRunning"``, ``"mpijobs"``). Docstrings and comments do
not count, nor do sentences (help text, a CRD description). The few modules that must name kinds are
listed in ``ALLOWED`` with the reason; anything else that names one fails with file:line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "trainop"

KINDS = ("PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob")
PLURALS = tuple(k.lower() + "s" for k in KINDS)
_NAMES = re.compile("|".join(re.escape(n) for n in (*KINDS, *PLURALS)))

# Modules (relative to src/trainop) that name kinds by design, and why.
ALLOWED = {
    # The six kinds' KindInfo rows and job models: api cannot import the plugins (layers import
    # downward only), and parsing, defaults, validation and CRDs read these tables.
    "api/kinds.py": "the six kinds' rows and models (api/kinds.py: register_kind adds a seventh)",
    # The SDK mirrors upstream's public Python API, whose constants and models are named per kind
    # (PYTORCHJOB_KIND, KubeflowOrgV1PyTorchJob ...).
    "sdk/": "upstream's SDK API, kind by kind",
    # Test builders: pytorch_job("a").master(1).workers(2).
    "testing/": "builders the tests share",
    # `trainop run script.py` submits a PyTorchJob by design (docs/cli.md).
    "cli/script_job.py": "the script runner's job is a PyTorchJob",
}


def _allowed(rel: str) -> bool:
    return any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in ALLOWED)


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def find_kind_names(source: str) -> list[tuple[int, str]]:
    """(line, constant) for each string constant in ``source`` that names a kind."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docs:
            continue
        value = node.value
        if _NAMES.search(value) and not any(ch.isspace() for ch in value):
            found.append((node.lineno, value))
    return sorted(found)


def test_no_module_outside_frameworks_names_a_kind() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("frameworks/") or _allowed(rel):
            continue
        bad += [f"{rel}:{line}: {value!r}" for line, value in find_kind_names(path.read_text())]
    assert bad == []


@pytest.mark.parametrize(
    ("source", "want"),
    [
        pytest.param('if kind == "MPIJob":\n    pass\n', [(1, "MPIJob")], id="a comparison"),
        pytest.param('REASON = "MPIJobRunning"\n', [(1, "MPIJobRunning")], id="a reason built on a kind"),
        pytest.param('KINDS = {"PaddleJob", "JAXJob"}\n', [(1, "JAXJob"), (1, "PaddleJob")], id="a set"),
        pytest.param('PLURAL = "pytorchjobs"\n', [(1, "pytorchjobs")], id="a plural"),
        pytest.param('"""About MPIJob."""\n', [], id="a docstring"),
        pytest.param("x = 1  # MPIJob\n", [], id="a comment"),
        pytest.param('HELP = "run a PyTorchJob"\n', [], id="prose"),
    ],
)
def test_what_counts_as_naming_a_kind(source: str, want: list[tuple[int, str]]) -> None:
    assert find_kind_names(source) == want
