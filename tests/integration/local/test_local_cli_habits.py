"""The CLI meets kubectl's and torchrun's habits: generateName, selectors, output formats, the
replicas as pods, log filters, deletes by selector or file, completion, and a run without YAML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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
