"""Benchmark of the local backend: from `trainop submit` to every replica started, and the supervisor's RSS.

A PyTorchJob of 1 Master + 7 Workers whose replicas only write their start time to a marker file
and sleep. We time `trainop submit FILE` (a fresh CLI process, as a user runs it) until the last
marker is written, against the floor: the same 8 commands started directly from this process, in the
same run. The supervisor's peak RSS is its VmHWM. Prints figures; asserts nothing (a benchmark, not a
test). Targets: at most 1.5 times the floor, at most 80 MB.

    make bench-local            # or: .venv/bin/python tests/benchmarks/bench_local.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from trainop.backends.local.api import LocalBackend

REPLICAS = 8  # 1 Master + 7 Workers
COMMAND = 'date +%s.%N > "$(MARKERS)/$(POD)"; exec sleep 30'


def manifest(name: str, markers: Path) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "unused-locally",
        "command": ["sh", "-c", COMMAND],
        "env": [
            {"name": "MARKERS", "value": str(markers)},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }

    def replica(n: int) -> dict[str, Any]:
        return {
            "replicas": n,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [container]}},
        }

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(REPLICAS - 1)}},
    }


def wait_markers(markers: Path, n: int, timeout: float = 120.0) -> float:
    """The latest start time written by the ``n`` replicas (wall clock, seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(markers.iterdir())
        if len(files) == n:
            stamps = [f.read_text().strip() for f in files]
            if all(stamps):
                return max(float(s) for s in stamps)
        time.sleep(0.005)
    raise SystemExit(f"only {len(list(markers.iterdir()))} of {n} replicas started within {timeout}s")


def floor_round(work: Path, i: int) -> float:
    """The same 8 commands started directly: the least any launcher can take."""
    markers = work / f"floor-{i}"
    markers.mkdir()
    env = {**os.environ, "MARKERS": str(markers)}
    t0 = time.time()
    procs = []
    for r in range(REPLICAS):
        pod = f"floor-{'master-0' if r == 0 else f'worker-{r - 1}'}"
        cmd = COMMAND.replace("$(MARKERS)", str(markers)).replace("$(POD)", pod)
        procs.append(subprocess.Popen(["sh", "-c", cmd], env=env, start_new_session=True))
    elapsed = wait_markers(markers, REPLICAS) - t0
    for p in procs:
        p.kill()
        p.wait()
    return elapsed


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def trainop_round(work: Path, home: Path, i: int, trainop: list[str]) -> dict[str, float]:
    markers = work / f"job-{i}"
    markers.mkdir()
    name = f"bench-{i}"
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest(name, markers)))
    env = {**os.environ, "TRAINOP_HOME": str(home)}
    t0 = time.time()
    subprocess.run([*trainop, "submit", str(path)], env=env, check=True, stdout=subprocess.DEVNULL)
    cli_done = time.time() - t0
    started = wait_markers(markers, REPLICAS) - t0
    backend = LocalBackend(home, env=env)
    row = backend.store.find_job("default", name)
    assert row is not None and row.supervisor_pid is not None
    supervisor_up = (row.supervisor_since or t0) - t0
    rss = peak_rss_mb(row.supervisor_pid) or 0.0
    backend.delete(name, grace=0)
    backend.close()
    return {"total": started, "cli": cli_done, "supervisor": supervisor_up, "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    script = Path(sys.executable).parent / "trainop"
    trainop = [str(script)] if script.exists() else [sys.executable, "-m", "trainop.cli.main"]
    with tempfile.TemporaryDirectory(prefix="trainop-bench-") as tmp:
        work = Path(tmp)
        home = work / "home"
        floors: list[float] = []
        runs: list[dict[str, float]] = []
        print(
            f"bench-local: 1 Master + {REPLICAS - 1} Workers of `sh -c 'date > marker; sleep'`, {args.rounds} rounds"
        )
        print(
            f"{'round':>5}  {'floor':>8}  {'trainop':>8}  {'ratio':>6}  {'cli exit':>8}  {'supervisor up':>13}  {'sup RSS':>8}"
        )
        for i in range(args.rounds):
            floors.append(floor_round(work, i))
            runs.append(trainop_round(work, home, i, trainop))
            r = runs[-1]
            print(
                f"{i:>5}  {floors[-1] * 1000:>6.1f}ms  {r['total'] * 1000:>6.0f}ms  {r['total'] / floors[-1]:>5.1f}x"
                f"  {r['cli'] * 1000:>6.0f}ms  {r['supervisor'] * 1000:>11.0f}ms  {r['rss']:>6.1f}MB"
            )
        floor = statistics.median(floors)
        total = statistics.median(r["total"] for r in runs)
        cli = statistics.median(r["cli"] for r in runs)
        sup = statistics.median(r["supervisor"] for r in runs)
        rss = max(r["rss"] for r in runs)
        print()
        print(f"floor (8 processes started directly)      median {floor * 1000:8.1f} ms")
        print(
            f"trainop submit → all 8 replicas started   median {total * 1000:8.1f} ms  = {total / floor:.1f}x the floor (target ≤ 1.5x)"
        )
        print(f"  of which: `trainop submit` returned after     {cli * 1000:8.1f} ms")
        print(f"            the supervisor claimed the job after {sup * 1000:8.1f} ms")
        print(
            f"            reconcile + starting 8 replicas      {(total - sup) * 1000:8.1f} ms ({(total - sup) / floor:.1f}x the floor)"
        )
        print(f"supervisor peak RSS (VmHWM)                max {rss:8.1f} MB (target ≤ 80 MB)")


if __name__ == "__main__":
    main()
