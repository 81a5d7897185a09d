"""One reconcile pass: (raw job, what the backend observed, plugin, topology, now) → Plan (contract §4).

The order is upstream's (§4.3): Created; managedBy; finished → cleanup and TTL; suspended; resume;
abnormal-pod events; backoffLimit and activeDeadlineSeconds; pods and Services per replica type; the
kind's status rule. Pure: no I/O, no clock (``now`` is an argument), inputs are never mutated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    EXIT_CODE_UNSET,
    LABEL_REPLICA_TYPE,
)
from trainop.api.defaults import apply_defaults
from trainop.api.failure_policy import STRATEGY_BLOCKING_RECREATE
from trainop.core import events as ev
from trainop.core.gang import GangScheduler
from trainop.core.naming import build_owner_reference
from trainop.core.observed import Observed, detect_drift
from trainop.core.pass_state import (
    METRIC_CREATED,
    METRIC_DELETED,
    METRIC_FAILED,
    METRIC_RESTARTED,
    PassState,
    ReplicaView,
    copy_status,
)
from trainop.core.pass_status import update_status
from trainop.core.plan import CreateObject, Plan, UpdateObject
from trainop.core.plugin import FrameworkPlugin, PodView
from trainop.core.pods import (
    PHASE_FAILED,
    PHASE_RUNNING,
    PHASE_SUCCEEDED,
    build_pod,
    build_service,
    build_service_ports,
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
from trainop.core.policies.failure import RestartCount, detect_attempt, detect_restart_count
from trainop.core.policies.managed_by import detect_managed_elsewhere
from trainop.core.policies.podgroup import decorate_for_gang, delete_pod_group, reconcile_pod_group
from trainop.core.policies.restart import (
    FAIL,
    RESTART,
    build_exit_code_failed_message,
    build_restarting_message,
    detect_restart,
)
from trainop.core.policies.suspend import compute_suspend_deletions
from trainop.core.policies.ttl import compute_ttl_remaining
from trainop.core.policies.whole_job import apply_failure_policy, detect_invalid_policy, mark_pod
from trainop.core.queue import REASON_QUEUE_NOT_MANAGED, build_queue_not_managed_message
from trainop.core.status import (
    FALSE,
    TRUE,
    build_created,
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
        return Plan(status=copy_status(job.status), skipped=True)
    p = _Pass(job, observed, plugin, topology, now)
    p.gang = gang
    return p.run()


class _Pass(PassState):
    """One reconcile pass: ``run`` reads top to bottom in upstream's order (§4.3); trainop's own
    policies are steps in ``core/policies`` (whole_job.py, podgroup.py)."""

    # -- the pass ---------------------------------------------------------------------------------

    def run(self) -> Plan:
        if not self.info.admission_webhook and self._invalid():
            return self.plan
        self._add_created()
        self.job = apply_defaults(self.raw)
        run_policy = self.job.run_policy

        if detect_finished(self.status):
            self._finished(just_now=False)
            return self.done()
        if detect_invalid_policy(self):
            return self.done()
        if run_policy.suspend:
            self._suspend()
            return self.done()
        if detect_true(self.status, COND_SUSPENDED):
            self._resume()

        self._sort_observed()
        self._record_abnormal_pods()
        if self.policy is not None and apply_failure_policy(self):
            self._finished(just_now=True)
            return self.done()
        if self._past_limits():
            self._finished(just_now=True)
            return self.done()

        self._reconcile_failed_pods()
        if self.status.start_time is None:
            self.status.start_time = self.stamp
        update_status(self)
        if detect_finished(self.status):
            self._finished(just_now=True)
            return self.done()

        if self.gang is not None and self.gang.pod_group and not reconcile_pod_group(self):
            return self.done()  # Volcano: no pod until the PodGroup leaves Pending (§5)
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
            if self.info.replica_services:  # MPI has none (§3.9)
                self._reconcile_services(replica)
        self._requeue_at_deadline()
        return self.done()

    # -- steps ----------------------------------------------------------------------------------

    def _invalid(self) -> bool:
        """§2.4: a kind without an admission webhook (MPIJob) is validated by upstream on every pass; an
        invalid one gets a Warning event (its first error, as upstream stops there) and nothing else."""
        errors = self.raw.spec.upstream_errors(self.raw, None)
        if not errors:
            return False
        message = f"{self.kind} failed validation because {errors[0].message}"
        self.event("Warning", f"{self.kind}FailedValidation", message, key=message)
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
                self.event("Warning", REASON_QUEUE_NOT_MANAGED, unqueued)

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
            self.delete(kind, name)
        delete_pod_group(self, finished=True)
        if detect_true(self.status, COND_SUCCEEDED):
            compute_succeeded_fixup(self.status)
        remaining = compute_ttl_remaining(
            self.job.run_policy.ttl_seconds_after_finished, self.status.completion_time, self.now
        )
        if remaining is None:
            return
        if remaining <= 0 and not just_now:
            self.act(ev.build_delete_job_action(self.info, self.name))
            self.plan.metrics.append(METRIC_DELETED)
        else:
            self.requeue(remaining)

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
            self.delete(kind, name)
        delete_pod_group(self, finished=False)
        compute_suspended_counts(self.status)
        cond = build_suspended(self.kind, self.name, self.stamp)
        assert cond.reason is not None and cond.message is not None
        if detect_true(self.status, COND_RUNNING):
            self.set_condition(COND_RUNNING, FALSE, cond.reason, cond.message)
        if not detect_true(self.status, COND_SUSPENDED):
            set_condition(self.status, cond)
        self.event("Normal", cond.reason, cond.message)

    def _resume(self) -> None:
        """§4.10: Suspended → False, startTime restarts (so does the deadline), pods come back this pass."""
        cond = build_resumed(self.kind, self.name, self.stamp)
        set_condition(self.status, cond)
        self.status.start_time = self.stamp
        assert cond.reason is not None and cond.message is not None
        self.event("Normal", cond.reason, cond.message)

    def _sort_observed(self) -> None:
        """Group the observed pods and Services by replica type (label ``replica-type``) and count the
        pods as §4.2 does: Running → active (Running and terminating → failed), Succeeded, Failed.
        Objects of a type the spec does not name are left alone, as upstream."""
        by_label: dict[str, ReplicaView] = {}
        job, plugin = self.job, self.plugin
        for rtype, spec in job.replica_specs.items():
            replica = ReplicaView(rtype, spec)
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
            pod = PodView(obj, name, phase, deleting)
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
        self.fail_job("Failed", message, event_type="Normal")
        return True

    def _reconcile_failed_pods(self) -> None:
        """§4.5 for every pod that is not already terminating: ExitedWithCode, then the restart policy
        of a Failed pod (recreate it, or fail the job under ExitCode with a permanent code)."""
        if not self.info.restarts_failed_pods:
            return  # MPI's controller never deletes failed pods (§4.4)
        container = self.info.default_container
        namespace = self.job.namespace
        for replica in self.replicas.values():
            for pod in replica.pods:
                if pod.deleting or pod.old:
                    continue
                exit_code = detect_exit_code(pod.obj, container)
                if exit_code != EXIT_CODE_UNSET:  # the default container has terminated
                    self.plan.events.append(ev.build_exited_event(namespace, pod.obj, exit_code))
                if pod.phase != PHASE_FAILED:
                    continue
                policy = replica.spec.restart_policy or self.info.default_restart_policy
                decision = detect_restart(policy, exit_code)
                if decision == RESTART:
                    self._restart(replica.rtype, pod.name)
                elif decision == FAIL:
                    self._fail_permanently(replica.rtype)

    def _restart(self, rtype: str, pod_name: str) -> None:
        self.delete("Pod", pod_name)
        message = build_restarting_message(self.name, rtype)
        reason = f"{self.kind}Restarting"
        self.event("Warning", reason, message)
        self.set_condition(COND_RESTARTING, TRUE, reason, message)
        self.plan.metrics.append(METRIC_RESTARTED)
        self.restarted = True

    def _fail_permanently(self, rtype: str) -> None:
        message = build_exit_code_failed_message(self.name, rtype)
        reason = f"{self.kind}Failed"
        if self.set_condition(COND_FAILED, TRUE, reason, message):
            # Upstream sets no completionTime here (§9.5), so TTL never fires; we set it.
            if self.status.completion_time is None:
                self.status.completion_time = self.stamp
            self.event("Warning", reason, message)
            self.plan.metrics.append(METRIC_FAILED)

    def _reconcile_extra_objects(self) -> None:
        """Other owned objects (MPI's ServiceAccount, ConfigMap, Role, RoleBinding; the PyTorch HPA):
        created when missing, replaced when their content drifted."""
        extra = self.caps.extra_objects
        if extra is None:
            return
        desired = extra.build_extra_objects(self.job, self.counts, self.topology)
        for obj in desired:
            kind = str(obj.get("kind") or "")
            name = detect_name(obj)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", self.job.namespace)
            meta.setdefault("ownerReferences", [build_owner_reference(self.job)])
            current = next((o for o in self.observed.extras.get(kind, ()) if detect_name(o) == name), None)
            if current is None:
                self.act(ev.build_create_action(self.info, obj))
            elif detect_drift(obj, current):
                self.act(UpdateObject(obj))

    def _reconcile_pods(self, replica: ReplicaView) -> None:
        """§3.1: create the missing pods, delete those past ``replicas`` (scale-down)."""
        observed = {p.name: p for p in replica.pods}
        present = 0
        for index, name in replica.wanted:
            if name in observed:
                present += 1
            else:
                self._create_pod(replica, index, name)
        if len(observed) > present:  # some observed pods are not wanted
            self._delete_unwanted("Pod", replica, [n for n, p in observed.items() if not p.deleting])

    def _create_pod(self, replica: ReplicaView, index: int, name: str) -> None:
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
            self.event(
                "Warning",
                "SetPodTemplateRestartPolicy",
                "Restart policy in pod template will be overwritten by restart policy in replica spec",
            )
        plugin.customize_pod(job, replica.rtype, index, pod, self.topology)
        if self.gang is not None:
            decorate_for_gang(self, pod, replica.rtype)
        if self.policy is not None:
            mark_pod(self, pod)
        own = self.caps.pod_events
        if own is None:
            self.act(ev.build_create_action(self.info, pod))
        else:
            done, on_error = own.build_pod_events(job, replica.rtype, name)
            self.act(CreateObject(pod, done=done, on_error=on_error))

    def _reconcile_services(self, replica: ReplicaView) -> None:
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
                    self.event(
                        "Warning",
                        "FailedCreateService",
                        "Error creating: failed to find the port",
                        key=f"FailedCreateService/{replica.rtype}/no-port",
                    )
                    return
            svc = build_service(self.job, self.info, replica.rtype, index, name=name, ports=ports)
            self.act(ev.build_create_action(self.info, svc))
        if len(observed) > present:  # some observed Services are not wanted
            self._delete_unwanted(
                "Service", replica, [n for n, s in observed.items() if not detect_deleting(s)]
            )

    def _delete_unwanted(self, kind: str, replica: ReplicaView, names: list[str]) -> None:
        """Scale-down: delete those of ``names`` (observed, not terminating) past ``replicas``."""
        wanted = {name for _, name in replica.wanted}
        for name in names:
            if name not in wanted:
                self.delete(kind, name)

    def _requeue_at_deadline(self) -> None:
        """A real activeDeadlineSeconds (§9.4): come back when it expires, not on the next event."""
        remaining = compute_deadline_remaining(
            self.job.run_policy.active_deadline_seconds, self.status.start_time, self.now
        )
        if remaining is not None:
            self.requeue(remaining)
