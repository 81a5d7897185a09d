"""One reconcile pass: (raw job, what the backend observed, plugin, topology, now) → Plan (contract §4).

The order is upstream's (§4.3): Created; managedBy; finished → cleanup and TTL; suspended; resume;
abnormal-pod events; backoffLimit and activeDeadlineSeconds; pods and Services per replica type; the
kind's status rule. Pure: no I/O, no clock (``now`` is an argument), inputs are never mutated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trainop.api.common import JobCondition, JobStatus, ReplicaSpec, ReplicaStatus, TrainingJob
from trainop.api.constants import (
    ANNOTATION_EFFECTIVE_FAILURE_POLICY,
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    LABEL_REPLICA_TYPE,
    LABEL_RESTART_ATTEMPT,
)
from trainop.api.defaults import apply_defaults
from trainop.api.failure_policy import (
    ACTION_FAIL_JOB,
    ACTION_RESTART_JOB,
    RESTARTING_ACTIONS,
    STRATEGY_BLOCKING_RECREATE,
    FailurePolicy,
    build_failure_policy,
)
from trainop.core import events as ev
from trainop.core.gang import (
    POD_GROUP_KIND,
    GangScheduler,
    build_pod_decoration,
    build_pod_group,
    build_pod_group_delete_action,
    compute_priorities,
    detect_pod_group_admitted,
)
from trainop.core.naming import build_owner_reference, build_selector
from trainop.core.observed import Observed
from trainop.core.plan import Action, CreateObject, Event, Plan
from trainop.core.plugin import ConditionUpdate, FrameworkPlugin, ReplicaCounts, capabilities
from trainop.core.pods import (
    PHASE_FAILED,
    PHASE_RUNNING,
    PHASE_SUCCEEDED,
    build_pod,
    build_service,
    build_service_ports,
    detect_default_container_terminated,
    detect_deleting,
    detect_exit_code,
    detect_label,
    detect_name,
    detect_pod_fields,
)
from trainop.core.policies.backoff import (
    build_backoff_message,
    detect_new_failure_past_limit,
    detect_restarts_past_limit,
)
from trainop.core.policies.cleanup import compute_cleanup
from trainop.core.policies.deadline import build_deadline_message, compute_deadline_remaining
from trainop.core.policies.failure import (
    Decision,
    RestartCount,
    build_failure_summary,
    build_restarts_condition,
    build_rule_label,
    compute_decision,
    detect_attempt,
    detect_failure,
    detect_restart_count,
    detect_restart_time,
    set_restarts_condition,
)
from trainop.core.policies.managed_by import detect_managed_elsewhere
from trainop.core.policies.restart import (
    FAIL,
    RESTART,
    build_exit_code_failed_message,
    build_restarting_message,
    detect_restart,
)
from trainop.core.policies.startup import compute_start_deadlines
from trainop.core.policies.suspend import compute_suspend_deletions
from trainop.core.policies.ttl import compute_ttl_remaining
from trainop.core.queue import REASON_QUEUE_NOT_MANAGED, build_queue_not_managed_message
from trainop.core.status import (
    FALSE,
    TRUE,
    build_condition,
    build_created,
    build_replica_status,
    build_resumed,
    build_suspended,
    compute_succeeded_fixup,
    compute_suspended_counts,
    detect_condition,
    detect_condition_kept,
    detect_finished,
    detect_true,
    set_condition,
)
from trainop.core.topology import Topology

# Metric names in Plan.metrics (§6.6), as the framework plugins spell them too.
METRIC_CREATED = "jobs_created"
METRIC_DELETED = "jobs_deleted"
METRIC_FAILED = "jobs_failed"
METRIC_RESTARTED = "jobs_restarted"


def reconcile(
    job: TrainingJob,
    observed: Observed,
    plugin: FrameworkPlugin,
    topology: Topology,
    now: datetime,
    *,
    gang: GangScheduler | None = None,
) -> Plan:
    """Decide everything about ``job`` for this pass. ``job`` is the stored (undefaulted) job; its
    status is the previous status. ``now`` must be timezone-aware (UTC). ``gang``: the operator's
    gang scheduler (§5), None without one."""
    if detect_managed_elsewhere(job):
        # §4.11: another controller owns this job; write nothing, not even Created.
        return Plan(status=_copy_status(job.status), skipped=True)
    p = _Pass(job, observed, plugin, topology, now)
    p.gang = gang
    return p.run()


def _copy_status(status: JobStatus | None) -> JobStatus:
    """A copy the pass may edit. Shallow on purpose (a deep copy was the hot spot of a steady-state
    pass): core replaces conditions and replica statuses, it never mutates them, so fresh containers
    are enough to leave the job's own status untouched."""
    if status is None:
        return JobStatus()
    update: dict[str, Any] = {}
    if status.conditions is not None:
        update["conditions"] = list(status.conditions)
    if status.replica_statuses is not None:
        update["replica_statuses"] = dict(status.replica_statuses)
    return status.model_copy(update=update)


@dataclass(slots=True)
class _Pod:
    """An observed pod with the fields every step reads, looked up once per pass."""

    obj: dict[str, Any]
    name: str
    phase: str
    deleting: bool
    # Created by an earlier whole-job restart than the current one: being replaced, not counted.
    old: bool = False


@dataclass(slots=True)
class _Replica:
    """One replica type's observed pods and Services, sorted once per pass."""

    rtype: str
    spec: ReplicaSpec
    pods: list[_Pod] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    # (index, name) of the replicas that should exist; the plugin is asked once per pass.
    wanted: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Fired:
    """A status-rule update that may emit its event and metric (``changed``: it set its condition)."""

    update: ConditionUpdate
    event_reason: str
    changed: bool

    def metric(self, *, restarted: bool) -> str | None:
        """The counter to increment: none when another step set the condition (it counted), nor for a
        restart when the restart path recreated a pod this pass (counted there already)."""
        metric = self.update.metric
        if not self.changed or (metric == METRIC_RESTARTED and restarted):
            return None
        return metric


def _condition_key(c: JobCondition) -> tuple[str, str, str | None]:
    return (c.type, c.status, c.reason)


class _Pass:
    """The state of one reconcile pass; ``run`` reads top to bottom in upstream's order (§4.3)."""

    def __init__(
        self, job: TrainingJob, observed: Observed, plugin: FrameworkPlugin, topology: Topology, now: datetime
    ) -> None:
        self.raw = job
        self.observed = observed
        self.plugin = plugin
        self.caps = capabilities(plugin)
        self.info = plugin.info
        self.topology = topology
        # A naive ``now`` is taken as UTC (stored timestamps are UTC), so comparisons never raise.
        now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
        self.now = now
        # Status timestamps are whole seconds, as the API server stores them (metav1.Time), so a status
        # read back compares equal to the one computed here and a re-reconcile is a no-op.
        self.stamp = now.replace(microsecond=0)
        self.previous = job.status if job.status is not None else JobStatus()
        self.status = _copy_status(job.status)
        self.plan = Plan(status=self.status)
        self.job = job  # replaced by the defaulted job once validation passed
        self.kind = job.kind
        self.name = job.name
        self.replicas: dict[str, _Replica] = {}
        self.pods: list[_Pod] = []
        self.deleted: set[tuple[str, str]] = set()
        self.restarted = False  # the restart path recreated a pod this pass
        # trainop's failure policy (annotations; docs/failure-policy.md): None = upstream's behaviour.
        self.policy: FailurePolicy | None = None
        self.restarts = RestartCount()
        self.recreating = False  # pods of an earlier whole-job restart still exist
        self.policy_json: str | None = None
        self.gang: GangScheduler | None = None  # §5; set by reconcile()

    # -- the pass ---------------------------------------------------------------------------------

    def run(self) -> Plan:
        if not self.info.admission_webhook and self._invalid():
            return self.plan
        self._add_created()
        self.job = apply_defaults(self.raw)
        run_policy = self.job.run_policy

        if detect_finished(self.status):
            self._finished(just_now=False)
            return self._done()
        if self._invalid_policy():
            return self._done()
        if run_policy.suspend:
            self._suspend()
            return self._done()
        if detect_true(self.status, COND_SUSPENDED):
            self._resume()

        self._sort_observed()
        self._record_abnormal_pods()
        if self.policy is not None and self._apply_failure_policy():
            self._finished(just_now=True)
            return self._done()
        if self._past_limits():
            self._finished(just_now=True)
            return self._done()

        self._reconcile_failed_pods()
        if self.status.start_time is None:
            self.status.start_time = self.stamp
        self._update_status()
        if detect_finished(self.status):
            self._finished(just_now=True)
            return self._done()

        if self.gang is not None and self.gang.pod_group and not self._reconcile_pod_group():
            return self._done()  # Volcano: no pod until the PodGroup leaves Pending (§5)
        self._reconcile_extra_objects()
        # BlockingRecreate: no replica comes back until every pod of the earlier attempt is gone.
        blocked = (
            self.recreating
            and self.policy is not None
            and self.policy.restart_strategy == STRATEGY_BLOCKING_RECREATE
        )
        for replica in self.replicas.values():
            if not blocked:
                self._reconcile_pods(replica)
            if self.caps.launcher is None:  # a launcher's kind has no Services (§3.9)
                self._reconcile_services(replica)
        self._requeue_at_deadline()
        return self._done()

    def _done(self) -> Plan:
        plan = self.plan
        if plan.deletes_job:
            plan.status_changed = False  # the job is gone; there is no status to write
        elif self.status != self.previous:
            # Model equality first (cheap); JSON equality decides when the models differ only in form.
            rendered = self.status.to_dict()
            plan.status_changed = rendered != self.previous.to_dict()
            if plan.status_changed:
                plan.status_json = rendered
        else:
            plan.status_changed = False
        return plan

    # -- bookkeeping --------------------------------------------------------------------------------

    def _event(self, type_: str, reason: str, message: str, key: str | None = None) -> None:
        self.plan.events.append(Event("Warning" if type_ == "Warning" else "Normal", reason, message, key))

    def _act(self, action: Action) -> None:
        self.plan.actions.append(action)

    def _delete(self, kind: str, name: str) -> None:
        if (kind, name) not in self.deleted:
            self.deleted.add((kind, name))
            self._act(ev.build_delete_action(kind, name))

    def _requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        current = self.plan.requeue_after
        self.plan.requeue_after = seconds if current is None else min(current, seconds)

    def _set(self, ctype: str, status: str, reason: str, message: str) -> bool:
        if detect_condition_kept(self.status, ctype, status, reason):
            return False  # most passes: the condition holds already (no need to build it)
        return set_condition(self.status, build_condition(ctype, status, reason, message, self.stamp))

    # -- steps ----------------------------------------------------------------------------------

    def _invalid(self) -> bool:
        """§2.4: a kind without an admission webhook (MPIJob) is validated by upstream on every pass; an
        invalid one gets a Warning event (its first error, as upstream stops there) and nothing else."""
        errors = self.raw.spec.upstream_errors(self.raw, None)
        if not errors:
            return False
        message = f"{self.kind} failed validation because {errors[0].message}"
        self._event("Warning", f"{self.kind}FailedValidation", message, key=message)
        return True

    def _add_created(self) -> None:
        # Upstream adds Created in the informer's create handler and counts the job there, again on
        # every operator restart (§9.11); counting when the condition is really added counts each job once.
        if detect_condition_kept(self.status, COND_CREATED, TRUE, f"{self.kind}Created"):
            return  # every pass after the first (build_created's type, status and reason)
        if set_condition(self.status, build_created(self.kind, self.name, self.stamp)):
            self.plan.metrics.append(METRIC_CREATED)
            # Once, with Created: a queue label Kueue will never act on (core/queue.py, issue 25).
            unqueued = build_queue_not_managed_message(self.raw, self.info)
            if unqueued is not None:
                self._event("Warning", REASON_QUEUE_NOT_MANAGED, unqueued)

    def _finished(self, *, just_now: bool) -> None:
        """§4.3 step 4: cleanup (§4.8), the active→succeeded fix-up (§4.2) and TTL (§4.9).

        Also run in the pass that finishes the job, so one pass reaches the end state; that pass never
        deletes the job itself, so its final status and events are written first.
        """
        if self.status.completion_time is None:
            # Upstream's ExitCode path never sets it (§9.5), which blocks TTL forever; a job finished
            # by upstream without one gets its terminal condition's time.
            self.status.completion_time = self._terminal_time()
        pods = self.observed.pods
        services = self.observed.services
        for kind, name in compute_cleanup(self.job.run_policy.clean_pod_policy, pods, services):
            self._delete(kind, name)
        self._delete_pod_group(finished=True)
        if detect_true(self.status, COND_SUCCEEDED):
            compute_succeeded_fixup(self.status)
        remaining = compute_ttl_remaining(
            self.job.run_policy.ttl_seconds_after_finished, self.status.completion_time, self.now
        )
        if remaining is None:
            return
        if remaining <= 0 and not just_now:
            self._act(ev.build_delete_job_action(self.info, self.name))
            self.plan.metrics.append(METRIC_DELETED)
        else:
            self._requeue(remaining)

    def _terminal_time(self) -> datetime:
        for ctype in (COND_FAILED, COND_SUCCEEDED):
            cond = detect_condition(self.status, ctype)
            if cond is not None and cond.status == TRUE and cond.last_transition_time is not None:
                return cond.last_transition_time
        return self.stamp

    def _suspend(self) -> None:
        """§4.10: delete every pod and Service (whatever cleanPodPolicy says), zero ``active``, Running
        → False, Suspended → True, and the Suspended event on every pass while suspended."""
        for kind, name in compute_suspend_deletions(
            self.observed.pods, self.observed.services, self.observed.extras
        ):
            self._delete(kind, name)
        self._delete_pod_group(finished=False)
        compute_suspended_counts(self.status)
        cond = build_suspended(self.kind, self.name, self.stamp)
        assert cond.reason is not None and cond.message is not None
        if detect_true(self.status, COND_RUNNING):
            self._set(COND_RUNNING, FALSE, cond.reason, cond.message)
        if not detect_true(self.status, COND_SUSPENDED):
            set_condition(self.status, cond)
        self._event("Normal", cond.reason, cond.message)

    def _resume(self) -> None:
        """§4.10: Suspended → False, startTime restarts (so does the deadline), pods come back this pass."""
        cond = build_resumed(self.kind, self.name, self.stamp)
        set_condition(self.status, cond)
        self.status.start_time = self.stamp
        assert cond.reason is not None and cond.message is not None
        self._event("Normal", cond.reason, cond.message)

    def _sort_observed(self) -> None:
        """Group the observed pods and Services by replica type (label ``replica-type``) and count the
        pods as §4.2 does: Running → active (Running and terminating → failed), Succeeded, Failed.
        Objects of a type the spec does not name are left alone, as upstream."""
        by_label: dict[str, _Replica] = {}
        job, plugin = self.job, self.plugin
        for rtype, spec in job.replica_specs.items():
            replica = _Replica(rtype, spec)
            replica.wanted = [(i, plugin.pod_name(job, rtype, i)) for i in plugin.replica_indices(job, rtype)]
            self.replicas[rtype] = replica
            by_label[rtype.lower()] = replica
        attempts: list[int] = []
        if self.policy is not None:
            # The current attempt: the count the status holds, or a newer pod's (a status write lost).
            attempts = [detect_attempt(obj) for obj in self.observed.pods]
            self.restarts = detect_restart_count(self.status)
            newest = max(attempts, default=0)
            if newest > self.restarts.attempt:
                self.restarts = RestartCount(newest, self.restarts.counted)
        for i, obj in enumerate(self.observed.pods):
            name, phase, deleting, label = detect_pod_fields(obj, LABEL_REPLICA_TYPE)
            pod = _Pod(obj, name, phase, deleting)
            if attempts and attempts[i] < self.restarts.attempt:
                pod.old = True
                self.recreating = True
            self.pods.append(pod)
            owner = by_label.get(label or "")
            if owner is None:
                continue
            owner.pods.append(pod)
            if pod.old:
                continue
            if pod.phase == PHASE_RUNNING:
                if pod.deleting:
                    owner.failed += 1
                else:
                    owner.active += 1
            elif pod.phase == PHASE_SUCCEEDED:
                owner.succeeded += 1
            elif pod.phase == PHASE_FAILED:
                owner.failed += 1
        for svc in self.observed.services:
            owner = by_label.get(detect_label(svc, LABEL_REPLICA_TYPE) or "")
            if owner is not None:
                owner.services.append(svc)

    def _record_abnormal_pods(self) -> None:
        """§6.3: warnings for active pods whose containers crash or wait with a message."""
        for pod in self.pods:
            if pod.phase in (PHASE_SUCCEEDED, PHASE_FAILED) or pod.deleting:
                continue
            self.plan.events.extend(ev.build_abnormal_pod_events(pod.obj))

    def _past_limits(self) -> bool:
        """§4.6 and §4.7: fail the job when backoffLimit or activeDeadlineSeconds is exceeded.

        Failed is set first and cleanPodPolicy then applies (as v1.9.4; v1.7 to v1.9.3 deleted every pod
        and Service). completionTime is set, and the failure is counted in jobs_failed too.
        """
        rp = self.job.run_policy
        specs = self.job.replica_specs
        message: str | None = None
        # Pods an earlier whole-job restart is replacing are out of the count (none without a policy).
        pods = [p.obj for p in self.pods if not p.old] if self.recreating else self.observed.pods
        if rp.backoff_limit is not None and (
            detect_new_failure_past_limit(rp.backoff_limit, specs, pods, self.previous)
            or detect_restarts_past_limit(
                rp.backoff_limit,
                specs,
                {r.rtype: [p.obj for p in r.pods if not p.old] for r in self.replicas.values()},
            )
        ):
            message = build_backoff_message(self.name)
        else:
            remaining = compute_deadline_remaining(
                rp.active_deadline_seconds, self.status.start_time, self.now
            )
            if remaining is not None and remaining <= 0:
                message = build_deadline_message(self.name)
        if message is None:
            return False
        if self.status.completion_time is None:
            self.status.completion_time = self.stamp
        reason = f"{self.kind}Failed"
        self._event("Normal", reason, message)
        if self._set(COND_FAILED, TRUE, reason, message):
            self.plan.metrics.append(METRIC_FAILED)
        return True

    # -- trainop's failure policy (docs/failure-policy.md) --------------------------------------

    def _invalid_policy(self) -> bool:
        """Read the failure-policy annotations. A bad value that got past admission (no webhook, or an
        edit) stops the pass with a Warning naming the field, as an invalid MPIJob does (§2.4): running
        the job without the rules its owner asked for would be worse."""
        self.policy, errors = build_failure_policy(self.job)
        if not errors:
            return False
        self.policy = None
        message = f"{self.kind} failed validation because {errors[0]}"
        self._event("Warning", f"{self.kind}FailedValidation", message, key=message)
        return True

    def _apply_failure_policy(self) -> bool:
        """Finish a whole-job restart under way, act on the earliest failure a rule decides, then the
        start deadlines. True when the job failed this pass."""
        policy = self.policy
        assert policy is not None
        for pod in self.pods:
            if pod.old and not pod.deleting:
                self._delete("Pod", pod.name)
        failures = []
        for replica in self.replicas.values():
            for pod in replica.pods:
                if pod.old or pod.deleting:
                    continue
                failure = detect_failure(pod.obj, replica.rtype)
                if failure is not None:
                    failures.append(failure)
        decision = compute_decision(policy.rules, failures) if failures else None
        if decision is not None:
            if decision.action == ACTION_FAIL_JOB:
                self._fail_job(
                    "FailedByRule",
                    f"Job {self.name} has failed because {build_failure_summary(decision.failure)}, "
                    f"which {build_rule_label(policy.rules, decision.rule)} fails the job (FailJob)",
                )
                return True
            if decision.action in RESTARTING_ACTIONS:
                counted = decision.action == ACTION_RESTART_JOB
                if counted and self.restarts.counted >= policy.max_restarts:
                    self._fail_job(
                        "MaxRestartsExceeded",
                        f"Job {self.name} has failed because it has reached the maximum of "
                        f"{policy.max_restarts} whole-job restart(s) (trainop.dev/max-restarts) and "
                        f"{build_failure_summary(decision.failure)}",
                    )
                    return True
                self._restart_job(decision, counted)
                return False
        return self._check_start_deadlines()

    def _restart_job(self, decision: Decision, counted: bool) -> None:
        """Delete every pod, so each replica is recreated under the next restart-attempt (at once
        under Recreate, once all are gone under BlockingRecreate); Restarting, the JobRestarts count,
        a Warning event and the restarted metric say so."""
        policy = self.policy
        assert policy is not None
        self.restarts = RestartCount(self.restarts.attempt + 1, self.restarts.counted + int(counted))
        for pod in self.pods:
            if not pod.deleting:
                self._delete("Pod", pod.name)
            pod.old = True
        for replica in self.replicas.values():
            replica.active = replica.succeeded = replica.failed = 0
        self.recreating = True
        summary = build_failure_summary(decision.failure)
        rule = build_rule_label(policy.rules, decision.rule)
        tally = (
            f"restart {self.restarts.counted} of at most {policy.max_restarts}"
            if counted
            else f"not counted toward the maximum of {policy.max_restarts} ({decision.action})"
        )
        message = f"{self.kind} {self.name} is restarting every replica because {summary} ({rule}; {tally})."
        reason = f"{self.kind}Restarting"
        self._event("Warning", reason, message)
        if not self._set(COND_RESTARTING, TRUE, reason, message):
            self._refresh_condition(COND_RESTARTING, message)
        set_restarts_condition(
            self.status,
            build_restarts_condition(self.kind, self.restarts, policy.max_restarts, summary, self.stamp),
        )
        self.plan.metrics.append(METRIC_RESTARTED)
        self.restarted = True

    def _policy_json(self) -> str:
        if self.policy_json is None:
            assert self.policy is not None
            self.policy_json = json.dumps(self.policy.to_dict(), separators=(",", ":"))
        return self.policy_json

    def _refresh_condition(self, ctype: str, message: str) -> None:
        """A condition already True with the same reason gets the new message (setCondition would keep
        the old one): a second restart names its own failure."""
        conditions = list(self.status.conditions or [])
        for i, c in enumerate(conditions):
            if c.type == ctype and c.message != message:
                conditions[i] = c.model_copy(update={"message": message, "last_update_time": self.stamp})
                self.status.conditions = conditions
                return

    def _check_start_deadlines(self) -> bool:
        """The startup and start-error deadlines over the replicas of the current attempt."""
        policy = self.policy
        assert policy is not None
        if policy.startup_deadline_seconds is None and policy.start_error_deadline_seconds is None:
            return False
        attempt_start = detect_restart_time(self.status) or self.status.start_time or self.stamp
        items: list[tuple[str, dict[str, Any] | None]] = []
        for replica in self.replicas.values():
            current = {p.name: p for p in replica.pods if not p.old and not p.deleting}
            for _, name in replica.wanted:
                pod = current.get(name)
                items.append((name, pod.obj if pod is not None else None))
        outcome = compute_start_deadlines(
            policy.startup_deadline_seconds,
            policy.start_error_deadline_seconds,
            items,
            attempt_start,
            self.now,
        )
        if outcome.violation is not None:
            self._fail_job(
                outcome.violation.word, f"Job {self.name} has failed because {outcome.violation.detail}"
            )
            return True
        if outcome.remaining is not None:
            self._requeue(outcome.remaining)
        return False

    def _fail_job(self, word: str, message: str) -> None:
        """Failed with reason ``<Kind><word>`` (completionTime set, a Warning event, jobs_failed); the
        caller then runs cleanup as for backoffLimit (§4.7: Failed first, then cleanPodPolicy)."""
        if self.status.completion_time is None:
            self.status.completion_time = self.stamp
        reason = f"{self.kind}{word}"
        self._event("Warning", reason, message)
        if self._set(COND_FAILED, TRUE, reason, message):
            self.plan.metrics.append(METRIC_FAILED)

    def _reconcile_failed_pods(self) -> None:
        """§4.5 for every pod that is not already terminating: ExitedWithCode, then the restart policy
        of a Failed pod (recreate it, or fail the job under ExitCode with a permanent code)."""
        if self.caps.launcher is not None:
            return  # a launcher's kind has its own pod logic and never deletes failed pods (§4.4)
        container = self.info.default_container
        namespace = self.job.namespace
        for replica in self.replicas.values():
            for pod in replica.pods:
                if pod.deleting or pod.old:
                    continue
                if detect_default_container_terminated(pod.obj, container) is not None:
                    exit_code = detect_exit_code(pod.obj, container)
                    self.plan.events.append(ev.build_exited_event(namespace, pod.obj, exit_code))
                if pod.phase != PHASE_FAILED:
                    continue
                policy = replica.spec.restart_policy or self.info.default_restart_policy
                decision = detect_restart(policy, detect_exit_code(pod.obj, container))
                if decision == RESTART:
                    self._restart(replica.rtype, pod.name)
                elif decision == FAIL:
                    self._fail_permanently(replica.rtype)

    def _restart(self, rtype: str, pod_name: str) -> None:
        self._delete("Pod", pod_name)
        message = build_restarting_message(self.name, rtype)
        reason = f"{self.kind}Restarting"
        self._event("Warning", reason, message)
        self._set(COND_RESTARTING, TRUE, reason, message)
        self.plan.metrics.append(METRIC_RESTARTED)
        self.restarted = True

    def _fail_permanently(self, rtype: str) -> None:
        message = build_exit_code_failed_message(self.name, rtype)
        reason = f"{self.kind}Failed"
        if self._set(COND_FAILED, TRUE, reason, message):
            # Upstream sets no completionTime here (§9.5), so TTL never fires; we set it.
            if self.status.completion_time is None:
                self.status.completion_time = self.stamp
            self._event("Warning", reason, message)
            self.plan.metrics.append(METRIC_FAILED)

    def _update_status(self) -> None:
        """replicaStatuses rebuilt from the pods (§4.2), then the kind's status rule (§4.4) applied in
        order with setCondition's rules.

        The pass counts as one update. A condition that ends the pass as it started it (same type,
        status and reason as in the stored status) keeps its stored timestamps and message, even if
        the rule flipped it on the way (Running then Restarting again while a failed pod terminates);
        and the rule's events and metrics fire only for conditions that are new at the end of the pass.
        Upstream repeats them on every pass while the state holds, and its flips rewrite the status.
        """
        counts = self._rebuild_replica_statuses()
        fired = self._apply_status_rule(counts)
        if fired:
            before = {_condition_key(c): c for c in self.previous.conditions or ()}
            self._keep_stored_conditions(before)
            self._announce(fired, before)

    def _rebuild_replica_statuses(self) -> dict[str, ReplicaCounts]:
        """§4.2: each type's counts for the status rule, and ``replicaStatuses`` from them (an entry
        whose counts and selector did not change is kept as stored, with any field we do not know)."""
        counts: dict[str, ReplicaCounts] = {}
        statuses = {}
        default_policy = self.info.default_restart_policy
        previous = self.previous.replica_statuses or {}
        for rtype, r in self.replicas.items():
            counts[rtype] = ReplicaCounts(
                replicas=r.spec.replicas or 0,
                active=r.active,
                succeeded=r.succeeded,
                failed=r.failed,
                restart_policy=r.spec.restart_policy or default_policy,
            )
            statuses[rtype] = self._replica_status(r, previous.get(rtype))
        self.status.replica_statuses = statuses or None
        return counts

    def _replica_status(self, r: _Replica, old: ReplicaStatus | None) -> ReplicaStatus:
        selector = build_selector(self.info, self.name, r.rtype) if self.info.scalable else None
        unchanged = (
            old is not None
            and (old.active or 0, old.succeeded or 0, old.failed or 0) == (r.active, r.succeeded, r.failed)
            and old.selector == selector
            and old.label_selector is None
        )
        if unchanged:
            assert old is not None
            return old
        return build_replica_status(r.active, r.succeeded, r.failed, selector)

    def _apply_status_rule(self, counts: dict[str, ReplicaCounts]) -> list[_Fired]:
        """Run the kind's rule and apply its updates in order; the updates that may speak (``_Fired``).

        The rule sees this pass's status so far (upstream hands it the in-flight status): TF keeps a
        Restarting that the restart path set a moment ago instead of failing the job. An update that
        finds its condition already set this pass (same type, status and reason: the restart path's
        Restarting) changes nothing, but upstream records its event before setCondition, so it still
        speaks; its metric was counted by whoever set the condition."""
        job = self.job.model_copy(update={"status": self.status})
        fired: list[_Fired] = []
        for update in self.plugin.compute_conditions(job, counts, self.observed.pods):
            event_reason = update.event_reason or update.reason
            if not update.set_condition:
                # Upstream computes these on a copy it discards; only the event survives (MPI, §4.4).
                if update.event is not None:
                    self._event(
                        update.event, event_reason, update.message, key=f"{event_reason}/{update.message}"
                    )
                continue
            if self._set(update.type, update.status, update.reason, update.message):
                fired.append(_Fired(update, event_reason, changed=True))
            elif self._is_current(update):
                fired.append(_Fired(update, event_reason, changed=False))
            if update.complete and self.status.completion_time is None:
                self.status.completion_time = self.stamp
        return fired

    def _is_current(self, update: ConditionUpdate) -> bool:
        current = detect_condition(self.status, update.type)
        return current is not None and (current.status, current.reason) == (update.status, update.reason)

    def _keep_stored_conditions(self, before: dict[tuple[str, str, str | None], JobCondition]) -> None:
        """A condition that ends the pass as stored (type, status, reason) keeps its stored copy."""
        final = self.status.conditions or []
        self.status.conditions = [before.get(_condition_key(c), c) for c in final]

    def _announce(self, fired: list[_Fired], before: dict[tuple[str, str, str | None], JobCondition]) -> None:
        """The events and metrics of the rule's updates whose condition is new at the end of the pass."""
        now_present = {_condition_key(c) for c in self.status.conditions or ()}
        for f in fired:
            update = f.update
            key = (update.type, update.status, update.reason)
            if key in before or key not in now_present:
                continue
            if update.event is not None:
                self._event(update.event, f.event_reason, update.message)
            metric = f.metric(restarted=self.restarted)
            if metric is not None:
                self.plan.metrics.append(metric)

    def _reconcile_extra_objects(self) -> None:
        """Other owned objects (MPI's ServiceAccount, ConfigMap, Role, RoleBinding; the PyTorch HPA):
        created when missing, replaced when their content drifted."""
        extra = self.caps.extra_objects
        if extra is None:
            return
        desired = extra.build_extra_objects(self.job, self.observed.pods, self.topology)
        for obj in desired:
            kind = str(obj.get("kind") or "")
            name = detect_name(obj)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", self.job.namespace)
            meta.setdefault("ownerReferences", [build_owner_reference(self.job)])
            current = next((o for o in self.observed.extras.get(kind, ()) if detect_name(o) == name), None)
            if current is None:
                self._act(ev.build_create_action(self.info, obj))
            elif detect_drift(obj, current):
                self._act(ev.build_update_action(obj))

    # -- gang scheduling (§5; core/gang.py builds, these only plan) ---------------------------------

    def _pod_group(self) -> dict[str, Any] | None:
        return next(
            (o for o in self.observed.extras.get(POD_GROUP_KIND, ()) if detect_name(o) == self.name), None
        )

    def _reconcile_pod_group(self) -> bool:
        """Create the PodGroup, or replace it when its spec drifted (minAvailable patched); False while
        Volcano has not admitted it (then no pod is created this pass; its phase change requeues)."""
        assert self.gang is not None
        current = self._pod_group()
        priorities = compute_priorities(self.observed.extras.get("PriorityClass", []))
        desired = build_pod_group(self.job, self.gang, current, priorities)
        desired["metadata"]["ownerReferences"] = [build_owner_reference(self.job)]
        if current is None:
            self._act(ev.build_create_action(self.info, desired))
        elif detect_drift(desired, current):
            if "status" in current:  # kept when the CRD has no status subresource
                desired["status"] = current["status"]
            # Custom resources allow no unconditional update; a conflict retries on the next pass.
            rv = (current.get("metadata") or {}).get("resourceVersion")
            if rv:
                desired["metadata"]["resourceVersion"] = rv
            self._act(ev.build_update_action(desired))
        return not self.gang.volcano or detect_pod_group_admitted(current)

    def _delete_pod_group(self, *, finished: bool) -> None:
        """On finish and on suspend (§4.8, §4.10); deletion of the job leaves it to ownerRef GC."""
        if self.gang is None or not self.gang.pod_group:
            return
        current = self._pod_group()
        if current is None or detect_deleting(current) or (POD_GROUP_KIND, self.name) in self.deleted:
            return
        if finished:
            self._event("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup")
        self.deleted.add((POD_GROUP_KIND, self.name))
        self._act(build_pod_group_delete_action(self.name))

    def _decorate_for_gang(self, pod: dict[str, Any], rtype: str) -> None:
        assert self.gang is not None
        warning = build_pod_decoration(pod, self.gang, self.job, rtype)
        if warning is not None:
            self.plan.events.append(warning)

    def _reconcile_pods(self, replica: _Replica) -> None:
        """§3.1: create the missing pods, delete those past ``replicas`` (scale-down)."""
        observed = {p.name: p for p in replica.pods}
        present = 0
        for index, name in replica.wanted:
            if name in observed:
                present += 1
            else:
                self._create_pod(replica, index, name)
        if len(observed) > present:  # some observed pods are not wanted
            wanted = {name for _, name in replica.wanted}
            for name, pod in observed.items():
                if name not in wanted and not pod.deleting:
                    self._delete("Pod", name)

    def _create_pod(self, replica: _Replica, index: int, name: str) -> None:
        job, plugin = self.job, self.plugin
        pod, template_policy = build_pod(
            job,
            self.info,
            replica.rtype,
            index,
            replica.spec,
            name=name,
            # The plugin knows the master role and MPI's launcher labels (no replica-index, §3.9).
            labels=plugin.pod_labels(job, replica.rtype, index),
        )
        if template_policy:
            self._event(
                "Warning",
                "SetPodTemplateRestartPolicy",
                "Restart policy in pod template will be overwritten by restart policy in replica spec",
            )
        plugin.customize_pod(job, replica.rtype, index, pod, self.topology)
        if self.gang is not None:
            self._decorate_for_gang(pod, replica.rtype)
        if self.policy is not None:
            meta = pod["metadata"]
            meta.setdefault("labels", {})[LABEL_RESTART_ATTEMPT] = str(self.restarts.attempt)
            meta.setdefault("annotations", {})[ANNOTATION_EFFECTIVE_FAILURE_POLICY] = self._policy_json()
        launcher = self.caps.launcher
        if launcher is None:
            self._act(ev.build_create_action(self.info, pod))
        else:
            done, on_error = launcher.build_pod_events(job, replica.rtype, name)
            self._act(CreateObject(pod, done=done, on_error=on_error))

    def _reconcile_services(self, replica: _Replica) -> None:
        """§3.2: one headless Service per replica, never updated; those past ``replicas`` are deleted."""
        observed = {detect_name(s): s for s in replica.services}
        ports: list[dict[str, Any]] | None = None
        present = 0
        for index, name in replica.wanted:
            if name in observed:
                present += 1
                continue
            if ports is None:
                ports = build_service_ports(replica.spec, self.info)
                if ports is None:
                    self._event(
                        "Warning",
                        "FailedCreateService",
                        "Error creating: failed to find the port",
                        key=f"FailedCreateService/{replica.rtype}/no-port",
                    )
                    return
            svc = build_service(self.job, self.info, replica.rtype, index, name=name, ports=ports)
            self._act(ev.build_create_action(self.info, svc))
        if len(observed) > present:  # some observed Services are not wanted
            wanted = {name for _, name in replica.wanted}
            for name, svc in observed.items():
                if name not in wanted and not detect_deleting(svc):
                    self._delete("Service", name)

    def _requeue_at_deadline(self) -> None:
        """A real activeDeadlineSeconds (§9.4): come back when it expires, not on the next event."""
        remaining = compute_deadline_remaining(
            self.job.run_policy.active_deadline_seconds, self.status.start_time, self.now
        )
        if remaining is not None:
            self._requeue(remaining)


def detect_drift(desired: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether an owned extra object must be replaced: its ``data`` or ``rules`` differ (MPI's
    ConfigMap and Role, §3.9), or a field it sets under ``spec`` differs (the HPA, §3.4). Fields the API
    server fills in (defaults, metadata, status) are not compared."""
    for key in ("data", "rules"):
        if key in desired and desired[key] != current.get(key):
            return True
    if "spec" in desired:
        return not _contains(current.get("spec"), desired["spec"])
    return False


def _contains(have: Any, want: Any) -> bool:
    """``want`` is a subset of ``have``: dict keys recursively, lists element by element."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _contains(have[k], v) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(_contains(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)
