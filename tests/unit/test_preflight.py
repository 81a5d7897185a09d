"""hack/preflight.sh, `make test`'s first step: a disk without room for what the run will write stops it
at once with the figures (a CI run once ended on pip's "No space left on device" two minutes in)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "preflight.sh"


def run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "TRAINOP_SKIP_DISK_CHECK"}
    full.update(TMPDIR=str(tmp_path), **env)
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=full, timeout=60)


def test_a_disk_too_small_for_the_run_is_said_at_once_with_its_figures(tmp_path: Path) -> None:
    free_gib = shutil.disk_usage(tmp_path).free // 2**30
    done = run(tmp_path, TRAINOP_TMP_GIB=str(free_gib + 5))  # more than the disk has
    assert done.returncode == 1, done
    assert f"has {free_gib} GiB free but needs about" in done.stderr, done.stderr
    assert f"the tests' temporary files {free_gib + 5} GiB" in done.stderr, done.stderr
    assert "TMPDIR" in done.stderr and "TRAINOP_SKIP_DISK_CHECK=1" in done.stderr, done.stderr


def test_the_check_skipped_lets_the_run_go_on(tmp_path: Path) -> None:
    skipped = run(tmp_path, TRAINOP_TMP_GIB="999999", TRAINOP_SKIP_DISK_CHECK="1")
    assert skipped.returncode == 0 and skipped.stderr == "", skipped
