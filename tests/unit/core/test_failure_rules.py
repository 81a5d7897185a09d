"""The failure policy's pure rules (core/policies/failure.py, startup.py): which failure a pod shows,
which rule matches it, what the earliest decided failure does, the restart count's condition, and the
start deadlines. Tables; whole objects compared."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from trainop.api.common import JobCondition, JobStatus
from trainop.api.failure_policy import ExitCodeMatch, FailureRule
from trainop.core.policies.failure import (
    Decision,
    Failure,
    RestartCount,
    build_failure_summary,
    build_restarts_condition,
    compute_action,
    compute_decision,
    detect_attempt,
    detect_failure,
    detect_restart_count,
    set_restarts_condition,
)
from trainop.core.policies.startup import (
    Outcome,
    Violation,
    compute_start_deadlines,
    detect_start_error,
    detect_started,
)
from trainop.testing.builders import PodBuilder, pytorch_job

from .harness import T0, at, ts

JOB = pytorch_job("a").master(1).workers(3).build()


def pod(rtype: str = "Worker", index: int = 2) -> PodBuilder:
    return PodBuilder(JOB, rtype, index)


def with_status(p: dict[str, Any], **status: Any) -> dict[str, Any]:
    p["status"] = {**p.get("status", {}), **status}
    return p


def in_place(code: int, reason: str = "Error", restarts: int = 1, finished: float = 5) -> dict[str, Any]:
    """A Running pod whose container the kubelet restarted after exiting with ``code``."""
    p = pod().running().restart_count(restarts).build()
    for cs in p["status"]["containerStatuses"]:
        cs["lastState"] = {"terminated": {"exitCode": code, "reason": reason, "finishedAt": ts(finished)}}
    return p


# --- detect_failure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(pod().running().build(), None, id="running, never restarted: no failure"),
        pytest.param(pod().succeeded().build(), None, id="succeeded: no failure"),
        pytest.param(
            pod().failed(137, "OOMKilled").build(),
            Failure("a-worker-2", "Worker", (("pytorch", 137),), ("OOMKilled",), at(0)),
            id="failed pod: exit code and container reason",
        ),
        pytest.param(
            pod().phase("Failed").no_container_statuses().reason("Evicted").build(),
            Failure("a-worker-2", "Worker", (), ("Evicted",)),
            id="evicted before any container ran: the pod's reason only",
        ),
        pytest.param(
            pod()
            .failed(143)
            .reason("DeadlineExceeded")
            .condition("DisruptionTarget", "True", "TerminationByKubelet")
            .build(),
            Failure(
                "a-worker-2",
                "Worker",
                (("pytorch", 143),),
                ("DeadlineExceeded", "Error", "TerminationByKubelet"),
                at(0),
            ),
            id="pod reason, container reason, DisruptionTarget reason, in that order",
        ),
        pytest.param(
            in_place(137, "OOMKilled"),
            Failure("a-worker-2", "Worker", (("pytorch", 137),), ("OOMKilled",), at(5), in_place=True),
            id="restarted in place (OnFailure): lastState.terminated",
        ),
        pytest.param(
            in_place(0, "Completed"), None, id="restarted in place after exit 0 (Always): no failure"
        ),
        pytest.param(
            pod().running().restart_count(0).build(), None, id="restartCount 0: a lastState is not a failure"
        ),
    ],
)
def test_detect_failure(obj: dict[str, Any], want: Failure | None) -> None:
    assert detect_failure(obj, "Worker") == want


# --- rule matching: first match wins -------------------------------------------------------------

OOM = Failure("a-worker-2", "Worker", (("pytorch", 137),), ("OOMKilled",))
BUG = Failure("a-master-0", "Master", (("pytorch", 1),), ("Error",))
EVICTED = Failure("a-worker-0", "Worker", (), ("Evicted",))
SIDECAR = Failure("a-worker-1", "Worker", (("pytorch", 0), ("sidecar", 2)), ("Error",))


def rule(action: str, **kw: Any) -> FailureRule:
    return FailureRule(action=action, **kw)


def codes(op: str, *values: int, container: str | None = None) -> ExitCodeMatch:
    return ExitCodeMatch(op, tuple(values), container)


@pytest.mark.parametrize(
    ("rules", "failure", "want"),
    [
        pytest.param([], OOM, ("UseRestartPolicy", -1), id="no rules: the replica's restartPolicy"),
        pytest.param(
            [rule("RestartJob")], EVICTED, ("RestartJob", 0), id="a rule without matchers matches all"
        ),
        pytest.param(
            [
                rule("FailJob", on_exit_codes=codes("In", 1, 2)),
                rule("RestartJob", on_exit_codes=codes("In", 137)),
            ],
            OOM,
            ("RestartJob", 1),
            id="In: the first rule whose codes match",
        ),
        pytest.param(
            [rule("FailJob", on_exit_codes=codes("In", 1, 2)), rule("RestartJob")],
            BUG,
            ("FailJob", 0),
            id="first match wins over a later catch-all",
        ),
        pytest.param(
            [rule("FailJob", on_exit_codes=codes("NotIn", 137, 143))],
            BUG,
            ("FailJob", 0),
            id="NotIn: a code outside the list matches",
        ),
        pytest.param(
            [rule("FailJob", on_exit_codes=codes("NotIn", 137, 143))],
            OOM,
            ("UseRestartPolicy", -1),
            id="NotIn: a listed code does not match",
        ),
        pytest.param(
            [rule("FailJob", on_exit_codes=codes("NotIn", 137))],
            EVICTED,
            ("UseRestartPolicy", -1),
            id="exit-code rules never match a failure without an exit code",
        ),
        pytest.param(
            [rule("Ignore", on_reasons=("Evicted", "Preempted")), rule("FailJob")],
            EVICTED,
            ("Ignore", 0),
            id="onReasons: the pod's reason",
        ),
        pytest.param(
            [rule("RestartJob", on_reasons=("OOMKilled",))],
            OOM,
            ("RestartJob", 0),
            id="onReasons: a container's reason",
        ),
        pytest.param(
            [rule("RestartJob", on_exit_codes=codes("In", 137), on_reasons=("Evicted",))],
            OOM,
            ("UseRestartPolicy", -1),
            id="every matcher must match (AND)",
        ),
        pytest.param(
            [rule("FailJob", on_replica_types=("Master",)), rule("RestartJob")],
            OOM,
            ("RestartJob", 1),
            id="onReplicaTypes: another type does not match",
        ),
        pytest.param(
            [rule("FailJob", on_replica_types=("master",))],
            BUG,
            ("FailJob", 0),
            id="onReplicaTypes: case-insensitive",
        ),
        pytest.param(
            [
                rule("FailJob", on_exit_codes=codes("In", 2, container="pytorch")),
                rule("Ignore", on_exit_codes=codes("In", 2)),
            ],
            SIDECAR,
            ("Ignore", 1),
            id="containerName restricts the codes; without it any container's code",
        ),
    ],
)
def test_compute_action(rules: list[FailureRule], failure: Failure, want: tuple[str, int]) -> None:
    assert compute_action(rules, failure) == want


def test_compute_decision_earliest_decided_failure_acts() -> None:
    rules = [
        rule("FailJob", on_exit_codes=codes("In", 1)),
        rule("RestartJob", on_exit_codes=codes("In", 137)),
    ]
    oom_first = Failure("a-worker-2", "Worker", (("pytorch", 137),), ("OOMKilled",), at(5), True)
    nccl_later = Failure("a-master-0", "Master", (("pytorch", 1),), ("Error",), at(9), True)
    unmatched_earlier = Failure("a-worker-0", "Worker", (("pytorch", 3),), ("Error",), at(1), True)
    untimed = Failure("a-worker-1", "Worker", (("pytorch", 1),), ("Error",))
    assert (
        compute_decision(rules, [nccl_later, unmatched_earlier, oom_first]),
        compute_decision(rules, [untimed, nccl_later]),
        compute_decision(rules, [unmatched_earlier]),
    ) == (
        # The collective's survivors die after the OOM; the OOM decides, not their exit 1.
        Decision("RestartJob", oom_first, 1),
        Decision("FailJob", nccl_later, 0),
        None,
    )


@pytest.mark.parametrize(
    ("failure", "want"),
    [
        pytest.param(OOM, "pod a-worker-2 (Worker) exited with code 137 (reason OOMKilled)", id="failed pod"),
        pytest.param(
            Failure("a-worker-2", "Worker", (("pytorch", 137),), ("OOMKilled",), in_place=True),
            "pod a-worker-2 (Worker) exited with code 137 and was restarted in place (reason OOMKilled)",
            id="in place",
        ),
        pytest.param(EVICTED, "pod a-worker-0 (Worker) failed (reason Evicted)", id="no exit code"),
        pytest.param(
            Failure("p", "Worker", (("a", 1), ("b", 2))),
            "pod p (Worker) exited with code 1 (container a), 2 (container b)",
            id="several containers",
        ),
    ],
)
def test_build_failure_summary(failure: Failure, want: str) -> None:
    assert build_failure_summary(failure) == want


# --- the restart count in a JobRestarts condition ------------------------------------------------


def c(ctype: str, status: str = "True") -> JobCondition:
    return JobCondition(type=ctype, status=status, reason=f"PyTorchJob{ctype}", message="m")


def test_restart_count_round_trips_through_its_condition() -> None:
    cond = build_restarts_condition("PyTorchJob", RestartCount(3, 2), 5, "pod p (Worker) failed", T0)
    status = JobStatus(conditions=[c("Created"), cond])
    assert (cond.to_dict(), detect_restart_count(status), detect_restart_count(JobStatus())) == (
        {
            "type": "JobRestarts",
            "status": "True",
            "reason": "PyTorchJobRestarted",
            "message": "3 whole-job restart(s), 2 counted toward maxRestarts 5; the last because pod p "
            "(Worker) failed",
            "lastUpdateTime": ts(0),
            "lastTransitionTime": ts(0),
        },
        RestartCount(3, 2),
        RestartCount(0, 0),
    )


@pytest.mark.parametrize(
    ("before", "want"),
    [
        pytest.param(
            ["Created"], ["JobRestarts", "Created"], id="before the newest: State still shows Created"
        ),
        pytest.param(
            ["Created", "Running"],
            ["Created", "JobRestarts", "Running"],
            id="before Running: State still Running",
        ),
        pytest.param(
            ["Created", "JobRestarts", "Restarting"],
            ["Created", "JobRestarts", "Restarting"],
            id="replaced where it stands",
        ),
    ],
)
def test_set_restarts_condition_never_becomes_the_state(before: list[str], want: list[str]) -> None:
    status = JobStatus(conditions=[c(t) for t in before])
    cond = build_restarts_condition("PyTorchJob", RestartCount(1, 1), 3, "x", at(10))
    changed = set_restarts_condition(status, cond)
    assert (changed, [x.type for x in status.conditions or []]) == (True, want)


def test_set_restarts_condition_nothing_after_failed() -> None:
    status = JobStatus(conditions=[c("Created"), c("Failed")])
    cond = build_restarts_condition("PyTorchJob", RestartCount(1, 1), 3, "x", T0)
    assert (set_restarts_condition(status, cond), [x.type for x in status.conditions or []]) == (
        False,
        ["Created", "Failed"],
    )


def test_detect_attempt() -> None:
    assert [
        detect_attempt(pod().build()),
        detect_attempt(pod().labels(**{"trainop.dev/restart-attempt": "4"}).build()),
        detect_attempt(pod().labels(**{"trainop.dev/restart-attempt": "x"}).build()),
    ] == [0, 4, 0]


# --- start deadlines -----------------------------------------------------------------------------


def created_at(p: dict[str, Any], seconds: float) -> dict[str, Any]:
    p["metadata"]["creationTimestamp"] = ts(seconds)
    return p


PULL = 'Back-off pulling image "nope:latest"'


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(pod().pending().build(), False, id="ContainerCreating"),
        pytest.param(pod().running().build(), True, id="running"),
        pytest.param(pod().succeeded().build(), True, id="succeeded"),
        pytest.param(pod().failed(1).build(), True, id="failed: the failure rules take it"),
        pytest.param(pod().waiting("ImagePullBackOff", PULL).build(), False, id="image pull back-off"),
        pytest.param(
            with_status(pod().waiting("CrashLoopBackOff").build(), phase="Running"),
            False,
            id="crash loop with no lastState: not started",
        ),
        pytest.param(in_place(1), True, id="ran, exited, restarted: started"),
        pytest.param(
            pod()
            .phase("Pending")
            .no_container_statuses()
            .condition("PodScheduled", "False", "Unschedulable")
            .build(),
            False,
            id="unschedulable",
        ),
    ],
)
def test_detect_started(obj: dict[str, Any], want: bool) -> None:
    assert detect_started(obj) is want


def start_error_crash_loop() -> dict[str, Any]:
    """The local runner's (and containerd's) missing command: StartError, then CrashLoopBackOff."""
    p = pod().waiting("CrashLoopBackOff", "back-off 10s").restart_count(2).build()
    p["status"]["phase"] = "Running"
    for cs in p["status"]["containerStatuses"]:
        cs["lastState"] = {
            "terminated": {
                "exitCode": 128,
                "reason": "StartError",
                "message": 'exec: "nope": not found',
                "finishedAt": ts(30),
            }
        }
    return p


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            created_at(pod().waiting("ImagePullBackOff", PULL).build(), 10),
            ("pytorch", "ImagePullBackOff", PULL, at(10)),
            id="image pull: since the pod's creation",
        ),
        pytest.param(
            created_at(pod().waiting("CreateContainerConfigError", 'configmap "x" not found').build(), 0),
            ("pytorch", "CreateContainerConfigError", 'configmap "x" not found', at(0)),
            id="config error",
        ),
        pytest.param(
            created_at(start_error_crash_loop(), 3),
            ("pytorch", "StartError", 'exec: "nope": not found', at(3)),
            id="a command that cannot start: since creation, not since its last try",
        ),
        pytest.param(created_at(pod().running().build(), 0), None, id="running: none"),
        pytest.param(
            created_at(pod().waiting("CrashLoopBackOff").build(), 0), None, id="an ordinary crash loop: none"
        ),
    ],
)
def test_detect_start_error(obj: dict[str, Any], want: Any) -> None:
    assert detect_start_error(obj) == want


def started_pod(name_index: int) -> dict[str, Any]:
    return created_at(pod("Worker", name_index).running().build(), 0)


@pytest.mark.parametrize(
    ("startup", "start_error", "replicas", "now", "want"),
    [
        pytest.param(None, None, [("p", None)], 999, Outcome(), id="no deadlines"),
        pytest.param(
            30,
            None,
            [("a-worker-0", started_pod(0))],
            999,
            Outcome(),
            id="every pod started: nothing to wait for",
        ),
        pytest.param(
            30,
            None,
            [
                ("a-worker-0", started_pod(0)),
                ("a-worker-1", created_at(pod("Worker", 1).pending().build(), 5)),
            ],
            20,
            Outcome(remaining=15.0),
            id="a pending pod: requeue at its deadline (its creation + 30s)",
        ),
        pytest.param(
            30,
            None,
            [("a-worker-1", created_at(pod("Worker", 1).pending().build(), 5))],
            35,
            Outcome(
                Violation(
                    "StartupDeadlineExceeded",
                    "a-worker-1",
                    "pod a-worker-1 did not start within 30s (trainop.dev/startup-deadline-seconds): "
                    "phase Pending",
                )
            ),
            id="past it: the pod is named",
        ),
        pytest.param(
            30,
            None,
            [
                (
                    "a-worker-1",
                    created_at(
                        pod("Worker", 1)
                        .phase("Pending")
                        .no_container_statuses()
                        .condition("PodScheduled", "False", "Unschedulable", "0/3 nodes are available")
                        .build(),
                        0,
                    ),
                )
            ],
            31,
            Outcome(
                Violation(
                    "StartupDeadlineExceeded",
                    "a-worker-1",
                    "pod a-worker-1 did not start within 30s (trainop.dev/startup-deadline-seconds): "
                    "PodScheduled is False: Unschedulable: 0/3 nodes are available",
                )
            ),
            id="unschedulable: the scheduler's words",
        ),
        pytest.param(
            30,
            None,
            [("a-worker-1", None)],
            45,
            Outcome(
                Violation(
                    "StartupDeadlineExceeded",
                    "a-worker-1",
                    "pod a-worker-1 did not start within 30s (trainop.dev/startup-deadline-seconds): no "
                    "pod was created",
                )
            ),
            id="no pod at all: from the attempt's start (T0+10)",
        ),
        pytest.param(
            30,
            None,
            [("a-worker-1", None)],
            25,
            Outcome(remaining=15.0),
            id="no pod yet: requeue from the attempt's start",
        ),
        pytest.param(
            300,
            20,
            [("a-worker-2", created_at(pod().waiting("ImagePullBackOff", PULL).build(), 0))],
            20,
            Outcome(
                Violation(
                    "StartErrorDeadlineExceeded",
                    "a-worker-2",
                    "pod a-worker-2 container pytorch has been in ImagePullBackOff for 20s "
                    f"(trainop.dev/start-error-deadline-seconds): {PULL}",
                )
            ),
            id="image pull back-off past the start-error deadline, before the startup deadline",
        ),
        pytest.param(
            300,
            20,
            [("a-worker-2", created_at(pod().waiting("ImagePullBackOff", PULL).build(), 0))],
            12,
            Outcome(remaining=8.0),
            id="image pull back-off: requeue at the nearer deadline",
        ),
        pytest.param(
            None,
            20,
            [("a-worker-2", created_at(start_error_crash_loop(), 0))],
            21,
            Outcome(
                Violation(
                    "StartErrorDeadlineExceeded",
                    "a-worker-2",
                    "pod a-worker-2 container pytorch has been in StartError for 20s "
                    '(trainop.dev/start-error-deadline-seconds): exec: "nope": not found',
                )
            ),
            id="a command that cannot start (local backend)",
        ),
    ],
)
def test_compute_start_deadlines(
    startup: int | None, start_error: int | None, replicas: list[Any], now: float, want: Outcome
) -> None:
    assert compute_start_deadlines(startup, start_error, replicas, at(10), at(now)) == want


def test_remaining_is_from_now() -> None:
    got = compute_start_deadlines(10, None, [("p", None)], T0, T0 + timedelta(seconds=4))
    assert got == Outcome(remaining=6.0)
