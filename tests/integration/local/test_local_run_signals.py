"""``trainop run`` and the signals that end it, sent for real to a real ``run``: SIGINT, SIGTERM and
SIGHUP (sent, or a terminal closed) stop the job alike and keep it (suspended, marked interrupted,
its logs there), during the submit too; before the job exists one just ends run; a second one kills
at once; a ``run`` killed with SIGKILL still has its job stopped the same way (by the job's
supervisor); a signal the parent ignored (nohup) stays ignored."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from local_harness import (
    KEPT,
    live_pids,
    processes_with_home,
    running_pids,
    session_pids,
    stopped,
    wait_for,
    write_manifest,
)

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

# Three replicas, each a shell with a child: six processes to see gone.
SLEEPY = pytorch_job("sig").master(1).workers(2).command(["sh", "-c", "sleep 300 & wait"]).build_dict()


def with_dispositions(ignored: tuple[int, ...] = ()) -> Callable[[], None]:
    """A preexec_fn: the stop signals at their defaults (as a terminal gives them, whatever the test
    runner was started with), except ``ignored`` (as nohup leaves SIGHUP)."""

    def apply() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)

    return apply


def start_run(path: Path | str, **popen: Any) -> subprocess.Popen[str]:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    popen.setdefault("preexec_fn", with_dispositions())
    return subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "run", str(path)],
        text=True,
        start_new_session=True,  # only the CLI gets what the test sends, as from a terminal
        **popen,
    )


@contextlib.contextmanager
def cli_process(cli: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    with cli:  # Popen's exit closes its pipes and waits (an unclosed pipe is a ResourceWarning)
        try:
            yield cli
        finally:
            cli.kill()


def all_replica_processes(backend: LocalBackend, job: str) -> list[int]:
    """Once the job's three replicas and their children run: every one of those six pids."""
    leaders = wait_for(lambda: len(p := running_pids(backend, job)) == 3 and p, "3 replicas")
    return wait_for(
        lambda: len(found := [p for sid in leaders for p in session_pids(sid)]) >= 6 and found,
        "the replicas' children",
    )


@pytest.mark.parametrize(
    ("sig", "rc", "said"),
    [
        pytest.param(signal.SIGINT, 130, "interrupted: stopping PyTorchJob sig's", id="Ctrl-C (SIGINT)"),
        pytest.param(
            signal.SIGTERM,
            143,
            "interrupted by SIGTERM: stopping PyTorchJob sig's",
            id="SIGTERM (timeout, CI)",
        ),
        pytest.param(
            signal.SIGHUP, 129, "interrupted by SIGHUP: stopping PyTorchJob sig's", id="SIGHUP (kill -HUP)"
        ),
    ],
)
def test_a_stop_signal_stops_the_job_keeps_it_and_leaves_no_process(
    home: Path, tmp_path: Path, sig: int, rc: int, said: str
) -> None:
    backend = LocalBackend(home)
    with cli_process(start_run(write_manifest(tmp_path / "sig.yaml", SLEEPY))) as cli:
        everyone = all_replica_processes(backend, "sig")
        cli.send_signal(sig)
        _, err = cli.communicate(timeout=60)
        got = {
            "rc": cli.returncode,
            "said": said in err,
            "job": stopped(backend, "sig"),
            "live": live_pids(everyone),
        }
        assert got == {"rc": rc, "said": True, "job": KEPT, "live": []}, err
    backend.delete("sig", grace=0)
    backend.close()


def test_a_closed_terminal_stops_the_job_and_keeps_it(home: Path, tmp_path: Path) -> None:
    """The terminal goes away (its master side closed): the kernel hangs up run's session (SIGHUP) and
    its writes fail from then on; run still stops the job and keeps it, quietly."""
    master, slave = os.openpty()
    cli = start_run(
        write_manifest(tmp_path / "sig.yaml", SLEEPY),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=lambda: (with_dispositions()(), fcntl.ioctl(0, termios.TIOCSCTTY, 0)),
    )
    os.close(slave)
    backend = LocalBackend(home)
    with cli_process(cli):
        everyone = all_replica_processes(backend, "sig")
        os.close(master)
        cli.wait(timeout=60)
        got = {"rc": cli.returncode, "job": stopped(backend, "sig"), "live": live_pids(everyone)}
        assert got == {"rc": 129, "job": KEPT, "live": []}
    backend.delete("sig", grace=0)
    backend.close()


def test_a_killed_run_still_has_its_job_stopped(home: Path, tmp_path: Path) -> None:
    """SIGKILL leaves run no moment to act: the job's supervisor sees its attached run gone and stops
    the job as Ctrl-C does (kept, suspended, marked interrupted, with a Warning event saying why). A
    job from submit has no attached client and runs on."""
    kept = pytorch_job("kept").master(1).command(["sleep", "300"]).build_dict()
    assert (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "trainop.cli.main",
                "submit",
                str(write_manifest(tmp_path / "k.yaml", kept)),
            ],
            check=False,
        ).returncode
        == 0
    )
    backend = LocalBackend(home)
    with cli_process(start_run(write_manifest(tmp_path / "sig.yaml", SLEEPY))) as cli:
        everyone = all_replica_processes(backend, "sig")
        kept_pid = wait_for(lambda: running_pids(backend, "kept"), "the submitted job's replica")
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=10)
        wait_for(lambda: stopped(backend, "sig") == KEPT, "the attached job stopped and kept")
        wait_for(lambda: not live_pids(everyone), "its processes gone")
        row = backend.store.find_job("default", "sig")
        reasons = [e.reason for e in backend.store.list_events(row.uid)] if row else []
        assert (live_pids(kept_pid), "AttachedClientGone" in reasons) == (kept_pid, True), reasons
    backend.delete("kept", grace=0)
    backend.delete("sig", grace=0)
    backend.close()


def test_ctrl_c_during_the_submit_stops_the_job_it_made(home: Path, tmp_path: Path) -> None:
    """Ctrl-C while run is inside its submit (held there: the test holds the state database's write
    lock): the job is still created, then stopped and kept, and run says so; nothing of it runs."""
    LocalBackend(home).store.close()  # the home and its database exist
    lock = sqlite3.connect(home / "state.db", isolation_level=None, timeout=30)
    lock.execute("BEGIN IMMEDIATE")
    cli = start_run(write_manifest(tmp_path / "sig.yaml", SLEEPY))
    with cli_process(cli):
        try:
            wait_for(
                lambda: any(fd.endswith("state.db") for fd in open_files(cli.pid)),
                "run opens the store",
                interval=0.01,
            )
            cli.send_signal(signal.SIGINT)
        finally:
            lock.rollback()
            lock.close()
        _, err = cli.communicate(timeout=60)
        backend = LocalBackend(home)
        got = {"rc": cli.returncode, "said": "interrupted: stopping PyTorchJob sig's" in err}
        got["job"] = stopped(backend, "sig")
        backend.delete("sig", grace=0)
        got["processes"] = processes_with_home(str(home))  # its supervisor too, once deleted
        backend.close()
        assert got == {"rc": 130, "said": True, "job": KEPT, "processes": []}, err


def open_files(pid: int) -> list[str]:
    out = []
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return out


def catches(pid: int, sig: int) -> bool:
    """Whether ``pid`` has a handler for ``sig`` (its SigCgt mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def test_sigterm_before_the_job_exists_ends_run_with_no_job(home: Path) -> None:
    """run waiting for its manifest on stdin, its handlers in place: SIGTERM ends it with 143 (not
    dying on the spot), and no job was made."""
    cli = start_run("-", stdin=subprocess.PIPE)
    with cli_process(cli):
        wait_for(lambda: catches(cli.pid, signal.SIGTERM), "run's SIGTERM handler", interval=0.01)
        cli.send_signal(signal.SIGTERM)
        cli.wait(timeout=30)
        assert (cli.returncode, LocalBackend(home).list_jobs()) == (143, [])


def test_a_second_signal_kills_at_once(home: Path, tmp_path: Path) -> None:
    """Replicas that ignore SIGTERM would hold the stop for their 300 s grace period; a second
    signal (any of the three) SIGKILLs them now, and the job is still kept."""
    stubborn = (
        pytorch_job("sig")
        .master(1)
        .workers(2)
        .command(["sh", "-c", "trap '' TERM; sleep 300 & wait"])
        .template(lambda t: t["spec"].__setitem__("terminationGracePeriodSeconds", 300))
        .build_dict()
    )
    backend = LocalBackend(home)
    with cli_process(start_run(write_manifest(tmp_path / "sig.yaml", stubborn))) as cli:
        everyone = all_replica_processes(backend, "sig")
        cli.send_signal(signal.SIGINT)
        wait_for(
            lambda: (
                (row := backend.store.find_job("default", "sig"))
                and (row.manifest["spec"].get("runPolicy") or {}).get("suspend")
            ),
            "the suspend",
        )
        cli.send_signal(signal.SIGTERM)
        _, err = cli.communicate(timeout=60)
        got = {
            "rc": cli.returncode,
            "killed now": "killing now" in err,
            "job": stopped(backend, "sig"),
            "live": live_pids(everyone),
        }
        assert got == {"rc": 130, "killed now": True, "job": KEPT, "live": []}, err
    backend.delete("sig", grace=0)
    backend.close()


def test_a_signal_the_parent_ignored_stays_ignored(home: Path, tmp_path: Path) -> None:
    """nohup trainop run: SIGHUP is dropped (the job runs on); Ctrl-C still stops it."""
    backend = LocalBackend(home)
    cli = start_run(
        write_manifest(tmp_path / "sig.yaml", SLEEPY), preexec_fn=with_dispositions((signal.SIGHUP,))
    )
    with cli_process(cli):
        everyone = all_replica_processes(backend, "sig")
        cli.send_signal(signal.SIGHUP)  # an ignored signal is discarded when sent: nothing to wait for
        cli.send_signal(signal.SIGINT)
        _, err = cli.communicate(timeout=60)
        said = "interrupted: stopping PyTorchJob sig's" in err
        got = {
            "rc": cli.returncode,
            "said": said,
            "job": stopped(backend, "sig"),
            "live": live_pids(everyone),
        }
        assert got == {"rc": 130, "said": True, "job": KEPT, "live": []}, err
    backend.delete("sig", grace=0)
    backend.close()


# Sends SIGINT to its own process, several times, the moment the process starts to import MODULE:
# a Ctrl-C at a known point of run's start-up, whatever the machine's load.
_SIGINT_AT_IMPORT = """
import os, signal, sys

class _Interrupter:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            for _ in range(3):
                os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, _Interrupter())
"""


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("trainop.cli.main", id="as the command's module starts loading"),
        pytest.param("typer", id="while the command's module imports typer"),
        pytest.param("trainop.cli.script_job", id="while run reads its argv"),
        pytest.param("trainop.cli.stop_signals", id="as run starts"),
        pytest.param("trainop.backends.local.api", id="while run builds the job, its handlers in place"),
    ],
)
def test_ctrl_c_while_run_starts_exits_130_with_one_line(home: Path, tmp_path: Path, module: str) -> None:
    """Ctrl-C (three of them) at a moment of run's start-up, before its own handlers were in place:
    exit 130 and one line on stderr, no KeyboardInterrupt traceback, no job, no process left."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SIGINT_AT_IMPORT.format(module=module))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "run", "--", "sleep", "300"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=with_dispositions(),
    )
    lines = ran.stderr.splitlines()
    assert {
        "rc": ran.returncode,
        "one line": len(lines),
        "says": lines[0].startswith("interrupted") if lines else None,
        "jobs": LocalBackend(home).list_jobs(),
        "processes": processes_with_home(str(home)),
    } == {"rc": 130, "one line": 1, "says": True, "jobs": [], "processes": []}, ran.stderr
