"""Process identity and signalling through /proc (Linux): who is alive, and whole-session kills.

A pid alone is not an identity (pids are reused), so a process is named by (pid, start time in clock
ticks since boot, boot id). Replicas run as session leaders (setsid), so a replica's processes are
found by session or process group. I/O adapter; it never decides what should be killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True, slots=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    pgid: int
    sid: int
    start_ticks: int


def read_stat(pid: int) -> ProcStat | None:
    """The fields of /proc/<pid>/stat we use, or None when the process is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after its last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcStat(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19]))
    except (IndexError, ValueError):
        return None


@cache
def boot_id() -> str:
    """Changes on every boot, so a recorded (pid, start ticks) never matches a process of a later boot."""
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    st = read_stat(pid)
    return st.start_ticks if st else None


def is_alive(pid: int, ticks: int | None, boot: str | None = None) -> bool:
    """True when ``pid`` still names the process that started at ``ticks`` (and is not a zombie)."""
    if boot is not None and boot != boot_id():
        return False
    st = read_stat(pid)
    return st is not None and st.state not in ("Z", "X") and (ticks is None or st.start_ticks == ticks)


def iter_stats() -> Iterator[ProcStat]:
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            st = read_stat(int(entry.name))
            if st is not None:
                yield st


def session_members(sid: int) -> list[int]:
    """Live processes in session ``sid`` or process group ``sid`` (a replica and everything it forked,
    including children that moved to their own process group)."""
    return [st.pid for st in iter_stats() if (st.sid == sid or st.pgid == sid) and st.state not in ("Z", "X")]


def signal_session(sid: int, leader_ticks: int | None, sig: int) -> int:
    """Send ``sig`` to every process of the replica session ``sid``; returns how many were signalled.

    When the leader itself is still alive but started at another time than recorded, the session id
    was reused by an unrelated process: nothing is signalled. While any member of the group lives the
    kernel keeps the id reserved, so members found by id are ours.
    """
    leader = read_stat(sid)
    if leader is not None and leader_ticks is not None and leader.start_ticks != leader_ticks:
        return 0
    count = 0
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)
        count += 1
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            count += 1
    return count


def kill_session(sid: int, leader_ticks: int | None) -> None:
    signal_session(sid, leader_ticks, signal.SIGKILL)


def set_child_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (so it reaps them and can find them)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live process whose parent chain reaches ``root``."""
    children: dict[int, list[int]] = {}
    for st in iter_stats():
        if st.state not in ("Z", "X"):
            children.setdefault(st.ppid, []).append(st.pid)
    out: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out
