"""The CLI meets kubectl's and torchrun's habits: generateName, selectors, output formats, the
replicas as pods, log filters, deletes by selector or file, completion, and a run without YAML."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from local_harness import run_cli, wait_for, write_manifest

from trainop.backends.local.api import GENERATED_NAME_ALPHABET, LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

CREATED = re.compile(rf"pytorchjob\.kubeflow\.org/(tqdm-[{GENERATED_NAME_ALPHABET}]{{5}}) created")


def test_generate_name_gets_a_random_suffix_printed_and_used_for_pods(home: Path, tmp_path: Path) -> None:
    job = pytorch_job("x").master(1).command(["sh", "-c", "echo hi"]).build_dict()
    job["metadata"] = {"generateName": "tqdm-"}
    path = write_manifest(tmp_path / "gen.yaml", job)
    first, second = run_cli("submit", str(path)), run_cli("run", str(path))
    names = [m.group(1) for r in (first, second) if (m := CREATED.search(r.stdout))]
    assert (len(set(names)), second.returncode) == (2, 0), (first, second)
    logs = run_cli("logs", names[1], "--replica", "master-0")
    pods = [p["metadata"]["name"] for p in LocalBackend(home).pods(names[1])]
    assert (logs.stdout, pods) == ("hi\n", [f"{names[1]}-master-0"])


DDP_DIR = Path(__file__).resolve().parents[3] / "examples" / "pytorch" / "ddp-digits"


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(
            ["--nnodes", "3", "--", "python", "train.py"], id="torchrun's --nnodes: Master + 2 Workers"
        ),
        pytest.param(["-j", "2x2", "train.py"], id="TorchX's -j 2x2: 2 nodes of 2 processes under torchrun"),
    ],
)
def test_a_script_runs_as_a_pytorchjob_without_yaml(home: Path, flags: list[str]) -> None:
    ran = run_cli("run", *flags, cwd=DDP_DIR, timeout=300)
    m = re.search(r"pytorchjob\.kubeflow\.org/(train-[a-z0-9]{5}) created", ran.stdout)
    got = {
        "rc": ran.returncode,
        "name printed": m is not None,
        "trained": re.search(r"master-0 \| final test accuracy: 0\.9\d+", ran.stdout) is not None,
    }
    assert got == {"rc": 0, "name printed": True, "trained": True}, ran.stdout + ran.stderr


def test_dry_run_prints_the_job_and_runs_nothing(home: Path) -> None:
    dry = run_cli("run", "--dry-run", "--nnodes", "2", "--", "python", "train.py", "--lr", "0.1")
    doc = yaml.safe_load(dry.stdout)
    got = (
        dry.returncode,
        doc["kind"],
        doc["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"],
        list(home.glob("*")),
    )
    assert got == (0, "PyTorchJob", 1, [])


def sleeper(name: str, **labels: str) -> dict[str, object]:
    job = (
        pytorch_job(name)
        .master(1)
        .workers(1)
        .command(["sh", "-c", "echo one; echo two; echo three; sleep 60"])
    )
    return job.labels(**labels).build_dict() if labels else job.build_dict()


def submit(tmp_path: Path, job: dict[str, object]) -> Path:
    path = write_manifest(tmp_path / f"{job['metadata']['name']}.yaml", job)  # type: ignore[index]
    assert run_cli("submit", str(path)).returncode == 0
    return path


def test_get_selects_with_l_and_prints_wide_name_jsonpath_and_pods(home: Path, tmp_path: Path) -> None:
    submit(tmp_path, sleeper("vis", team="vision"))
    submit(tmp_path, sleeper("nlp", team="text"))
    wait_for(
        lambda: (
            run_cli("get", "pods", "-l", "team in (vision)").stdout.count("Running") == 0
            and run_cli("get", "pods").stdout.count(" Running ") == 4
        ),
        "four running replicas",
    )
    pods = run_cli("get", "pods").stdout.splitlines()
    wide = run_cli("get", "pods", "vis", "-o", "wide").stdout.splitlines()
    got = {
        "by label": run_cli("get", "-l", "team=vision", "-o", "name").stdout,
        "not it": run_cli("get", "-l", "team!=vision", "-o", "jsonpath={.items[*].metadata.name}").stdout,
        "wide columns": run_cli("get", "-o", "wide").stdout.splitlines()[0].split(),
        "pods header": pods[0].split(),
        "pods": sorted(line.split()[:4] for line in pods[1:]),
        "wide pods": [line.split()[0] for line in wide[1:]],
        "wide pod columns": wide[0].split(),
        "jsonpath one": run_cli("get", "vis", "-o", "jsonpath={.metadata.labels.team}").stdout,
        "bad jsonpath": run_cli("get", "-o", "jsonpath={.items").returncode,
    }
    assert got == {
        "by label": "pytorchjob.kubeflow.org/vis\n",
        "not it": "nlp",
        "wide columns": ["NAME", "KIND", "STATE", "AGE", "RESTARTS", "REASON", "REPLICAS"],
        "pods header": ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "pods": [
            [f"{j}-{r}", "1/1", "Running", "0"] for j in ("nlp", "vis") for r in ("master-0", "worker-0")
        ],
        "wide pods": ["vis-master-0", "vis-worker-0"],
        "wide pod columns": ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "PID", "PORT", "NODE", "JOB"],
        "jsonpath one": "vision",
        "bad jsonpath": 2,
    }
    assert run_cli("delete", "--all").returncode == 0


def test_get_w_prints_a_row_per_change_until_ctrl_c(home: Path, tmp_path: Path) -> None:
    submit(tmp_path, sleeper("w"))
    wait_for(lambda: "Running" in run_cli("get", "w").stdout, "w running")
    # `with` closes the pipe (unclosed, it is a ResourceWarning) and reaps the process.
    with subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "get", "-w"], stdout=subprocess.PIPE, text=True
    ) as watcher:
        try:
            assert watcher.stdout is not None
            header, first = watcher.stdout.readline(), watcher.stdout.readline()
            assert run_cli("delete", "w").returncode == 0
            gone = watcher.stdout.readline()
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(timeout=30)
        finally:
            watcher.kill()
    got = (header.split()[:3], first.split()[:3], gone.split()[:3], code)
    assert got == (
        ["NAME", "KIND", "STATE"],
        ["w", "PyTorchJob", "Running"],
        ["w", "PyTorchJob", "Deleted"],
        130,
    )


def test_delete_by_all_selector_and_file(home: Path, tmp_path: Path) -> None:
    a = submit(tmp_path, sleeper("a", team="x"))
    submit(tmp_path, sleeper("b", team="y"))
    submit(tmp_path, sleeper("c", team="y"))
    got = {
        "no way given": run_cli("delete").returncode,
        "two ways": run_cli("delete", "a", "--all").returncode,
        "by file": run_cli("delete", "-f", str(a)).stdout,
        "by label": run_cli("delete", "-l", "team=y", "--grace-period", "0").stdout,
        "all of none": run_cli("delete", "--all").stderr,
        "kind first": run_cli("delete", "pytorchjob", "a").returncode,
    }
    assert got == {
        "no way given": 2,
        "two ways": 2,
        "by file": "pytorchjob.kubeflow.org/a deleted\n",
        "by label": "pytorchjob.kubeflow.org/b deleted\npytorchjob.kubeflow.org/c deleted\n",
        "all of none": "No resources found\n",
        "kind first": 3,
    }


def test_logs_tail_since_and_timestamps(home: Path, tmp_path: Path) -> None:
    release = tmp_path / "more"
    job = (
        pytorch_job("lg")
        .master(1)
        .command(
            [
                "sh",
                "-c",
                f"echo one; echo two; echo three; while [ ! -f {release} ]; do sleep 0.05; done; echo four",
            ]
        )
        .build_dict()
    )
    submit(tmp_path, job)
    wait_for(lambda: "three" in run_cli("logs", "lg").stdout, "three lines")
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainop.cli.main",
            "logs",
            "lg",
            "-f",
            "--tail",
            "1",
            "--timestamps",
            "-r",
            "master-0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    backlog = follower.stdout.readline()
    release.touch()
    out, _ = follower.communicate(timeout=60)
    got = {
        "tail": run_cli("logs", "lg", "--tail", "2").stdout,
        "since": run_cli("logs", "lg", "--since", "1h", "-r", "master-0").stdout,
        "follow": (backlog, re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z four\n", out) is not None),
        "stamps need -f": run_cli("logs", "lg", "--timestamps").returncode,
    }
    assert got == {
        "tail": "master-0 | three\nmaster-0 | four\n",
        "since": "one\ntwo\nthree\nfour\n",
        "follow": ("- three\n", True),
        "stamps need -f": 2,
    }


def test_shell_completion_in_bash(home: Path, tmp_path: Path) -> None:
    submit(tmp_path, sleeper("complete-me"))
    script = run_cli("completion", "bash").stdout
    # As bash calls it for `trainop des<TAB>`: the function gets the command name as $1.
    probe = (
        f"export PATH={Path(sys.executable).parent}:$PATH\n{script}\n"
        "COMP_WORDS=(trainop des); COMP_CWORD=1; _trainop_completion trainop; echo ${COMPREPLY[@]}\n"
        "COMP_WORDS=(trainop logs comp); COMP_CWORD=2; _trainop_completion trainop; echo ${COMPREPLY[@]}\n"
    )
    ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    got = (ran.stdout.splitlines(), run_cli("completion", "tcsh").returncode)
    assert got == (["describe", "complete-me"], 2), ran.stderr
    assert run_cli("delete", "complete-me", "--grace-period", "0").returncode == 0
