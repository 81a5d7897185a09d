"""The status step of a reconcile pass (§4.2, §4.4): ``replicaStatuses`` rebuilt from the observed
pods, then the kind's status rule applied with setCondition's rules, its events and metrics for the
conditions that are new at the end of the pass. Pure: reads and records through the pass's state.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainop.api.common import JobCondition, ReplicaStatus
from trainop.core.naming import build_selector
from trainop.core.pass_state import METRIC_RESTARTED, PassState, ReplicaView
from trainop.core.plugin import ConditionUpdate, ReplicaCounts
from trainop.core.status import build_replica_status, detect_condition


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


def update_status(p: PassState) -> None:
    """replicaStatuses rebuilt from the pods (§4.2), then the kind's status rule (§4.4) applied in
    order with setCondition's rules.

    The pass counts as one update. A condition that ends the pass as it started it (same type,
    status and reason as in the stored status) keeps its stored timestamps and message, even if
    the rule flipped it on the way (Running then Restarting again while a failed pod terminates);
    and the rule's events and metrics fire only for conditions that are new at the end of the pass.
    Upstream repeats them on every pass while the state holds, and its flips rewrite the status.
    """
    _rebuild_replica_statuses(p)
    fired = _apply_status_rule(p)
    if fired:
        before = {_condition_key(c): c for c in p.previous.conditions or ()}
        _keep_stored_conditions(p, before)
        _announce(p, fired, before)


def _rebuild_replica_statuses(p: PassState) -> None:
    """§4.2: ``p.counts`` (each type's counts and pods, for the plugin), and ``replicaStatuses``
    (an entry whose counts and selector did not change is kept as stored, with fields we do not know)."""
    statuses = {}
    default_policy = p.info.default_restart_policy
    previous = p.previous.replica_statuses or {}
    for rtype, r in p.replicas.items():
        p.counts[rtype] = ReplicaCounts(
            replicas=r.spec.replicas or 0,
            active=r.active,
            succeeded=r.succeeded,
            failed=r.failed,
            restart_policy=r.spec.restart_policy or default_policy,
            pods=tuple(r.pods),
        )
        statuses[rtype] = _replica_status(p, r, previous.get(rtype))
    p.status.replica_statuses = statuses or None


def _replica_status(p: PassState, r: ReplicaView, old: ReplicaStatus | None) -> ReplicaStatus:
    selector = build_selector(p.info, p.name, r.rtype) if p.info.scalable else None
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


def _apply_status_rule(p: PassState) -> list[_Fired]:
    """Run the kind's rule and apply its updates in order; the updates that may speak (``_Fired``).

    The rule sees this pass's status so far (upstream hands it the in-flight status): TF keeps a
    Restarting that the restart path set a moment ago instead of failing the job. An update that
    finds its condition already set this pass (same type, status and reason: the restart path's
    Restarting) changes nothing, but upstream records its event before setCondition, so it still
    speaks; its metric was counted by whoever set the condition."""
    job = p.job.model_copy(update={"status": p.status})
    fired: list[_Fired] = []
    for update in p.plugin.compute_conditions(job, p.counts):
        event_reason = update.event_reason or update.reason
        if not update.set_condition:
            # Upstream computes these on a copy it discards; only the event survives (MPI, §4.4).
            if update.event is not None:
                p.event(update.event, event_reason, update.message, key=f"{event_reason}/{update.message}")
            continue
        if p.set_condition(update.type, update.status, update.reason, update.message):
            fired.append(_Fired(update, event_reason, changed=True))
        elif _is_current(p, update):
            fired.append(_Fired(update, event_reason, changed=False))
        if update.complete and p.status.completion_time is None:
            p.status.completion_time = p.stamp
    return fired


def _is_current(p: PassState, update: ConditionUpdate) -> bool:
    current = detect_condition(p.status, update.type)
    return current is not None and (current.status, current.reason) == (update.status, update.reason)


def _keep_stored_conditions(p: PassState, before: dict[tuple[str, str, str | None], JobCondition]) -> None:
    """A condition that ends the pass as stored (type, status, reason) keeps its stored copy."""
    final = p.status.conditions or []
    p.status.conditions = [before.get(_condition_key(c), c) for c in final]


def _announce(
    p: PassState, fired: list[_Fired], before: dict[tuple[str, str, str | None], JobCondition]
) -> None:
    """The events and metrics of the rule's updates whose condition is new at the end of the pass."""
    now_present = {_condition_key(c) for c in p.status.conditions or ()}
    for f in fired:
        update = f.update
        key = (update.type, update.status, update.reason)
        if key in before or key not in now_present:
            continue
        if update.event is not None:
            p.event(update.event, f.event_reason, update.message)
        metric = f.metric(restarted=p.restarted)
        if metric is not None:
            p.plan.metrics.append(metric)
