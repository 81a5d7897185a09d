"""One click command for the CLI tests of this folder: typer's ``CliRunner.invoke`` turns the app into a
click command on every call (about 17 ms of signature and annotation reading for trainop's commands),
which made most of the CPU time of the tests that invoke ``run`` once per flag spelling (issue 22).
Each invocation still parses its argv, runs the command and prints, as ``trainop`` does."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest
import typer.main
import typer.testing


@pytest.fixture(autouse=True, scope="session")
def one_click_command() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        # the name CliRunner.invoke calls (raises here, loudly, if a typer release renames it)
        mp.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
        yield


@pytest.fixture(autouse=True)
def no_cli_settings_left_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's start-up sets PYDANTIC_DISABLE_PLUGINS in its own environment (cli/main.py); invoked
    in this process, it must not outlive the test: a later test's ``trainop`` subprocess would take it
    for the user's setting and hand it to a job's replicas (test_local_cli's environment test failed
    when it ran after these)."""
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
