"""Events on the real API server as client-go's recorder leaves them (issue 16): after 10 similar
events about a job (same reason, other messages) the rest are one "(combined from similar events)"
Event whose ``count`` grows by PATCH; no occurrence is lost (the counts add up)."""

from __future__ import annotations

from k8s_harness import Cluster, OperatorProcess

from trainop.backends.kubernetes.events import COMBINED_PREFIX
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import wait_for


def by_reason(cluster: Cluster, job: str, reason: str) -> list[tuple[str, int]]:
    evs = [e for e in cluster.events(job) if e.get("reason") == reason]
    return sorted((str(e.get("message")), int(e.get("count") or 1)) for e in evs)


def test_many_pods_make_nine_events_and_one_counted_series(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    cluster.create(pytorch_job("series").master(1).workers(12).build_dict())
    for reason in ("SuccessfulCreatePod", "SuccessfulCreateService"):

        def all_counted(reason: str = reason) -> list[tuple[str, int]] | None:
            evs = by_reason(cluster, "series", reason)
            return evs if sum(c for _, c in evs) == 13 else None

        got = wait_for(all_counted, 90, f"13 {reason} occurrences")
        single = [m for m, c in got if not m.startswith(COMBINED_PREFIX)]
        combined = [(m, c) for m, c in got if m.startswith(COMBINED_PREFIX)]
        assert len(single) == 9 and all(c == 1 for m, c in got if m in single), got
        assert len(combined) == 1 and combined[0][1] == 4, got
