"""How long ``trainop ui`` takes to serve the job list (``GET /api/jobs``, what each live update of the
list page reads) for 1,000 jobs of 3 replicas each on the local backend (served from the list a
background task keeps current), and how long a change another process makes takes to show in it (that
task reading all 1,000 again). Next to a floor measured in the same run: the backend's ``list_jobs``
alone (what ``trainop get`` reads). Prints; never asserts.

    make bench-ui        # or: .venv/bin/python tests/benchmarks/bench_ui.py [--jobs N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from trainop.backends.local.api import LocalBackend
from trainop.testing.browser import start_ui
from trainop.testing.builders import pod, pytorch_job

STATUS = {
    "conditions": [
        {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": "created"},
        {"type": "Running", "status": "False", "reason": "PyTorchJobRunning", "message": "running"},
        {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "message": "done"},
    ],
    "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}},
}


def fill(home: Path, jobs: int) -> None:
    """``jobs`` finished jobs, stored as ``submit`` stores them (no supervisor is started: the spawner
    does nothing, and each is then recorded finished with its supervisor gone)."""
    backend = LocalBackend(home, os.environ, spawner=lambda *_: None)
    try:
        for i in range(jobs):
            b = pytorch_job(f"job-{i:04d}").master(1).workers(2).labels(team="ab"[i % 2])
            b.image("python").command(["python", "-c", "pass"])
            job = backend.submit(b.build_dict())
            row = backend.store.find_job(job.namespace, job.name)
            assert row is not None
            backend.store.write_status(row.uid, STATUS)
            pods = [
                pod(job, t, n).succeeded().build() for t, n in (("Master", 0), ("Worker", 0), ("Worker", 1))
            ]
            backend.store.write_pods(row.uid, pods)
        backend.store.conn.execute("UPDATE jobs SET supervisor_state = 'exited'")
    finally:
        backend.close()


def timed(fn: object, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        home = Path(tmp) / "home"
        t = time.perf_counter()
        fill(home, args.jobs)
        print(f"stored {args.jobs} jobs x 3 pods in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        env = {**os.environ, "TRAINOP_HOME": str(home)}
        with start_ui(env=env) as ui:
            status, body = ui.get("/api/jobs")  # warm: imports, the first parse
            assert status == 200 and body.count(b'"name"') == args.jobs, (status, body[:200])
            served = timed(lambda: ui.get("/api/jobs"), args.rounds)
            writer = LocalBackend(home, env)
            row = writer.store.list_jobs()[0]
            shown = []
            for i in range(args.rounds):
                manifest = {
                    **row.manifest,
                    "metadata": {**row.manifest["metadata"], "labels": {"round": str(i)}},
                }
                writer.store.write_manifest(row.uid, manifest)
                t = time.perf_counter()
                while f'"round": "{i}"'.encode() not in ui.get("/api/jobs")[1]:
                    time.sleep(0.01)
                shown.append(time.perf_counter() - t)
            writer.close()
        backend = LocalBackend(home, env)
        try:
            backend.list_jobs()
            floor = timed(backend.list_jobs, args.rounds)
        finally:
            backend.close()
    med, p90 = statistics.median(served), sorted(served)[int(0.9 * (len(served) - 1))]
    fmed, smed = statistics.median(floor), statistics.median(shown)
    verdict = "met" if med < 0.2 else "NOT met"
    print(f"job list for {args.jobs:,} jobs (GET /api/jobs, {args.rounds} rounds):")
    print(f"  served: median {med * 1000:.0f} ms, p90 {p90 * 1000:.0f} ms (target < 200 ms: {verdict})")
    print(f"  a change by another process shows in it after: median {smed * 1000:.0f} ms")
    print(f"  floor, list_jobs alone (trainop get's read): median {fmed * 1000:.0f} ms")
    print(f"  ratios to the floor: served {med / fmed:.2f}x, change shown {smed / fmed:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
