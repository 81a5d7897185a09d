"""Fixtures for the e2e tests: the real local backend with a private TRAINOP_HOME per test, a sweep of
whatever a test leaves running (found by that TRAINOP_HOME in a process's environment), and the run
time of every e2e job printed in the terminal summary."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_harness import RUN_TIMES

from trainop.backends.local.api import LocalBackend


def _pids_with_home(home: Path) -> list[int]:
    marker = f"TRAINOP_HOME={home}".encode()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            out.append(int(entry.name))
    return out


@pytest.fixture
def backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalBackend]:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINOP_HOME", str(home))
    monkeypatch.delenv("TRAINOP_GPUS", raising=False)
    b = LocalBackend(home)
    yield b
    with contextlib.suppress(Exception):
        for job in b.list_jobs():
            b.delete(job.name, job.namespace, grace=2.0)
    b.close()
    for pid in _pids_with_home(home):  # anything the delete did not stop (a failed test's replicas)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RUN_TIMES:
        return
    terminalreporter.section("e2e run times (submit → final condition)")
    for test_id, seconds in sorted(RUN_TIMES.items()):
        terminalreporter.write_line(f"{seconds:7.1f}s  {test_id}")
