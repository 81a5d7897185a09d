"""Every lifecycle rule of contract §4 on the real API server, with kwok playing kubelet: pod fates
come from annotations (hack/testenv/kwok-stages.yaml). Polls with generous timeouts; no durations
are asserted."""

from __future__ import annotations

from typing import Any

import pytest
from k8s_harness import (
    Cluster,
    OperatorProcess,
    annotate,
    names,
)

from trainop.testing.builders import pytorch_job, tf_job, xgboost_job
from trainop.testing.testenv import SIM_EXIT_CODE, SIM_FAIL_TIMES, SIM_OUTCOME, SIM_RUN_DURATION, wait_for

PT = "PyTorchJob"


def succeed(after: str = "1s") -> Any:
    return annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: after})


def fail(code: int, after: str = "1s", **extra: str) -> Any:
    return annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: str(code), SIM_RUN_DURATION: after, **extra})


def uid(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["uid"])


# --- restart policies and exit codes (§4.5) ------------------------------------------------------------


def test_exit_code_retryable_recreates_the_pod(operator: OperatorProcess, cluster: Cluster) -> None:
    # Worker exits 137 (SIGKILL/OOM) under ExitCode: retryable, so the pod is deleted and recreated.
    job = (
        pytorch_job("ecr").master(1).workers(1).restart_policy("ExitCode", "Worker")
        .template(fail(137), "Worker")
    )  # fmt: skip
    created = cluster.create(job.build_dict())
    first = wait_for(
        lambda: next((p for p in cluster.live_pods("ecr") if "worker" in p["metadata"]["name"]), None), 60
    )
    # Watched: Restarting lasts only until the recreated worker runs (Running replaces it, §4.5).
    restarting = cluster.watch_condition(PT, "ecr", "Restarting", since=created)
    assert restarting["reason"] == "PyTorchJobRestarting"
    again = wait_for(
        lambda: next((p for p in cluster.live_pods("ecr")
                      if p["metadata"]["name"] == "ecr-worker-0" and uid(p) != uid(first)), None),
        60,
        "ecr-worker-0 recreated under the same name",
    )  # fmt: skip
    assert again["spec"]["restartPolicy"] == "Never"  # ExitCode becomes Never on the pod (§3.1)
    assert cluster.condition(PT, "ecr", "Failed") is None
    wait_for(
        lambda: {"PyTorchJobRestarting", "ExitedWithCode"} <= cluster.event_reasons("ecr") or None,
        30,
        "events",
    )
    wait_for(
        lambda: (
            operator.metric("training_operator_jobs_restarted_total", job_namespace=cluster.namespace) >= 1
            or None
        ),
        30,
    )


@pytest.mark.parametrize(
    ("policy", "want_message"),
    [
        pytest.param("ExitCode", 'job "ecp" is failing because "Worker" replica(s) failed.',
                     id="ExitCode, code 1 is permanent"),
        pytest.param("Never", "PyTorchJob ecp is failed because 1 Worker replica(s) failed.",
                     id="Never fails the job"),
    ],
)  # fmt: skip
def test_permanent_failure_fails_the_job(
    operator: OperatorProcess, cluster: Cluster, policy: str, want_message: str
) -> None:
    job = pytorch_job("ecp").master(1).workers(1).restart_policy(policy, "Worker").template(fail(1), "Worker")
    cluster.create(job.build_dict())
    failed = cluster.wait_condition(PT, "ecp", "Failed")
    assert (failed["reason"], failed["message"]) == ("PyTorchJobFailed", want_message)
    # A permanently failed worker is not recreated.
    assert [p["status"]["phase"] for p in cluster.pods("ecp") if p["metadata"]["name"] == "ecp-worker-0"] == [
        "Failed"
    ]


def test_on_failure_restarts_in_place_then_succeeds(operator: OperatorProcess, cluster: Cluster) -> None:
    # kubelet (kwok) restarts the container in place twice; the pod is never replaced.
    job = (
        pytorch_job("onf")
        .master(1)
        .restart_policy("OnFailure")
        .template(
            annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: "1", SIM_RUN_DURATION: "1s", SIM_FAIL_TIMES: "2"})
        )
    )
    cluster.create(job.build_dict())
    first = wait_for(lambda: cluster.live_pods("onf") or None, 60)[0]
    cluster.wait_condition(PT, "onf", "Succeeded")
    pod = cluster.pods("onf")[0]
    assert uid(pod) == uid(first)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 2
    assert cluster.condition_types(PT, "onf") == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]


def test_xgboost_fails_on_any_failed_pod_under_on_failure(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    # §4.4 / quirk 7: XGBoost fails the job on a failed pod unless restartPolicy is ExitCode.
    job = xgboost_job("xg").master(1).workers(1).restart_policy("Never").template(fail(2), "Worker")
    cluster.create(job.build_dict())
    failed = cluster.wait_condition("XGBoostJob", "xg", "Failed")
    assert failed["reason"] == "XGBoostJobFailed"


# --- backoffLimit and activeDeadlineSeconds (§4.6, §4.7) ---------------------------------------------


def test_backoff_limit(operator: OperatorProcess, cluster: Cluster) -> None:
    # OnFailure crash loop: the restartCount sum reaches backoffLimit 2 → Failed; cleanPodPolicy All
    # then removes the pods (v1.9.4 order: Failed first, then cleanup).
    job = (
        pytorch_job("bo").master(1).restart_policy("OnFailure").run_policy(backoff_limit=2,
                                                                           clean_pod_policy="All")
        .template(fail(1))
    )  # fmt: skip
    cluster.create(job.build_dict())
    failed = cluster.wait_condition(PT, "bo", "Failed", timeout=120)
    assert failed["message"] == "Job bo has failed because it has reached the specified backoff limit"
    wait_for(lambda: cluster.live_pods("bo") == [] or None, 60, "pods cleaned up")
    assert (cluster.job(PT, "bo") or {})["status"].get("completionTime")


def test_active_deadline(operator: OperatorProcess, cluster: Cluster) -> None:
    # Pods run forever (no outcome); only the operator's own timer can notice the deadline (quirk 4).
    job = (
        pytorch_job("dl")
        .master(1)
        .workers(1)
        .run_policy(active_deadline_seconds=3, clean_pod_policy="Running")
    )
    created = cluster.create(job.build_dict())
    # Watched: on a slow box the pods may start only just before the 3 s deadline, so Running can be
    # current for less than a poll interval.
    cluster.watch_condition(PT, "dl", "Running", since=created)
    failed = cluster.wait_condition(PT, "dl", "Failed", timeout=60)
    assert failed["message"] == "Job dl has failed because it was active longer than specified deadline"
    wait_for(lambda: cluster.live_pods("dl") == [] or None, 60, "running pods cleaned up")


# --- cleanPodPolicy (§4.8) -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "want_pods", "want_services"),
    [
        pytest.param("All", [], [], id="All deletes every pod and its Service"),
        pytest.param("Running", ["cp-master-0"], ["cp-master-0"], id="Running deletes only running pods"),
        pytest.param(
            "None", ["cp-master-0", "cp-worker-0"], ["cp-master-0", "cp-worker-0"], id="None keeps all"
        ),
    ],
)
def test_clean_pod_policy(
    operator: OperatorProcess, cluster: Cluster, policy: str, want_pods: list[str], want_services: list[str]
) -> None:
    # The master succeeds (so the job does); the worker would run forever.
    job = (
        pytorch_job("cp")
        .master(1)
        .workers(1)
        .run_policy(clean_pod_policy=policy)
        .template(succeed("2s"), "Master")
    )
    cluster.create(job.build_dict())
    cluster.wait_condition(PT, "cp", "Succeeded")
    wait_for(lambda: names(cluster.live_pods("cp")) == want_pods or None, 60, f"pods {want_pods}")
    wait_for(lambda: names(cluster.services("cp")) == want_services or None, 60, f"services {want_services}")
    if policy == "None":
        cluster.settled(operator, PT, "cp")  # nothing may be deleted later either
        assert names(cluster.live_pods("cp")) == want_pods


# --- ttlSecondsAfterFinished (§4.9) ----------------------------------------------------------------------


def test_ttl_deletes_the_job_and_gc_its_pods(operator: OperatorProcess, cluster: Cluster) -> None:
    job = pytorch_job("ttl").master(1).workers(1).run_policy(ttl_seconds_after_finished=2).template(succeed())
    created = cluster.create(job.build_dict())
    # Watched, not polled: the job is Succeeded for only 1-2 s before the TTL deletes it.
    cluster.watch_condition(PT, "ttl", "Succeeded", since=created)
    wait_for(lambda: cluster.job(PT, "ttl") is None or None, 60, "job deleted by TTL")
    # Garbage collection (kube-controller-manager) removes what the job owned.
    wait_for(
        lambda: (cluster.pods("ttl") == [] and cluster.services("ttl") == []) or None,
        90,
        "pods/services GC'd",
    )
    wait_for(
        lambda: (
            operator.metric("training_operator_jobs_deleted_total", job_namespace=cluster.namespace) >= 1
            or None
        ),
        30,
    )


# --- suspend / resume (§4.10) ------------------------------------------------------------------------------


def test_created_suspended_then_resumed(operator: OperatorProcess, cluster: Cluster) -> None:
    cluster.create(pytorch_job("sus").master(1).workers(1).suspend().build_dict())
    suspended = cluster.wait_condition(PT, "sus", "Suspended")
    assert (suspended["reason"], suspended["message"]) == (
        "PyTorchJobSuspended",
        "PyTorchJob sus is suspended.",
    )
    cluster.settled(operator, PT, "sus")
    assert cluster.pods("sus") == []  # a job created suspended never creates pods
    cluster.patch_job(PT, "sus", {"spec": {"runPolicy": {"suspend": False}}})
    resumed = cluster.wait_condition(PT, "sus", "Suspended", status="False")
    assert resumed["reason"] == "PyTorchJobResumed"
    wait_for(lambda: len(cluster.live_pods("sus")) == 2 or None, 60, "pods after resume")
    cluster.wait_condition(PT, "sus", "Running")
    assert cluster.condition_types(PT, "sus") == [
        ("Created", "True"),
        ("Suspended", "False"),
        ("Running", "True"),
    ]


def test_suspending_a_running_job_deletes_its_pods(operator: OperatorProcess, cluster: Cluster) -> None:
    cluster.create(tf_job("run").workers(2).build_dict())
    cluster.wait_condition("TFJob", "run", "Running")
    cluster.patch_job("TFJob", "run", {"spec": {"runPolicy": {"suspend": True}}})
    cluster.wait_condition("TFJob", "run", "Suspended")
    cluster.wait_condition("TFJob", "run", "Running", status="False")
    wait_for(
        lambda: (cluster.live_pods("run") == [] and cluster.services("run") == []) or None, 60, "pods deleted"
    )
    statuses = (cluster.job("TFJob", "run") or {})["status"]["replicaStatuses"]
    assert statuses["Worker"].get("active", 0) == 0


# --- managedBy (§4.11) -------------------------------------------------------------------------------------


def test_managed_by_another_controller_is_left_alone(operator: OperatorProcess, cluster: Cluster) -> None:
    cluster.create(pytorch_job("mk").master(1).managed_by("kueue.x-k8s.io/multikueue").build_dict())
    # A sibling job proves the operator is alive and has seen this namespace.
    cluster.create(pytorch_job("ok").master(1).build_dict())
    cluster.wait_condition(PT, "ok", "Running")
    cluster.settled(operator, PT, "mk")
    assert ((cluster.job(PT, "mk") or {}).get("status") or {}) == {}
    assert cluster.pods("mk") == []
    assert cluster.events("mk") == []


# --- kubectl and metrics ---------------------------------------------------------------------------


def test_kubectl_get_shows_state_and_age(operator: OperatorProcess, cluster: Cluster) -> None:
    cluster.create(pytorch_job("kc").master(1).template(succeed()).build_dict())
    cluster.wait_condition(PT, "kc", "Succeeded")
    out = cluster.env.kubectl("get", "pytorchjobs", namespace=cluster.namespace).stdout.splitlines()
    assert out[0].split() == ["NAME", "STATE", "AGE"]
    assert out[1].split()[:2] == ["kc", "Succeeded"]


def test_metrics_after_a_job_ends(operator: OperatorProcess, cluster: Cluster) -> None:
    ns = cluster.namespace
    cluster.create(pytorch_job("m1").master(1).template(succeed()).build_dict())
    cluster.create(tf_job("m2").workers(1).restart_policy("Never").template(fail(3)).build_dict())
    cluster.wait_condition(PT, "m1", "Succeeded")
    cluster.wait_condition("TFJob", "m2", "Failed")

    def counters() -> dict[str, float] | None:
        got = {
            "created/pytorch": operator.metric("training_operator_jobs_created_total", job_namespace=ns,
                                               framework="pytorch"),
            "created/tensorflow": operator.metric("training_operator_jobs_created_total", job_namespace=ns,
                                                  framework="tensorflow"),
            "successful/pytorch": operator.metric("training_operator_jobs_successful_total",
                                                  job_namespace=ns, framework="pytorch"),
            "failed/tensorflow": operator.metric("training_operator_jobs_failed_total", job_namespace=ns,
                                                 framework="tensorflow"),
        }  # fmt: skip
        return got if all(got.values()) else None

    assert wait_for(counters, 30, "job counters") == {
        "created/pytorch": 1.0,
        "created/tensorflow": 1.0,
        "successful/pytorch": 1.0,
        "failed/tensorflow": 1.0,
    }
    # Both jobs were reconciled at least twice each (created, then finished): every pass is counted
    # and timed, every queued key measured, and the queue has drained.
    snapshot = operator.metrics()  # one scrape, so the counters agree with each other

    def sample(metric: str, **labels: str) -> float:
        return sum(v for (n, ls), v in snapshot.items() if n == metric and set(labels.items()) <= set(ls))

    passes = sample("controller_runtime_reconcile_total", controller="trainop")
    assert passes >= 4
    assert sample("controller_runtime_reconcile_time_seconds_count", controller="trainop") == passes
    assert sample("workqueue_adds_total", name="trainop") >= 2
    assert sample("workqueue_queue_duration_seconds_count", name="trainop") >= 2
    depth = ("workqueue_depth", (("name", "trainop"),))
    wait_for(lambda: operator.metrics().get(depth) == 0 or None, 30, "an empty queue")
