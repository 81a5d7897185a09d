"""``trainop run`` in a real terminal (a pseudo-terminal as its controlling terminal, so the live
status, the in-place lines and Ctrl-C are what a user gets), issue 12's Done-when one item at a time,
each on a small real job: the GPU wait reason while another job holds the GPUs, restart counts and
the crash-loop notice of a script that exits 3, the failure summary, a tqdm-style bar updating in
place, the note on replicas left running after a success, a delete from another shell, and Ctrl-C
keeping the job and its logs (what was printed before and while shutting down).

Every wait is on what the terminal shows or on the job's recorded state, never a fixed sleep."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from local_harness import (
    KEPT,
    live_pids,
    run_cli,
    running_pids,
    session_pids,
    stopped,
    wait_for,
    write_manifest,
)

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job, tf_job

pytestmark = pytest.mark.integration

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|\x1b[=>]")


class Terminal:
    """``trainop ARGS`` with a pseudo-terminal (250 columns) as stdin, stdout, stderr and controlling
    terminal; ``text`` is everything it received, colours and cursor moves removed, each ``\\r`` kept."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, columns: int = 250
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        self.master, self.raw = master, b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainop.cli.main", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            start_new_session=True,
            # The pty becomes the session's controlling terminal: a typed Ctrl-C is its SIGINT.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            env={**os.environ, "TERM": "xterm-256color", **(env or {})},
        )
        os.close(slave)

    @property
    def text(self) -> str:
        return _ANSI.sub("", self.raw.decode(errors="replace"))

    def _read(self, timeout: float) -> bool:
        """Read what is there; False once every writer closed its end (EIO)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.raw += data
        return bool(data)

    def expect(self, want: str | Callable[[str], Any], what: str, timeout: float = 90.0) -> Any:
        """Read until ``want`` (a text to appear, or a predicate of the text) holds; what it gave."""
        predicate = want if callable(want) else lambda text: want in text
        deadline = time.monotonic() + timeout
        while not (found := predicate(self.text)):
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out waiting for {what}; the terminal showed:\n{self.text}")
            if not self._read(0.1) and self.proc.poll() is not None:
                raise AssertionError(f"trainop exited before {what}; the terminal showed:\n{self.text}")
        return found

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 120.0) -> int:
        """Read to the end; the exit code."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.1):
            pass
        code = self.proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        os.close(self.master)
        return code

    def screen(self) -> list[str]:
        """The lines on the screen now (scrolled-off ones included), as a terminal shows them."""
        return render_screen(self.raw.decode(errors="replace"))


_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b[()][0-9A-B]|\x1b[=>]")


def render_screen(data: str) -> list[str]:
    """A minimal terminal for what rich and the replicas write: text overwrites at the cursor, ``\\r``,
    ``\\n``, ``\\b``, cursor up/down/forward/back/column (CSI A B C D G) and erase in line (CSI K);
    colours and modes are ignored. Trailing blanks and empty trailing lines are dropped."""
    rows: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    while pos < len(data):
        m = _CSI.match(data, pos)
        if m:
            pos = m.end()
            params, cmd = m.group(1) or "", m.group(2)
            n = int(params) if params.isdigit() else None
            if cmd == "A":
                row = max(row - (n or 1), 0)
            elif cmd == "B":
                row += n or 1
            elif cmd == "C":
                col += n or 1
            elif cmd == "D":
                col = max(col - (n or 1), 0)
            elif cmd == "G":
                col = (n or 1) - 1
            elif cmd == "K":
                while len(rows) <= row:
                    rows.append([])
                line = rows[row]
                if n == 2:
                    line.clear()
                elif n == 1:
                    line[: col + 1] = [" "] * min(col + 1, len(line))
                else:
                    del line[col:]
            continue
        ch = data[pos]
        pos += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
        elif ch == "\b":
            col = max(col - 1, 0)
        elif ch >= " " or ch == "\t":
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
    out = ["".join(line).rstrip() for line in rows]
    while out and not out[-1]:
        out.pop()
    return out


@pytest.fixture(autouse=True)
def _reap(home: Path) -> Any:
    """Whatever job a test leaves is deleted through the CLI (its supervisor with it)."""
    yield
    run_cli("delete", "--all")


def python_script(path: Path, source: str) -> list[str]:
    path.write_text(source)
    return [sys.executable, "-u", str(path)]


def test_gpu_wait_names_the_job_holding_them_then_runs_once_released(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One GPU (TRAINOP_GPUS=0) held by a submitted job: run's job waits and says why, in the
    scheduler's words, naming the job that holds it; once the holder is deleted it gets the GPU and
    runs."""
    monkeypatch.setenv("TRAINOP_GPUS", "0")
    holder = pytorch_job("holder").master(1).gpu("Master", 1).command(["sleep", "300"]).build_dict()
    assert run_cli("submit", str(write_manifest(tmp_path / "h.yaml", holder))).returncode == 0
    backend = LocalBackend(home)
    wait_for(lambda: running_pids(backend, "holder"), "the holder's replica")
    waiter = (
        pytorch_job("waiter")
        .master(1)
        .gpu("Master", 1)
        .command(["sh", "-c", 'echo "on GPU $CUDA_VISIBLE_DEVICES"'])
        .build_dict()
    )
    term = Terminal("run", str(write_manifest(tmp_path / "w.yaml", waiter)))
    # (the gang's wording, issue 11: the pod's need, then who holds the GPUs, with the count)
    term.expect(
        lambda t: re.search(
            r"master-0: waiting for GPUs: 0/1 nodes are available: insufficient nvidia\.com/gpu: pod "
            r"waiter-master-0 needs 1; [^\r\n]*0 of 1 are free \(held by default/holder: 1\)",
            t,
        ),
        "the GPU wait reason",
    )
    assert "master-0 | on GPU" not in term.text  # nothing ran while it waited
    assert run_cli("delete", "holder").returncode == 0
    code = term.wait()
    backend.close()
    assert (code, "master-0 | on GPU 0" in term.screen()) == (0, True), term.text


def test_gpu_wait_shows_whole_on_an_80_column_terminal(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that needs more GPUs than the machine has (TRAINOP_GPUS=0: one): at 80 columns the wait
    reason wraps under its replica instead of being cut, so the part that says how to fix it shows."""
    monkeypatch.setenv("TRAINOP_GPUS", "0")
    job = pytorch_job("big").master(1).gpu("Master", 2).command(["sh", "-c", "exit 0"]).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "big.yaml", job)), columns=80)
    fix = "or the replicas' nvidia.com/gpu limits"

    def shown(_: str) -> str | None:
        screen = term.screen()
        text = " ".join(line.strip() for line in screen)
        return text if fix in text and all(len(line) <= 80 for line in screen) else None

    text = term.expect(shown, "the whole GPU wait reason within 80 columns")
    term.proc.send_signal(signal.SIGINT)
    assert term.wait() == 130
    assert "master-0: waiting for GPUs: 0/1 nodes are available: insufficient nvidia.com/gpu:" in text


CRASH = """
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "starts"), "a") as f:
    f.write("x")
with open(os.path.join(here, "starts")) as f:
    start = len(f.read())
print("loading data", flush=True)
if start > 1:  # a restart: it fails once the test saw the count of restarts on screen
    while not os.path.exists(os.path.join(here, f"seen{start - 1}")):
        time.sleep(0.02)
print("loss is nan at step 7: giving up", flush=True)
sys.exit(3)
"""


def test_a_crash_loop_shows_restarts_the_notice_and_the_failure_summary(home: Path, tmp_path: Path) -> None:
    """A script that exits 3, restartPolicy OnFailure, backoffLimit 2: the status line counts the
    restarts (1, then 2), the first restart brings a notice (exit code, policy, last lines) once, and
    the end is a failure summary naming the replica, its exit code, its restarts and last lines; exit 1."""
    cmd = python_script(tmp_path / "crash.py", CRASH)
    job = pytorch_job("crash").master(1).restart_policy("OnFailure").run_policy(backoffLimit=2).command(cmd)
    term = Terminal("run", str(write_manifest(tmp_path / "crash.yaml", job.build_dict())))
    for n, word in ((1, "restart"), (2, "restarts")):
        line = f"  Master  1/1 Running · {n} {word}"

        def on_screen(_: str, line: str = line) -> bool:
            return line in term.screen()

        term.expect(on_screen, f"the status line counting {n} {word}")
        (tmp_path / f"seen{n}").touch()
    code = term.wait()
    text = term.text
    notice = (
        "master-0 restarted (restart 1, restartPolicy OnFailure): exit code 3 (Error); its last lines:\r\n"
        "  master-0 | loading data\r\n"
        "  master-0 | loss is nan at step 7: giving up"
    )
    got = {
        "rc": code,
        "notice once": text.count("master-0 restarted ("),
        "notice": notice in text,
        "verdict": re.search(r"PyTorchJob crash Failed after [\d.]+s", text) is not None,
        "reason": "PyTorchJobFailed: Job crash has failed because it has reached the specified backoff limit"
        in text,
        "summary": re.search(
            r"  master-0 failed first: exit code 3 \(Error\), after 2 restarts; its last lines:\r\n"
            r"  master-0 \| loading data\r\n"
            r"  master-0 \| loss is nan at step 7: giving up\r\n"
            r"  details: trainop describe crash; output: trainop logs crash --replica master-0",
            text,
        )
        is not None,
    }
    assert got == {
        "rc": 1,
        "notice once": 1,
        "notice": True,
        "verdict": True,
        "reason": True,
        "summary": True,
    }, text


# tqdm's own format, on stderr as tqdm writes it: "\r" then the whole bar each update.
TQDM = """
import os, sys, time
step = os.path.join(os.path.dirname(os.path.abspath(__file__)), "step")
bars = ["  0%|          | 0/4", " 25%|##5       | 1/4", " 50%|#####     | 2/4", " 75%|#######5  | 3/4",
        "100%|##########| 4/4"]
for i, bar in enumerate(bars):
    sys.stderr.write("\\repoch 1: " + bar)
    sys.stderr.flush()
    while i < 4 and not os.path.exists(f"{step}{i}"):  # the test moves it on once it saw this state
        time.sleep(0.02)
sys.stderr.write("\\n")
print("saved model.pt", flush=True)
"""
BARS = ["  0%|          | 0/4", " 25%|##5       | 1/4", " 50%|#####     | 2/4", " 75%|#######5  | 3/4"]


def test_a_tqdm_bar_updates_in_place(home: Path, tmp_path: Path) -> None:
    """While the bar runs, the screen has one line of it, prefixed by its replica, rewritten with each
    state (not a new line per update, nor the states glued into one line); once it ends, that one line
    with its last state stays, and the output goes on below it."""
    cmd = python_script(tmp_path / "bar.py", TQDM)
    job = pytorch_job("bar").master(1).command(cmd).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "bar.yaml", job)))
    seen: list[list[str]] = []
    for i, bar in enumerate(BARS):
        want = f"master-0 | epoch 1: {bar}"

        def bar_lines(_: str, want: str = want) -> list[str] | None:
            """The screen's lines of the bar, once its newest one is this state."""
            lines = [line for line in term.screen() if "epoch 1:" in line]
            return lines if lines[-1:] == [want] else None

        # (drawn completely once a live refresh after the replica's write has happened)
        seen.append(term.expect(bar_lines, f"the bar at {i}/4 on screen"))
        (tmp_path / f"step{i}").touch()
    code = term.wait()
    screen = term.screen()
    got = {
        "rc": code,
        "one bar line at each state": seen == [[f"master-0 | epoch 1: {bar}"] for bar in BARS],
        "at the end": [line for line in screen if "epoch 1:" in line],
        "then": screen[screen.index("master-0 | epoch 1: 100%|##########| 4/4") + 1 :][:1],
    }
    assert got == {
        "rc": 0,
        "one bar line at each state": True,
        "at the end": ["master-0 | epoch 1: 100%|##########| 4/4"],
        "then": ["master-0 | saved model.pt"],
    }, f"{seen}\n" + "\n".join(screen)


def test_a_finished_bar_leaves_no_stale_copy_on_screen(home: Path, tmp_path: Path) -> None:
    """At no moment is the bar on screen twice: once its line ends, its unfinished state is not
    redrawn under it (checked on the screen after each line the terminal received; rich's Live redraws
    the frame of its last refresh under every print, so run refreshes it first, ba994e8)."""
    cmd = python_script(tmp_path / "bar.py", TQDM)
    job = pytorch_job("bar").master(1).command(cmd).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "bar.yaml", job)))
    for i, bar in enumerate(BARS):
        term.expect(f"master-0 | epoch 1: {bar}", f"the bar at {i}/4")
        (tmp_path / f"step{i}").touch()
    assert term.wait() == 0
    raw = term.raw.decode(errors="replace")
    twice = {
        tuple(lines)
        for end in (k + 1 for k, ch in enumerate(raw) if ch == "\n")
        if len(lines := [line for line in render_screen(raw[:end]) if "epoch 1:" in line]) > 1
    }
    assert twice == set(), term.text


def test_replicas_left_running_after_a_success_are_named_with_how_to_stop_them(
    home: Path, tmp_path: Path
) -> None:
    """A TFJob with cleanPodPolicy None (upstream's default): the chief finishes, the job Succeeded,
    run exits 0, and says the parameter server still runs and which command stops it."""
    up = tmp_path / "ps-up"
    job = (
        tf_job("left")
        .chief(1)
        .ps(1)
        # (the chief finishes once the PS serves, so that the PS is surely running when the job ends)
        .command(["sh", "-c", f"until [ -e {up} ]; do sleep 0.05; done; echo chief done"], "Chief")
        .command(["sh", "-c", f"echo serving; touch {up}; sleep 300 & wait"], "PS")
        .run_policy(cleanPodPolicy="None")
        .build_dict()
    )
    term = Terminal("run", str(write_manifest(tmp_path / "left.yaml", job)))
    code = term.wait()
    backend = LocalBackend(home)
    still = running_pids(backend, "left")
    note = (
        "note: 1 replica still running after the job Succeeded (cleanPodPolicy: None): ps-0; they run "
        "until they exit, as pods do. Stop them: trainop delete left"
    )
    got = {
        "rc": code,
        "verdict": re.search(r"TFJob left Succeeded after [\d.]+s", term.text) is not None,
        "note": note in term.text.replace("\r\n", " "),  # (one line, wrapped only if the terminal must)
        "ps alive": bool(live_pids(still)),
    }
    assert got == {"rc": 0, "verdict": True, "note": True, "ps alive": True}, term.text
    assert run_cli("delete", "left").returncode == 0
    wait_for(lambda: not live_pids(still), "the PS stopped by the delete")
    backend.close()


def test_a_delete_from_another_shell_ends_run_saying_so(home: Path, tmp_path: Path) -> None:
    """While run watches a running job, `trainop delete` in another process: run ends, exit 1, saying
    the job was deleted elsewhere while Running; no replica process is left."""
    job = pytorch_job("elsewhere").master(1).workers(1).command(["sh", "-c", "echo up; sleep 300 & wait"])
    term = Terminal("run", str(write_manifest(tmp_path / "e.yaml", job.build_dict())))
    term.expect(lambda t: "master-0 | up" in t and "worker-0 | up" in t, "both replicas up")
    backend = LocalBackend(home)
    leaders = running_pids(backend, "elsewhere")
    everyone = [p for sid in leaders for p in session_pids(sid)]
    deleted = run_cli("delete", "elsewhere")
    code = term.wait()
    backend.close()
    got = {
        "delete": (deleted.returncode, deleted.stdout.strip()),
        "rc": code,
        "said": re.search(
            r"PyTorchJob elsewhere was deleted by another command while Running, after [\d.]+s: its replicas "
            r"were stopped and its record and logs removed",
            term.text,
        )
        is not None,
        "live": live_pids(everyone),
        "get": run_cli("get", "elsewhere").returncode,
    }
    assert got == {
        "delete": (0, "pytorchjob.kubeflow.org/elsewhere deleted"),
        "rc": 1,
        "said": True,
        "live": [],
        "get": 3,
    }, term.text


TRAIN = """
import signal, sys, time
step = 0
def stop(signum, frame):
    print(f"SIGTERM at step {step}: saving checkpoint", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, signal.SIG_IGN)  # not in the terminal's group anyway; as a launcher would
while True:
    step += 1
    if step == 3:
        print("epoch 1 done", flush=True)
    time.sleep(0.05)
"""


def test_ctrl_c_keeps_the_job_and_its_logs(home: Path, tmp_path: Path) -> None:
    """Ctrl-C typed into the terminal: the replicas get SIGTERM, their checkpoint lines are shown, run
    exits 130 saying the job is kept; the job stays Suspended and marked interrupted (get shows
    Interrupted) with no process left, and `trainop logs` shows what was printed before Ctrl-C and while
    shutting down; `trainop delete` then removes it."""
    cmd = python_script(tmp_path / "train.py", TRAIN)
    job = pytorch_job("keep").master(1).workers(1).command(cmd).build_dict()
    term = Terminal("run", str(write_manifest(tmp_path / "keep.yaml", job)))
    term.expect(
        lambda t: "master-0 | epoch 1 done" in t and "worker-0 | epoch 1 done" in t, "both replicas training"
    )
    term.type(b"\x03")
    code = term.wait()
    backend = LocalBackend(home)
    logs = run_cli("logs", "keep")
    lines = term.screen()
    got = {
        "rc": code,
        "said": "interrupted: stopping PyTorchJob keep's replicas" in term.text,
        "shown while stopping": sorted(
            re.sub(r"step \d+", "step N", line) for line in lines if line.endswith("saving checkpoint")
        ),
        "kept": "PyTorchJob keep interrupted: its replicas were stopped; the job and its logs are kept "
        "(trainop logs keep; trainop resume keep runs it again; trainop delete keep removes it)"
        in term.text.replace("\r\n", " "),
        "job": stopped(backend, "keep"),
        "get": run_cli("get", "keep").stdout.splitlines()[1].split()[2],
        "logs rc": logs.returncode,
        "logs": sorted(re.sub(r"step \d+", "step N", line) for line in logs.stdout.splitlines()),
    }
    assert got == {
        "rc": 130,
        "said": True,
        "shown while stopping": [
            "master-0 | SIGTERM at step N: saving checkpoint",
            "worker-0 | SIGTERM at step N: saving checkpoint",
        ],
        "kept": True,
        "job": KEPT,
        "get": "Interrupted",
        "logs rc": 0,
        "logs": [
            "master-0 | SIGTERM at step N: saving checkpoint",
            "master-0 | epoch 1 done",
            "worker-0 | SIGTERM at step N: saving checkpoint",
            "worker-0 | epoch 1 done",
        ],
    }, term.text
    backend.close()
    assert (run_cli("delete", "keep").returncode, run_cli("get", "keep").returncode) == (0, 3)


REPO = Path(__file__).resolve().parents[3]


def test_the_ddp_demos_script_trains_without_yaml(home: Path) -> None:
    """The README's torchrun-style line on the DDP demo's script, from the repository root: a
    PyTorchJob of 2 nodes x 2 processes (torchrun reads the PET_* variables), its generated name
    printed, rank 0's accuracy shown, Succeeded; the job is a real one (`get` lists it)."""
    pytest.importorskip("torch", reason="make e2e-deps installs torch into .venv")
    term = Terminal(
        "run",
        "--nnodes",
        "2",
        "--nproc-per-node",
        "2",
        "-e",
        "EPOCHS=12",
        "examples/pytorch/ddp-digits/train.py",  # torchrun's order: what follows the script is its own
        cwd=REPO,
    )
    code = term.wait(timeout=300)
    screen = term.screen()
    name = next(
        (
            m.group(1)
            for line in screen
            if (m := re.fullmatch(r"pytorchjob\.kubeflow\.org/(train-[a-z0-9]{5}) created", line))
        ),
        None,
    )
    got = {
        "rc": code,
        "name printed": name is not None,
        "world": "master-0 | world size 4: 336 training samples per replica, 450 test samples" in screen,
        "epochs (-e)": sum(bool(re.match(r"master-0 \| epoch +\d+/12 ", line)) for line in screen),
        "trained": any(re.fullmatch(r"master-0 \| final test accuracy: 0\.9\d+", line) for line in screen),
        "verdict": any(re.fullmatch(rf"PyTorchJob {name} Succeeded after [\d.]+s", line) for line in screen),
        "state": run_cli("get", str(name), "-o", "jsonpath={.status.conditions[-1].type}").stdout,
    }
    assert got == {
        "rc": 0,
        "name printed": True,
        "world": True,
        "epochs (-e)": 12,
        "trained": True,
        "verdict": True,
        "state": "Succeeded",
    }, "\n".join(screen)
