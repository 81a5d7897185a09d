"""activeDeadlineSeconds (contract §4.7), counted from ``status.startTime``.

Upstream only checks it when some other event triggers a reconcile (§9.4); here the reconcile also
returns the seconds left, and the backend's timer brings the next pass at the deadline. Pure.
"""

from __future__ import annotations

from datetime import datetime

from trainop.core.status import as_utc


def build_deadline_message(job_name: str) -> str:
    return f"Job {job_name} has failed because it was active longer than specified deadline"


def compute_deadline_remaining(
    active_deadline_seconds: int | None, start_time: datetime | None, now: datetime
) -> float | None:
    """Seconds until the deadline (≤ 0: it has passed); None when there is no deadline or no start."""
    if active_deadline_seconds is None or start_time is None:
        return None
    return active_deadline_seconds - (now - as_utc(start_time)).total_seconds()
