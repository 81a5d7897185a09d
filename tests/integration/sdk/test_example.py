"""examples/sdk runs against the local backend after changing nothing but its import lines (issue 6).

The script is written for kubeflow-training; the test rewrites ``kubeflow.training`` to
``trainop.sdk`` on import lines only, proves no other line changed, and runs it with
``TRAINOP_BACKEND=local`` on a fresh state directory.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sdk" / "train_with_sdk.py"
IMPORT_LINE = re.compile(r"^(from|import)\s+kubeflow\.training(\.|\s)")


def build_trainop_version(source: str) -> tuple[str, list[int]]:
    """The script with its kubeflow.training imports pointed at trainop.sdk; also the changed line numbers."""
    out, changed = [], []
    for i, line in enumerate(source.splitlines(keepends=True), start=1):
        if IMPORT_LINE.match(line):
            line = line.replace("kubeflow.training", "trainop.sdk", 1)
            changed.append(i)
        out.append(line)
    return "".join(out), changed


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_example_runs_on_the_local_backend_with_only_the_import_changed(tmp_path: Path) -> None:
    original = EXAMPLE.read_text()
    script, changed = build_trainop_version(original)
    assert changed, "the example no longer imports kubeflow.training"
    before, after = original.splitlines(), script.splitlines()
    assert len(before) == len(after)
    assert [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == changed
    assert all(after[i - 1].startswith(("from trainop.sdk", "import trainop.sdk")) for i in changed)
    # Pure kubeflow-training code: it imports nothing but upstream's SDK, the Kubernetes client and stdlib.
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(original))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {"kubeflow.training", "kubernetes.client", "sys", "os"}, imported

    path = tmp_path / EXAMPLE.name
    path.write_text(script)
    env = {
        **os.environ,
        "TRAINOP_BACKEND": "local",
        "TRAINOP_HOME": str(tmp_path / "home"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]),
    }
    res = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path
    )
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    lines = res.stdout.splitlines()
    # Running may be skipped when replicas finish between two looks; Created first and Succeeded last may not.
    conditions = next(line for line in lines if line.startswith("conditions: "))
    assert conditions.startswith("conditions: ['Created'") and conditions.endswith("'Succeeded']"), conditions
    assert (
        "pods: ['sdk-example-object-master-0', 'sdk-example-object-worker-0', 'sdk-example-object-worker-1']"
        in lines
    )
    assert "master says: replica 0 of 3 trained" in lines
    assert "worker 1 says: replica 2 of 3 trained" in lines
    assert "[Pod sdk-example-func-master-0]: function training with lr 0.01 on rank 0" in lines
    assert "function job says: function training with lr 0.01 on rank 0" in lines
    assert "jobs: ['sdk-example-func', 'sdk-example-object']" in lines
    assert lines[-1] == "done"
