"""Helpers shared by the local backend's integration tests (real processes, /proc checks, the CLI)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from trainop.api.constants import ANNOTATION_INTERRUPTED, ENV_TRAINOP_JOB_UID
from trainop.backends.base import detect_state
from trainop.backends.local import procs
from trainop.backends.local.api import LocalBackend

T = TypeVar("T")


def processes_with_home(prefix: str) -> list[int]:
    """Pids of live processes whose environment has TRAINOP_HOME under ``prefix`` (ours, from a test)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state in (b"Z", b"X"):
            continue
        if any(e.startswith(b"TRAINOP_HOME=" + prefix.encode()) for e in env):
            out.append(int(entry.name))
    return out


def kill_all(prefix: str) -> list[int]:
    pids = processes_with_home(prefix)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def wait_for(predicate: Callable[[], T | None], what: str, timeout: float = 60.0, interval: float = 0.1) -> T:
    """Poll until ``predicate`` returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 120.0, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``trainop ARGS`` as a user runs it (a fresh process, the test's TRAINOP_HOME)."""
    return subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )


def write_manifest(path: Path, manifest: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def condition(job: Any, ctype: str) -> Any:
    for c in (job.status.conditions if job.status else None) or []:
        if c.type == ctype and c.status == "True":
            return c
    return None


def pod(backend: LocalBackend, job: str, name: str) -> dict[str, Any] | None:
    return next((p for p in backend.pods(job) if p["metadata"]["name"] == name), None)


def live_pids(pids: list[int]) -> list[int]:
    """The ones still alive (zombies are dead: they only wait to be reaped)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            out.append(pid)
    return out


def session_pids(sid: int) -> list[int]:
    """Live processes in session ``sid`` (a replica and everything it forked)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in (b"Z", b"X") and (int(fields[3]) == sid or int(fields[2]) == sid):
            out.append(int(entry.name))
    return out


def running_pids(backend: LocalBackend, job: str) -> list[int]:
    """Pids of the job's replica processes the store says are running."""
    row = backend.store.find_job("default", job)
    if row is None:
        return []
    return [p.pid for p in backend.store.list_processes(row.uid, unfinished=True) if p.pid is not None]


def stopped(backend: LocalBackend, name: str) -> dict[str, Any]:
    """The job as run's stop leaves it: still there, Suspended and marked interrupted, no pod left and
    no process of it alive (its supervisor stays, waiting for a resume or a delete)."""
    row = backend.store.find_job("default", name)
    if row is None:
        return {"kept": False}
    job = backend.get(name)
    return {
        "kept": True,
        "state": detect_state(job),
        "marked": ANNOTATION_INTERRUPTED in (job.metadata.annotations or {}),
        "pods": [p["metadata"]["name"] for p in backend.store.list_pods(row.uid)],
        "replica processes": [st.pid for st in procs.find_marked(ENV_TRAINOP_JOB_UID, row.uid)],
    }


KEPT = {"kept": True, "state": "Suspended", "marked": True, "pods": [], "replica processes": []}
