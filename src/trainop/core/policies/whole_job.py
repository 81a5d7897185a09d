"""trainop's own failure policy (docs/failure-policy.md): the rules a job's annotations give, run by
the reconcile pass before upstream's backoffLimit (``core/reconcile.py``): a rule that fails the
job, a whole-job restart (every pod recreated under the next restart-attempt label), and the startup
and start-error deadlines. Pure: reads and records through the pass's state, no I/O, no clock.
"""

from __future__ import annotations

import json
from typing import Any

from trainop.api.constants import ANNOTATION_EFFECTIVE_FAILURE_POLICY, COND_RESTARTING, LABEL_RESTART_ATTEMPT
from trainop.api.failure_policy import (
    ACTION_FAIL_JOB,
    ACTION_RESTART_JOB,
    RESTARTING_ACTIONS,
    build_failure_policy,
)
from trainop.core.pass_state import METRIC_RESTARTED, PassState
from trainop.core.pods import PHASE_PENDING, PHASE_RUNNING
from trainop.core.policies.failure import (
    Decision,
    RestartCount,
    build_failure_summary,
    build_restarts_condition,
    build_rule_label,
    compute_decision,
    detect_failure,
    detect_restart_time,
    set_restarts_condition,
)
from trainop.core.policies.startup import compute_start_deadlines
from trainop.core.status import TRUE


def detect_invalid_policy(p: PassState) -> bool:
    """Read the failure-policy annotations. A bad value that got past admission (no webhook, or an
    edit) stops the pass with a Warning naming the field, as an invalid MPIJob does (§2.4): running
    the job without the rules its owner asked for would be worse."""
    p.policy, errors = build_failure_policy(p.job)
    if not errors:
        return False
    p.policy = None
    message = f"{p.kind} failed validation because {errors[0]}"
    p.event("Warning", f"{p.kind}FailedValidation", message, key=message)
    return True


def apply_failure_policy(p: PassState) -> bool:
    """Finish a whole-job restart under way, act on the earliest failure a rule decides, then the
    start deadlines. True when the job failed this pass."""
    policy = p.policy
    assert policy is not None
    for pod in p.pods:
        if pod.old and not pod.deleting:
            p.delete("Pod", pod.name)
    failures = []
    for replica in p.replicas.values():
        for pod in replica.pods:
            if pod.old or pod.deleting:
                continue
            failure = detect_failure(pod.obj, replica.rtype)
            if failure is not None:
                failures.append(failure)
    decision = compute_decision(policy.rules, failures) if failures else None
    if decision is not None:
        if decision.action == ACTION_FAIL_JOB:
            p.fail_job(
                "FailedByRule",
                f"Job {p.name} has failed because {build_failure_summary(decision.failure)}, "
                f"which {build_rule_label(policy.rules, decision.rule)} fails the job (FailJob)",
            )
            return True
        if decision.action in RESTARTING_ACTIONS:
            counted = decision.action == ACTION_RESTART_JOB
            if counted and p.restarts.counted >= policy.max_restarts:
                summary = build_failure_summary(decision.failure)
                p.fail_job(
                    "MaxRestartsExceeded",
                    f"Job {p.name} has failed because it has reached the maximum of "
                    f"{policy.max_restarts} whole-job restart(s) (trainop.dev/max-restarts) and {summary}"
                    if policy.max_restarts
                    else f"Job {p.name} has failed because {summary} (trainop.dev/max-restarts 0: no "
                    "whole-job restart)",
                )
                stop_the_rest(p)
                return True
            restart_job(p, decision, counted)
            return False
    return check_start_deadlines(p)


def stop_the_rest(p: PassState) -> None:
    """The whole-job restarts are spent and the job failed: delete every pod still running or pending
    (SIGTERM, then SIGKILL after its grace period), whatever cleanPodPolicy says. A whole-job policy
    treats the job as one unit, on its last failure as on each restart, as torchrun's agent does when
    it gives up (it stops every worker); upstream's cleanPodPolicy None would leave the other ranks
    waiting for the failed one forever (docs/failure-policy.md). A FailJob rule keeps cleanPodPolicy's
    say, as backoffLimit does."""
    for pod in p.pods:
        if not pod.deleting and pod.phase in (PHASE_RUNNING, PHASE_PENDING):
            p.delete("Pod", pod.name)


def restart_job(p: PassState, decision: Decision, counted: bool) -> None:
    """Delete every pod, so each replica is recreated under the next restart-attempt (at once
    under Recreate, once all are gone under BlockingRecreate); Restarting, the JobRestarts count,
    a Warning event and the restarted metric say so."""
    policy = p.policy
    assert policy is not None
    p.restarts = RestartCount(p.restarts.attempt + 1, p.restarts.counted + int(counted))
    for pod in p.pods:
        if not pod.deleting:
            p.delete("Pod", pod.name)
        pod.old = True
    for replica in p.replicas.values():
        replica.active = replica.succeeded = replica.failed = 0
    p.recreating = True
    summary = build_failure_summary(decision.failure)
    rule = build_rule_label(policy.rules, decision.rule)
    tally = (
        f"restart {p.restarts.counted} of at most {policy.max_restarts}"
        if counted
        else f"not counted toward the maximum of {policy.max_restarts} ({decision.action})"
    )
    message = f"{p.kind} {p.name} is restarting every replica because {summary} ({rule}; {tally})."
    reason = f"{p.kind}Restarting"
    p.event("Warning", reason, message)
    if not p.set_condition(COND_RESTARTING, TRUE, reason, message):
        p.refresh_condition(COND_RESTARTING, message)
    set_restarts_condition(
        p.status,
        build_restarts_condition(p.kind, p.restarts, policy.max_restarts, summary, p.stamp),
    )
    p.plan.metrics.append(METRIC_RESTARTED)
    p.restarted = True


def check_start_deadlines(p: PassState) -> bool:
    """The startup and start-error deadlines over the replicas of the current attempt."""
    policy = p.policy
    assert policy is not None
    if policy.startup_deadline_seconds is None and policy.start_error_deadline_seconds is None:
        return False
    attempt_start = detect_restart_time(p.status) or p.status.start_time or p.stamp
    items: list[tuple[str, dict[str, Any] | None]] = []
    for replica in p.replicas.values():
        current = {p.name: p for p in replica.pods if not p.old and not p.deleting}
        for _, name in replica.wanted:
            pod = current.get(name)
            items.append((name, pod.obj if pod is not None else None))
    outcome = compute_start_deadlines(
        policy.startup_deadline_seconds,
        policy.start_error_deadline_seconds,
        items,
        attempt_start,
        p.now,
    )
    if outcome.violation is not None:
        p.fail_job(outcome.violation.word, f"Job {p.name} has failed because {outcome.violation.detail}")
        return True
    if outcome.remaining is not None:
        p.requeue(outcome.remaining)
    return False


def _policy_json(p: PassState) -> str:
    if p.policy_json is None:
        assert p.policy is not None
        p.policy_json = json.dumps(p.policy.to_dict(), separators=(",", ":"))
    return p.policy_json


def mark_pod(p: PassState, pod: dict[str, Any]) -> None:
    """A new pod carries the attempt it belongs to and the effective policy (for ``describe``)."""
    meta = pod["metadata"]
    meta.setdefault("labels", {})[LABEL_RESTART_ATTEMPT] = str(p.restarts.attempt)
    meta.setdefault("annotations", {})[ANNOTATION_EFFECTIVE_FAILURE_POLICY] = _policy_json(p)
