"""A TrainJob run on this machine (``trainop run FILE``, in the foreground) is served by the other
commands through the local backend's JobClient while it runs and after: ``get``/``get trainjobs``,
``describe``, ``logs`` (``-f`` until it finishes) and ``delete`` (which stops a running one).
Real processes; the job's node waits for a file the test writes, so nothing waits on the clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_harness import live_pids, run_cli, wait_for

pytestmark = pytest.mark.integration

# Node 0 says it started, writes its pid, waits for the test's go file, then says done.
NODE = (
    "import os, sys, time\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "print('started', flush=True)\n"
    "while not os.path.exists(sys.argv[2]): time.sleep(0.05)\n"
    "print('done', flush=True)\n"
)


def _start(tmp_path: Path, name: str) -> tuple[subprocess.Popen[str], Path, Path]:
    pid_file, go = tmp_path / f"{name}.pid", tmp_path / f"{name}.go"
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"command": [sys.executable, "-c", NODE, str(pid_file), str(go)]},
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job))
    run = subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "run", str(path)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for(lambda: "started" in run_cli("logs", name).stdout or None, f"{name} to start")
    return run, pid_file, go


def _get_json(name: str) -> dict[str, Any]:
    result = run_cli("get", name, "-o", "json")
    assert result.returncode == 0, result.stderr
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def test_get_describe_logs_and_delete_serve_a_local_trainjob(home: Path, tmp_path: Path) -> None:
    run, _, go = _start(tmp_path, "served")
    listed = run_cli("get", "trainjobs")
    assert listed.stdout.split("\n")[0].split() == ["NAME", "STATE", "RUNTIME", "AGE"]
    assert listed.stdout.split("\n")[1].split()[:3] == ["served", "Running", "torch-distributed"]
    every = run_cli("get").stdout.splitlines()  # no kind: the v1 jobs' table, TrainJobs in it too
    assert [line.split()[:3] for line in every] == [
        ["NAME", "KIND", "STATE"],
        ["served", "TrainJob", "Running"],
    ]
    assert every[1].split()[-1] == "1/1"  # REPLICAS: node 1/1
    running = _get_json("served")
    assert running["kind"] == "TrainJob"
    assert running["status"]["jobsStatus"][0] == {
        "name": "node", "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0,
    }  # fmt: skip
    described = run_cli("describe", "served").stdout
    assert "Runtime:      ClusterTrainingRuntime/torch-distributed" in described
    assert "  served-node-0-0: Running" in described
    assert run_cli("logs", "served", "--replica", "node-0-0").stdout == "started\n"
    follow = subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "logs", "-f", "served"], stdout=subprocess.PIPE, text=True
    )
    go.write_text("")
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 0, out
    followed, _ = follow.communicate(timeout=60)
    assert follow.returncode == 0
    assert followed.splitlines() == ["node-0-0 | started", "node-0-0 | done"]
    # --tail N: the last N lines of each replica's output, as for a v1 job (-1: everything).
    assert run_cli("logs", "served", "--tail", "1").stdout == "node-0-0 | done\n"
    assert run_cli("logs", "served", "--tail", "0").stdout == ""
    assert run_cli("logs", "served", "--tail", "-1").stdout.splitlines() == followed.splitlines()
    # --since: the node's log has no timestamps to pick lines by (a TrainJob's pods run once).
    since = run_cli("logs", "served", "--since", "1h")
    assert (since.returncode, since.stdout) == (2, "")
    assert "--since" in since.stderr
    done = _get_json("served")
    assert [(c["type"], c["status"], c["reason"]) for c in done["status"]["conditions"]] == [
        ("Complete", "True", "AllJobsCompleted")
    ]
    assert run_cli("get", "trainjob", "served").stdout.split("\n")[1].split()[1] == "Complete"
    again = run_cli("run", str(tmp_path / "served.yaml"), cwd=tmp_path)
    assert again.returncode == 3
    assert 'TrainJob "served" already exists in namespace "default"' in again.stderr
    deleted = run_cli("delete", "served")
    assert (deleted.returncode, deleted.stdout) == (0, "trainjob.trainer.kubeflow.org/served deleted\n")
    gone = run_cli("get", "trainjob", "served")
    assert gone.returncode == 3 and 'TrainJob "served" not found' in gone.stderr


def test_delete_stops_a_running_trainjob(home: Path, tmp_path: Path) -> None:
    run, pid_file, _ = _start(tmp_path, "stopped")
    node = int(pid_file.read_text())
    deleted = run_cli("delete", "trainjob", "stopped", "--grace-period", "2")
    assert deleted.returncode == 0, deleted.stderr
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 1
    assert out.rstrip().endswith("TrainJob stopped Failed: interrupted")
    assert live_pids([node]) == []
    assert run_cli("get", "trainjobs").stderr.startswith("No TrainJobs in namespace default")
    assert not (home / "trainjobs" / "default" / "stopped").exists()


def test_a_trainjob_whose_run_was_killed_reads_as_failed(home: Path, tmp_path: Path) -> None:
    run, pid_file, _ = _start(tmp_path, "orphan")
    run.kill()
    run.communicate(timeout=30)
    state = _get_json("orphan")["status"]["conditions"][-1]
    assert (state["type"], state["reason"]) == ("Failed", "RunnerGone")
    deleted = run_cli("delete", "orphan", "--grace-period", "1")
    assert deleted.returncode == 0, deleted.stderr
    assert live_pids([int(pid_file.read_text())]) == []
