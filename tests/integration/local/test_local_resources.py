"""Several jobs on one machine: every replica gets its own port (two jobs really rendezvous at once
without a clash), and nvidia.com/gpu limits get distinct GPUs through CUDA_VISIBLE_DEVICES, a job
that needs more than are free waiting Pending with a message that says why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from local_harness import condition, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

# The master listens on MASTER_PORT and expects both workers of ITS job to say hello.
MASTER = """
import os, socket
s = socket.socket(); s.bind((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))); s.listen()
s.settimeout(60)
seen = []
for _ in range(2):
    c, _ = s.accept(); seen.append(c.recv(100).decode()); c.close()
print("hello from", sorted(seen))
raise SystemExit(0 if seen == [os.environ["JOB"]] * 2 else 1)
"""
WORKER = """
import os, socket, time
for _ in range(600):
    try:
        c = socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))
        break
    except OSError:
        time.sleep(0.1)
c.sendall(os.environ["JOB"].encode()); c.close()
"""


def rendezvous_job(name: str) -> dict[str, object]:
    return (
        pytorch_job(name)
        .master(1)
        .workers(2)
        .restart_policy("Never")
        .env("JOB", name)
        .command([sys.executable, "-c", MASTER], "Master")
        .command([sys.executable, "-c", WORKER], "Worker")
        .build_dict()
    )


def test_two_jobs_at_once_never_share_a_port(backend: LocalBackend) -> None:
    backend.submit(rendezvous_job("one"))
    backend.submit(rendezvous_job("two"))
    outcomes = {
        n: bool(condition(backend.wait(n, ["Succeeded", "Failed"], timeout=90), "Succeeded"))
        for n in ("one", "two")
    }
    ports = [p for n in ("one", "two") for p in backend.describe(n).ports.values()]
    got = {"succeeded": outcomes, "distinct ports": len(ports) == len(set(ports)) == 6}
    assert got == {"succeeded": {"one": True, "two": True}, "distinct ports": True}


def gpu_job(name: str, gpus_per_worker: int, workers: int, release: Path) -> dict[str, object]:
    """Replicas print their GPUs, then hold them until the test creates ``release``."""
    hold = (
        f'echo "gpus=[$CUDA_VISIBLE_DEVICES]"; for i in $(seq 600); do [ -f {release} ] && exit 0; '
        "sleep 0.1; done"
    )
    return (
        pytorch_job(name)
        .master(1)
        .workers(workers)
        .command(["sh", "-c", hold])
        .gpu("Worker", gpus_per_worker)
        .build_dict()
    )


def unschedulable(backend: LocalBackend, job: str, pod: str) -> dict[str, Any] | None:
    found = next((p for p in backend.pods(job) if p["metadata"]["name"] == pod), None)
    conditions = (found or {}).get("status", {}).get("conditions") or [{}]
    return found if conditions[0].get("reason") == "Unschedulable" else None


def test_gpu_limits_get_distinct_gpus_and_a_job_waits_for_free_ones(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINOP_GPUS", "0,1,2")  # the inventory (this machine may have no GPU)
    backend = LocalBackend(home)
    release = home.parent / "release"
    backend.submit(gpu_job("first", 1, 2, release))
    wait_for(lambda: condition(backend.get("first"), "Running"), "the first job to run")
    backend.submit(gpu_job("second", 2, 1, release))
    waiting = wait_for(
        lambda: unschedulable(backend, "second", "second-worker-0"), "the second job to wait for GPUs"
    )
    release.touch()
    for name in ("first", "second"):
        assert condition(backend.wait(name, ["Succeeded", "Failed"], timeout=60), "Succeeded") is not None

    def seen(name: str) -> dict[str, str]:
        return {line.replica: line.text for line in backend.logs(name)}

    # With a Master, the job succeeds when the Master does (§4.4): the workers may still be starting.
    first = wait_for(lambda: len(found := seen("first")) == 3 and found, "the first job's replicas to print")
    second = wait_for(
        lambda: len(found := seen("second")) == 2 and found, "the second job's replicas to print"
    )
    second_gpus = second["worker-0"].removeprefix("gpus=[").removesuffix("]").split(",")
    scheduled = waiting["status"]["conditions"][0]
    got = {
        "first": (first["master-0"], sorted([first["worker-0"], first["worker-1"]])),
        "second waited": (waiting["status"]["phase"], scheduled["type"], scheduled["reason"]),
        "why": scheduled["message"],
        "second": (second["master-0"], len(set(second_gpus)), set(second_gpus) <= {"0", "1", "2"}),
    }
    want = {
        "first": ("gpus=[]", ["gpus=[0]", "gpus=[1]"]),
        "second waited": ("Pending", "PodScheduled", "Unschedulable"),
        # (the whole gang waits, issue 11: tests/integration/local/test_local_gang.py)
        "why": "0/1 nodes are available: insufficient nvidia.com/gpu: pod second-worker-0 needs 2; gang "
        "of 2 pods "
        "needs 2 GPUs at once, 1 of 3 are free (held by default/first: 2); its pods start together "
        "when enough are released",
        "second": ("gpus=[]", 2, True),
    }
    assert got == want
    backend.close()
