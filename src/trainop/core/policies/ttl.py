"""ttlSecondsAfterFinished (contract §4.9), counted from ``status.completionTime``. Pure."""

from __future__ import annotations

from datetime import datetime

from trainop.core.status import as_utc


def compute_ttl_remaining(
    ttl_seconds: int | None, completion_time: datetime | None, now: datetime
) -> float | None:
    """Seconds until the finished job may be deleted (≤ 0: delete it now); None without a TTL.

    Upstream deletes when ``now`` is strictly after the expiry; here the expiry instant itself counts
    too, so a pass requeued for exactly the remaining time deletes the job (and a frozen test clock
    cannot spin). A nil completionTime is upstream's "cannot cleanup" error (§9.5); core fills it in
    before asking, so it never happens here.
    """
    if ttl_seconds is None or completion_time is None:
        return None
    return ttl_seconds - (now - as_utc(completion_time)).total_seconds()
