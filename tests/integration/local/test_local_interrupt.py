"""``trainop run``'s Ctrl-C on the backend: the replicas stop as a suspend stops them (SIGTERM, what
they print while shutting down is kept), the job stays with its state and logs, marked interrupted;
resume clears the mark; delete removes it all."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_harness import run_cli, running_pids, wait_for

from trainop.api.constants import ANNOTATION_INTERRUPTED
from trainop.backends.base import detect_state
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

# Says it is up, then on SIGTERM prints its checkpoint line and exits 0.
GRACEFUL = "trap 'echo saving checkpoint; exit 0' TERM; echo up; while true; do sleep 0.05; done"


def test_interrupt_stops_replicas_keeps_the_job_and_their_last_words(
    home: Path, backend: LocalBackend
) -> None:
    backend.submit(pytorch_job("ck").master(1).workers(1).command(["sh", "-c", GRACEFUL]).build_dict())
    wait_for(lambda: len(running_pids(backend, "ck")) == 2, "two replicas running")
    wait_for(lambda: sum(line.text == "up" for line in backend.logs("ck")) == 2, "both replicas up")
    backend.set_suspend("ck", True, interrupted=True)
    row = backend.store.find_job("default", "ck")
    assert row is not None
    wait_for(lambda: not backend.store.list_processes(row.uid, unfinished=True), "every replica stopped")
    wait_for(lambda: detect_state(backend.get("ck")) == "Suspended", "Suspended")
    job = backend.get("ck")
    got = {
        "state": detect_state(job),
        "marked": ANNOTATION_INTERRUPTED in (job.metadata.annotations or {}),
        "get": run_cli("get", "ck").stdout.splitlines()[1].split()[:3],
        "describe": "State:       Interrupted at " in run_cli("describe", "ck").stdout,
        "last words": sorted(
            f"{line.replica}: {line.text}" for line in backend.logs("ck") if "checkpoint" in line.text
        ),
    }
    assert got == {
        "state": "Suspended",
        "marked": True,
        "get": ["ck", "PyTorchJob", "Interrupted"],
        "describe": True,
        "last words": ["master-0: saving checkpoint", "worker-0: saving checkpoint"],
    }
    resumed = backend.set_suspend("ck", False)
    assert ANNOTATION_INTERRUPTED not in (resumed.metadata.annotations or {})
    backend.delete("ck", grace=0)
    assert backend.store.find_job("default", "ck") is None
