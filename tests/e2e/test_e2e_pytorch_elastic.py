"""Elastic PyTorch survives a killed worker (issue 7): torchrun, started with nothing but the PET_* env
of an elasticPolicy (c10d rendezvous, 1 to 3 nodes, contract §3.4), re-forms its group after one node
is SIGKILLed mid-run; the local runner restarts that node in place (restartPolicy OnFailure), the node
rejoins, training resumes from the newest checkpoint, and the job succeeds.
"""

from __future__ import annotations

import time

import pytest
from e2e_harness import (
    EXAMPLES,
    Report,
    events,
    kill_replica,
    listening_inodes,
    log_tails,
    owns_socket,
    read_reports,
    record_run_time,
    replica_pid,
    require_module,
    submit,
    succeeded_conditions,
    summarize_conditions,
    summarize_replicas,
    wait_finished,
    wait_for,
)

from trainop.backends.local.api import LocalBackend

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

EXAMPLE = EXAMPLES / "pytorch-elastic" / "pytorchjob.yaml"
JOB_TIMEOUT = 600.0
SIGKILL_EXIT = 137


def training_under_way(backend: LocalBackend, name: str) -> bool:
    """Both nodes have finished an epoch after the first: the group is formed and training."""
    reports = read_reports(backend.describe(name))
    return {r.replica for r in events(reports, "epoch") if r.data["epoch"] >= 1} == {"worker-0", "worker-1"}


def test_group_reforms_after_a_worker_is_killed(
    backend: LocalBackend, request: pytest.FixtureRequest
) -> None:
    require_module("torch", "torch")
    started = time.monotonic()
    name = submit(backend, EXAMPLE)
    wait_for(lambda: training_under_way(backend, name), "both workers to train", JOB_TIMEOUT)

    # The c10d store lives in worker-0's agent, as on Kubernetes where the endpoint is worker-0's
    # address: on one machine every agent finds the loopback endpoint to be its own address, and the
    # local backend names the host (is_host in PET_RDZV_CONF). Losing that node loses the rendezvous
    # itself, which no elastic setting survives; worker-1 is the one to kill.
    details = backend.describe(name)
    store_port = details.ports[("Worker", 0)]
    inodes = listening_inodes(store_port)
    pids = {f"worker-{i}": replica_pid(details, f"{name}-worker-{i}") for i in range(2)}
    hosts = [replica for replica, pid in pids.items() if owns_socket(pid, inodes)]
    assert hosts == ["worker-0"], f"the c10d store on port {store_port} is hosted by {hosts}"
    survivor, victim = "worker-0", "worker-1"
    killed_at_epoch = max(
        r.data["epoch"] for r in events(read_reports(backend.describe(name)), "epoch") if r.replica == victim
    )
    kill_replica(pids[victim])

    job = wait_finished(backend, name, JOB_TIMEOUT)
    record_run_time(
        "PyTorchJob elastic: a worker SIGKILLed mid-run, the group re-forms", time.monotonic() - started
    )
    details = backend.describe(name)
    tails = log_tails(backend, name)

    got_status = {"conditions": summarize_conditions(job), "replicas": summarize_replicas(job)}
    want_status = {
        "conditions": succeeded_conditions("PyTorchJob"),
        "replicas": {"Worker": {"active": 0, "succeeded": 2, "failed": 0}},
    }
    assert got_status == want_status, tails

    # The victim's container was restarted in place after dying of SIGKILL.
    pod = next(p for p in details.pods if p["metadata"]["name"] == f"{name}-{victim}")
    cs = pod["status"]["containerStatuses"][0]
    got_restart = {"restartCount": cs["restartCount"], "lastExit": cs["lastState"]["terminated"]["exitCode"]}
    assert got_restart == {"restartCount": 1, "lastExit": SIGKILL_EXIT}, tails

    reports = read_reports(details)

    def last(event: str, replica: str) -> Report:
        found = [r for r in events(reports, event) if r.replica == replica]
        assert found, f"no {event!r} line from {replica}\n{tails}"
        return found[-1]

    # The group re-formed with both nodes, resuming past the epoch reached before the kill; the
    # survivor's agent restarted its worker process (restart count 1), the victim came back as a new
    # agent. Both finished in the same final round with identical parameters.
    rejoined = {replica: last("joined", replica).data for replica in (survivor, victim)}
    finished = {replica: last("done", replica).data for replica in (survivor, victim)}
    got = {
        "rejoined": {
            r: {"world_size": d["world_size"], "resumed": d["start_epoch"] >= killed_at_epoch}
            for r, d in rejoined.items()
        },
        "survivor_restarts": rejoined[survivor]["restart"],
        "victim_attempt": last("done", victim).attempt,
        "done_world_sizes": {r: d["world_size"] for r, d in finished.items()},
        "distinct_params": len({d["params"] for d in finished.values()}),
        "accurate": all(d["accuracy"] >= 0.9 for d in finished.values()),
    }
    want = {
        "rejoined": {
            survivor: {"world_size": 2, "resumed": True},
            victim: {"world_size": 2, "resumed": True},
        },
        "survivor_restarts": 1,
        "victim_attempt": 1,
        "done_world_sizes": {survivor: 2, victim: 2},
        "distinct_params": 1,
        "accurate": True,
    }
    assert got == want, tails
