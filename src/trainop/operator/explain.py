"""A reconcile pass that cannot be computed says why on the job (a Warning event), never only in the log.

Wraps core's reconcile for the operator. A job stored past admission (before the webhook existed, or
with it off) may hold a pod template that the framework plugins cannot render; the pass then yields
that one event, naming the field when ``trainop.api.validation`` finds it. Pure: no I/O.
"""

from __future__ import annotations

import logging
from datetime import datetime

from trainop.api.common import JobStatus, TrainingJob
from trainop.core.gang import GangScheduler
from trainop.core.observed import Observed
from trainop.core.plan import Event, Plan
from trainop.core.reconcile import reconcile
from trainop.core.topology import Topology
from trainop.frameworks.base import FrameworkPlugin

log = logging.getLogger(__name__)

REASON_FAILED_RECONCILE = "FailedReconcile"


def reconcile_or_explain(
    job: TrainingJob,
    observed: Observed,
    plugin: FrameworkPlugin,
    topology: Topology,
    now: datetime,
    *,
    gang: GangScheduler | None = None,
) -> Plan:
    """core's ``reconcile``; if it raises, a Plan whose only effect is a Warning event saying why."""
    try:
        return reconcile(job, observed, plugin, topology, now, gang=gang)
    except Exception as exc:
        return build_explained_plan(job, exc)


def build_explained_plan(job: TrainingJob, exc: Exception) -> Plan:
    """No action and no status write (as for an invalid MPIJob, §2.4): only the event, once per job
    and message (keyed). An update of the job reconciles it again. The pass was level-triggered, so
    retrying an unchanged job would fail the same way."""
    # Imported here: only a failed pass needs the admission rules (and the pod schema they load), so
    # the operator's start does not pay for them (validation, podschema, failure_policy: ~6 ms).
    from trainop.api.validation import validate_for_apply

    errors = [e for e in validate_for_apply(job) if ".template" in e.path]
    if errors:
        # Upstream's wording for a job its controller refuses (§2.4, and every kind in v1.7, §6.3).
        message = f"{job.kind} failed validation because " + "; ".join(map(str, errors))
        event = Event("Warning", f"{job.kind}FailedValidation", message, key=message)
        log.info("%s %s/%s: %s", job.kind, job.namespace, job.name, message)
    else:
        message = f"{job.kind} {job.namespace}/{job.name} cannot be reconciled: {type(exc).__name__}: {exc}"
        event = Event("Warning", REASON_FAILED_RECONCILE, message, key=message)
        # Nothing explains it: a shape our plugins do not expect, or a bug. The traceback finds it.
        log.warning("%s", message, exc_info=exc)
    return Plan(status=job.status or JobStatus(), events=[event])
