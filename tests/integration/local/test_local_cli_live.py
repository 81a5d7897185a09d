"""``trainop run`` in a real terminal (a pseudo-terminal, so the live status and in-place lines are
what a user sees): the GPU wait reason, restart counts and the crash-loop notice, the failure summary,
a ``\\r`` progress bar updating in place, the note on replicas left running, an outside delete, and
Ctrl-C stopping the replicas while keeping the job and its logs."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from local_harness import run_cli, write_manifest

from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|\x1b[=>]")


def plain(raw: str) -> str:
    """What the terminal received, without colours and cursor movements (each \\r kept)."""
    return _ANSI.sub("", raw)


class Terminal:
    """``trainop ARGS`` with a pseudo-terminal as its controlling terminal (stdin, stdout, stderr)."""

    def __init__(self, *args: str, columns: int = 250, env: dict[str, str] | None = None) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        self.master = master
        self.raw = b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainop.cli.main", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            # The terminal becomes the session's controlling terminal: Ctrl-C typed into it is SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            env={**os.environ, "TERM": "xterm-256color", **(env or {})},
        )
        os.close(slave)

    @property
    def text(self) -> str:
        return plain(self.raw.decode(errors="replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every writer closed its end
            return False
        self.raw += data
        return bool(data)

    def expect(self, want: str | Callable[[str], Any], what: str, timeout: float = 60.0) -> None:
        """Read until ``want`` (a text to appear, or a predicate of the text) holds."""
        predicate = want if callable(want) else lambda text: want in text
        deadline = time.monotonic() + timeout
        while not predicate(self.text):
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out waiting for {what}; the terminal showed:\n{self.text}")
            if not self._read(0.1) and self.proc.poll() is not None:
                raise AssertionError(f"trainop exited before {what}; the terminal showed:\n{self.text}")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.1):
            pass
        code = self.proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        os.close(self.master)
        return code


def python_job(name: str, script: Path) -> dict[str, Any]:
    return pytorch_job(name).master(1).command([sys.executable, str(script)]).build_dict()


BAR = """
import os, sys, time
step = os.path.join(os.path.dirname(__file__), "step")
for i in range(4):
    sys.stdout.write(f"\\rtraining [{'#' * i:<3}] {i}/3")
    sys.stdout.flush()
    while not os.path.exists(f"{step}{i}"):  # the test moves the bar on once it saw this state
        time.sleep(0.02)
print()
print("done")
"""


def test_a_progress_bar_updates_in_place_on_a_terminal(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "bar.py"
    script.write_text(BAR)
    path = write_manifest(tmp_path / "bar.yaml", python_job("bar", script))
    term = Terminal("run", str(path))
    for i in range(4):
        term.expect(f"master-0 | training [{'#' * i:<3}] {i}/3", f"the bar at {i}/3")
        (tmp_path / f"step{i}").touch()
    code = term.wait()
    # A line as it stays on screen: what was written after its last \r (rich clears the line there).
    lines = [line.rsplit("\r", 1)[-1] for line in term.text.replace("\r\n", "\n").split("\n")]
    got = {
        "rc": code,
        # Each state was on screen while the line was unfinished, and none was glued to the next.
        "glued": [line for line in lines if "0/3training" in line or "1/3training" in line],
        "final line": "master-0 | training [###] 3/3" in lines,
        "then": "master-0 | done" in lines,
    }
    assert got == {"rc": 0, "glued": [], "final line": True, "then": True}


def test_a_progress_bar_without_a_terminal_prints_its_last_state(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "bar.py"
    script.write_text(BAR)
    for i in range(4):
        (tmp_path / f"step{i}").touch()
    path = write_manifest(tmp_path / "bar.yaml", python_job("bar", script))
    out = run_cli("run", str(path)).stdout.splitlines()
    assert [line for line in out if line.startswith("master-0")] == [
        "master-0 | training [###] 3/3",
        "master-0 | done",
    ]


def test_a_job_waiting_for_gpus_says_so_and_a_delete_elsewhere_ends_run(home: Path, tmp_path: Path) -> None:
    job = pytorch_job("gpu").master(1).workers(1).gpu("Worker", 1).command(["sleep", "60"]).build_dict()
    path = write_manifest(tmp_path / "gpu.yaml", job)
    term = Terminal("run", str(path), env={"TRAINOP_GPUS": ""})
    term.expect(
        lambda t: (
            "worker-0: waiting for GPUs: 0/1 nodes are available: insufficient nvidia.com/gpu: pod "
            "gpu-worker-0 needs 1 and this machine has none" in t
        ),
        "the GPU wait reason",
    )
    assert run_cli("delete", "gpu").returncode == 0
    code = term.wait()
    ended = re.search(r"PyTorchJob gpu was deleted by another command while (Created|Running)", term.text)
    assert (code, ended is not None) == (1, True), term.text


def test_a_crash_loop_shows_restarts_a_notice_and_the_failure_summary(home: Path, tmp_path: Path) -> None:
    job = (
        pytorch_job("crash")
        .master(1)
        .workers(1)
        .restart_policy("OnFailure")
        .run_policy(backoffLimit=2)
        .command([sys.executable, str(tmp_path / "missing.py")], "Master")
        .command(["sh", "-c", "echo working; sleep 60"], "Worker")
        .build_dict()
    )
    path = write_manifest(tmp_path / "crash.yaml", job)
    term = Terminal("run", str(path))
    code = term.wait(timeout=120)
    text = term.text
    # (the interpreter names itself first: its path, which may differ from sys.executable's spelling)
    missing = re.escape(f": can't open file '{tmp_path / 'missing.py'}': [Errno 2] No such file or directory")
    got = {
        "rc": code,
        "restart counted": re.search(r"Master  \d/1 Running(, 1 CrashLoopBackOff)? · [12] restarts?", text)
        is not None,
        "notice": re.search(
            r"master-0 restarted \(restart [12], restartPolicy OnFailure\): exit code 2 \(Error\); its last "
            rf"lines:\r\n  master-0 \| \S+{missing}",
            text,
        )
        is not None,
        "summary": re.search(
            # (2 or 3: the job fails on the restart past backoffLimit 2, which the pod may not show yet)
            r"  master-0 failed first: exit code 2 \(Error\), after [23] restarts; its last lines:\r\n"
            rf"  master-0 \| \S+{missing}",
            text,
        )
        is not None,
        "reason": "PyTorchJobFailed: Job crash has failed because it has reached the specified backoff limit"
        in text,
        # (the crash loop goes on under cleanPodPolicy None: master-0 is left too, named as looping
        # unless its restarted process happens to be up at that moment)
        "leftover": re.search(
            r"note: 2 replicas still running after the job Failed \(cleanPodPolicy: None\): master-0"
            r"( \(in CrashLoopBackOff: restartPolicy OnFailure restarts it\))?, worker-0; they run until "
            r"they exit, as pods do\. Stop them: trainop delete crash",
            text,
        )
        is not None,
    }
    want = {
        "rc": 1,
        "restart counted": True,
        "notice": True,
        "summary": True,
        "reason": True,
        "leftover": True,
    }
    assert got == want, f"{got}\n{text}"
    assert run_cli("delete", "crash").returncode == 0


GRACEFUL = "trap 'echo saving checkpoint; exit 0' TERM; echo up; while true; do sleep 0.05; done"


def test_ctrl_c_stops_the_replicas_and_keeps_the_job_and_its_logs(home: Path, tmp_path: Path) -> None:
    """Ctrl-C typed into the terminal (SIGINT to the foreground group): the replicas get SIGTERM, what
    they print while shutting down is shown, run exits 130, and the job stays (logs work) until deleted."""
    job = pytorch_job("ctrlc").master(1).workers(1).command(["sh", "-c", GRACEFUL]).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "c.yaml", job)))
    term.expect(lambda t: "master-0 | up" in t and "worker-0 | up" in t, "both replicas up")
    term.type(b"\x03")
    code = term.wait()
    logs = run_cli("logs", "ctrlc")
    got = {
        "rc": code,
        "shown while stopping": sorted(
            line.strip() for line in term.text.splitlines() if line.strip().endswith("| saving checkpoint")
        ),
        "kept": "PyTorchJob ctrlc interrupted: its replicas were stopped; the job and its logs are kept"
        in term.text,
        "logs": sorted(line for line in logs.stdout.splitlines() if "checkpoint" in line),
        "state": run_cli("get", "ctrlc").stdout.splitlines()[1].split()[2],
    }
    assert got == {
        "rc": 130,
        "shown while stopping": ["master-0 | saving checkpoint", "worker-0 | saving checkpoint"],
        "kept": True,
        "logs": ["master-0 | saving checkpoint", "worker-0 | saving checkpoint"],
        "state": "Interrupted",
    }, term.text
    assert (run_cli("delete", "ctrlc").returncode, run_cli("get", "ctrlc").returncode) == (0, 3)


def test_ctrl_c_in_a_terminal_reaches_run(home: Path, tmp_path: Path) -> None:
    """Typed Ctrl-C (the terminal's SIGINT to the foreground group) ends run with 130."""
    job = pytorch_job("ctrl").master(1).command(["sh", "-c", "echo up; sleep 60"]).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "c.yaml", job)))
    term.expect(lambda t: "master-0 | up" in t, "the replica's first line")
    term.type(b"\x03")
    assert term.wait() == 130
