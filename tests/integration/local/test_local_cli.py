"""The ``trainop`` command as users run it: exit codes, field-path errors (never a traceback), the
``run`` log stream, ``get``/``logs``/``wait``/``render`` output."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
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

import trainop
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import JobBuilder, pytorch_job

pytestmark = pytest.mark.integration


def no_command(template: dict[str, Any]) -> None:
    del template["spec"]["containers"][0]["command"]


def secret_volume(template: dict[str, Any]) -> None:
    template["spec"]["volumes"] = [{"name": "data", "secret": {"secretName": "data"}}]


def valid() -> JobBuilder:
    """A fresh builder each time (builders are mutable)."""
    return pytorch_job("cli").master(1).workers(1).command(["sh", "-c", "echo hello from $RANK"])


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(
            valid().template(no_command, "Worker").build_dict(),
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].command: Required value: the local "
            "backend runs host processes, so each container needs a command (the image's entrypoint is not "
            'used, except for the images of train(): docs/finetune.md); add e.g. command: ["python", '
            '"train.py"]',
            id="a container without command: what to add",
        ),
        pytest.param(
            pytorch_job("cli").master(2).workers(1).command(["true"]).build_dict(),
            "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
            id="an upstream admission rule",
        ),
        pytest.param(
            pytorch_job("cli")
            .master(1)
            .workers(1)
            .command(["true"])
            .template(secret_volume, "Worker")
            .build_dict(),
            "spec.pytorchReplicaSpecs[Worker].template.spec.volumes[0]: Unsupported value: "
            '"secret": '
            "the local backend supports emptyDir (a per-replica directory), configMap (created by the "
            "job), hostPath (used as is) and persistentVolumeClaim (a directory of the job, shared by its "
            "replicas) volumes",
            id="a volume the local backend cannot provide",
        ),
        pytest.param("kind: PyTorchJob\nspec: [unclosed\n", "not valid YAML at line 3", id="not YAML"),
    ],
)
def test_invalid_manifest_exits_2_with_the_field_path(
    home: Path, tmp_path: Path, manifest: Any, want: str
) -> None:
    path = tmp_path / "job.yaml"
    if isinstance(manifest, str):
        path.write_text(manifest)
    else:
        write_manifest(path, manifest)
    for command in ("submit", "run", "render"):
        result = run_cli(command, str(path))
        got = (result.returncode, want in result.stderr, "Traceback" in result.stderr)
        assert got == (2, True, False), f"{command}: {result.stderr}"


def test_run_streams_prefixed_logs_and_exits_with_the_job(home: Path, tmp_path: Path) -> None:
    ok = run_cli("run", str(write_manifest(tmp_path / "ok.yaml", valid().build_dict())))
    lines = ok.stdout.splitlines()
    got = {
        "rc": ok.returncode,
        "master line": any(line.startswith("master-0") and line.endswith("| hello from 0") for line in lines),
        "worker line": any(line.startswith("worker-0") and line.endswith("| hello from 1") for line in lines),
        "verdict": any(line.startswith("PyTorchJob cli Succeeded after") for line in lines),
    }
    assert got == {"rc": 0, "master line": True, "worker line": True, "verdict": True}

    failing = (
        pytorch_job("bad")
        .master(1)
        .workers(1)
        .restart_policy("Never")
        .command(["sh", "-c", "exit 3"])
        .build_dict()
    )
    bad = run_cli("run", str(write_manifest(tmp_path / "bad.yaml", failing)))
    assert (bad.returncode, "PyTorchJob bad Failed after" in bad.stdout) == (1, True)


def test_get_logs_wait_and_delete(home: Path, tmp_path: Path) -> None:
    path = write_manifest(tmp_path / "job.yaml", valid().build_dict())
    assert run_cli("submit", str(path)).stdout == "pytorchjob.kubeflow.org/cli created\n"
    waited = run_cli("wait", "cli", "--for", "Succeeded", "--timeout", "60s")
    assert (waited.returncode, waited.stdout) == (0, "pytorchjob.kubeflow.org/cli condition met: Succeeded\n")

    table = run_cli("get", "pytorchjobs").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "AGE", "REPLICAS"]
    assert table[1].split()[:2] == ["cli", "Succeeded"] and table[1].endswith("Master 1/1, Worker 1/1")
    as_json = json.loads(run_cli("get", "cli", "-o", "json").stdout)
    assert (as_json["kind"], as_json["status"]["conditions"][-1]["type"]) == ("PyTorchJob", "Succeeded")

    assert run_cli("logs", "cli", "--replica", "worker-0").stdout == "hello from 1\n"
    outcomes = {
        "failed job": run_cli("wait", "cli", "--for", "Failed", "--timeout", "5s").returncode,
        "unknown job": run_cli("wait", "nope", "--timeout", "5s").returncode,
        "bad duration": run_cli("wait", "cli", "--timeout", "soon").returncode,
    }
    assert outcomes == {"failed job": 1, "unknown job": 3, "bad duration": 2}
    deleted = run_cli("delete", "cli")
    assert (deleted.returncode, deleted.stdout) == (0, "pytorchjob.kubeflow.org/cli deleted\n")
    assert run_cli("get", "cli").returncode == 3


def test_replicas_get_the_users_environment_not_the_clis_own_settings(home: Path, tmp_path: Path) -> None:
    """The CLI skips pydantic's plugin scan through PYDANTIC_DISABLE_PLUGINS (a start-up saving); a job
    records the user's environment without it."""
    echo = (
        pytorch_job("env")
        .master(1)
        .workers(1)
        .command(["sh", "-c", 'echo "${PYDANTIC_DISABLE_PLUGINS-unset}"'])
    )
    path = write_manifest(tmp_path / "env.yaml", echo.build_dict())
    ran = run_cli("run", str(path))
    got = {
        "version": run_cli("--version").stdout,
        "replicas": sorted(line for line in ran.stdout.splitlines() if line.endswith("| unset")),
        "rc": ran.returncode,
    }
    want = {
        "version": f"trainop {trainop.__version__}\n",
        "replicas": ["master-0 | unset", "worker-0 | unset"],
        "rc": 0,
    }
    assert got == want, ran.stdout


def test_an_empty_home_says_how_to_start(home: Path) -> None:
    got = run_cli("get")
    want = (
        f"No jobs in {home} (TRAINOP_HOME). Start one with: trainop run FILE (or trainop submit FILE "
        "to return at once).\n"
    )
    assert (got.returncode, got.stdout, got.stderr) == (0, "", want)


def test_messages_point_to_where_things_are(home: Path, tmp_path: Path) -> None:
    """A job in namespace team: every command that looks elsewhere says where it is."""
    job = pytorch_job("elsewhere").master(1).workers(1).command(["sh", "-c", "echo hi"]).build_dict()
    path = write_manifest(tmp_path / "job.yaml", job)
    run_cli("submit", "-n", "team", str(path))
    run_cli("wait", "elsewhere", "-n", "team", "--timeout", "60s")
    cases = {
        ("get",): (
            0,
            "No jobs in namespace default; 1 in other namespaces (team): trainop get -A lists them.",
        ),
        ("get", "tfjobs", "-n", "team"): (
            0,
            "No TFJobs in namespace team (trainop get lists the jobs of every kind).",
        ),
        ("describe", "elsewhere"): (
            3,
            'error: job "elsewhere" not found in namespace "default"; there is one in namespace team (add '
            "-n team)",
        ),
        ("get", "tfjob", "elsewhere", "-n", "team"): (
            3,
            'error: TFJob "elsewhere" not found in namespace "team"; it is a PyTorchJob '
            "(trainop get pytorchjobs elsewhere)",
        ),
        ("logs", "elsewhere", "-n", "team", "-r", "worker-7"): (
            3,
            'error: replica "worker-7" not found in job "elsewhere"; its replicas: master-0, worker-0',
        ),
        ("logs", "elsewhere", "-n", "team", "-r", "worker-0", "-c", "main"): (
            3,
            'error: container "main" not found in job "elsewhere"; its containers: init-pytorch, pytorch',
        ),
    }
    results = {args: run_cli(*args) for args in cases}
    got = {args: (r.returncode, r.stderr.strip()) for args, r in results.items()}
    assert got == cases

    deleted = run_cli("delete", "nope", "elsewhere", "-n", "team")
    got_delete = (
        deleted.returncode,
        deleted.stdout,
        "nope" in deleted.stderr,
        run_cli("get", "-A").returncode,
    )
    assert got_delete == (3, "pytorchjob.kubeflow.org/elsewhere deleted\n", True, 0)


def test_tables_have_no_trailing_blanks(home: Path, tmp_path: Path) -> None:
    path = write_manifest(tmp_path / "job.yaml", valid().build_dict())
    run_cli("submit", str(path))
    run_cli("wait", "cli", "--timeout", "60s")
    printed = run_cli("get").stdout + run_cli("describe", "cli").stdout
    assert [line for line in printed.splitlines() if line != line.rstrip()] == []


def test_wait_times_out_with_exit_4(home: Path, tmp_path: Path) -> None:
    slow = pytorch_job("slow").master(1).workers(1).command(["sleep", "60"]).build_dict()
    run_cli("submit", str(write_manifest(tmp_path / "slow.yaml", slow)))
    result = run_cli("wait", "slow", "--for", "Succeeded", "--timeout", "1s")
    assert (result.returncode, "timed out after 1s" in result.stderr) == (4, True)
    run_cli("delete", "slow", "--grace-period", "0")


def env_of(objects: list[dict[str, Any]], pod: str) -> dict[str, str]:
    found = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == pod)
    return {e["name"]: e.get("value", "") for e in found["spec"]["containers"][0]["env"]}


def test_render_shows_what_each_backend_would_create(home: Path, tmp_path: Path) -> None:
    path = write_manifest(tmp_path / "job.yaml", valid().build_dict())
    k8s = json.loads(run_cli("render", str(path), "--backend", "kubernetes", "-o", "json").stdout)["items"]
    local = json.loads(run_cli("render", str(path), "--backend", "local", "-o", "json").stdout)["items"]
    got = {
        "kubernetes objects": sorted(f"{o['kind']}/{o['metadata']['name']}" for o in k8s),
        "kubernetes master": (
            env_of(k8s, "cli-worker-0")["MASTER_ADDR"],
            env_of(k8s, "cli-worker-0")["MASTER_PORT"],
        ),
        "local master": env_of(local, "cli-worker-0")["MASTER_ADDR"],
        "local port is the master's": env_of(local, "cli-worker-0")["MASTER_PORT"]
        == env_of(local, "cli-master-0")["MASTER_PORT"]
        != "23456",
    }
    want = {
        "kubernetes objects": [
            "Pod/cli-master-0",
            "Pod/cli-worker-0",
            "Service/cli-master-0",
            "Service/cli-worker-0",
        ],
        "kubernetes master": ("cli-master-0", "23456"),
        "local master": "127.0.0.1",
        "local port is the master's": True,
    }
    assert got == want


def test_ctrl_c_in_run_stops_the_job_keeps_it_and_leaves_no_process(home: Path, tmp_path: Path) -> None:
    """Ctrl-C once the replicas and their children run: every process ends, run exits 130 saying so,
    and the job stays, Suspended and marked interrupted (issue 10 finding 4, issue 12)."""
    manifest = pytorch_job("intr").master(1).workers(2).command(["sh", "-c", "sleep 300 & wait"]).build_dict()
    path = write_manifest(tmp_path / "intr.yaml", manifest)
    cli = subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "run", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so that only the CLI gets our SIGINT, as a terminal's Ctrl-C would
    )
    backend = LocalBackend(home)
    try:
        leaders = wait_for(lambda: len(p := running_pids(backend, "intr")) == 3 and p, "3 replicas")
        everyone = wait_for(
            lambda: len(found := [p for sid in leaders for p in session_pids(sid)]) >= 6 and found,
            "the replicas' children",
        )
        cli.send_signal(signal.SIGINT)
        _, err = cli.communicate(timeout=60)
        got = {
            "rc": cli.returncode,
            "said": "interrupted: stopping PyTorchJob intr's replicas" in err,
            "kept": "PyTorchJob intr interrupted: its replicas were stopped; the job and its logs are kept"
            in err,
            "job": stopped(backend, "intr"),
            "live": live_pids(everyone),
        }
        assert got == {"rc": 130, "said": True, "kept": True, "job": KEPT, "live": []}, err
        backend.delete("intr", grace=0)
    finally:
        cli.kill()
        backend.close()
