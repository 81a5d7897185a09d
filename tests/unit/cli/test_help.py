"""Every command's help reads in the notation users know (NAME, [KIND], NAME..., --namespace TEXT),
without typer's internal one ({name}, [[KIND]], <str>, <bool>)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from trainop.cli.main import app

COMMANDS = [
    "",
    "run",
    "submit",
    "get",
    "describe",
    "logs",
    "delete",
    "wait",
    "render",
    "suspend",
    "resume",
    "completion",
]
INTERNAL = re.compile(r"\[\[|\{[a-z_]+\}|<(str|bool|int|float|list|Path)[^>]*>")


@pytest.mark.parametrize("command", [pytest.param(c, id=c or "trainop") for c in COMMANDS])
def test_help_has_no_internal_notation(command: str) -> None:
    result = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert (result.exit_code, INTERNAL.findall(result.output)) == (0, []), result.output


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        pytest.param(
            "get",
            "Usage: trainop get [OPTIONS] [KIND] [NAME]",
            id="optional arguments in one pair of brackets",
        ),
        pytest.param("logs", "Usage: trainop logs [OPTIONS] NAME", id="a required argument bare"),
        pytest.param("delete", "Usage: trainop delete [OPTIONS] [NAME]...", id="several"),
    ],
)
def test_usage_lines(command: str, usage: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    assert usage in result.output
