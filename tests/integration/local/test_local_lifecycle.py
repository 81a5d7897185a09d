"""How jobs end on the local backend, with real processes: success, ExitCode/Never failures, the
backoffLimit and activeDeadlineSeconds rules (contract §4.4-§4.7), decided by the core."""

from __future__ import annotations

from typing import Any

import pytest
from local_harness import condition, live_pids, running_pids, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import JobBuilder, pytorch_job

pytestmark = pytest.mark.integration


def job(name: str, master: str, worker: str, policy: str = "OnFailure", workers: int = 2) -> JobBuilder:
    return (
        pytorch_job(name)
        .master(1)
        .workers(workers)
        .restart_policy(policy)
        .command(["sh", "-c", master], "Master")
        .command(["sh", "-c", worker], "Worker")
    )


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(
            job("ok", "sleep 0.5", "sleep 0.2").build_dict(),
            ("Succeeded", "PyTorchJobSucceeded", "PyTorchJob ok is successfully completed."),
            id="every replica exits 0: Succeeded",
        ),
        pytest.param(
            job("exitcode", "sleep 60", "exit 1").restart_policy("ExitCode", "Worker").build_dict(),
            ("Failed", "PyTorchJobFailed", 'job "exitcode" is failing because "Worker" replica(s) failed.'),
            id="ExitCode with exit 1 (permanent): Failed",
        ),
        pytest.param(
            job("never", "sleep 60", "exit 3", policy="Never", workers=1).build_dict(),
            ("Failed", "PyTorchJobFailed", "PyTorchJob never is failed because 1 Worker replica(s) failed."),
            id="Never: a failed worker fails the job",
        ),
        pytest.param(
            job("backoff", "sleep 60", "exit 1").run_policy(backoff_limit=1).build_dict(),
            (
                "Failed",
                "PyTorchJobFailed",
                "Job backoff has failed because it has reached the specified backoff limit",
            ),
            id="OnFailure restarts in place until backoffLimit is reached: Failed",
        ),
        pytest.param(
            job("deadline", "sleep 60", "sleep 60").run_policy(active_deadline_seconds=2).build_dict(),
            (
                "Failed",
                "PyTorchJobFailed",
                "Job deadline has failed because it was active longer than specified deadline",
            ),
            id="activeDeadlineSeconds passed: Failed",
        ),
    ],
)
def test_job_outcome(backend: LocalBackend, manifest: dict[str, Any], want: tuple[str, str, str]) -> None:
    name = manifest["metadata"]["name"]
    backend.submit(manifest)
    done = backend.wait(name, ["Succeeded", "Failed"], timeout=90)
    cond = condition(done, want[0])
    got = (want[0], cond.reason, cond.message) if cond else ("not " + want[0], None, None)
    assert got == want


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(
            job("bl", "sleep 60", "exit 1")
            .run_policy(backoff_limit=1, clean_pod_policy="Running")
            .build_dict(),
            id="backoffLimit",
        ),
        pytest.param(
            job("dl", "sleep 60", "sleep 60")
            .run_policy(active_deadline_seconds=1, clean_pod_policy="Running")
            .build_dict(),
            id="activeDeadlineSeconds",
        ),
    ],
)
def test_limit_failures_stop_every_replica(backend: LocalBackend, manifest: dict[str, Any]) -> None:
    """A limit fails the job first, then cleanPodPolicy applies (§4.7, as v1.9.4): with Running, every
    still-running replica is deleted, which locally means no process is left."""
    name = manifest["metadata"]["name"]
    backend.submit(manifest)
    pids = wait_for(lambda: running_pids(backend, name), "replicas to start")
    done = backend.wait(name, ["Failed"], timeout=90)
    assert condition(done, "Failed"), f"{name} finished without Failed: {done.status}"
    wait_for(lambda: not live_pids(pids) and not backend.pods(name), "every replica process to be gone")
