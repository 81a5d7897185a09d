"""Trainer v2's dataset and model initializers (STORAGE_URI → <workspace>/dataset|model), run as
the job's processes run them: ``python -m trainop.programs.<x>_initializer``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(module: str, workspace: Path, uri: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STORAGE_URI"}
    if uri is not None:
        env["STORAGE_URI"] = uri
    return subprocess.run(
        [sys.executable, "-m", f"trainop.programs.{module}", "--workspace", str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("what", ["dataset", "model"])
def test_a_local_directory_is_copied_in(tmp_path: Path, what: str) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "f.txt").write_text("payload")
    for uri in (f"file://{source}", str(source)):
        workspace = tmp_path / f"ws-{uri.startswith('file')}"
        result = _run(f"{what}_initializer", workspace, uri)
        assert result.returncode == 0, result.stderr
        assert (workspace / what / "sub" / "f.txt").read_text() == "payload"
        assert f"{what} {uri}: ready in {workspace / what}" in result.stdout


@pytest.mark.parametrize(
    ("module", "uri", "message"),
    [
        (
            "dataset_initializer",
            None,
            "STORAGE_URI is not set: the TrainJob's spec.initializer.dataset.storageUri",
        ),
        ("model_initializer", "gs://b/m", "scheme 'gs' is not one of hf://, s3://, file://"),
        ("model_initializer", "s3://b/m", "s3:// serves datasets here"),
        ("dataset_initializer", "s3://bucket/key", "ENDPOINT (the S3 endpoint URL)"),
        ("dataset_initializer", "/no/such/dir", "/no/such/dir is not a directory on this machine"),
        ("model_initializer", "hf://", "hf:// needs a repository id"),
    ],
)
def test_bad_uris_are_one_line_errors(tmp_path: Path, module: str, uri: str | None, message: str) -> None:
    result = _run(module, tmp_path, uri)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
