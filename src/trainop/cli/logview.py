"""``trainop logs --tail N --since DURATION --timestamps``: which lines to print, and their stamps.
Pure: lines, counts and process times in; decisions out.

The local backend's replicas write straight to their log files, so a line's own time is not
recorded: ``--since`` keeps the attempts (process runs) that were alive in the window, and
``--timestamps`` stamps lines as ``logs -f`` reads them (lines written before it started have none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainop.backends.base import ContainerRun, LogLine

Key = tuple[str, str, int]  # (replica, container, attempt)


def key_of(line: LogLine) -> Key:
    return (line.replica, line.container, line.attempt)


def count_lines(lines: Iterable[LogLine]) -> Counter[Key]:
    return Counter(key_of(line) for line in lines)


def compute_attempts_since(processes: Sequence[ContainerRun], job_name: str, cutoff: float) -> set[Key]:
    """The attempts alive at or after ``cutoff`` (still running, or ended after it)."""
    prefix = f"{job_name}-"
    return {
        (p.pod.removeprefix(prefix), p.container, p.attempt)
        for p in processes
        if p.finished_at is None or p.finished_at >= cutoff
    }


class LineFilter:
    """Decides, line by line, what ``logs`` prints. ``backlog``: lines per attempt already written
    when the command started; ``tail``: how many of them to keep per container (kubectl's --tail,
    per container, the newest attempt's lines last)."""

    def __init__(self, backlog: Counter[Key], tail: int | None, attempts: set[Key] | None) -> None:
        self.backlog, self.tail, self.attempts = backlog, tail, attempts
        self.seen: Counter[Key] = Counter()
        # --tail counts per container across its attempts: the newest lines are in the last attempts.
        self.skip: dict[Key, int] = {}
        if tail is not None:
            per_container: dict[tuple[str, str], list[Key]] = {}
            for k in sorted(backlog, key=lambda k: k[2]):
                if attempts is None or k in attempts:
                    per_container.setdefault(k[:2], []).append(k)
            for keys in per_container.values():
                left = tail
                for k in reversed(keys):
                    keep = min(left, backlog[k])
                    self.skip[k] = backlog[k] - keep
                    left -= keep

    def accept(self, line: LogLine) -> tuple[bool, bool]:
        """(print it, it is from the backlog)."""
        k = key_of(line)
        self.seen[k] += 1
        backlog = self.seen[k] <= self.backlog.get(k, 0)
        if self.attempts is not None and backlog and k not in self.attempts:
            return False, backlog
        if backlog and self.seen[k] <= self.skip.get(k, 0):
            return False, backlog
        return True, backlog


def format_stamp(ts: float) -> str:
    """kubectl's --timestamps format: RFC 3339 with nanoseconds, UTC."""
    dt = datetime.fromtimestamp(ts, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond:06d}000Z"
