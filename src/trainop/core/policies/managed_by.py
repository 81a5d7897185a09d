"""managedBy (contract §4.11): a job managed by another controller is left entirely alone. Pure."""

from __future__ import annotations

from trainop.api.common import TrainingJob
from trainop.api.constants import MANAGED_BY_OPERATOR


def detect_managed_elsewhere(job: TrainingJob) -> bool:
    """True when ``spec.runPolicy.managedBy`` names another controller (e.g. Kueue's MultiKueue).

    Upstream's JAX controller lacks this check (§9.3); here every kind honours it, so a JAXJob handed
    to MultiKueue does not also run on the management cluster.
    """
    rp = job.spec.run_policy
    managed_by = rp.managed_by if rp is not None else None
    return bool(managed_by) and managed_by != MANAGED_BY_OPERATOR
