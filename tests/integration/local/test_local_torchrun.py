"""``trainop run`` keeps torchrun's promises (issue 24), for real processes: ``--max-restarts`` restarts
the whole job and a later attempt that succeeds Succeeds, torchrun's spellings and a script's own
options after its path, torchrun's variables on every rank with one process per node; and the flag table
has a row for every option of the installed torchrun."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_harness import run_cli

from trainop.cli.script_job import TORCHRUN_FLAGS

# Fails on its first attempt only (a file in the working directory remembers it).
ONCE = """\
import pathlib, sys
marker = pathlib.Path("ran-once")
if not marker.exists():
    marker.write_text("x")
    print("attempt 1: crash", flush=True)
    sys.exit(3)
print("attempt 2: fine", flush=True)
"""

# Rank 1 (worker-0) always crashes, once the master has printed its attempt (a failure that uses up the
# restarts stops the master at once); the others wait (for the peer that never comes, as DDP would).
WORKER_CRASHES = """\
import os, pathlib, sys, time
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
print("attempt", attempt, flush=True)
if os.environ["RANK"] == "0":
    pathlib.Path(f"master-{attempt}").touch()
if os.environ["RANK"] == "1":
    while not pathlib.Path(f"master-{attempt}").exists():
        time.sleep(0.02)
    sys.exit(7)
time.sleep(300)
"""

TORCHRUN_VARS = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_NAME",
    "GROUP_WORLD_SIZE",
    "ROLE_WORLD_SIZE",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
]
PRINT_ENV = f"""\
import os, sys
print("args", sys.argv[1:], flush=True)
print(" ".join(f"{{k}}={{os.environ.get(k)}}" for k in {TORCHRUN_VARS!r}), flush=True)
"""


def replica_lines(stdout: str, label: str) -> list[str]:
    return [line.split("| ", 1)[1] for line in stdout.splitlines() if line.startswith(f"{label} ")]


def test_max_restarts_is_torchrun_s_a_later_attempt_that_succeeds_succeeds(
    home: Path, tmp_path: Path
) -> None:
    (tmp_path / "once.py").write_text(ONCE)
    result = run_cli("run", "--max-restarts", "1", "--", "python", "once.py", cwd=tmp_path)
    got = (result.returncode, replica_lines(result.stdout, "master-0"))
    assert got == (0, ["attempt 1: crash", "attempt 2: fine"]), result.stdout + result.stderr


def test_max_restarts_restarts_every_node_and_names_the_replica_that_failed(
    home: Path, tmp_path: Path
) -> None:
    """One crash of worker-0 restarts the master too (the whole job, as torchrun's agents do); after
    the last restart the summary names worker-0, not the master its failure took down."""
    (tmp_path / "crash.py").write_text(WORKER_CRASHES)
    result = run_cli("run", "--nnodes", "2", "--max-restarts", "1", "crash.py", cwd=tmp_path)
    summary = [line.strip() for line in result.stdout.splitlines() if "failed first" in line]
    got = {
        "rc": result.returncode,
        "master attempts": replica_lines(result.stdout, "master-0")[:2],
        "worker attempts": replica_lines(result.stdout, "worker-0"),
        "first failure": [line.split(":")[0] for line in summary],
    }
    assert got == {
        "rc": 1,
        "master attempts": ["attempt 0", "attempt 1"],
        "worker attempts": ["attempt 0", "attempt 1"],
        "first failure": ["worker-0 failed first"],
    }, result.stdout + result.stderr


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(
            ["--nproc_per_node=1", "--standalone", "env.py", "--lr", "0.1"], id="torchrun's spellings"
        ),
        pytest.param(["--nnodes=1:1", "env.py", "--lr", "0.1"], id="--nnodes MIN:MAX, no --"),
        pytest.param(["--", "python", "env.py", "--lr", "0.1"], id="after --"),
    ],
)
def test_torchrun_spellings_and_the_script_s_own_options(
    home: Path, tmp_path: Path, flags: list[str]
) -> None:
    (tmp_path / "env.py").write_text(PRINT_ENV)
    result = run_cli("run", *flags, cwd=tmp_path)
    lines = replica_lines(result.stdout, "master-0")
    assert (result.returncode, lines[:1]) == (0, ["args ['--lr', '0.1']"]), result.stdout + result.stderr


def test_every_rank_gets_torchrun_s_variables_with_one_process_per_node(home: Path, tmp_path: Path) -> None:
    (tmp_path / "env.py").write_text(PRINT_ENV)
    result = run_cli("run", "--nnodes", "2", "--name", "envs", "env.py", cwd=tmp_path)

    def want(rank: int) -> str:
        values = {
            "RANK": rank,
            "LOCAL_RANK": 0,
            "WORLD_SIZE": 2,
            "LOCAL_WORLD_SIZE": 1,
            "GROUP_RANK": rank,
            "ROLE_RANK": rank,
            "ROLE_NAME": "default",
            "GROUP_WORLD_SIZE": 2,
            "ROLE_WORLD_SIZE": 2,
            "TORCHELASTIC_RESTART_COUNT": 0,
            "TORCHELASTIC_MAX_RESTARTS": 0,
            "TORCHELASTIC_RUN_ID": "envs",
            "TORCHELASTIC_USE_AGENT_STORE": "False",
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": 1,
        }
        return " ".join(f"{k}={v}" for k, v in values.items())

    got = {label: replica_lines(result.stdout, label)[1:] for label in ("master-0", "worker-0")}
    assert (result.returncode, got) == (0, {"master-0": [want(0)], "worker-0": [want(1)]}), result.stderr


# The main process and the child it forked each record every SIGTERM they get; the main process
# passes its SIGTERM on to the child (as torchrun's agent passes it to its workers), then both end.
TERM_COUNTER = """\
import os, signal, subprocess, sys, time
who = sys.argv[1]
def on_term(signum, frame):
    with open(f"term-{who}", "a") as fh:
        fh.write("TERM\\n")
    if who == "main":
        child.send_signal(signal.SIGTERM)
        child.wait()
    time.sleep(0.3)  # a second signal sent with the first would land here
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
if who == "main":
    child = subprocess.Popen([sys.executable, __file__, "child"])
print(who, "up", flush=True)
while True:
    time.sleep(1)
"""


def test_a_stop_sends_one_sigterm_to_each_process_as_a_kubelet_does(home: Path, tmp_path: Path) -> None:
    from local_harness import wait_for

    (tmp_path / "term.py").write_text(TERM_COUNTER)
    submitted = run_cli("run", "--no-logs", "--name", "term", "--dry-run", "term.py", "main", cwd=tmp_path)
    (tmp_path / "term.yaml").write_text(submitted.stdout)
    assert run_cli("submit", "term.yaml", cwd=tmp_path).returncode == 0
    wait_for(
        lambda: "child up" in run_cli("logs", "term").stdout and "main up" in run_cli("logs", "term").stdout,
        "both processes to be up",
    )
    assert run_cli("suspend", "term").returncode == 0
    wait_for(
        lambda: (tmp_path / "term-child").exists() and "0/1" in run_cli("get", "term").stdout, "the stop"
    )
    assert run_cli("delete", "term").returncode == 0
    got = {who: (tmp_path / f"term-{who}").read_text().split() for who in ("main", "child")}
    assert got == {"main": ["TERM"], "child": ["TERM"]}


RANK_ONE_RAISES = """\
import os, time
rank = int(os.environ["RANK"])
print(f"rank {rank} starting", flush=True)
if rank == 1:
    raise ValueError("bad batch at step 3 on rank 1")
time.sleep(60)
"""


def test_a_failure_under_torchrun_quotes_the_failing_rank_not_torchrun_s_footer(
    home: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch", reason="make extra-torch installs torch (torchrun)")
    (tmp_path / "fail.py").write_text(RANK_ONE_RAISES)
    result = run_cli("run", "--nproc-per-node", "2", "fail.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "failed first" in line)
    assert (
        result.returncode,
        [line.strip() for line in lines[start : start + 2]],
        lines[start + 4].strip(),
    ) == (
        1,
        [
            "master-0 failed first: its rank 1 (local rank 1) ended with exit code 1 (Error) under torchrun; "
            "its last lines:",
            "master-0 | Traceback (most recent call last):",
        ],
        "master-0 | ValueError: bad batch at step 3 on rank 1",
    ), result.stdout


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param([], id="no restart"),
        pytest.param(["--max-restarts", "1"], id="after its last restart"),
    ],
)
def test_a_failed_script_job_stops_its_other_replicas(home: Path, tmp_path: Path, flags: list[str]) -> None:
    """worker-0 crashes while the master and worker-1 wait for it (as DDP ranks would): the job fails
    and, as torchrun's agent stops every worker when it gives up, no process of the job survives it
    (upstream's cleanPodPolicy None would leave them running)."""
    from local_harness import wait_for

    from trainop.api.constants import ENV_TRAINOP_JOB_UID
    from trainop.backends.local import procs
    from trainop.backends.local.api import LocalBackend

    (tmp_path / "crash.py").write_text(WORKER_CRASHES)
    result = run_cli("run", "--nnodes", "3", "--name", "stops", *flags, "crash.py", cwd=tmp_path)
    backend = LocalBackend(home)
    row = backend.store.find_job("default", "stops")
    assert row is not None, result.stdout + result.stderr
    uid = row.uid
    left = wait_for(
        lambda: not procs.find_marked(ENV_TRAINOP_JOB_UID, uid) and "none",
        "every process of the failed job to end",
        timeout=45,
    )
    backend.close()
    assert (result.returncode, left, "still running" in result.stdout) == (1, "none", False), result.stdout


def test_the_flag_table_names_every_option_of_the_installed_torchrun() -> None:
    """docs/cli.md's table (``TORCHRUN_FLAGS``, tested row by row in tests/unit/cli/test_torchrun_flags.py)
    has a row for each option torchrun's own parser takes."""
    run = pytest.importorskip("torch.distributed.run", reason="make extra-torch installs torch")
    theirs = {
        max(a.option_strings, key=len).replace("_", "-")
        for a in run.get_args_parser()._actions
        if a.option_strings and "--help" not in a.option_strings
    }
    ours = {n for f in TORCHRUN_FLAGS for n in f.names if n.startswith("--")}
    assert sorted(theirs - ours) == []
