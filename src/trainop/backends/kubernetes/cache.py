"""The operator's view of the cluster: one informer per enabled job kind and per owned object kind.

Owned objects are selected server-side by label (so unrelated pods never reach memory): pods and
Services by ``training.kubeflow.org/operator-name`` in the enabled controllers' names; the other
kinds a plugin owns (its ``ExtraObjects`` capability: MPI's ConfigMaps, ServiceAccounts, Roles and
RoleBindings, PyTorch's HPAs) by the existence of ``app`` when the plugin labels them, and each is
kept only if a job of a kind that owns it controls it. Every change is mapped to the key of the job
that controls the object (contract §6.1: the controller ref must resolve to the cached job's uid).
Cached pods and Services keep only the scalar fields of their ``spec`` (``slim_owned``). I/O adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from lightkube import operators

from trainop.api.constants import API_VERSION, LABEL_APP, LABEL_OPERATOR_NAME
from trainop.api.kinds import KIND_INFO
from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes import shapes
from trainop.backends.kubernetes.client import KubeClient
from trainop.backends.kubernetes.informer import Handlers, Informer, Obj, compact_object, controller_ref
from trainop.core.plugin import FrameworkPlugin, capabilities
from trainop.frameworks.registry import REGISTRY

JobKey = tuple[str, str, str]  # (kind, namespace, name)

# (job key, Kubernetes kind of the owned object, its name, "add" | "update" | "delete")
OwnedChange = Callable[[JobKey, str, str, str], None]


def job_key_of(obj: Obj) -> JobKey:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), meta.get("namespace") or "", meta.get("name") or "")


def owner_job_key(obj: Obj, kinds: set[str]) -> tuple[JobKey, str] | None:
    """(key, uid) of the job controlling ``obj``, if a kubeflow.org/v1 job of an enabled kind does."""
    ref = controller_ref(obj)
    if ref is None or ref.get("apiVersion") != API_VERSION or ref.get("kind") not in kinds:
        return None
    ns = (obj.get("metadata") or {}).get("namespace") or ""
    return (str(ref["kind"]), ns, str(ref.get("name"))), str(ref.get("uid"))


def _owned_by_a_job(kinds: set[str]) -> Callable[[Obj], Obj | None]:
    def transform(obj: Obj) -> Obj | None:
        return None if owner_job_key(obj, kinds) is None else compact_object(obj)

    return transform


def slim_owned(obj: Obj) -> Obj:
    """A cached pod or Service: ``compact_object`` with only the scalar fields of its ``spec``
    (nodeName, restartPolicy, schedulerName, clusterIP, ...).

    The core decides from a pod's metadata and status and a Service's metadata (contract §4.2, §6.1:
    names, labels, owner, deletion, phase, container states); it never reads their ``spec``, whose
    containers, env, volumes and tolerations are about 60 % of a cached pod. Pods and Services are
    never written back from the cache (a changed pod is deleted and created again).
    """
    spec = obj.get("spec")
    if isinstance(spec, dict):
        obj = {**obj, "spec": {k: v for k, v in spec.items() if not isinstance(v, (dict, list))}}
    return compact_object(obj)


class ClusterCache:
    def __init__(
        self,
        client: KubeClient,
        kinds: list[str],
        *,
        namespace: str | None = None,
        pod_group: Any | None = None,
        plugins: Mapping[str, FrameworkPlugin] | None = None,
    ) -> None:
        """``plugins``: the enabled kinds' plugins (default: ``REGISTRY``'s); their capabilities say
        which other kinds of object to watch."""
        unknown = [k for k in kinds if k not in KIND_INFO]
        if unknown:
            raise ValueError(f"unknown job kinds {unknown}; known: {sorted(KIND_INFO)}")
        self.kinds = list(kinds)
        self.namespace = namespace or None
        self.jobs: dict[str, Informer] = {
            kind: Informer(client, r.JOB_RESOURCES[kind], namespace=self.namespace, name=kind)
            for kind in kinds
        }
        controllers = sorted(KIND_INFO[k].controller_name for k in kinds)
        selector = {LABEL_OPERATOR_NAME: operators.in_(controllers)}
        self.owned: dict[str, Informer] = {
            kind: Informer(
                client,
                resource,
                namespace=self.namespace,
                labels=selector,
                transform=slim_owned,
                name=kind,
                watch_decoder=shapes.watch_decoder(kind),  # what slim_owned keeps, decoded directly
            )
            for kind, resource in (("Pod", r.Pod), ("Service", r.Service))
        }
        # Owned kind → (the job kinds that own it, whether all of them label it with ``app``).
        extra: dict[str, tuple[set[str], bool]] = {}
        for job_kind in kinds:
            plugin = plugins[job_kind] if plugins is not None else REGISTRY.get(job_kind)
            caps = capabilities(plugin).extra_objects
            if caps is None:
                continue
            for kind in caps.owned_kinds:
                owners, labelled = extra.get(kind, (set(), True))
                extra[kind] = (owners | {job_kind}, labelled and caps.owned_labelled)
        for kind, (owners, labelled) in extra.items():
            # Without a label to select on (the HPA, §3.4) they are filtered after decoding.
            self.owned[kind] = Informer(
                client,
                r.OWNED_RESOURCES[kind],
                namespace=self.namespace,
                labels={LABEL_APP: operators.exists()} if labelled else None,
                transform=_owned_by_a_job(owners),
                name=kind,
            )

        if pod_group is not None:
            # Gang scheduling (§5): the PodGroups' phase drives reconciles (Volcano's admission gates
            # pod creation). PodGroups carry no label of ours; filtered on the ownerReference.
            self.owned["PodGroup"] = Informer(
                client,
                pod_group,
                namespace=self.namespace,
                transform=_owned_by_a_job(set(kinds)),
                name="PodGroup",
            )
            # minResources counts the replica types by PriorityClass value, highest first (§5): the
            # lister upstream declares but never starts (§9.10). Read only, no reconcile on change.
            self.priority_classes: Informer | None = Informer(client, r.PriorityClass, name="PriorityClass")
        else:
            self.priority_classes = None

    def informers(self) -> list[Informer]:
        extra = [self.priority_classes] if self.priority_classes is not None else []
        return [*self.jobs.values(), *self.owned.values(), *extra]

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for inf in self.informers():
                tg.create_task(inf.run(), name=f"informer-{inf.name}")

    async def wait_synced(self) -> None:
        await asyncio.gather(*(inf.synced.wait() for inf in self.informers()))

    @property
    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.informers())

    # --- reads ---------------------------------------------------------------------------------
    def get_job(self, key: JobKey) -> Obj | None:
        kind, ns, name = key
        inf = self.jobs.get(kind)
        return inf.store.get(ns, name) if inf else None

    def job_keys(self) -> list[JobKey]:
        return [(kind, ns, name) for kind, inf in self.jobs.items() for (ns, name) in inf.store.objects]

    def owned_objects(self, uid: str) -> dict[str, list[Obj]]:
        """The objects job ``uid`` controls, by kind; with gang scheduling also every PriorityClass
        (``PriorityClass``, not owned: what the PodGroup's minResources reads, core/gang.py)."""
        owned = {kind: inf.store.owned_by(uid) for kind, inf in self.owned.items()}
        if self.priority_classes is not None:
            owned["PriorityClass"] = list(self.priority_classes.store.objects.values())
        return owned

    def remember_written_job(self, obj: Obj) -> None:
        inf = self.jobs.get(str(obj.get("kind")))
        if inf is not None:
            inf.put_newer(obj)

    # --- change routing ---------------------------------------------------------------------------
    def subscribe(
        self,
        enqueue: Callable[[JobKey], None],
        on_owned: OwnedChange | None = None,
        *,
        enqueue_owned: Callable[[JobKey], None] | None = None,
    ) -> None:
        """Call ``enqueue(job key)`` on every change of a job, and ``enqueue_owned`` (default:
        ``enqueue``) on every change of an object a job controls."""
        enqueue_for_owned = enqueue_owned or enqueue
        kinds = set(self.kinds)

        def job_changed(obj: Obj, *_: Obj) -> None:
            enqueue(job_key_of(obj))

        def job_updated(old: Obj, new: Obj) -> None:
            if _rv(old) == _rv(new):
                # The cache already held this very version: the one the operator stored after its own
                # status write (put_newer), now echoed by the watch. The pass that wrote it decided on
                # everything it holds; queueing the job again only repeated that pass (issue 16: at
                # 500 x (1+3) every job update is such an echo, one per status write).
                return
            enqueue(job_key_of(new))

        for inf in self.jobs.values():
            inf.add_handlers(Handlers(on_add=job_changed, on_update=job_updated, on_delete=job_changed))

        def owned_handler(kind: str, change: str) -> Callable[..., None]:
            def handle(*objs: Obj) -> None:
                obj = objs[-1]
                if change == "update" and _rv(objs[0]) == _rv(obj):
                    return  # resync without a change
                owner = owner_job_key(obj, kinds)
                if owner is None:
                    return
                key, uid = owner
                job = self.get_job(key)
                # An object whose owner uid is not the cached job's belongs to a deleted namesake.
                if job is not None and (job.get("metadata") or {}).get("uid") != uid:
                    return
                name = (obj.get("metadata") or {}).get("name") or ""
                if on_owned is not None:
                    on_owned(key, kind, name, change)
                if job is not None:
                    enqueue_for_owned(key)

            return handle

        for kind, inf in self.owned.items():
            inf.add_handlers(
                Handlers(*(owned_handler(kind, change) for change in ("add", "update", "delete")))
            )


def _rv(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


def job_uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")
