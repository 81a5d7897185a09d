"""Every file or directory that ARCHITECTURE.md, the README and docs/ name exists: a map that points
at a moved or deleted file misleads the next reader (issue 22 found one in docs/operator.md).

A name is anything in backquotes that looks like a path (a ``/`` and no spaces, placeholders or
globs); it may be relative to the repository, to ``src/`` or to ``src/trainop/``, as the docs write
module paths (``core/reconcile.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "ARCHITECTURE.md", REPO / "README.md", *(REPO / "docs").glob("**/*.md")])
ROOTS = (REPO, REPO / "src", REPO / "src" / "trainop")
TOKEN = re.compile(r"`([^`\s]+)`")
EXTENSIONS = (".py", ".md", ".yaml", ".yml", ".json", ".sh", ".toml", ".txt", ".cfg", ".mk")


def named_paths(text: str) -> list[str]:
    out = []
    for token in TOKEN.findall(text):
        path = token.split(":", 1)[0].split("#", 1)[0].rstrip(".,;")  # `file.py:42`, `file.md#anchor`
        if "/" not in path or "://" in token or any(c in path for c in "<>*{}$…|=()[]"):
            continue
        if path.startswith(("/", "~", "-", "kubeflow.org/", "trainop.dev/", "apps/", "batch/")):
            continue  # absolute (the user's machine), flags, API groups and label keys
        if path.endswith(EXTENSIONS) or path.endswith("/"):
            out.append(path)
    return out


def exists(path: str) -> bool:
    return any((root / path).exists() for root in ROOTS)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_named_path_exists(doc: Path) -> None:
    missing = sorted({p for p in named_paths(doc.read_text()) if not exists(p)})
    assert missing == [], f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"


def test_the_check_sees_paths() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text()
    assert {"core/reconcile.py", "backends/base.py"} <= set(named_paths(text))
