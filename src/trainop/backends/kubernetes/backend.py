"""The Kubernetes side of the reconcile loop: observe a job from the informer cache, apply its Plan.

``observe`` builds the core's Observed from cached dicts (no API call); ``pending`` holds a job back
while the cache has not yet shown the creations and deletions of its previous reconcile (§6.1
expectations); ``apply`` writes through PlanApplier and records what to expect next. I/O adapter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from trainop.api.errors import InvalidJobError
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job
from trainop.backends.kubernetes.apply import ApplyOutcome, PlanApplier
from trainop.backends.kubernetes.cache import ClusterCache, JobKey, job_key_of, job_uid
from trainop.backends.kubernetes.client import KubeClient
from trainop.backends.kubernetes.events import EventRecorder
from trainop.backends.kubernetes.expectations import Expectations
from trainop.core.observed import Observed
from trainop.core.plan import Event, Plan

log = logging.getLogger(__name__)


class KubernetesReconcileTarget:
    def __init__(
        self,
        client: KubeClient,
        cache: ClusterCache,
        recorder: EventRecorder,
        *,
        count_metric: Callable[[str, str, str], None] = lambda name, ns, framework: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.expectations: Expectations[JobKey] = Expectations()
        self._count = count_metric
        self._clock = clock
        # Keys of keyed events already sent, per job uid (core/plan.py: once per key and job).
        self._sent_keys: dict[str, set[str]] = {}
        self.applier = PlanApplier(
            client,
            emit=self._emit,
            remember_job=cache.remember_written_job,
            count_metric=self._count_for_job,
        )

    # --- wiring ----------------------------------------------------------------------------------------
    def on_owned_change(self, key: JobKey, kind: str, name: str, change: str) -> None:
        if change == "add":
            self.expectations.observed_add(key, (kind, name))
        elif change == "delete":
            self.expectations.observed_delete(key, (kind, name))

    # --- ReconcileTarget protocol (controller/jobs.py) ------------------------------------------------
    def pending(self, key: JobKey) -> float | None:
        now = self._clock()
        if self.expectations.satisfied(key, now):
            return None
        # Normally the informer event re-queues the job first; this is the fallback if it never comes.
        since = self.expectations.since(key)
        return max(0.0, self.expectations.ttl - (now - (now if since is None else since)))

    def observe(self, key: JobKey) -> Observed | None:
        obj = self.cache.get_job(key)
        if obj is None:
            self.expectations.forget(key)
            self._forget_keys(key)
            return None
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return None  # being deleted: GC removes the dependents (§4.3 step 2)
        try:
            job = parse_job(obj)
        except InvalidJobError as exc:
            # The CRD schema lets through what the models reject only in corner cases; say so on the job.
            log.warning("%s %s/%s cannot be read: %s", key[0], key[1], key[2], exc)
            self._emit(
                obj,
                Event("Warning", f"{key[0]}FailedValidation", f"{key[0]} failed validation because {exc}"),
            )
            return None
        owned = self.cache.owned_objects(job_uid(obj))
        extras = {k: v for k, v in owned.items() if k not in ("Pod", "Service")}
        return Observed(job=job, pods=owned.get("Pod", []), services=owned.get("Service", []), extras=extras)

    async def apply(self, key: JobKey, observed: Observed, plan: Plan) -> None:
        obj = self.cache.get_job(key)
        if obj is None:
            return
        out = await self.applier.apply(obj, plan)
        self._expect(key, out)

    def _expect(self, key: JobKey, out: ApplyOutcome) -> None:
        if not out.created and not out.deleted:
            return  # nothing to expect (most passes): no second look-up of the job's objects
        self.expectations.expect(key, now=self._clock(), adds=out.created, deletes=out.deleted)
        # Objects the informer already showed (fast watch) must not stay pending.
        uid = job_uid(self.cache.get_job(key) or {})
        if uid:
            owned = self.cache.owned_objects(uid)
            for kind, name in out.created:
                if any((o.get("metadata") or {}).get("name") == name for o in owned.get(kind, [])):
                    self.expectations.observed_add(key, (kind, name))
            for kind, name in out.deleted:
                if not any((o.get("metadata") or {}).get("name") == name for o in owned.get(kind, [])):
                    self.expectations.observed_delete(key, (kind, name))

    # --- sinks ----------------------------------------------------------------------------------------
    def _forget_keys(self, key: JobKey) -> None:
        # The job is gone from the cache; drop the keyed-event memory of every uid it had.
        self._sent_keys = {
            uid: keys for uid, keys in self._sent_keys.items() if not uid.startswith(f"{key}|")
        }

    def _emit(self, job: dict[str, Any], ev: Event) -> None:
        if ev.key is not None:
            mem = self._sent_keys.setdefault(f"{job_key_of(job)}|{job_uid(job)}", set())
            if ev.key in mem:
                return
            mem.add(ev.key)
        kind = str(job.get("kind"))
        component = KIND_INFO[kind].controller_name if kind in KIND_INFO else "trainop"
        self.recorder.record(job, ev.type, ev.reason, ev.message, component=component)

    def _count_for_job(self, name: str, job: dict[str, Any]) -> None:
        kind = str(job.get("kind"))
        framework = KIND_INFO[kind].framework if kind in KIND_INFO else kind.lower()
        ns = (job.get("metadata") or {}).get("namespace") or "default"
        self._count(name, ns, framework)
