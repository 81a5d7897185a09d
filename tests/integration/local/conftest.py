"""Fixtures for the local backend's integration tests: real processes, a private TRAINOP_HOME per test,
and a guard that kills anything a test leaves behind (found by the TRAINOP_HOME in its environment)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_harness import kill_all

from trainop.backends.local.api import LocalBackend


@pytest.fixture(scope="session", autouse=True)
def leftover_guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Session-wide: whatever any test started and did not stop is killed at the end."""
    base = str(tmp_path_factory.getbasetemp())
    yield
    kill_all(base)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    h = tmp_path / "home"
    monkeypatch.setenv("TRAINOP_HOME", str(h))
    monkeypatch.setenv("TRAINOP_RESTART_BACKOFF_MAX", "2")  # keep crash loops quick
    monkeypatch.delenv("TRAINOP_GPUS", raising=False)
    yield h
    kill_all(str(h))


@pytest.fixture
def backend(home: Path) -> Iterator[LocalBackend]:
    b = LocalBackend(home)
    yield b
    b.close()
