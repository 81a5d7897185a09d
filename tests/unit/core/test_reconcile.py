"""One reconcile pass at a time, against the rules of contract §4 and the events of §6.3.

Each case builds a raw job (with its stored status), the pods and Services a backend would observe and
a fixed ``now``, and compares the whole Plan summary: actions, status, events, requeue, metrics.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from trainop.api.common import TrainingJob
from trainop.core.plan import CreateObject, Event, outcome_event
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pod,
    pytorch_job,
    tf_job,
    xgboost_job,
)

from .harness import (
    T0,
    at,
    cond,
    created,
    describe_action,
    replica_statuses,
    run,
    service,
    summary,
    ts,
)

PT = "PyTorchJob"
RUNNING_PT = cond("Running", kind=PT, msg="PyTorchJob a is running.")


def pt(*, workers: int = 2, **run_policy: Any) -> JobBuilder:
    """PyTorchJob ``a``: Master 1 + ``workers`` Workers, created and running since T0."""
    b = pytorch_job("a").master(1).workers(workers)
    if run_policy:
        b = b.run_policy(**run_policy)
    return b


def stored(b: JobBuilder, *conds: dict[str, Any], **status: Any) -> TrainingJob:
    """The job with a stored status: ``conds`` (Created first unless given) plus other fields."""
    st: dict[str, Any] = {"conditions": list(conds) or [created(b.kind)], "startTime": ts(0)}
    st.update(status)
    return b.status(**{_snake(k): v for k, v in st.items()}).build()


def _snake(camel: str) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in camel)


def pt_running(b: JobBuilder | None = None, **status: Any) -> TrainingJob:
    """A PyTorchJob whose three pods run: [Created, Running] since T0 (``status`` overrides fields)."""
    fields: dict[str, Any] = {
        "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
        **status,
    }
    return stored(b or pt(), created(PT), RUNNING_PT, **fields)


def pods_running(job: TrainingJob, workers: int = 2) -> list[dict[str, Any]]:
    return [pod(job, "Master", 0).running().build()] + [
        pod(job, "Worker", i).running().build() for i in range(workers)
    ]


def services(job: TrainingJob, workers: int = 2) -> list[dict[str, Any]]:
    return [service(job, "Master", 0)] + [service(job, "Worker", i) for i in range(workers)]


def plan_of(
    *,
    actions: list[tuple[str, ...]] | None = None,
    status: dict[str, Any],
    changed: bool = True,
    events: list[tuple[str, str, str]] | None = None,
    requeue: float | None = None,
    metrics: list[str] | None = None,
    skipped: bool = False,
) -> dict[str, Any]:
    return {
        "actions": actions or [],
        "status": status,
        "status_changed": changed,
        "events": events or [],
        "requeue_after": requeue,
        "metrics": metrics or [],
        "skipped": skipped,
    }


CREATE_ALL: list[tuple[str, ...]] = [
    ("create", "Pod", "a-master-0"),
    ("create", "Service", "a-master-0"),
    ("create", "Pod", "a-worker-0"),
    ("create", "Pod", "a-worker-1"),
    ("create", "Service", "a-worker-0"),
    ("create", "Service", "a-worker-1"),
]


def exited(pod_name: str, code: int) -> tuple[str, str, str]:
    return ("Normal", "ExitedWithCode", f"Pod: default.{pod_name} exited with code {code}")


# --- creation, steady state, replica statuses, scale-down (§3.1, §3.2, §4.2) ------------------------


def _steady() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
    job = pt_running()
    return job, pods_running(job), services(job), at(20)


def _first_running() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
    job = stored(pt(), created(PT), replicaStatuses=replica_statuses(PT, Master={}, Worker={}))
    pods = [pod(job, "Master", 0).running().build()] + [
        pod(job, "Worker", i).pending().build() for i in range(2)
    ]
    return job, pods, services(job), at(10)


def _terminating_running_pod() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
    job = pt_running()
    pods = pods_running(job)
    pods[1] = pod(job, "Worker", 0).running().deleting().build()
    return job, pods, services(job), at(30)


def _scale_down() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
    job = pt_running(pt(workers=2))
    return job, pods_running(job, workers=4), services(job, workers=4), at(30)


@pytest.mark.parametrize(
    ("case", "want"),
    [
        pytest.param(
            lambda: (pt().build(), [], [], T0),
            plan_of(
                actions=CREATE_ALL,
                status={
                    "conditions": [created(PT)],
                    "replicaStatuses": replica_statuses(PT, Master={}, Worker={}),
                    "startTime": ts(0),
                },
                metrics=["jobs_created"],
            ),
            id="new job: Created, startTime and every pod and Service, replicaStatuses empty with selectors",
        ),
        pytest.param(
            _steady,
            plan_of(
                status={
                    "conditions": [created(PT), RUNNING_PT],
                    "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
                    "startTime": ts(0),
                },
                changed=False,
            ),
            id="steady state: every pod running and observed, nothing to do, nothing to write",
        ),
        pytest.param(
            _first_running,
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond("Running", kind=PT, msg="PyTorchJob a is running.", t=10),
                    ],
                    "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={}),
                    "startTime": ts(0),
                },
            ),
            id="Running once the master pod runs; Pending pods are not active (§9.8)",
        ),
        pytest.param(
            _terminating_running_pod,
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond(
                            "Restarting",
                            kind=PT,
                            msg="PyTorchJob a is restarting because 1 Worker replica(s) failed.",
                            t=30,
                        ),
                    ],
                    "replicaStatuses": replica_statuses(
                        PT, Master={"active": 1}, Worker={"active": 1, "failed": 1}
                    ),
                    "startTime": ts(0),
                },
                events=[
                    (
                        "Warning",
                        "PyTorchJobRestarting",
                        "PyTorchJob a is restarting because 1 Worker replica(s) failed.",
                    )
                ],
                metrics=["jobs_restarted"],
            ),
            id="a Running pod being deleted counts as failed and is neither deleted nor recreated",
        ),
        pytest.param(
            _scale_down,
            plan_of(
                actions=[
                    ("delete", "Pod", "a-worker-2"),
                    ("delete", "Pod", "a-worker-3"),
                    ("delete", "Service", "a-worker-2"),
                    ("delete", "Service", "a-worker-3"),
                ],
                status={
                    "conditions": [created(PT), RUNNING_PT],
                    "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 4}),
                    "startTime": ts(0),
                },
            ),
            id="scale-down: pods and Services past replicas are deleted (counted until gone, as upstream)",
        ),
    ],
)
def test_pods_services_and_replica_statuses(case: Any, want: dict[str, Any]) -> None:
    job, pods, svcs, now = case()
    assert summary(run(job, pods, svcs, now=now)) == want


# --- restart policies and exit codes (§4.5) -----------------------------------------------------------


def _failed_worker(
    policy: str, **failed: Any
) -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]]]:
    job = pt_running(pt().restart_policy(policy))
    pods = pods_running(job)
    builder = pod(job, "Worker", 0)
    if failed.get("exit_code") is None:
        builder = builder.phase("Failed").no_container_statuses()  # evicted: never terminated
    else:
        builder = builder.failed(failed["exit_code"])
    pods[1] = builder.build()
    return job, pods, services(job)


RESTARTING_POD = ("Warning", "PyTorchJobRestarting", "job a is restarting because Worker replica(s) failed.")
RESTARTING_RULE = (
    "Warning",
    "PyTorchJobRestarting",
    "PyTorchJob a is restarting because 1 Worker replica(s) failed.",
)


def _restarted(events: list[tuple[str, str, str]]) -> dict[str, Any]:
    return plan_of(
        actions=[("delete", "Pod", "a-worker-0")],
        status={
            "conditions": [
                created(PT),
                cond(
                    "Restarting",
                    kind=PT,
                    msg="PyTorchJob a is restarting because 1 Worker replica(s) failed.",
                    t=30,
                ),
            ],
            "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 1, "failed": 1}),
            "startTime": ts(0),
        },
        events=events,
        metrics=["jobs_restarted"],
    )


@pytest.mark.parametrize(
    ("policy", "exit_code", "want"),
    [
        pytest.param(
            "ExitCode",
            137,
            _restarted([exited("a-worker-0", 137), RESTARTING_POD, RESTARTING_RULE]),
            id="ExitCode, 137 (SIGKILL/OOM) is retryable: pod deleted to be recreated, Restarting, "
            "counted once",
        ),
        pytest.param(
            "ExitCode",
            None,
            _restarted([RESTARTING_POD, RESTARTING_RULE]),
            id="ExitCode, never terminated (eviction, the 0xbeef sentinel) is retryable",
        ),
        pytest.param(
            "OnFailure",
            1,
            _restarted([exited("a-worker-0", 1), RESTARTING_POD, RESTARTING_RULE]),
            id="OnFailure: a Failed pod is deleted and recreated whatever its exit code",
        ),
        pytest.param(
            "ExitCode",
            1,
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
                        cond(
                            "Failed",
                            kind=PT,
                            msg='job "a" is failing because "Worker" replica(s) failed.',
                            t=30,
                        ),
                    ],
                    "replicaStatuses": replica_statuses(
                        PT, Master={"active": 1}, Worker={"active": 1, "failed": 1}
                    ),
                    "startTime": ts(0),
                    "completionTime": ts(30),
                },
                events=[
                    exited("a-worker-0", 1),
                    ("Warning", "PyTorchJobFailed", 'job "a" is failing because "Worker" replica(s) failed.'),
                ],
                metrics=["jobs_failed"],
            ),
            id="ExitCode, 1 is permanent: Failed with completionTime (§9.5), the pod is kept",
        ),
        pytest.param(
            "Never",
            1,
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
                        cond(
                            "Failed",
                            kind=PT,
                            msg="PyTorchJob a is failed because 1 Worker replica(s) failed.",
                            t=30,
                        ),
                    ],
                    "replicaStatuses": replica_statuses(
                        PT, Master={"active": 1}, Worker={"active": 1, "failed": 1}
                    ),
                    "startTime": ts(0),
                    "completionTime": ts(30),
                },
                events=[
                    exited("a-worker-0", 1),
                    (
                        "Normal",
                        "PyTorchJobFailed",
                        "PyTorchJob a is failed because 1 Worker replica(s) failed.",
                    ),
                ],
                metrics=["jobs_failed"],
            ),
            id="Never: the pod is left alone and the status rule fails the job",
        ),
    ],
)
def test_restart_policy_and_exit_codes(policy: str, exit_code: int | None, want: dict[str, Any]) -> None:
    job, pods, svcs = _failed_worker(policy, exit_code=exit_code)
    assert summary(run(job, pods, svcs, now=at(30))) == want


PD = "PaddleJob"


def test_both_restarting_warnings_when_the_restart_path_set_restarting_first() -> None:
    """A PaddleJob whose only Worker is SIGKILLed (137) under ExitCode: the restart path deletes the pod
    and sets Restarting, then the status rule (§4.4) wants the same Restarting. Upstream's rule records
    its Warning before setCondition finds nothing to change, so both Warnings go out; the condition
    keeps the restart path's message (same reason: setCondition is a no-op, §4.1)."""
    running = cond("Running", kind=PD, msg="PaddleJob a is running.")
    job = stored(
        paddle_job("a").workers(1).restart_policy("ExitCode"),
        created(PD),
        running,
        replicaStatuses=replica_statuses(PD, Worker={"active": 1}),
    )
    pods = [pod(job, "Worker", 0).failed(137).build()]
    restarting = "job a is restarting because Worker replica(s) failed."
    want = plan_of(
        actions=[("delete", "Pod", "a-worker-0")],
        status={
            "conditions": [created(PD), cond("Restarting", kind=PD, msg=restarting, t=30)],
            "replicaStatuses": replica_statuses(PD, Worker={"failed": 1}),
            "startTime": ts(0),
        },
        events=[
            exited("a-worker-0", 137),
            ("Warning", "PaddleJobRestarting", restarting),
            (
                "Warning",
                "PaddleJobRestarting",
                "PaddleJob a is restarting because 1 Worker replica(s) failed.",
            ),
        ],
        metrics=["jobs_restarted"],
    )
    assert summary(run(job, pods, [service(job, "Worker", 0)], now=at(30))) == want


@pytest.mark.parametrize(
    ("restart_count", "backoff_limit", "want_failed"),
    [
        pytest.param(
            3, None, False, id="OnFailure, Running pods with restarts and no backoffLimit: kubelet's business"
        ),
        pytest.param(2, 3, False, id="OnFailure, restarts below backoffLimit: keep running"),
        pytest.param(3, 3, True, id="OnFailure, restarts reach backoffLimit: Failed (rule b)"),
    ],
)
def test_on_failure_running_pods_with_restarts(
    restart_count: int, backoff_limit: int | None, want_failed: bool
) -> None:
    b = pt() if backoff_limit is None else pt(backoff_limit=backoff_limit)
    job = pt_running(b)
    pods = pods_running(job)
    pods[1] = pod(job, "Worker", 0).running().restart_count(restart_count).build()
    plan = run(job, pods, services(job), now=at(30))
    failed = [c for c in plan.status.to_dict()["conditions"] if c["type"] == "Failed"]
    assert (plan.actions, bool(failed)) == ([], want_failed)


# --- backoffLimit (§4.6) and activeDeadlineSeconds (§4.7) ---------------------------------------------

BACKOFF_MSG = "Job a has failed because it has reached the specified backoff limit"
DEADLINE_MSG = "Job a has failed because it was active longer than specified deadline"


def _limit_failed(
    msg: str, t: float, *, actions: list[tuple[str, ...]] | None = None, **status: Any
) -> dict[str, Any]:
    return plan_of(
        actions=actions,
        status={
            "conditions": [
                created(PT),
                cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
                cond("Failed", kind=PT, msg=msg, t=t),
            ],
            "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
            "startTime": ts(0),
            "completionTime": ts(t),
            **status,
        },
        events=[("Normal", "PyTorchJobFailed", msg)],
        metrics=["jobs_failed"],
    )


def _backoff_a(previous_failed: int) -> Any:
    def case() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
        job = pt_running(
            pt(backoff_limit=0).restart_policy("Never"),
            replicaStatuses=replica_statuses(
                PT,
                Master={"active": 1},
                Worker={"active": 2 - previous_failed, "failed": previous_failed}
                if previous_failed
                else {"active": 2},
            ),
        )
        pods = pods_running(job)
        pods[1] = pod(job, "Worker", 0).failed(1).build()
        return job, pods, services(job), at(30)

    return case


def _backoff_b() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
    job = pt_running(pt(backoff_limit=4, clean_pod_policy="Running"))
    pods = [
        pod(job, "Master", 0).running().restart_count(1).build(),
        pod(job, "Worker", 0).running().restart_count(2).build(),
        pod(job, "Worker", 1).running().restart_count(1).build(),
    ]
    return job, pods, services(job), at(30)


def _deadline(now: float, policy: str = "None") -> Any:
    def case() -> tuple[TrainingJob, list[dict[str, Any]], list[dict[str, Any]], datetime]:
        job = pt_running(pt(active_deadline_seconds=600, clean_pod_policy=policy))
        return job, pods_running(job), services(job), at(now)

    return case


@pytest.mark.parametrize(
    ("case", "want"),
    [
        pytest.param(
            _backoff_a(previous_failed=0),
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
                        cond("Failed", kind=PT, msg=BACKOFF_MSG, t=30),
                    ],
                    "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
                    "startTime": ts(0),
                    "completionTime": ts(30),
                },
                events=[("Normal", "PyTorchJobFailed", BACKOFF_MSG)],
                metrics=["jobs_failed"],
            ),
            id="backoffLimit 0 and a new failed pod: Failed (rule a, §9.4); no ExitedWithCode after "
            "the limit",
        ),
        pytest.param(
            _backoff_a(previous_failed=1),
            plan_of(
                status={
                    "conditions": [
                        created(PT),
                        cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
                        cond(
                            "Failed",
                            kind=PT,
                            msg="PyTorchJob a is failed because 1 Worker replica(s) failed.",
                            t=30,
                        ),
                    ],
                    "replicaStatuses": replica_statuses(
                        PT, Master={"active": 1}, Worker={"active": 1, "failed": 1}
                    ),
                    "startTime": ts(0),
                    "completionTime": ts(30),
                },
                events=[
                    exited("a-worker-0", 1),
                    (
                        "Normal",
                        "PyTorchJobFailed",
                        "PyTorchJob a is failed because 1 Worker replica(s) failed.",
                    ),
                ],
                metrics=["jobs_failed"],
            ),
            id="a failure the stored status already counted is not new: rule a stays quiet, the status "
            "rule decides",
        ),
        pytest.param(
            _backoff_b,
            _limit_failed(
                BACKOFF_MSG,
                30,
                actions=[
                    ("delete", "Pod", "a-master-0"),
                    ("delete", "Pod", "a-worker-0"),
                    ("delete", "Pod", "a-worker-1"),
                    ("delete", "Service", "a-master-0"),
                    ("delete", "Service", "a-worker-0"),
                    ("delete", "Service", "a-worker-1"),
                ],
            ),
            id="restartCount of Running pods reaches backoffLimit: Failed, then cleanPodPolicy Running "
            "applies (v1.9.4)",
        ),
        pytest.param(
            _deadline(100),
            plan_of(
                status={
                    "conditions": [created(PT), RUNNING_PT],
                    "replicaStatuses": replica_statuses(PT, Master={"active": 1}, Worker={"active": 2}),
                    "startTime": ts(0),
                },
                changed=False,
                requeue=500.0,
            ),
            id="before the deadline: requeue_after is exactly the time left (§9.4: a real timer)",
        ),
        pytest.param(
            _deadline(600),
            _limit_failed(DEADLINE_MSG, 600),
            id="at the deadline: Failed with completionTime; cleanPodPolicy None keeps the pods",
        ),
        pytest.param(
            _deadline(601, policy="All"),
            _limit_failed(
                DEADLINE_MSG,
                601,
                actions=[
                    ("delete", "Pod", "a-master-0"),
                    ("delete", "Pod", "a-worker-0"),
                    ("delete", "Pod", "a-worker-1"),
                    ("delete", "Service", "a-master-0"),
                    ("delete", "Service", "a-worker-0"),
                    ("delete", "Service", "a-worker-1"),
                ],
            ),
            id="past the deadline with cleanPodPolicy All: every pod and Service goes",
        ),
    ],
)
def test_backoff_limit_and_deadline(case: Any, want: dict[str, Any]) -> None:
    job, pods, svcs, now = case()
    assert summary(run(job, pods, svcs, now=now)) == want


# --- cleanPodPolicy (§4.8) and TTL (§4.9) -------------------------------------------------------------


def _finished_pods(job: TrainingJob) -> list[dict[str, Any]]:
    return [
        pod(job, "Master", 0).succeeded().build(),
        pod(job, "Worker", 0).running().build(),
        pod(job, "Worker", 1).pending().build(),
        pod(job, "Worker", 2).failed(1).build(),
        pod(job, "Worker", 3).running().deleting().build(),
    ]


SUCCEEDED_PT = [
    created(PT),
    cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
    cond("Succeeded", kind=PT, msg="PyTorchJob a is successfully completed.", t=50),
]


def _succeeded(b: JobBuilder) -> TrainingJob:
    return stored(
        b,
        *SUCCEEDED_PT,
        replicaStatuses=replica_statuses(PT, Master={"succeeded": 1}, Worker={"active": 2}),
        completionTime=ts(50),
    )


FIXED_UP = replica_statuses(PT, Master={"succeeded": 1}, Worker={"succeeded": 2})


@pytest.mark.parametrize(
    ("policy", "want_actions"),
    [
        pytest.param(
            "All",
            [
                ("delete", "Pod", "a-master-0"),
                ("delete", "Pod", "a-worker-0"),
                ("delete", "Pod", "a-worker-1"),
                ("delete", "Pod", "a-worker-2"),
                ("delete", "Service", "a-master-0"),
                ("delete", "Service", "a-worker-0"),
                ("delete", "Service", "a-worker-1"),
                ("delete", "Service", "a-worker-2"),
                ("delete", "Service", "a-worker-3"),
            ],
            id="All: every pod (a terminating one is not deleted again) and its Service",
        ),
        pytest.param(
            "Running",
            [
                ("delete", "Pod", "a-worker-0"),
                ("delete", "Pod", "a-worker-1"),
                ("delete", "Service", "a-worker-0"),
                ("delete", "Service", "a-worker-1"),
                ("delete", "Service", "a-worker-3"),
            ],
            id="Running: pods Running or Pending and their Services; finished pods stay",
        ),
        pytest.param("None", [], id="None: nothing is deleted"),
    ],
)
def test_clean_pod_policy(policy: str, want_actions: list[tuple[str, ...]]) -> None:
    job = _succeeded(pt(workers=4, clean_pod_policy=policy))
    plan = run(job, _finished_pods(job), services(job, workers=4), now=at(60))
    want = plan_of(
        actions=want_actions,
        status={
            "conditions": SUCCEEDED_PT,
            "replicaStatuses": FIXED_UP,
            "startTime": ts(0),
            "completionTime": ts(50),
        },
        changed=True,  # the active→succeeded fix-up
    )
    assert summary(plan) == want


@pytest.mark.parametrize(
    ("builder", "ttl", "now", "want_actions", "want_requeue", "want_metrics"),
    [
        pytest.param(pt, 60, 80, [], 30.0, [], id="TTL 60, 30 s after completion: requeue for the 30 s left"),
        pytest.param(
            pt,
            60,
            110,
            [("delete-job", "SuccessfulDeletePod")],
            None,
            ["jobs_deleted"],
            id="TTL 60 expired: delete the job (PyTorch reuses SuccessfulDeletePod)",
        ),
        pytest.param(
            pt,
            0,
            50,
            [("delete-job", "SuccessfulDeletePod")],
            None,
            ["jobs_deleted"],
            id="TTL 0: delete at once",
        ),
        pytest.param(
            lambda **kw: tf_job("a").workers(1).run_policy(**kw),
            0,
            50,
            [("delete-job", "SuccessfulDeleteJob")],
            None,
            ["jobs_deleted"],
            id="TFJob's TTL deletion event is SuccessfulDeleteJob",
        ),
    ],
)
def test_ttl_after_finished(
    builder: Any,
    ttl: int,
    now: float,
    want_actions: list[tuple[str, ...]],
    want_requeue: float | None,
    want_metrics: list[str],
) -> None:
    b = builder(ttl_seconds_after_finished=ttl)
    kind = b.kind
    conds = [
        created(kind),
        cond("Succeeded", kind=kind, msg="done", t=50),
    ]
    job = stored(b, *conds, completionTime=ts(50))
    plan = run(job, [], [], now=at(now))
    assert (
        [("delete-job", a.done.reason) if a.done else () for a in plan.actions],
        plan.requeue_after,
        plan.metrics,
        plan.status_changed,
    ) == (want_actions, want_requeue, want_metrics, False)


def test_ttl_deletion_event_names_the_job() -> None:
    job = stored(
        pt(ttl_seconds_after_finished=0),
        created(PT),
        cond("Succeeded", kind=PT, msg="done"),
        completionTime=ts(0),
    )
    (action,) = run(job, now=at(1)).actions
    assert (outcome_event(action), outcome_event(action, "forbidden")) == (
        Event("Normal", "SuccessfulDeletePod", "Deleted job: a"),
        Event("Warning", "FailedDeletePod", "Error deleting: forbidden"),
    )


def test_failed_without_completion_time_gets_one_so_ttl_can_fire() -> None:
    """§9.5: a job failed by upstream's ExitCode path has no completionTime; its Failed time is used."""
    job = stored(
        pt(ttl_seconds_after_finished=100),
        created(PT),
        cond("Failed", kind=PT, msg='job "a" is failing because "Worker" replica(s) failed.', t=40),
    )
    plan = run(job, now=at(60))
    assert (plan.status.to_dict().get("completionTime"), plan.requeue_after, plan.status_changed) == (
        ts(40),
        80.0,
        True,
    )


# --- Failed is terminal, managedBy (§4.1, §4.11) -----------------------------------------------------


def test_failed_is_terminal() -> None:
    """A Failed job never changes its conditions again, whatever its pods do; nothing is created."""
    conds = [
        created(PT),
        cond("Running", "False", kind=PT, msg="PyTorchJob a is running."),
        cond("Failed", kind=PT, msg="x", t=5),
    ]
    job = stored(pt(), *conds, completionTime=ts(5))
    pods = [pod(job, "Master", 0).succeeded().build()]
    want = plan_of(status={"conditions": conds, "startTime": ts(0), "completionTime": ts(5)}, changed=False)
    assert summary(run(job, pods, [], now=at(60))) == want


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(lambda: pt(managed_by="kueue.x-k8s.io/multikueue"), id="PyTorchJob"),
        pytest.param(
            lambda: jax_job("a").workers(2).run_policy(managed_by="kueue.x-k8s.io/multikueue"),
            id="JAXJob honours it too (§9.3)",
        ),
    ],
)
def test_managed_by_another_controller_is_skipped(builder: Any) -> None:
    job = builder().build()
    assert summary(run(job)) == plan_of(status={}, changed=False, skipped=True)


def test_managed_by_the_operator_is_reconciled() -> None:
    job = pt(managed_by="kubeflow.org/training-operator").build()
    assert summary(run(job))["actions"] == CREATE_ALL


# --- suspend and resume (§4.10) -----------------------------------------------------------------------

SUSPENDED_MSG = "PyTorchJob a is suspended."


def test_suspend_a_running_job() -> None:
    job = pt_running(pt(suspend=True, clean_pod_policy="None"))
    pods = pods_running(job)
    pods[2] = pod(job, "Worker", 1).running().deleting().build()
    want = plan_of(
        actions=[
            ("delete", "Pod", "a-master-0"),
            ("delete", "Pod", "a-worker-0"),
            ("delete", "Service", "a-master-0"),
            ("delete", "Service", "a-worker-0"),
            ("delete", "Service", "a-worker-1"),
        ],
        status={
            "conditions": [
                created(PT),
                cond("Running", "False", kind=PT, msg=SUSPENDED_MSG, t=30, reason="PyTorchJobSuspended"),
                cond("Suspended", kind=PT, msg=SUSPENDED_MSG, t=30),
            ],
            "replicaStatuses": replica_statuses(PT, Master={}, Worker={}),
            "startTime": ts(0),
        },
        events=[("Normal", "PyTorchJobSuspended", SUSPENDED_MSG)],
    )
    assert summary(run(job, pods, services(job), now=at(30))) == want


def test_suspended_job_repeats_its_event_and_plans_nothing_else() -> None:
    conds = [
        created(PT),
        cond("Running", "False", kind=PT, msg=SUSPENDED_MSG, t=30, reason="PyTorchJobSuspended"),
        cond("Suspended", kind=PT, msg=SUSPENDED_MSG, t=30),
    ]
    job = stored(pt(suspend=True), *conds)
    want = plan_of(
        status={"conditions": conds, "startTime": ts(0)},
        changed=False,
        events=[("Normal", "PyTorchJobSuspended", SUSPENDED_MSG)],
    )
    assert summary(run(job, [], [], now=at(90))) == want


def test_job_created_suspended_creates_no_pods() -> None:
    want = plan_of(
        status={"conditions": [created(PT), cond("Suspended", kind=PT, msg=SUSPENDED_MSG)]},
        events=[("Normal", "PyTorchJobSuspended", SUSPENDED_MSG)],
        metrics=["jobs_created"],
    )
    assert summary(run(pt(suspend=True).build())) == want


def test_resume_restarts_the_clock_and_recreates_pods_in_the_same_pass() -> None:
    conds = [created(PT), cond("Suspended", kind=PT, msg=SUSPENDED_MSG, t=30)]
    job = stored(pt(suspend=False, active_deadline_seconds=600), *conds)
    want = plan_of(
        actions=CREATE_ALL,
        status={
            "conditions": [
                created(PT),
                cond(
                    "Suspended",
                    "False",
                    kind=PT,
                    msg="PyTorchJob a is resumed.",
                    t=100,
                    reason="PyTorchJobResumed",
                ),
            ],
            "replicaStatuses": replica_statuses(PT, Master={}, Worker={}),
            "startTime": ts(100),
        },
        events=[("Normal", "PyTorchJobResumed", "PyTorchJob a is resumed.")],
        requeue=600.0,
    )
    assert summary(run(job, [], [], now=at(100))) == want


# --- per-kind success and failure rules (§4.4) ----------------------------------------------------------

TF = "TFJob"


def _tf(success_policy: str | None) -> tuple[TrainingJob, list[dict[str, Any]]]:
    b = tf_job("a").ps(1).workers(2)
    if success_policy is not None:
        b = b.success_policy(success_policy)
    job = stored(b, created(TF), replicaStatuses=replica_statuses(TF, PS={}, Worker={}))
    pods = [
        pod(job, "PS", 0).running().build(),
        pod(job, "Worker", 0).succeeded(0).build(),
        pod(job, "Worker", 1).running().build(),
    ]
    return job, pods


TF_STATUS_COUNTS = replica_statuses(TF, PS={"active": 1}, Worker={"active": 1, "succeeded": 1})


@pytest.mark.parametrize(
    ("success_policy", "want"),
    [
        pytest.param(
            None,
            plan_of(
                status={
                    "conditions": [
                        created(TF),
                        cond("Succeeded", kind=TF, msg="TFJob default/a successfully completed.", t=40),
                    ],
                    # Finished in this pass: the active→succeeded fix-up runs at once (§4.2).
                    "replicaStatuses": replica_statuses(TF, PS={"succeeded": 1}, Worker={"succeeded": 2}),
                    "startTime": ts(0),
                    "completionTime": ts(40),
                },
                events=[
                    exited("a-worker-0", 0),
                    ("Normal", "TFJobSucceeded", "TFJob default/a successfully completed."),
                ],
                metrics=["jobs_successful"],
            ),
            id="default successPolicy: worker 0 succeeded with exit code 0 → Succeeded",
        ),
        pytest.param(
            "AllWorkers",
            plan_of(
                status={
                    "conditions": [
                        created(TF),
                        cond("Running", kind=TF, msg="TFJob default/a is running.", t=40),
                    ],
                    "replicaStatuses": TF_STATUS_COUNTS,
                    "startTime": ts(0),
                },
                events=[exited("a-worker-0", 0)],
            ),
            id="AllWorkers: still Running until every worker succeeded",
        ),
    ],
)
def test_tf_success_policy(success_policy: str | None, want: dict[str, Any]) -> None:
    job, pods = _tf(success_policy)
    svcs = [service(job, "PS", 0), service(job, "Worker", 0), service(job, "Worker", 1)]
    assert summary(run(job, pods, svcs, now=at(40))) == want


XGB = "XGBoostJob"


@pytest.mark.parametrize(
    ("policy", "exit_code", "want_conditions", "want_metrics"),
    [
        pytest.param(
            "OnFailure",
            1,
            [
                created(XGB),
                cond("Running", "False", kind=XGB, msg="XGBoostJob a is running.", t=30),
                cond(
                    "Failed", kind=XGB, msg="XGBoostJob a is failed because 1 Worker replica(s) failed.", t=30
                ),
            ],
            ["jobs_restarted", "jobs_failed"],
            id="OnFailure: the pod is recreated but the job fails anyway (§9.7)",
        ),
        pytest.param(
            "ExitCode",
            137,
            [
                created(XGB),
                cond(
                    "Restarting",
                    kind=XGB,
                    msg="XGBoostJob a is restarting because 1 Worker replica(s) failed.",
                    t=30,
                ),
            ],
            ["jobs_restarted"],
            id="ExitCode with a retryable code: Restarting",
        ),
    ],
)
def test_xgboost_any_failure_rule(
    policy: str, exit_code: int, want_conditions: list[dict[str, Any]], want_metrics: list[str]
) -> None:
    job = stored(xgboost_job("a").master(1).workers(2).restart_policy(policy), created(XGB))
    pods = [
        pod(job, "Master", 0).running().build(),
        pod(job, "Worker", 0).failed(exit_code).build(),
        pod(job, "Worker", 1).running().build(),
    ]
    svcs = [service(job, "Master", 0), service(job, "Worker", 0), service(job, "Worker", 1)]
    plan = run(job, pods, svcs, now=at(30))
    assert (plan.actions and summary(plan)["actions"], plan.status.to_dict()["conditions"], plan.metrics) == (
        [("delete", "Pod", "a-worker-0")],
        want_conditions,
        want_metrics,
    )


# --- odds and ends -------------------------------------------------------------------------------------


def test_invalid_mpijob_gets_a_warning_and_nothing_else() -> None:
    """§2.4: no webhook for MPIJob, so the controller validates it: a Warning, no condition, no write."""
    job = mpi_job("a").workers(1).build()  # no Launcher
    want = plan_of(
        status={},
        changed=False,
        events=[
            (
                "Warning",
                "MPIJobFailedValidation",
                "MPIJob failed validation because MPIReplicaSpec is not valid: Master ReplicaSpec must "
                "be present",
            )
        ],
    )
    assert summary(run(job)) == want


def test_jax_succeeds_when_every_worker_succeeded() -> None:
    kind = "JAXJob"
    job = stored(
        jax_job("a").workers(2), created(kind), replicaStatuses=replica_statuses(kind, Worker={"active": 2})
    )
    pods = [pod(job, "Worker", i).succeeded(0).build() for i in range(2)]
    plan = run(job, pods, [service(job, "Worker", 0), service(job, "Worker", 1)], now=at(70))
    assert (plan.status.to_dict()["conditions"], plan.status.to_dict()["completionTime"], plan.metrics) == (
        [created(kind), cond("Succeeded", kind=kind, msg="JAXJob default/a successfully completed.", t=70)],
        ts(70),
        ["jobs_successful"],
    )


def test_elastic_hpa_is_created_with_an_owner_and_deleted_on_suspend() -> None:
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    b = pytorch_job("a").workers(2).elastic(min=1, max=3, metrics=metrics)
    first = run(b.build())
    (hpa,) = [
        a.obj
        for a in first.actions
        if isinstance(a, CreateObject) and a.obj["kind"] == "HorizontalPodAutoscaler"
    ]
    suspended = run(b.suspend().build(), extras={"HorizontalPodAutoscaler": [hpa]}, now=at(5))
    assert (
        hpa["metadata"]["ownerReferences"],
        [describe_action(a) for a in suspended.actions],
    ) == (
        [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "a",
                "uid": "a-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        [("delete", "HorizontalPodAutoscaler", "a")],
    )


def test_naive_clock_and_stored_times_are_taken_as_utc() -> None:
    job = pt_running(pt(active_deadline_seconds=600), startTime="2024-01-01T00:00:00")
    plan = run(job, pods_running(job), services(job), now=at(100).replace(tzinfo=None))
    assert plan.requeue_after == 500.0
