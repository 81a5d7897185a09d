"""Operator restarts and leader election (contract §6.1, §6.4): a restarted operator adopts the pods
of running jobs (no duplicates, no lost status), and of two electing operators only the leader writes."""

from __future__ import annotations

from typing import Any

from k8s_harness import Cluster, StartOperator, annotate, names

from trainop.backends.kubernetes import resources as r
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import SIM_OUTCOME, SIM_RUN_DURATION, wait_for

PT = "PyTorchJob"


def pod_uids(cluster: Cluster, job: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.pods(job)}


def create_count(cluster: Cluster, job: str) -> int:
    """How many pods the operators said they created for ``job`` (aggregated events keep a count)."""
    return sum(
        int(e.get("count") or 1) for e in cluster.events(job) if e.get("reason") == "SuccessfulCreatePod"
    )


def test_restarted_operator_adopts_running_pods(start_operator: StartOperator, cluster: Cluster) -> None:
    first = start_operator("--enable-webhook=false", name="first")
    # The master finishes only when the test says so (it patches the annotation onto the live pod).
    cluster.create(pytorch_job("adopt").master(1).workers(2).build_dict())
    cluster.wait_condition(PT, "adopt", "Running")
    wait_for(lambda: create_count(cluster, "adopt") == 3 or None, 30, "3 SuccessfulCreatePod events")
    before_pods = pod_uids(cluster, "adopt")
    before_status: dict[str, Any] = (cluster.job(PT, "adopt") or {})["status"]

    first.kill()  # SIGKILL mid-job: nothing is flushed or released
    second = start_operator("--enable-webhook=false", name="second")
    cluster.settled(second, PT, "adopt")  # the new operator has decided on the job as it is now
    assert pod_uids(cluster, "adopt") == before_pods  # no pod replaced, none added
    assert create_count(cluster, "adopt") == 3
    after_status = (cluster.job(PT, "adopt") or {})["status"]
    assert after_status["conditions"] == before_status["conditions"]
    assert after_status["startTime"] == before_status["startTime"]
    # A job is counted once, when Created is first written, not again on restart (quirk 11 fixed).
    assert second.metric("training_operator_jobs_created_total", job_namespace=cluster.namespace) == 0

    # The new operator carries the job on to the end.
    with cluster.env.client(namespace=cluster.namespace) as c:
        c.patch(
            r.Pod,
            "adopt-master-0",
            {"metadata": {"annotations": {SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}}},
        )
    cluster.wait_condition(PT, "adopt", "Succeeded")
    assert second.metric("training_operator_jobs_successful_total", job_namespace=cluster.namespace) == 1


def test_only_the_leader_writes(start_operator: StartOperator, cluster: Cluster) -> None:
    ns = cluster.namespace  # the Lease lives in the test namespace (MY_POD_NAMESPACE)
    flags = ("--enable-webhook=false", "--leader-elect", f"--leader-election-id=lease-{ns}")
    env = {"MY_POD_NAMESPACE": ns}
    a = start_operator(*flags, name="a", extra_env={**env, "MY_POD_NAME": "operator-a"})
    wait_for(lambda: a.metric("leader_election_master_status") == 1 or None, 60, "a leads")
    b = start_operator(*flags, name="b", extra_env={**env, "MY_POD_NAME": "operator-b"})
    b_writes_at_start = b.writes()

    cluster.create(
        pytorch_job("le").master(1).workers(1).template(annotate({SIM_OUTCOME: "succeed"})).build_dict()
    )
    cluster.wait_condition(PT, "le", "Succeeded")
    cluster.settled(a, PT, "le")
    # The standby has looked at the lease twice more since, and still only reads.
    reads = b.metric("rest_client_requests_total", method="GET")
    wait_for(
        lambda: b.metric("rest_client_requests_total", method="GET") >= reads + 2 or None,
        60,
        "the standby to read the lease twice more",
    )
    assert (a.metric("leader_election_master_status"), b.metric("leader_election_master_status")) == (1, 0)
    assert b.writes() == b_writes_at_start == 0  # the standby only reads (the lease included)
    assert b.metric("controller_runtime_reconcile_total") == 0
    assert a.writes() > 0

    with cluster.env.client(namespace=ns) as c:
        lease = dict(c.get(r.Lease, f"lease-{ns}", namespace=ns))
    assert lease["spec"]["holderIdentity"] == "operator-a"

    # The leader dies without releasing; once the lease expires the standby takes over.
    a.kill()
    wait_for(lambda: b.metric("leader_election_master_status") == 1 or None, 90, "b takes over")
    cluster.create(pytorch_job("le2").master(1).template(annotate({SIM_OUTCOME: "succeed"})).build_dict())
    cluster.wait_condition(PT, "le2", "Succeeded")
    assert names(cluster.pods("le2")) == ["le2-master-0"]
    assert b.writes() > 0


def test_graceful_stop_releases_the_lease(start_operator: StartOperator, cluster: Cluster) -> None:
    ns = cluster.namespace
    flags = ("--enable-webhook=false", "--leader-elect", f"--leader-election-id=lease-{ns}")
    a = start_operator(*flags, name="a", extra_env={"MY_POD_NAMESPACE": ns, "MY_POD_NAME": "operator-a"})
    wait_for(lambda: a.metric("leader_election_master_status") == 1 or None, 60, "a leads")
    b = start_operator(*flags, name="b", extra_env={"MY_POD_NAMESPACE": ns, "MY_POD_NAME": "operator-b"})
    assert a.stop() == 0
    # Released on SIGTERM: the standby needs one retry period, not a whole lease duration.
    wait_for(lambda: b.metric("leader_election_master_status") == 1 or None, 30, "b takes over")
