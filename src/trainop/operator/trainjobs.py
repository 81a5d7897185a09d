"""The operator's TrainJob controller: Kubeflow Trainer v2 TrainJobs reconciled into pods, one headless
Service and the runtime's objects, without a JobSet (docs/compatibility.md says what that changes).

Level-triggered and small: watches on TrainJobs and on the pods labelled with a JobSet name wake it;
each pass lists the jobs, resolves each one on its (Cluster)TrainingRuntime (``core.trainjob``),
decides with ``core.trainjob_status.reconcile_trainjob`` and applies: creates what is missing
(AlreadyExists is success), deletes the pods the plan names, merge-patches the status when it changed.
TrainJobs managed by MultiKueue are left alone, as are jobs whose runtime is missing (retried).
The only randomness is MPI's SSH key pair, made here (the resolver lists the Secret without keys).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.types import PatchType

from trainop.api.constants import (
    ANNOTATION_JOBSET_RESTARTS,
    KIND_CLUSTER_TRAINING_RUNTIME,
    KIND_TRAINING_RUNTIME,
    KIND_TRAINJOB,
    LABEL_JOBSET_NAME,
    MANAGED_BY_MULTIKUEUE,
    REASON_RUNTIME_NOT_SUPPORTED,
    TRAINER_GROUP,
    TRAINER_VERSION,
)
from trainop.api.errors import InvalidJobError
from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import parse_trainer_object
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import is_served, tolerate
from trainop.core.naming import build_owner_reference
from trainop.core.trainjob import (
    JobSetTopology,
    RuntimeResolutionError,
    find_runtime,
    resolve_trainjob,
)
from trainop.core.trainjob_status import reconcile_trainjob, set_condition
from trainop.frameworks.registry import REGISTRY

if TYPE_CHECKING:
    from trainop.operator.progress import PodPreparer

log = logging.getLogger(__name__)

TrainJobResource: Any = create_namespaced_resource(TRAINER_GROUP, TRAINER_VERSION, KIND_TRAINJOB, "trainjobs")
TrainingRuntimeResource: Any = create_namespaced_resource(
    TRAINER_GROUP, TRAINER_VERSION, KIND_TRAINING_RUNTIME, "trainingruntimes"
)
ClusterTrainingRuntimeResource: Any = create_global_resource(
    TRAINER_GROUP, TRAINER_VERSION, KIND_CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes"
)
RESYNC = 10.0  # seconds between full passes when nothing wakes the controller
_OBJECTS = {
    "Service": r.Service,
    "ConfigMap": r.ConfigMap,
    "Secret": r.Secret,
    "PersistentVolumeClaim": r.PersistentVolumeClaim,
    "PodGroup": r.PluginsPodGroup,
}


def _as_dict(obj: Any) -> dict[str, Any]:
    """A listed object as JSON (lightkube's generic resources are dicts already)."""
    return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)


def build_ssh_secret_data() -> dict[str, str]:
    """An ECDSA P-521 key pair for MPI's SSH (ssh-privatekey PEM, ssh-publickey in authorized_keys
    form), base64 for a Secret's data, as upstream's mpi plugin makes it."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return {
        "ssh-privatekey": base64.b64encode(private).decode(),
        "ssh-publickey": base64.b64encode(public + b"\n").decode(),
    }


class TrainJobController:
    def __init__(
        self,
        api: AsyncClient,
        namespace: str | None = None,
        clock: Callable[[], datetime] | None = None,
        *,
        pods: PodPreparer | None = None,
    ) -> None:
        self.api = api
        self.pods = pods  # --trainer-progress: the contract's env, volume and CA ConfigMap
        self._listed: set[tuple[str, str]] = set()  # (namespace, name) of the last pass's TrainJobs
        self.namespace = namespace or "*"
        self.clock = clock or (lambda: datetime.now(UTC))
        self.wake = asyncio.Event()

    async def installed(self) -> bool:
        """Whether the TrainJob CRD is served (the controller stays off otherwise)."""
        return await is_served(self.api, TrainJobResource, self.namespace)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._watch(TrainJobResource, None))
            tg.create_task(self._watch(r.Pod, LABEL_JOBSET_NAME))
            while True:
                self.wake.clear()
                try:
                    requeue = await self.sync_all()
                except Exception:  # the API server refused a list: the v1 controller must go on
                    log.exception("trainjobs: pass failed; retrying")
                    requeue = 2.0
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), timeout=min(RESYNC, requeue or RESYNC))

    async def _watch(self, res: Any, label: str | None) -> None:
        labels: dict[str, Any] | None = {label: None} if label else None
        while True:
            try:
                async for _ in self.api.watch(res, namespace=self.namespace, labels=labels):
                    self.wake.set()
            except Exception as exc:  # a dropped watch: start again shortly
                log.debug("trainjob watch on %s ended: %s", res, exc)
            self.wake.set()
            await asyncio.sleep(1.0)

    async def sync_all(self) -> float | None:
        """One pass over every TrainJob; the soonest requeue any of them asked for."""
        runtimes = await self._runtimes()
        soonest: float | None = None
        listed: set[tuple[str, str]] = set()
        async for obj in self.api.list(TrainJobResource, namespace=self.namespace):
            raw = _as_dict(obj)
            ns, name = raw["metadata"].get("namespace"), raw["metadata"].get("name")
            listed.add((ns, name))
            try:
                after = await self.sync(raw, runtimes)
            except Exception:
                log.exception("trainjob %s/%s: reconcile failed", ns, name)
                after = 2.0
            if after is not None:
                soonest = after if soonest is None else min(soonest, after)
        if self.pods is not None:
            for ns, name in self._listed - listed:
                self.pods.forget(KIND_TRAINJOB, ns, name)
        self._listed = listed
        return soonest

    async def _runtimes(self) -> list[TrainingRuntime]:
        out: list[TrainingRuntime] = []
        for res, ns in ((ClusterTrainingRuntimeResource, None), (TrainingRuntimeResource, self.namespace)):
            try:
                it = self.api.list(res, namespace=ns) if ns else self.api.list(res)
                async for obj in it:
                    raw = _as_dict(obj)
                    with contextlib.suppress(InvalidJobError):
                        model = parse_trainer_object(raw)
                        if isinstance(model, TrainingRuntime):
                            out.append(model)
            except ApiError as exc:
                if exc.status.code != 404:
                    raise
        return out

    async def sync(self, raw: dict[str, Any], runtimes: list[TrainingRuntime]) -> float | None:
        job = parse_trainer_object(raw)
        assert isinstance(job, TrainJob)
        if job.spec.managed_by == MANAGED_BY_MULTIKUEUE:
            return None
        status = job.status.to_dict() if job.status is not None else {}
        try:
            runtime = find_runtime(job, runtimes)
            resolved = resolve_trainjob(job, runtime, REGISTRY, JobSetTopology())
        except RuntimeResolutionError as exc:
            if any(e.message.startswith("unsupported runtime") for e in exc.errors):
                new = dict(status)
                set_condition(new, "Failed", "True", REASON_RUNTIME_NOT_SUPPORTED, str(exc), self.clock())
                await self._write_status(job, status, new)
                return None
            log.info("trainjob %s/%s: %s", job.namespace, job.name, exc)
            return 5.0
        ns = job.namespace
        pods = [
            _as_dict(p)
            async for p in self.api.list(r.Pod, namespace=ns, labels={LABEL_JOBSET_NAME: job.name})
        ]
        plan = reconcile_trainjob(resolved, pods, self.clock())
        owner = build_owner_reference(job)
        for obj in plan.create_objects:
            obj = dict(obj)
            obj.setdefault("metadata", {})["namespace"] = ns
            obj["metadata"].setdefault("ownerReferences", [owner])
            if obj.get("kind") == "Secret" and "data" not in obj:
                obj["data"] = build_ssh_secret_data()
            await tolerate(self.api.create(_OBJECTS[obj["kind"]](obj)), 409)
        if self.pods is not None and plan.create_pods:
            await self.pods.prepare(owner, ns, "trainjobs", plan.create_pods)
        for pod in plan.create_pods:
            pod["metadata"]["ownerReferences"] = [owner]
            await tolerate(self.api.create(r.Pod(pod)), 409)
        if plan.restarts is not None:  # recorded first: a crash before the deletes must not lose it
            await self.api.patch(
                TrainJobResource,
                job.name,
                {"metadata": {"annotations": {ANNOTATION_JOBSET_RESTARTS: str(plan.restarts)}}},
                namespace=ns,
                patch_type=PatchType.MERGE,
            )
            log.info("trainjob %s/%s: restarting every pod (attempt %d)", ns, job.name, plan.restarts)
        for name in plan.delete_pods:
            with contextlib.suppress(ApiError):
                await self.api.delete(r.Pod, name, namespace=ns)
        await self._write_status(job, status, plan.status)
        return plan.requeue_after

    async def _write_status(self, job: TrainJob, old: dict[str, Any], new: dict[str, Any]) -> None:
        if new == old:
            return
        # trainerStatus is the progress endpoint's (operator/progress.py): a pass never writes back
        # the copy it read, which a post may have replaced since.
        patch = {k: v for k, v in new.items() if k != "trainerStatus"}
        await self.api.patch(
            TrainJobResource.Status,
            job.name,
            {"status": patch},
            namespace=job.namespace,
            patch_type=PatchType.MERGE,
        )
