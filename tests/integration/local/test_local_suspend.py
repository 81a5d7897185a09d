"""suspend stops every replica; resume starts them again (contract §4.10), with real processes."""

from __future__ import annotations

import pytest
from local_harness import condition, live_pids, running_pids, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


def test_suspend_stops_replicas_and_resume_restarts_them(backend: LocalBackend) -> None:
    manifest = pytorch_job("sus").master(1).workers(1).command(["sh", "-c", "sleep 300"]).build_dict()
    backend.submit(manifest)
    before = wait_for(
        lambda: len(running_pids(backend, "sus")) == 2 and running_pids(backend, "sus"), "2 replicas"
    )
    wait_for(lambda: condition(backend.get("sus"), "Running"), "Running")

    backend.set_suspend("sus", True)
    wait_for(lambda: condition(backend.get("sus"), "Suspended"), "Suspended")
    wait_for(lambda: not live_pids(before) and not backend.pods("sus"), "the replicas to stop")

    backend.set_suspend("sus", False)
    after = wait_for(
        lambda: len(running_pids(backend, "sus")) == 2 and running_pids(backend, "sus"), "2 new replicas"
    )
    job = wait_for(lambda: condition(j := backend.get("sus"), "Running") and j, "Running again")
    conds = [(c.type, c.status, c.reason) for c in (job.status.conditions if job.status else [])]
    got = {
        "new processes": not set(after) & set(before),
        "alive": live_pids(after) == after,
        "conditions": conds,
    }
    want = {
        "new processes": True,
        "alive": True,
        "conditions": [
            ("Created", "True", "PyTorchJobCreated"),
            ("Suspended", "False", "PyTorchJobResumed"),
            ("Running", "True", "PyTorchJobRunning"),
        ],
    }
    assert got == want
    backend.delete("sus", grace=0)
