"""The CLI meets kubectl's and torchrun's habits: generateName, selectors, output formats, the
replicas as pods, log filters, deletes by selector or file, completion, and a run without YAML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from local_harness import run_cli, write_manifest

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
