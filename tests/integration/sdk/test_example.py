"""The README's SDK examples run in every environment the README makes (issue 24 item 6): the README's
``python`` block and examples/sdk/train_with_sdk.py, as they are, with nothing set (no TRAINOP_BACKEND,
no cluster), in this environment (``make dev``: the real kubeflow-training and kubernetes installed,
which made the example end in a ConfigException traceback when it imported upstream's client) and in
one without them (``make demo``, ``pip install trainop``). The example's kubeflow-training code
differs from upstream's only in its import line and in giving the pod template as dicts.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "sdk" / "train_with_sdk.py"

# Makes the packages only the dev extra installs unimportable, as in `make demo`'s or pip's environment.
WITHOUT_DEV_EXTRA = """\
import sys

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "kubernetes" or name.split(".")[:2] == ["kubeflow", "training"]:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""

ENVIRONMENTS = [
    pytest.param(False, id="make dev (kubeflow-training and kubernetes installed)"),
    pytest.param(True, id="make demo / pip install trainop (neither installed)"),
]


def run_script(path: Path, tmp_path: Path, without_dev_extra: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINOP_BACKEND", "KUBECONFIG")}
    env["TRAINOP_HOME"] = str(tmp_path / "home")
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    if without_dev_extra:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(WITHOUT_DEV_EXTRA)
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path
    )


def test_the_example_changes_only_the_import_line_from_upstream_code() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {"trainop.sdk", "sys", "os"}


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("without_dev_extra", ENVIRONMENTS)
def test_the_example_runs_as_it_is(tmp_path: Path, without_dev_extra: bool) -> None:
    res = run_script(EXAMPLE, tmp_path, without_dev_extra)
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


def readme_sdk_block() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Python SDK") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "README's Python SDK section has no python block"
    return match.group(1)


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("without_dev_extra", ENVIRONMENTS)
def test_the_readme_sdk_block_runs_as_it_is(tmp_path: Path, without_dev_extra: bool) -> None:
    path = tmp_path / "readme_sdk.py"
    path.write_text(readme_sdk_block() + "print('master says:', logs['hello-master-0'].splitlines())\n")
    res = run_script(path, tmp_path, without_dev_extra)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    said = next(line for line in res.stdout.splitlines() if line.startswith("master says:"))
    assert "'lr 0.1 rank 0'" in said, res.stdout
