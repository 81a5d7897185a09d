"""examples/finetune: code written for kubeflow-training fine-tunes on this machine once its
TrainingClient import names trainop.sdk, and nothing else changed (issue 21)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "finetune" / "finetune_llm.py"
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
@pytest.mark.timeout(900)
def test_finetune_example_runs_locally_with_only_the_import_changed(tmp_path: Path) -> None:
    original = EXAMPLE.read_text()
    script, changed = build_trainop_version(original)
    before, after = original.splitlines(), script.splitlines()
    assert [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == changed
    assert [after[i - 1] for i in changed] == ["from trainop.sdk import TrainingClient"]
    path = tmp_path / EXAMPLE.name
    path.write_text(script)
    env = {**os.environ, "TRAINOP_BACKEND": "local", "TRAINOP_HOME": str(tmp_path / "home")}
    res = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=880, env=env, cwd=tmp_path
    )
    assert res.returncode == 0, f"stdout:\n{res.stdout[-3000:]}\nstderr:\n{res.stderr[-3000:]}"
    lines = res.stdout.splitlines()
    losses = [float(line.rsplit(" ", 1)[1]) for line in lines if " trainer: step " in line]
    assert len(losses) >= 3, res.stdout
    claim = tmp_path / "home" / "jobs" / "default" / "finetune-llm" / "claims" / "finetune-llm"
    assert f"finetune-llm-master-0: trainer: adapter and tokenizer saved to {claim / 'adapter'}" in lines
    assert (claim / "adapter" / "adapter_model.safetensors").is_file()
    assert lines[-1].startswith("conditions: ['Created'") and lines[-1].endswith("'Succeeded']"), lines[-1]
