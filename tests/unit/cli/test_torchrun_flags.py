"""docs/cli.md's table of torchrun's flags, row by row: each one given to ``trainop run --dry-run`` (in
both of torchrun's spellings) does what the row says; the table is the code's (``TORCHRUN_FLAGS``).
That it names every option of the installed torchrun is checked in tests/integration/local/
test_local_torchrun.py (importing torch costs about 2 s of CPU, an eighth of the unit tier)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from trainop.cli.main import app
from trainop.cli.script_job import AS_IS, REFUSED, TORCHRUN_FLAGS, TorchrunFlag

DOC = Path(__file__).parents[3] / "docs" / "cli.md"


def doc_rows() -> list[tuple[str, str, str]]:
    text = DOC.read_text()
    table = text[text.index("<!-- torchrun-flags -->") : text.index("<!-- /torchrun-flags -->")]
    rows, last = [], ""
    for line in table.splitlines()[3:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        meaning = last if cells[2] == "(the same)" else cells[2]
        rows.append((cells[0], cells[1], meaning))
        last = meaning
    return rows


def test_the_doc_table_is_the_code_s() -> None:
    want = [(", ".join(f"`{n}`" for n in f.names), f.verdict, f.meaning) for f in TORCHRUN_FLAGS]
    assert doc_rows() == want


def dry_run(*args: str) -> tuple[int, dict[str, Any] | str]:
    result = CliRunner().invoke(app, ["run", "--dry-run", *args])
    if result.exit_code != 0:
        return result.exit_code, re.sub(r"\s+", " ", result.output).strip()
    return 0, yaml.safe_load(result.output)


def container(doc: dict[str, Any] | str, rtype: str = "Master") -> dict[str, Any]:
    assert isinstance(doc, dict), doc
    c: dict[str, Any] = doc["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"]["containers"][0]
    return c


def underscored(name: str) -> str:
    return "--" + name[2:].replace("-", "_") if name.startswith("--") else name


# What each accepted flag that run handles itself must do to the job.
def check_nnodes(doc: Any) -> Any:
    return doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]


CHECKS: dict[str, tuple[list[str], Any, Any]] = {
    "--nnodes": (["2:2", "t.py"], check_nnodes, 1),
    "--nproc-per-node": (
        ["2", "t.py"],
        lambda d: (d["spec"]["nprocPerNode"], container(d)["command"]),
        ("2", ["torchrun", "t.py"]),
    ),
    "--max-restarts": (
        ["2", "t.py"],
        lambda d: d["metadata"]["annotations"],
        {"trainop.dev/max-restarts": "2"},
    ),
    "--standalone": (["t.py"], lambda d: list(d["spec"]["pytorchReplicaSpecs"]), ["Master"]),
    "--module": (
        ["pkg.train", "--lr"],
        lambda d: container(d)["command"][-4:],
        ["python", "-m", "pkg.train", "--lr"],
    ),
    "--no-python": (["./t.sh", "x"], lambda d: container(d)["command"][-2:], ["./t.sh", "x"]),
}


def flag_cases() -> list[Any]:
    cases = []
    for f in TORCHRUN_FLAGS:
        for spelling in {f.names[0], underscored(f.names[0]), *f.names[1:]}:
            cases.append(pytest.param(f, spelling, id=f"{spelling}"))
    return cases


@pytest.mark.parametrize(("flag", "spelling"), flag_cases())
def test_each_row(flag: TorchrunFlag, spelling: str) -> None:
    value = ["1"] if flag.takes_value else []
    if flag.verdict == REFUSED:
        rc, said = dry_run(f"{spelling}", *value, "t.py")
        assert (rc, said) == (
            2,
            f"error: {flag.names[0]} (torchrun's) is not taken by trainop run: {flag.meaning}",
        )
        return
    assert flag.verdict == AS_IS
    if flag.agent:
        rc, doc = dry_run("--nproc-per-node", "2", spelling, *value, "t.py", "--lr")
        assert rc == 0, doc
        assert container(doc)["command"] == ["torchrun", flag.names[0], *value, "t.py", "--lr"]
        if flag.names[0] != "--run-path":  # with one process per node there is no torchrun to pass it to
            rc1, said = dry_run(spelling, *value, "t.py")
            assert (rc1, str(said).startswith(f"error: {flag.names[0]} is an option of torchrun's")) == (
                2,
                True,
            )
        return
    args, check, want = CHECKS[flag.names[0]]
    rc, doc = dry_run(spelling, *args)
    assert rc == 0, doc
    assert check(doc) == want
