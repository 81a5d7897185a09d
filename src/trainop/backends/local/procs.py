"""Process identity and signalling through /proc (Linux): who is alive, and whole-session kills.

A pid alone is not an identity (pids are reused), so a process is named by (pid, start time in clock
ticks since boot, boot id). Replicas run as session leaders (setsid), bound to their supervisor's life
and marked in their environment, so a replica's processes are found by session, process group or
marker. I/O adapter; it never decides what should be killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PROC = Path("/proc")
_PR_SET_PDEATHSIG = 1
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
    """Every live process (zombies are not)."""
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            st = read_stat(int(entry.name))
            if st is not None and st.state not in ("Z", "X"):
                yield st


def session_members(sid: int) -> list[int]:
    """Live processes in session ``sid`` or process group ``sid`` (a replica and everything it forked,
    including children that moved to their own process group)."""
    return [st.pid for st in iter_stats() if sid in (st.sid, st.pgid)]


def signal_session(sid: int, leader_ticks: int | None, sig: int) -> int:
    """Send ``sig`` once to every process of the replica session ``sid``; returns how many were
    signalled: the process group by one ``killpg``, then each member that moved to a group of its own.

    When the leader itself is still alive but started at another time than recorded, the session id
    was reused by an unrelated process: nothing is signalled. While any member of the group lives the
    kernel keeps the id reserved, so members found by id are ours.
    """
    leader = read_stat(sid)
    if leader is not None and leader_ticks is not None and leader.start_ticks != leader_ticks:
        return 0
    members = [st for st in iter_stats() if sid in (st.sid, st.pgid)]
    count = 0
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)
        count += sum(1 for st in members if st.pgid == sid)
    for st in members:
        if st.pgid != sid:  # not in the group the killpg reached
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(st.pid, sig)
                count += 1
    return count


def signal_main(pid: int, ticks: int | None, sig: int) -> None:
    """Send ``sig`` to a replica's main process only, as a kubelet sends SIGTERM to a container's main
    process: passing it on to its children is that process's business (torchrun's agent does), and a
    second copy from us would run their handlers twice. Nothing when it is gone or the pid was reused."""
    if is_alive(pid, ticks):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_session(sid: int, leader_ticks: int | None) -> None:
    signal_session(sid, leader_ticks, signal.SIGKILL)


@cache
def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def set_child_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (so it reaps them and can find them)."""
    prctl = _prctl()
    return prctl is not None and int(prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def build_die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` (it runs in the forked child, before exec) that binds the child to the life of
    the process that forks it: the kernel sends the child SIGKILL the moment that process dies
    (PR_SET_PDEATHSIG), whatever kills it, SIGKILL included.

    The race it closes: a parent killed between fork and the prctl would never send the signal; the
    child then has another parent already, sees it, and kills itself before exec, so no code of the
    command ever ran and nothing was forked. After the prctl, the kernel sends it. The signal is tied
    to the forking thread, so call Popen from a thread that lives as long as the process (the
    supervisor has one thread); it survives exec, except into a set-user-ID program.
    """
    parent = os.getpid()
    prctl = _prctl()  # looked up here: the child only calls it

    def die_with_parent() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return die_with_parent


def find_marked(name: str, value: str) -> list[ProcStat]:
    """Live processes whose environment (as they were exec'd) has ``name=value``. Another user's
    processes cannot be read, and are not ours."""
    entry = f"{name}={value}".encode()
    me = os.getpid()
    out = []
    for st in iter_stats():
        if st.pid == me:
            continue
        try:
            env = (PROC / str(st.pid) / "environ").read_bytes()
        except OSError:
            continue
        if entry in env.split(b"\0"):
            out.append(st)
    return out


def kill_marked(name: str, value: str) -> int:
    """SIGKILL every process marked ``name=value`` and the sessions they belong to; returns how many
    marked processes there were. A session is killed whole only when it is the job's: its leader is
    marked too, or gone (the kernel keeps a session's id reserved while any member lives); a marked
    process in someone else's live session (a shell that copied the variable) dies alone."""
    marked = find_marked(name, value)
    pids = {st.pid for st in marked}
    for st in marked:
        if st.sid in pids or read_stat(st.sid) is None:
            signal_session(st.sid, None, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(st.pid, signal.SIGKILL)
    return len(marked)


def descendants(root: int) -> list[int]:
    """Every live process whose parent chain reaches ``root``."""
    children: dict[int, list[int]] = {}
    for st in iter_stats():
        children.setdefault(st.ppid, []).append(st.pid)
    out: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out
