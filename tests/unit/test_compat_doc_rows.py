"""docs/compatibility.md names three differences from the Go operator that were missing (issue 24
item 9), and what it quotes of trainop's side is what the code produces."""

from __future__ import annotations

from pathlib import Path

from trainop.frameworks.mpi import build_kubexec_script
from trainop.frameworks.pytorch import build_wait_for_master_script
from trainop.testing.builders import mpi_job

DOC = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text()


def row(marker: str) -> str:
    line = next((line for line in DOC.splitlines() if f"<!-- {marker} -->" in line), "")
    assert line.startswith("| "), f"docs/compatibility.md has no row marked {marker}"
    return line


def test_the_init_script_row_quotes_the_code() -> None:
    script = build_wait_for_master_script("j-master-0", 100)
    got = ('until nslookup "j-master-0"' in script, 'until nslookup "<master>"' in row("init-script"))
    assert got == (True, True)


def test_the_kubexec_row_quotes_the_code() -> None:
    script = build_kubexec_script(mpi_job("j").launcher(1).workers(1).build())
    quoted = ("# rsh agent for mpirun:", 'POD_NAME="$1"', '"${POD_NAME}"')
    assert [q in script and q in row("kubexec") for q in quoted] == [True, True, True]


def test_the_is_exist_events_row() -> None:
    assert all(
        e in row("is-exist")
        for e in ("ServiceAccount is exist", "LauncherRole is exist", "RoleBinding is exist")
    )
