"""The import contract of design.md, read from the source with ``ast`` (nothing is imported).

1. Layers import downward only: cli, ui > sdk > operator > controller > backends > frameworks > core > api
   > programs (cli and ui are one rank, the front doors: ``trainop ui`` starts the web view, which
   shows replicas as ``trainop run`` words them; programs, what a job runs, imports nothing of ours).
   ``trainop.testing`` may import anything; nothing under src imports ``trainop.testing``. The
   plugin Protocol lives in ``core.plugin`` (frameworks re-export it), so no upward edge is needed.
2. api, core and frameworks stay pure: no process, socket, database, event-loop, clock or Kubernetes
   client modules, and no clock reads (``.now()``, ``.utcnow()``, ``.today()``, ``time.*``).
Every import counts, including those inside functions or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "trainop"

# Highest first; a module may import its own rank and any rank after it in this list.
RANKS = (
    ("cli", "ui"),
    ("sdk",),
    ("operator",),
    ("controller",),
    ("backends",),
    ("frameworks",),
    ("core",),
    ("api",),
    ("programs",),  # what a job's processes run: imports nothing else of trainop
)
LAYERS = tuple(layer for rank in RANKS for layer in rank)
RANK_OF = {layer: i for i, rank in enumerate(RANKS) for layer in rank}
PURE_LAYERS = ("api", "core", "frameworks")
# Modules a pure layer must not import (the top-level name is what counts: `os.path` is `os`).
FORBIDDEN_IN_PURE = frozenset(
    {
        "subprocess",
        "socket",
        "sqlite3",
        "asyncio",
        "time",
        "os",
        "lightkube",
        "kubernetes",
        "httpx",
        "threading",
    }
)
# Calls that read the clock; `now` is always an argument in the pure layers.
CLOCK_METHODS = frozenset({"now", "utcnow", "today"})


@dataclass(frozen=True)
class Import:
    module: str  # absolute dotted name
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """``trainop.core.status`` → ``core``; None for the package root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def imports_of(path: Path) -> list[Import]:
    return imports_in(path.read_text(), module_name(path), is_package=path.name == "__init__.py")


def imports_in(source: str, this: str, *, is_package: bool = False) -> list[Import]:
    """Every import in ``source``, as absolute module names (``this`` resolves relative ones)."""
    tree = ast.parse(source)
    out: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Resolve `from .x import y` against this module's package.
                base = this.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            out.append(Import(target, node.lineno))
            # `from trainop import sdk` names a submodule: count it as that module.
            if target == "trainop":
                out += [Import(f"trainop.{alias.name}", node.lineno) for alias in node.names]
    return out


def clock_reads(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr in CLOCK_METHODS:
                found.append((node.lineno, f".{func.attr}()"))
            elif isinstance(func.value, ast.Name) and func.value.id == "time":
                found.append((node.lineno, f"time.{func.attr}()"))
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))
PURE_SOURCES = [p for p in SOURCES if layer_of(module_name(p)) in PURE_LAYERS]


def _id(path: Path) -> str:
    return str(path.relative_to(SRC))


def test_the_tree_is_where_the_contract_expects_it() -> None:
    """Guards the tests below against passing vacuously (a moved source tree)."""
    layers = {layer_of(module_name(p)) for p in SOURCES}
    assert {"api", "core", "frameworks"} <= layers and len(PURE_SOURCES) > 10


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_layers_import_downward_only(path: Path) -> None:
    this = module_name(path)
    layer = layer_of(this)
    bad: list[str] = []
    for imp in imports_of(path):
        if not (imp.module == "trainop" or imp.module.startswith("trainop.")):
            continue
        target = layer_of(imp.module)
        if target == "testing" and layer != "testing":
            bad.append(f"line {imp.line}: {imp.module} (nothing under src may import trainop.testing)")
            continue
        if layer in (None, "testing") or target is None or target not in LAYERS or layer not in LAYERS:
            continue  # the package root and trainop.testing may import anything
        if RANK_OF[target] < RANK_OF[layer]:
            bad.append(f"line {imp.line}: {imp.module} (layer {target!r} is above {layer!r})")
    assert bad == [], f"{this} imports upward:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", PURE_SOURCES, ids=_id)
def test_pure_layers_import_no_io_clock_or_kubernetes_client(path: Path) -> None:
    bad = [
        f"line {imp.line}: {imp.module}"
        for imp in imports_of(path)
        if imp.module.split(".")[0] in FORBIDDEN_IN_PURE
    ]
    assert bad == [], f"{module_name(path)} must stay pure (no I/O, no clock):\n" + "\n".join(bad)


@pytest.mark.parametrize("path", PURE_SOURCES, ids=_id)
def test_pure_layers_never_read_the_clock(path: Path) -> None:
    assert clock_reads(path.read_text()) == [], (
        f"{module_name(path)} reads the clock; take `now` as an argument"
    )


@pytest.mark.parametrize(
    ("source", "want_imports", "want_clock"),
    [
        pytest.param("import os.path\n", ["os.path"], [], id="dotted import"),
        pytest.param(
            "def f():\n    from trainop.sdk import client\n",
            ["trainop.sdk"],
            [],
            id="import inside a function",
        ),
        pytest.param(
            "from ..sdk import client\nfrom . import plan\n",
            ["trainop.sdk", "trainop.core"],
            [],
            id="relative imports resolved against the module",
        ),
        pytest.param(
            "from trainop import sdk\n", ["trainop", "trainop.sdk"], [], id="a layer imported by name"
        ),
        pytest.param(
            "from datetime import datetime\nx = datetime.now()\n", ["datetime"], [(2, ".now()")], id="now()"
        ),
        pytest.param("import time\nx = time.monotonic()\n", ["time"], [(2, "time.monotonic()")], id="time.*"),
    ],
)
def test_the_checker_sees_what_it_must(
    source: str, want_imports: list[str], want_clock: list[tuple[int, str]]
) -> None:
    """The checks above can fail: the walker finds these imports and clock reads."""
    got = [i.module for i in imports_in(source, "trainop.core.probe")]
    assert (got, clock_reads(source)) == (want_imports, want_clock)


ARCHITECTURE = SRC.parent / "ARCHITECTURE.md"


def test_architecture_md_states_the_enforced_layers() -> None:
    """The map's layer order is the one these tests enforce (its marker line is machine-read)."""
    text = ARCHITECTURE.read_text()
    marker = next(line for line in text.splitlines() if line.startswith("<!-- layers:"))
    stated = tuple(
        tuple(name.strip() for name in part.split(","))
        for part in marker.removeprefix("<!-- layers:").removesuffix("-->").split(">")
    )
    assert stated == RANKS


def test_architecture_md_names_every_package() -> None:
    """Every package under src/trainop has a row in the map's table of rooms."""
    text = ARCHITECTURE.read_text()
    packages = sorted({module_name(p).split(".")[1] for p in PACKAGE.glob("*/__init__.py")})
    missing = [p for p in packages if f"| `{p}` |" not in text]
    assert len(packages) >= 9 and missing == [], f"ARCHITECTURE.md has no row for: {missing}"
