"""The state one reconcile pass works on (``core/reconcile.py`` runs upstream's steps over it, and
``core/policies`` trainop's own): the job, what was observed grouped by replica type, the status being
built and the Plan; and the few ways a step records something (an event, an action, a condition).

Pure: no I/O, no clock (``now`` is given).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainop.api.common import JobStatus, ReplicaSpec, TrainingJob
from trainop.api.constants import COND_FAILED
from trainop.core import events as ev
from trainop.core.observed import Observed
from trainop.core.plan import Action, Event, Plan
from trainop.core.plugin import FrameworkPlugin, PodView, ReplicaCounts, capabilities
from trainop.core.policies.failure import RestartCount
from trainop.core.status import TRUE, build_condition, detect_condition_kept, set_condition
from trainop.core.topology import Topology

if TYPE_CHECKING:
    from trainop.api.failure_policy import FailurePolicy
    from trainop.core.gang import GangScheduler

# Metric names in Plan.metrics (§6.6), as the framework plugins spell them too.
METRIC_CREATED = "jobs_created"
METRIC_DELETED = "jobs_deleted"
METRIC_FAILED = "jobs_failed"
METRIC_RESTARTED = "jobs_restarted"


def copy_status(status: JobStatus | None) -> JobStatus:
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
class ReplicaView:
    """One replica type's observed pods and Services, sorted once per pass."""

    rtype: str
    spec: ReplicaSpec
    pods: list[PodView] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    # (index, name) of the replicas that should exist; the plugin is asked once per pass.
    wanted: list[tuple[int, str]] = field(default_factory=list)


class PassState:
    """One pass's inputs, what it has seen and what it has decided so far."""

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
        self.status = copy_status(job.status)
        self.plan = Plan(status=self.status)
        self.job = job  # replaced by the defaulted job once validation passed
        self.kind = job.kind
        self.name = job.name
        self.replicas: dict[str, ReplicaView] = {}
        self.counts: dict[str, ReplicaCounts] = {}  # for the plugin: set by the status step
        self.pods: list[PodView] = []
        self.deleted: set[tuple[str, str]] = set()
        self.restarted = False  # the restart path recreated a pod this pass
        # trainop's failure policy (annotations; docs/failure-policy.md): None = upstream's behaviour.
        self.policy: FailurePolicy | None = None
        self.restarts = RestartCount()
        self.recreating = False  # pods of an earlier whole-job restart still exist
        self.policy_json: str | None = None
        self.gang: GangScheduler | None = None  # §5; set by reconcile()

    def event(self, type_: str, reason: str, message: str, key: str | None = None) -> None:
        self.plan.events.append(Event("Warning" if type_ == "Warning" else "Normal", reason, message, key))

    def act(self, action: Action) -> None:
        self.plan.actions.append(action)

    def delete(self, kind: str, name: str) -> None:
        if (kind, name) not in self.deleted:
            self.deleted.add((kind, name))
            self.act(ev.build_delete_action(kind, name))

    def requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        current = self.plan.requeue_after
        self.plan.requeue_after = seconds if current is None else min(current, seconds)

    def set_condition(self, ctype: str, status: str, reason: str, message: str) -> bool:
        if detect_condition_kept(self.status, ctype, status, reason):
            return False  # most passes: the condition holds already (no need to build it)
        return set_condition(self.status, build_condition(ctype, status, reason, message, self.stamp))

    def fail_job(self, word: str, message: str, event_type: str = "Warning") -> None:
        """Failed with reason ``<Kind><word>`` (completionTime set, an event, jobs_failed); the caller
        then runs cleanup as for backoffLimit (§4.7: Failed first, then cleanPodPolicy)."""
        if self.status.completion_time is None:
            self.status.completion_time = self.stamp
        reason = f"{self.kind}{word}"
        self.event(event_type, reason, message)
        if self.set_condition(COND_FAILED, TRUE, reason, message):
            self.plan.metrics.append(METRIC_FAILED)

    def refresh_condition(self, ctype: str, message: str) -> None:
        """A condition already True with the same reason gets the new message (setCondition would keep
        the old one): a second restart names its own failure."""
        conditions = list(self.status.conditions or [])
        for i, c in enumerate(conditions):
            if c.type == ctype and c.message != message:
                conditions[i] = c.model_copy(update={"message": message, "last_update_time": self.stamp})
                self.status.conditions = conditions
                return

    def done(self) -> Plan:
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
