"""The local backend's ``JobFeed`` (backends/base.py): what ``trainop run`` watches a job through,
read from the store and the replicas' log files. Reads only; the CLI never opens the store itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainop.backends.base import ContainerRun, LogLine, replica_label
from trainop.backends.local.api import LogFollower

if TYPE_CHECKING:
    from trainop.backends.local.api import LocalBackend
    from trainop.backends.local.store import JobRow, ProcessRow

_TAIL_BYTES = 16384


def read_tail(path: str) -> list[str]:
    """The raw lines of a log file's last 16 KiB (the caller renders ``\\r`` and picks the last few)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(size - _TAIL_BYTES, 0))
            data = fh.read()
    except OSError:
        return []
    return data.decode(errors="replace").removesuffix("\n").split("\n")  # \r stays: render_line's


class LocalFeed:
    def __init__(self, backend: LocalBackend, row: JobRow) -> None:
        self.backend, self.row = backend, row
        self.follower = LogFollower(backend, row, every_attempt=True)

    def poll_lines(self) -> Any:
        return self.follower.poll()

    def partial_lines(self) -> list[LogLine]:
        return self.follower.partial_lines()

    def notes(self) -> list[str]:
        return []

    def pods(self) -> list[dict[str, Any]]:
        return self.backend.store.list_pods(self.row.uid)

    def _processes(self) -> list[ProcessRow]:
        return [p for p in self.backend.store.list_processes(self.row.uid) if not p.init]

    def runs(self) -> list[ContainerRun]:
        return list(self._processes())

    def tails(
        self, labels: set[str], defaults: set[str], *, finished_only: bool, final: bool = False
    ) -> dict[str, list[str] | None]:
        latest: dict[str, ProcessRow] = {}
        for p in self._processes():
            label = replica_label(self.row.name, p.pod)
            if label not in labels or (finished_only and p.finished_at is None):
                continue
            if p.container not in defaults and label in latest:
                continue
            if label not in latest or p.attempt >= latest[label].attempt:
                latest[label] = p
        return {label: read_tail(p.log_path) for label, p in latest.items() if Path(p.log_path).exists()}

    def running_replicas(self) -> list[str]:
        pods = {p.pod for p in self.backend.store.list_processes(self.row.uid, unfinished=True)}
        return sorted(replica_label(self.row.name, p) for p in pods)

    def close(self) -> None:
        for _, fh, _ in self.follower.open.values():
            fh.close()
        self.follower.open.clear()
