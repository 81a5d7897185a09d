"""Helpers the e2e tests share: run an example through the real local backend, read the JSON evidence
its replicas print (lines prefixed ``TRAINOP_E2E``), summarise the job's status, and fail with the
install command when a framework is missing. Run times are collected here and printed by conftest.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from trainop.api.common import TrainingJob
from trainop.backends.base import JobDetails, is_finished, replica_label
from trainop.backends.local import procs
from trainop.backends.local.api import LocalBackend

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
REPORT_PREFIX = "TRAINOP_E2E "

# test id → seconds from submit to the job's final condition; conftest prints them after the run.
RUN_TIMES: dict[str, float] = {}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Report:
    """One evidence line: which replica printed it, in which attempt (restart), and its JSON."""

    replica: str  # "worker-1"
    attempt: int
    data: dict[str, Any]


def require_module(module: str, extra: str) -> None:
    """Fail (never skip) when a framework is missing, saying how to install it."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(
            f"{module} is not installed in this environment: run `make extra-{extra}` "
            f"(or `.venv/bin/pip install -e '.[{extra}]'`)",
            pytrace=False,
        )


def require_command(command: str, install: str) -> None:
    if shutil.which(command) is None:
        pytest.fail(f"`{command}` is not on PATH: run `{install}`", pytrace=False)


def load_manifest(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), f"{path}: expected one manifest"
    return doc


def submit(backend: LocalBackend, example: Path) -> str:
    """Submit an example as `trainop run` does: replicas start in the manifest's directory."""
    job = backend.submit(load_manifest(example), base_dir=example.parent)
    return job.name


def wait_for(predicate: Callable[[], T | None], what: str, timeout: float, interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_finished(backend: LocalBackend, name: str, timeout: float) -> TrainingJob:
    """The job once Succeeded or Failed; on timeout, fail with its state and the replicas' log tails."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = backend.get(name)
        if is_finished(job):
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {name} did not finish within {timeout:.0f}s\n{log_tails(backend, name)}")


def run_example(
    backend: LocalBackend, example: Path, test_id: str, timeout: float
) -> tuple[str, TrainingJob]:
    """Submit, wait for the final condition, and record the run time under ``test_id``."""
    started = time.monotonic()
    name = submit(backend, example)
    job = wait_finished(backend, name, timeout)
    record_run_time(test_id, time.monotonic() - started)
    return name, job


def record_run_time(test_id: str, seconds: float) -> None:
    RUN_TIMES[test_id] = seconds
    print(f"e2e run time {test_id}: {seconds:.1f}s")


def read_reports(details: JobDetails) -> list[Report]:
    """Every evidence line of every attempt of every container, in start order."""
    out: list[Report] = []
    for p in sorted(details.processes, key=lambda r: (r.started_at, r.pod, r.attempt)):
        try:
            text = Path(p.log_path).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            at = line.find(REPORT_PREFIX)
            if at < 0:
                continue
            try:
                data, _ = json.JSONDecoder().raw_decode(line, at + len(REPORT_PREFIX))
            except json.JSONDecodeError:
                continue  # a torn line: the evidence checks will say what is missing
            out.append(Report(replica_label(details.job.name, p.pod), p.attempt, data))
    return out


def events(reports: list[Report], event: str) -> list[Report]:
    return [r for r in reports if r.data.get("event") == event]


def log_tails(backend: LocalBackend, name: str, lines: int = 15) -> str:
    """The last lines of each replica's newest log, for failure messages."""
    details = backend.describe(name)
    latest: dict[tuple[str, str], Any] = {}
    for p in details.processes:
        key = (p.pod, p.container)
        if key not in latest or p.attempt > latest[key].attempt:
            latest[key] = p
    out = [f"status: {summarize_conditions(details.job)}"]
    for (pod, container), p in sorted(latest.items()):
        try:
            tail = Path(p.log_path).read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            tail = ["<no log>"]
        out.append(f"--- {pod}/{container} attempt {p.attempt} exit {p.exit_code}")
        out.extend(tail)
    return "\n".join(out)


def summarize_conditions(job: TrainingJob) -> list[tuple[str, str, str]]:
    """(type, status, reason) of each condition, oldest first."""
    return [
        (c.type, c.status, c.reason or "") for c in ((job.status.conditions if job.status else None) or [])
    ]


def summarize_replicas(job: TrainingJob) -> dict[str, dict[str, int]]:
    """replicaStatuses as counts (absent counts are 0); the selector is left out."""
    statuses = (job.status.replica_statuses if job.status else None) or {}
    return {
        rtype: {"active": s.active or 0, "succeeded": s.succeeded or 0, "failed": s.failed or 0}
        for rtype, s in statuses.items()
    }


def succeeded_conditions(kind: str) -> list[tuple[str, str, str]]:
    """A job that ran and succeeded without a restart of the job (§4.1 typical end state)."""
    return [("Created", "True", f"{kind}Created"), ("Running", "False", f"{kind}Running"),
            ("Succeeded", "True", f"{kind}Succeeded")]  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Processes (Linux /proc): killing a replica the way a node failure does, and finding listeners.


def replica_pid(details: JobDetails, pod: str) -> int:
    """The running main process (the container's session leader) of ``pod``."""
    running = [p for p in details.processes if p.pod == pod and not p.init and p.finished_at is None]
    assert running and running[-1].pid is not None, f"{pod} has no running process: {details.processes}"
    return running[-1].pid


def kill_replica(pid: int) -> list[int]:
    """SIGKILL a replica's whole process tree, as when its container or node dies. The tree, not just
    the session: torchrun starts its workers in sessions of their own."""
    tree = [pid, *procs.descendants(pid)]
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    return tree


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on TCP ``port`` (IPv4 or IPv6, any address)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    return inodes


def owns_socket(pid: int, inodes: set[str]) -> bool:
    """Whether ``pid`` or one of its descendants holds one of the socket ``inodes``."""
    for p in [pid, *procs.descendants(pid)]:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return True
    return False
