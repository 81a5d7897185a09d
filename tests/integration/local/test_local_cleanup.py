"""Stopping replicas on the local backend: cleanPodPolicy Running after success, TTL removing the job,
and ``delete`` leaving no process behind (checked through /proc)."""

from __future__ import annotations

from typing import Any

import pytest
from local_harness import live_pids, pod, running_pids, session_pids, wait_for

from trainop.backends.base import NotFoundError
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


def gone(backend: LocalBackend, name: str) -> bool:
    try:
        backend.get(name)
    except NotFoundError:
        return True
    return False


def test_clean_pod_policy_running_stops_workers_after_the_master_succeeds(backend: LocalBackend) -> None:
    manifest = (
        pytorch_job("cpr")
        .master(1)
        .workers(2)
        .command(["sh", "-c", "sleep 3"], "Master")
        .command(["sh", "-c", "sleep 300"], "Worker")
        .run_policy(clean_pod_policy="Running")
        .build_dict()
    )
    backend.submit(manifest)
    workers = wait_for(
        lambda: len(running_pids(backend, "cpr")) == 3 and running_pids(backend, "cpr"), "3 replicas"
    )
    backend.wait("cpr", ["Succeeded"], timeout=60)
    wait_for(lambda: not live_pids(workers) and len(backend.pods("cpr")) == 1, "the workers to be deleted")
    master = pod(backend, "cpr", "cpr-master-0")
    assert master is not None and master["status"]["phase"] == "Succeeded"


def test_ttl_removes_the_finished_job(backend: LocalBackend, home: Any) -> None:
    manifest = (
        pytorch_job("ttl")
        .master(1)
        .workers(1)
        .command(["sh", "-c", "echo done"])
        .run_policy(ttl_seconds_after_finished=1)
        .build_dict()
    )
    backend.submit(manifest)
    wait_for(lambda: gone(backend, "ttl"), "the TTL to delete the job", timeout=60)
    assert not (home / "logs" / "default" / "ttl").exists()


def slow_to_stop(template: dict[str, Any]) -> None:
    template["spec"]["terminationGracePeriodSeconds"] = 1


def test_delete_leaves_no_process(backend: LocalBackend, home: Any) -> None:
    # The master forks children; the workers ignore SIGTERM, so only SIGKILL after the grace period
    # stops them.
    manifest = (
        pytorch_job("del")
        .master(1)
        .workers(2)
        .command(["sh", "-c", "sleep 300 & sleep 301 & wait"], "Master")
        .command(["sh", "-c", "trap '' TERM; sleep 302 & wait; sleep 303"], "Worker")
        .template(slow_to_stop)
        .build_dict()
    )
    backend.submit(manifest)
    leaders = wait_for(
        lambda: len(running_pids(backend, "del")) == 3 and running_pids(backend, "del"), "3 replicas"
    )
    # Every replica process and its children (sleep), by session.
    everyone = wait_for(
        lambda: (found := [p for sid in leaders for p in session_pids(sid)]) and len(found) >= 7 and found,
        "replicas and their children to be running",
    )
    supervisor = backend.describe("del").supervisor.pid
    assert supervisor is not None
    backend.delete("del")
    got = {
        "job": "gone" if gone(backend, "del") else "still there",
        "live processes": live_pids([*everyone, supervisor]),
        "live sessions": [p for sid in leaders for p in session_pids(sid)],
        "logs": (home / "logs" / "default" / "del").exists(),
    }
    assert got == {"job": "gone", "live processes": [], "live sessions": [], "logs": False}
