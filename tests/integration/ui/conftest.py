"""Fixtures for the web view's browser tests: one headless Chromium and one ``trainop ui`` per module,
over a private TRAINOP_HOME; every process a test leaves behind is killed at the end."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainop.testing.browser import UiServer, chromium_or_fail, start_ui


def _kill_with_home(prefix: str) -> None:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(b"TRAINOP_HOME=" + prefix.encode()) for e in env):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_or_fail() as driver:  # never a silent skip: a missing browser fails with its install
        yield driver


@pytest.fixture(scope="module")
def ui_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("ui") / "home"
    yield home
    _kill_with_home(str(home))


@pytest.fixture(scope="module")
def ui_env(ui_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINOP_GPUS", "TRAINOP_BACKEND")}
    env.update(TRAINOP_HOME=str(ui_home), TRAINOP_RESTART_BACKOFF_MAX="2")
    return env


@pytest.fixture(scope="module")
def ui(ui_env: dict[str, str]) -> Iterator[UiServer]:
    with start_ui(env=ui_env) as server:
        yield server


@pytest.fixture
def shots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where screenshots go: $TRAINOP_UI_SCREENSHOTS (make ui-screenshots), else the test's output."""
    return Path(os.environ.get("TRAINOP_UI_SCREENSHOTS") or tmp_path / "screenshots")
