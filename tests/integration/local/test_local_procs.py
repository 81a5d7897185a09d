"""procs' two guarantees against orphans, with real processes: a child bound to its parent's life dies
with it (SIGKILL included), and kill_marked kills the job's marked sessions but never someone else's
session that merely holds a marked process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from local_harness import live_pids, session_pids, wait_for

from trainop.backends.local import procs

pytestmark = pytest.mark.integration

# A parent that starts `sleep` bound to its life, prints the child's pid, then waits to be killed.
PARENT = """
import subprocess, sys
from trainop.backends.local import procs
child = subprocess.Popen(["sleep", "300"], start_new_session=True, preexec_fn=procs.build_die_with_parent())
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_a_child_bound_to_its_parent_dies_with_it() -> None:
    # `with` closes the pipes (unclosed, they are ResourceWarnings) and reaps the parent.
    with subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert live_pids([child]) == [child]
        parent.kill()
        parent.wait()
    wait_for(lambda: not live_pids([child]), "the child to die with its parent", timeout=10)


def test_kill_marked_kills_the_marked_session_but_spares_a_foreign_one(tmp_path: Path) -> None:
    uid = f"test-{os.getpid()}-{tmp_path.name}"
    marked_env = {**os.environ, "TRAINOP_JOB_UID": uid}
    # The job's own session: its leader is marked; a member cleared its environment.
    own = subprocess.Popen(
        ["sh", "-c", "env -i /bin/sleep 300 & exec sleep 300"], env=marked_env, start_new_session=True
    )
    # Someone else's session (its leader unmarked and alive) in which one process copied the marker.
    foreign = subprocess.Popen(
        ["sh", "-c", f"sleep 300 & TRAINOP_JOB_UID={uid} sleep 300 & wait"], start_new_session=True
    )
    try:
        wait_for(
            lambda: len(session_pids(own.pid)) == 2 and len(session_pids(foreign.pid)) == 3, "both sessions"
        )
        marked_in_foreign = [p.pid for p in procs.find_marked("TRAINOP_JOB_UID", uid) if p.sid == foreign.pid]
        procs.kill_marked("TRAINOP_JOB_UID", uid)
        own.wait(timeout=10)
        wait_for(lambda: not session_pids(own.pid) or None, "the job's session to be gone", timeout=10)
        wait_for(
            lambda: not live_pids(marked_in_foreign) or None, "the marked foreign process to die", timeout=10
        )
        got = {"foreign session left": len(session_pids(foreign.pid)), "foreign leader": foreign.poll()}
        assert got == {"foreign session left": 2, "foreign leader": None}
    finally:
        for sid in (own.pid, foreign.pid):
            procs.kill_session(sid, None)
        own.wait()
        foreign.wait()
