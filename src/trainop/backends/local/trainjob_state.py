"""What a local TrainJob leaves under the trainop home, so that ``trainop get/describe/logs/delete``
serve it while ``trainop run FILE`` runs it and after: ``trainjobs/<ns>/<name>/trainjob.json`` (the
TrainJob with its status, the pods as Kubernetes JSON, the run's process and the sessions of the
running containers, each named by pid and start time as ``backends/local/procs.py`` names them)
and ``trainjobs/<ns>/<name>/logs/<pod>/<container>.log``.

The foreground run is the only writer (``TrainJobRecord``); readers take the file as written (it is
replaced whole, never edited in place). A record whose run ended without a verdict (killed) reads
as Failed, reason ``RunnerGone``. Deleting stops the run (SIGTERM to it), then any container's
session still there, and removes the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainop.api.constants import COND_FAILED
from trainop.backends.base import AlreadyExistsError, LogLine, NotFoundError
from trainop.backends.local.paths import FILE_MODE, StatePaths
from trainop.backends.local.procs import (
    boot_id,
    is_alive,
    session_members,
    signal_main,
    signal_session,
    start_ticks,
)
from trainop.core.trainjob_status import is_finished, set_condition

KIND = "TrainJob"
OBJECT_FILE = "trainjob.json"
REASON_RUNNER_GONE = "RunnerGone"
POLL = 0.1
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL, as the run's own stop


def record_dir(paths: StatePaths, namespace: str, name: str) -> Path:
    return paths.inside("trainjobs", namespace, name)


def build_identity(pid: int) -> dict[str, Any]:
    """A process as the record names it: pid, start time and boot (a pid alone is reused)."""
    return {"pid": pid, "ticks": start_ticks(pid), "boot": boot_id()}


def _alive(who: Mapping[str, Any]) -> bool:
    return is_alive(int(who["pid"]), who.get("ticks"), who.get("boot"))


@dataclass
class TrainJobRecord:
    """The writer: one foreground run's record of its TrainJob."""

    paths: StatePaths
    namespace: str
    name: str

    @property
    def directory(self) -> Path:
        return record_dir(self.paths, self.namespace, self.name)

    def create(self, record: dict[str, Any]) -> None:
        """Claim the name (AlreadyExistsError when a TrainJob of that name is recorded) and write
        the first state."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.directory.mkdir(mode=0o700)
        except FileExistsError:
            raise AlreadyExistsError(kind=KIND, namespace=self.namespace, name=self.name) from None
        self.write(record)

    def write(self, record: dict[str, Any]) -> None:
        """Replace the record (a no-op once the directory is gone: the TrainJob was deleted)."""
        if not self.directory.is_dir():
            return
        tmp = self.directory / f".{OBJECT_FILE}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with os.fdopen(fd, "w") as f:
                json.dump(record, f)
            os.replace(tmp, self.directory / OBJECT_FILE)

    def log_path(self, pod: str, container: str) -> Path:
        path = self.paths.inside("trainjobs", self.namespace, self.name, "logs", pod, f"{container}.log")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


def read_record(paths: StatePaths, namespace: str, name: str) -> dict[str, Any]:
    """The whole record: ``object`` (the TrainJob, its ``status`` as last written; Failed/RunnerGone
    when its run is gone without a verdict), ``runner``, ``sessions``, ``pods`` (LocalTrainJobRun's
    snapshot). NotFoundError."""
    path = record_dir(paths, namespace, name) / OBJECT_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        raise NotFoundError(kind=KIND, namespace=namespace, name=name) from None
    status = data["object"].setdefault("status", {})
    runner = data.get("runner")
    if not is_finished(status) and runner and not _alive(runner):
        msg = (
            f"trainop run (pid {runner['pid']}) ended before the TrainJob finished; trainop delete stops "
            "what is left of its pods"
        )
        set_condition(status, COND_FAILED, "True", REASON_RUNNER_GONE, msg, datetime.now(UTC))
    return data


def read_trainjob(paths: StatePaths, namespace: str, name: str) -> dict[str, Any]:
    """The recorded TrainJob as Kubernetes JSON. NotFoundError."""
    obj: dict[str, Any] = read_record(paths, namespace, name)["object"]
    return obj


def list_trainjobs(paths: StatePaths, namespace: str | None) -> list[dict[str, Any]]:
    root = paths.inside("trainjobs")
    spaces = [namespace] if namespace is not None else sorted(p.name for p in root.glob("*") if p.is_dir())
    out = []
    for ns in spaces:
        for d in sorted(root.joinpath(ns).glob("*")) if root.joinpath(ns).is_dir() else []:
            with contextlib.suppress(NotFoundError):
                out.append(read_trainjob(paths, ns, d.name))
    return out


def read_logs(
    paths: StatePaths, namespace: str, name: str, *, pod: str | None = None, follow: bool = False
) -> Iterator[LogLine]:
    """Each container's lines, pod by pod (``pod``: one pod, by its name or without the job's
    prefix); ``follow``: lines as they come until the TrainJob has finished."""
    read_trainjob(paths, namespace, name)  # NotFoundError first
    logs = record_dir(paths, namespace, name) / "logs"
    offsets: dict[Path, int] = {}

    def drain(final: bool) -> Iterator[LogLine]:
        for f in sorted(logs.glob("*/*.log")):
            if pod is not None and f.parent.name not in (pod, f"{name}-{pod}"):
                continue
            start = offsets.get(f, 0)
            try:
                data = f.read_bytes()[start:]
            except FileNotFoundError:
                continue
            end = len(data) if final else data.rfind(b"\n") + 1
            offsets[f] = start + end
            replica = f.parent.name.removeprefix(f"{name}-")
            for raw in data[:end].splitlines():
                yield LogLine(replica, f.stem, 0, raw.decode(errors="replace"))

    if not follow:
        yield from drain(final=True)
        return
    while True:
        try:
            done = is_finished(read_trainjob(paths, namespace, name).get("status") or {})
        except NotFoundError:
            done = True  # deleted while followed
        yield from drain(final=done)
        if done:
            return
        time.sleep(POLL)


def delete_trainjob(paths: StatePaths, namespace: str, name: str, *, grace: float = 5.0) -> None:
    """Stop the run and its containers (SIGTERM; SIGKILL after ``grace`` seconds), then remove the
    record. NotFoundError."""
    data = read_record(paths, namespace, name)
    runner = data.get("runner")
    if runner and not is_finished(data["object"].get("status") or {}) and _alive(runner):
        signal_main(int(runner["pid"]), runner.get("ticks"), signal.SIGTERM)
        deadline = time.monotonic() + grace + STOP_GRACE  # the run stops its pods within its own grace
        while _alive(runner) and time.monotonic() < deadline:
            time.sleep(POLL)
    # What the run left (it was killed, or did not stop in time): each container's session.
    sessions = [(int(sid), ticks) for sid, ticks in data.get("sessions") or []]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for sid, ticks in sessions:
            signal_session(sid, ticks, sig)
        deadline = time.monotonic() + grace
        while any(session_members(sid) for sid, _ in sessions) and time.monotonic() < deadline:
            time.sleep(POLL)
    shutil.rmtree(record_dir(paths, namespace, name), ignore_errors=True)
