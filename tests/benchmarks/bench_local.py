"""Benchmark of the local backend: from `trainop submit` to every replica started, and the supervisor's RSS.

A PyTorchJob of 1 Master + 7 Workers whose replicas only write their start time to a marker file
and sleep. We time `trainop submit FILE` (a fresh CLI process, as a user runs it) until the last
marker is written, against floors measured in the same rounds: the same 8 commands started directly
from this process (what any launcher needs), and, to show where the CLI's time goes, a bare
interpreter start, `trainop --version` (interpreter + the CLI framework) and an interpreter that only
imports what a submit needs (pydantic and the API models, the core, the plugins, the local backend).
trainop's modules are byte-compiled first, as an installed package has them (an editable install
under PYTHONDONTWRITEBYTECODE would recompile them on every command). The supervisor's peak RSS is
its VmHWM. Prints figures; asserts nothing (a benchmark, not a test). Targets: at most 1.5 times the
floor, at most 80 MB.

    make bench-local            # or: .venv/bin/python tests/benchmarks/bench_local.py [--rounds N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from trainop.backends.local import api as local_api
from trainop.backends.local.api import LocalBackend

REPLICAS = 8  # 1 Master + 7 Workers
COMMAND = 'date +%s.%N > "$(MARKERS)/$(POD)"; exec sleep 30'
# Everything `trainop submit` imports before it forks the supervisor (which reuses those imports).
SUBMIT_IMPORTS = (
    "import trainop.cli.main, trainop.api.validation, trainop.backends.local.api, "
    "trainop.backends.local.supervisor"
)


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


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def startup_round(trainop: list[str]) -> dict[str, float]:
    """The CLI's fixed costs, with no job: interpreter, CLI framework, every import of a submit."""
    env = dict(os.environ)
    return {
        "python": timed([sys.executable, "-c", "pass"], env),
        "version": timed([*trainop, "--version"], env),
        # as the CLI makes them: trainop.cli pauses the collector, the CLI skips pydantic's plugin scan
        "imports": timed(
            [sys.executable, "-c", SUBMIT_IMPORTS], {**env, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
        ),
    }


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


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    script = Path(sys.executable).parent / "trainop"
    trainop = [str(script)] if script.exists() else [sys.executable, "-m", "trainop.cli.main"]
    compileall.compile_dir(Path(local_api.__file__).parents[2], quiet=1)  # the trainop package
    with tempfile.TemporaryDirectory(prefix="trainop-bench-") as tmp:
        work = Path(tmp)
        home = work / "home"
        floors: list[float] = []
        starts: list[dict[str, float]] = []
        runs: list[dict[str, float]] = []
        print(
            f"bench-local: 1 Master + {REPLICAS - 1} Workers of `sh -c 'date > marker; sleep'`, "
            f"{args.rounds} rounds"
        )
        print(
            f"{'round':>5}  {'floor':>7}  {'python':>7}  {'--version':>9}  {'imports':>7}  "
            f"{'submit→started':>14}"
            f"  {'cli exit':>8}  {'sup. up':>7}  {'sup RSS':>7}"
        )
        for i in range(args.rounds):
            floors.append(floor_round(work, i))
            starts.append(startup_round(trainop))
            runs.append(trainop_round(work, home, i, trainop))
            f, s, r = floors[-1], starts[-1], runs[-1]
            print(
                f"{i:>5}  {f * 1000:>5.1f}ms  {s['python'] * 1000:>5.0f}ms  {s['version'] * 1000:>7.0f}ms"
                f"  {s['imports'] * 1000:>5.0f}ms  {r['total'] * 1000:>12.0f}ms  {r['cli'] * 1000:>6.0f}ms"
                f"  {r['supervisor'] * 1000:>5.0f}ms  {r['rss']:>5.1f}MB"
            )

        def median(key: str, rows: list[dict[str, float]]) -> float:
            return statistics.median(r[key] for r in rows)

        floor = statistics.median(floors)
        python, version, imports = (median(k, starts) for k in ("python", "version", "imports"))
        total, cli, sup = (median(k, runs) for k in ("total", "cli", "supervisor"))
        rss = max(r["rss"] for r in runs)
        rows = [
            ("floor: the 8 processes started directly", ms(floor), ""),
            ("python -c pass (interpreter start)", ms(python), ""),
            ("trainop --version (interpreter, typer, which loads pydantic)", ms(version), ""),
            ("python importing all a submit needs, doing nothing", ms(imports), ""),
            (
                "trainop submit → all 8 replicas started",
                ms(total),
                f"= {total / floor:.1f}x the floor (target ≤ 1.5x), {total / imports:.2f}x the imports",
            ),
            ("  `trainop submit` returned after", ms(cli), ""),
            ("  the supervisor (forked by the CLI) claimed the job at", ms(sup), ""),
            (
                "  then reconcile + starting the 8 replicas",
                ms(total - sup),
                f"= {(total - sup) / floor:.1f}x the floor",
            ),
            ("  beyond the imports: argv, validate, store, fork, reconcile, spawn", ms(total - imports), ""),
            ("supervisor peak RSS (VmHWM), max", f"{rss:7.1f} MB", "(target ≤ 80 MB)"),
        ]
        print()
        print("medians:")
        for label, value, note in rows:
            print(f"  {label:<66} {value}  {note}".rstrip())


if __name__ == "__main__":
    main()
