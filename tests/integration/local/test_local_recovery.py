"""The recovery rule: when a supervisor is killed with SIGKILL, its replicas' main processes die with it;
the next trainop command kills whatever else it left running and reports those pods Failed (exit 137,
reason SupervisorLost), then a new supervisor takes over and the core decides: OnFailure restarts the
replicas, Never fails the job."""

from __future__ import annotations

import os
import signal

import pytest
from local_harness import condition, live_pids, running_pids, wait_for

from trainop.backends.local import procs
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


def kill_supervisor(backend: LocalBackend, name: str) -> tuple[int, list[int]]:
    pids = wait_for(
        lambda: len(running_pids(backend, name)) == 2 and running_pids(backend, name), "2 replicas"
    )
    wait_for(lambda: condition(backend.get(name), "Running"), "Running")
    row = backend.store.find_job("default", name)
    assert row is not None and row.supervisor_pid is not None
    os.kill(row.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: not procs.is_alive(row.supervisor_pid, row.supervisor_ticks), "the supervisor to die")
    # The replicas' main processes die with it (PR_SET_PDEATHSIG); what they forked is left to the
    # next command, which also reports the pods.
    wait_for(lambda: not live_pids(pids), "the replicas to die with their supervisor")
    return row.supervisor_pid, pids


def test_killed_supervisor_on_failure_job_is_recovered(backend: LocalBackend) -> None:
    backend.submit(
        pytorch_job("rec")
        .master(1)
        .workers(1)
        .restart_policy("OnFailure")
        .command(["sleep", "300"])
        .build_dict()
    )
    old_supervisor, old_pids = kill_supervisor(backend, "rec")

    backend.get("rec")  # the next command notices
    new_pids = wait_for(
        lambda: len(p := running_pids(backend, "rec")) == 2 and not set(p) & set(old_pids) and p,
        "replicas to run again",
    )
    job = backend.get("rec")
    details = backend.describe("rec")
    got = {
        "old replicas": live_pids(old_pids),
        "new replicas alive": live_pids(new_pids) == new_pids,
        "new supervisor": details.supervisor.alive and details.supervisor.pid != old_supervisor,
        "event": [e.reason for e in details.events if e.type == "Warning"][:1],
        "failed": condition(job, "Failed") is not None,
    }
    want = {
        "old replicas": [],
        "new replicas alive": True,
        "new supervisor": True,
        "event": ["SupervisorLost"],
        "failed": False,
    }
    assert got == want
    backend.delete("rec", grace=0)


def test_killed_supervisor_never_job_fails_and_says_why(backend: LocalBackend) -> None:
    backend.submit(
        pytorch_job("lost")
        .master(1)
        .workers(1)
        .restart_policy("Never")
        .command(["sleep", "300"])
        .build_dict()
    )
    _, old_pids = kill_supervisor(backend, "lost")

    backend.get("lost")
    job = backend.wait("lost", ["Failed", "Succeeded"], timeout=60)
    master = next(p for p in backend.pods("lost") if p["metadata"]["name"] == "lost-master-0")
    term = master["status"]["containerStatuses"][0]["state"]["terminated"]
    got = {
        "old replicas": live_pids(old_pids),
        "failed": condition(job, "Failed") is not None,
        "pod": (master["status"]["phase"], master["status"]["reason"], term["exitCode"], term["reason"]),
    }
    assert got == {
        "old replicas": [],
        "failed": True,
        "pod": ("Failed", "SupervisorLost", 137, "SupervisorLost"),
    }
