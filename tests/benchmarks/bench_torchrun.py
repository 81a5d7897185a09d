"""Benchmark: ``trainop run --nproc-per-node 2`` against ``torchrun --standalone --nproc-per-node 2`` on
the same DDP script (the DDP demo's train.py), interleaved, and the median wall-time ratio (issue 24:
target at most 1.05). Both are timed from a fresh process's start to its exit, as a user waits for
them, with the same environment and working directory; ``trainop run`` uses a fresh TRAINOP_HOME each
time. Prints figures; asserts nothing (a benchmark, not a test).

    .venv/bin/python tests/benchmarks/bench_torchrun.py [--rounds 5] [--epochs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "pytorch" / "ddp-digits" / "train.py"


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    if torchrun is None:
        raise SystemExit("torchrun is not installed: run `make extra-torch`")
    env = {**os.environ, "EPOCHS": str(args.epochs)}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    ours, theirs = [], []
    with tempfile.TemporaryDirectory(prefix="bench-torchrun-") as tmp:
        work = Path(tmp)
        for i in range(args.rounds):
            theirs.append(timed([torchrun, "--standalone", "--nproc-per-node", "2", str(SCRIPT)], env, work))
            home = work / f"home-{i}"
            run_env = {**env, "TRAINOP_HOME": str(home)}
            cli = [sys.executable, "-m", "trainop.cli.main", "run", "--nproc-per-node", "2", str(SCRIPT)]
            ours.append(timed(cli, run_env, work))
            print(f"round {i + 1}: torchrun {theirs[-1]:.2f} s, trainop run {ours[-1]:.2f} s", flush=True)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(
        f"median: torchrun {statistics.median(theirs):.2f} s, trainop run {statistics.median(ours):.2f} s; "
        f"ratio {ratio:.3f} (target <= 1.05)"
    )


if __name__ == "__main__":
    main()
