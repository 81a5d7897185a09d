"""``trainop logs`` shows a progress bar as ``run`` does (issue 24 item 7): each line as a terminal
would show it, so a tqdm bar is its last frame, not a line per frame; ``--raw`` keeps the bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from local_harness import run_cli

# Two bars of 60 steps each, tqdm's way: every frame starts with \r, a newline after each bar.
BARS = """\
import sys
for bar in range(2):
    for step in range(61):
        sys.stderr.write(f"\\rbar {bar}: {step}/60 " + "#" * (step // 6))
        sys.stderr.flush()
    sys.stderr.write("\\n")
print("done", flush=True)
"""


def test_logs_renders_carriage_returns_and_raw_keeps_them(home: Path, tmp_path: Path) -> None:
    (tmp_path / "bars.py").write_text(BARS)
    assert run_cli("run", "--name", "bars", "--no-logs", "bars.py", cwd=tmp_path).returncode == 0
    shown = run_cli("logs", "bars").stdout.splitlines()
    one = run_cli("logs", "bars", "--replica", "master-0").stdout.splitlines()
    # (bytes: a text-mode pipe would turn each \r into a newline itself)
    raw = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "logs", "bars", "--raw"], capture_output=True, timeout=60
    ).stdout.split(b"\n")
    assert {
        "shown": shown,
        "one replica": one,
        "raw lines": len(raw) - 1,
        "raw frames": raw[0].count(b"\r"),
    } == {
        "shown": [
            "master-0 | bar 0: 60/60 ##########",
            "master-0 | bar 1: 60/60 ##########",
            "master-0 | done",
        ],
        "one replica": ["bar 0: 60/60 ##########", "bar 1: 60/60 ##########", "done"],
        "raw lines": 3,
        "raw frames": 61,
    }
