"""Fluent builders for jobs and pods, shared by every test (unit, integration, e2e, benchmarks).

``pytorch_job("a").master(1).workers(3).build()`` gives the RAW (undefaulted) job model, exactly what
a user's YAML would parse to; ``pod(job, "Worker", 0).running().build()`` gives Kubernetes Pod JSON
with the names, labels and ownerReference the core gives the pods it creates (§3.1, §6.2).
Test helpers only: no I/O, no clock (timestamps are fixed strings unless a test passes its own).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any, Self

from trainop.api.common import TrainingJob
from trainop.api.constants import API_VERSION
from trainop.api.kinds import JOB_MODELS, KIND_INFO
from trainop.core.naming import build_owner_reference
from trainop.core.plan import Action, CreateObject, UpdateObject
from trainop.core.topology import replica_name

# A fixed instant so that built objects compare equal across runs.
FIXED_TIME = "2024-01-01T00:00:00Z"


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _camel_keys(values: dict[str, Any]) -> dict[str, Any]:
    return {_camel(k): v for k, v in values.items()}


class JobBuilder:
    """Builds one job of any kind. Replica types keep the key spelling the test gives (``worker`` stays
    lower case, to exercise defaulting), in the order they were first mentioned."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.info = KIND_INFO[kind]
        self._meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"{name}-uid"}
        self._types: dict[str, dict[str, Any]] = {}
        self._container: dict[str, Any] = {}  # fields for every type's default container
        self._type_container: dict[str, dict[str, Any]] = {}
        self._extra_containers: dict[str, list[dict[str, Any]]] = {}
        self._init_containers: dict[str, list[dict[str, Any]]] = {}
        self._template_ops: list[tuple[str | None, Callable[[dict[str, Any]], None]]] = []
        self._spec: dict[str, Any] = {}
        self._run_policy: dict[str, Any] | None = None
        self._status: dict[str, Any] | None = None
        self._spec_restart: str | None = None  # restartPolicy for types without their own

    # --- metadata ---
    def namespace(self, ns: str) -> Self:
        self._meta["namespace"] = ns
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def labels(self, **labels: str) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotations(self, values: dict[str, str]) -> Self:
        self._meta.setdefault("annotations", {}).update(values)
        return self

    def meta(self, **fields: Any) -> Self:
        """Any other metadata field (snake_case), e.g. ``creation_timestamp=...``."""
        self._meta.update(_camel_keys(fields))
        return self

    # --- replica types ---
    def replicas(self, rtype: str, n: int | None, *, restart_policy: str | None = None) -> Self:
        """Declare ``rtype`` with ``n`` replicas (None leaves ``replicas`` unset, for defaulting tests)."""
        entry = self._types.setdefault(rtype, {})
        entry["replicas"] = n
        if restart_policy is not None:
            entry["restartPolicy"] = restart_policy
        return self

    def master(self, n: int | None = 1) -> Self:
        return self.replicas("Master", n)

    def workers(self, n: int | None) -> Self:
        return self.replicas("Worker", n)

    def ps(self, n: int | None) -> Self:
        return self.replicas("PS", n)

    def chief(self, n: int | None = 1) -> Self:
        return self.replicas("Chief", n)

    def evaluator(self, n: int | None = 1) -> Self:
        return self.replicas("Evaluator", n)

    def launcher(self, n: int | None = 1) -> Self:
        return self.replicas("Launcher", n)

    def restart_policy(self, policy: str, rtype: str | None = None) -> Self:
        """Replica-spec restartPolicy for ``rtype``, or for every type declared so far and later."""
        if rtype is not None:
            self._types.setdefault(rtype, {"replicas": 1})["restartPolicy"] = policy
        else:
            self._spec_restart = policy
        return self

    # --- the default container and the template ---
    def image(self, image: str, rtype: str | None = None) -> Self:
        return self._set_container(rtype, image=image)

    def command(self, command: list[str], rtype: str | None = None) -> Self:
        return self._set_container(rtype, command=list(command))

    def env(self, name: str, value: str, rtype: str | None = None) -> Self:
        target = self._container if rtype is None else self._type_container.setdefault(rtype, {})
        target.setdefault("env", []).append({"name": name, "value": value})
        return self

    def port(self, port: int, name: str | None = None, rtype: str | None = None) -> Self:
        """Declare a port on the default container (name defaults to the kind's port name)."""
        target = self._container if rtype is None else self._type_container.setdefault(rtype, {})
        target.setdefault("ports", []).append({"name": name or self.info.port_name, "containerPort": port})
        return self

    def gpu(self, rtype: str, count: int = 1, resource: str = "nvidia.com/gpu") -> Self:
        target = self._type_container.setdefault(rtype, {})
        target.setdefault("resources", {}).setdefault("limits", {})[resource] = str(count)
        return self

    def container(self, rtype: str, **fields: Any) -> Self:
        """An additional container (after the default one) in ``rtype``'s template."""
        self._extra_containers.setdefault(rtype, []).append(_camel_keys(fields))
        return self

    def init_container(self, rtype: str, **fields: Any) -> Self:
        self._init_containers.setdefault(rtype, []).append(_camel_keys(fields))
        return self

    def template(self, fn: Callable[[dict[str, Any]], None], rtype: str | None = None) -> Self:
        """Escape hatch: ``fn`` edits the finished template of ``rtype`` (or every type) in place."""
        self._template_ops.append((rtype, fn))
        return self

    def _set_container(self, rtype: str | None, **fields: Any) -> Self:
        target = self._container if rtype is None else self._type_container.setdefault(rtype, {})
        target.update(fields)
        return self

    # --- spec fields ---
    def spec(self, **fields: Any) -> Self:
        """Any other spec field (snake_case), e.g. ``spec(main_container="mpi")``."""
        self._spec.update(_camel_keys(fields))
        return self

    def run_policy(self, **fields: Any) -> Self:
        """runPolicy fields in snake_case: ``run_policy(backoff_limit=3, clean_pod_policy="All")``."""
        rp = self._run_policy = self._run_policy or {}
        for k, v in fields.items():
            rp[_camel(k)] = _camel_keys(v) if k == "scheduling_policy" and isinstance(v, dict) else v
        return self

    def suspend(self, flag: bool = True) -> Self:
        return self.run_policy(suspend=flag)

    def managed_by(self, value: str) -> Self:
        return self.run_policy(managed_by=value)

    def elastic(
        self,
        min: int | None = None,
        max: int | None = None,
        *,
        rdzv_conf: dict[str, str] | None = None,
        **fields: Any,
    ) -> Self:
        """elasticPolicy: ``elastic(min=1, max=3, rdzv_conf={"timeout": "900"}, rdzv_backend="c10d")``."""
        policy: dict[str, Any] = _camel_keys(fields)
        if min is not None:
            policy["minReplicas"] = min
        if max is not None:
            policy["maxReplicas"] = max
        if rdzv_conf is not None:
            policy["rdzvConf"] = [{"key": k, "value": v} for k, v in rdzv_conf.items()]
        self._spec["elasticPolicy"] = policy
        return self

    def nproc_per_node(self, value: str) -> Self:
        return self.spec(nproc_per_node=value)

    def success_policy(self, value: str) -> Self:
        return self.spec(success_policy=value)

    def dynamic_worker(self, flag: bool = True) -> Self:
        return self.spec(enable_dynamic_worker=flag)

    def slots_per_worker(self, n: int) -> Self:
        return self.spec(slots_per_worker=n)

    # --- status ---
    def condition(
        self, type: str, status: str = "True", reason: str | None = None, message: str | None = None
    ) -> Self:
        """Append a condition; reason defaults to ``<Kind><Type>`` as upstream writes it (§4.1)."""
        st = self._status = self._status or {}
        cond: dict[str, Any] = {
            "type": type,
            "status": status,
            "reason": reason if reason is not None else f"{self.kind}{type}",
            "message": message if message is not None else "",
            "lastUpdateTime": FIXED_TIME,
            "lastTransitionTime": FIXED_TIME,
        }
        st.setdefault("conditions", []).append(cond)
        return self

    def status(self, **fields: Any) -> Self:
        """Other status fields (snake_case): ``status(start_time="2024-01-01T00:00:00Z")``."""
        st = self._status = self._status or {}
        for k, v in fields.items():
            st[_camel(k)] = v.isoformat() if isinstance(v, datetime) else v
        return self

    # --- output ---
    def build_dict(self) -> dict[str, Any]:
        """The job as the Kubernetes JSON a user would apply (plus status when set)."""
        default_restart = self._spec_restart
        replica_specs: dict[str, Any] = {}
        for rtype, entry in self._types.items():
            container: dict[str, Any] = {
                "name": self.info.default_container,
                "image": f"example.com/{self.info.framework}:test",
            }
            for src in (self._container, self._type_container.get(rtype, {})):
                for k, v in src.items():
                    if k in ("env", "ports") and k in container:
                        container[k] = [*container[k], *copy.deepcopy(v)]
                    else:
                        container[k] = copy.deepcopy(v)
            pod_spec: dict[str, Any] = {
                "containers": [container, *copy.deepcopy(self._extra_containers.get(rtype, []))]
            }
            if rtype in self._init_containers:
                pod_spec["initContainers"] = copy.deepcopy(self._init_containers[rtype])
            template: dict[str, Any] = {"spec": pod_spec}
            for only, fn in self._template_ops:
                if only is None or only == rtype:
                    fn(template)
            rs: dict[str, Any] = {}
            if entry.get("replicas") is not None:
                rs["replicas"] = entry["replicas"]
            policy = entry.get("restartPolicy", default_restart)
            if policy is not None:
                rs["restartPolicy"] = policy
            rs["template"] = template
            replica_specs[rtype] = rs
        spec: dict[str, Any] = {self.info.replica_map: replica_specs, **copy.deepcopy(self._spec)}
        if self._run_policy is not None:
            spec["runPolicy"] = copy.deepcopy(self._run_policy)
        obj: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "metadata": copy.deepcopy(self._meta),
            "spec": spec,
        }
        if self._status is not None:
            obj["status"] = copy.deepcopy(self._status)
        return obj

    def build(self) -> TrainingJob:
        """The RAW job model (core and tests apply ``trainop.api.defaults`` themselves)."""
        return JOB_MODELS[self.kind].model_validate(self.build_dict())


# ``pytorch_job(name)``: a builder of that kind.
pytorch_job = functools.partial(JobBuilder, "PyTorchJob")
tf_job = functools.partial(JobBuilder, "TFJob")
xgboost_job = functools.partial(JobBuilder, "XGBoostJob")
mpi_job = functools.partial(JobBuilder, "MPIJob")
paddle_job = functools.partial(JobBuilder, "PaddleJob")
jax_job = functools.partial(JobBuilder, "JAXJob")
job_builder = JobBuilder


# The single controller ownerReference every owned object carries (§6.2), as core builds it.
owner_reference = build_owner_reference


class PodBuilder:
    """A pod of ``job`` as core would have created it, then moved through phases by a test."""

    def __init__(self, job: TrainingJob, rtype: str, index: int) -> None:
        self.job = job
        self.rtype = rtype
        self.index = index
        self._phase = "Pending"
        self._state: dict[str, Any] | None = None  # state of every container
        self._restart_count = 0
        self._meta: dict[str, Any] = {}
        self._labels: dict[str, str] = {}
        self._owner: dict[str, Any] | None = owner_reference(job)
        self._conditions: list[dict[str, Any]] = []
        self._container_statuses = True
        self._reason: str | None = None

    def pending(self) -> Self:
        self._phase, self._state = "Pending", {"waiting": {"reason": "ContainerCreating"}}
        return self

    def running(self) -> Self:
        self._phase, self._state = "Running", {"running": {"startedAt": FIXED_TIME}}
        return self

    def succeeded(self, exit_code: int = 0) -> Self:
        self._phase, self._state = "Succeeded", _terminated(exit_code, "Completed")
        return self

    def failed(self, exit_code: int = 1, reason: str = "Error", message: str | None = None) -> Self:
        self._phase, self._state = "Failed", _terminated(exit_code, reason, message)
        return self

    def phase(self, phase: str) -> Self:
        """Set the phase only (e.g. ``Unknown``, or ``Failed`` with no container statuses: an eviction)."""
        self._phase = phase
        return self

    def terminated(self, exit_code: int, reason: str = "Error", message: str | None = None) -> Self:
        """The containers' last state is terminated with ``exit_code``, whatever the phase."""
        self._state = _terminated(exit_code, reason, message)
        return self

    def waiting(self, reason: str, message: str = "") -> Self:
        self._state = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        return self

    def no_container_statuses(self) -> Self:
        self._container_statuses = False
        return self

    def restart_count(self, n: int) -> Self:
        self._restart_count = n
        return self

    def deleting(self, at: str = FIXED_TIME) -> Self:
        self._meta["deletionTimestamp"] = at
        return self

    def condition(self, type: str, status: str, reason: str = "", message: str = "") -> Self:
        self._conditions.append({"type": type, "status": status, "reason": reason, "message": message})
        return self

    def labels(self, **labels: str) -> Self:
        self._labels.update(labels)
        return self

    def owned_by(self, uid: str | None) -> Self:
        """Another controller's uid (an orphan/foreign pod), or None for no ownerReference."""
        self._owner = None if uid is None else {**owner_reference(self.job), "uid": uid}
        return self

    def reason(self, reason: str) -> Self:
        """``status.reason`` of the pod, e.g. ``Evicted``."""
        self._reason = reason
        return self

    def build(self) -> dict[str, Any]:
        # Late import: the registry is a higher layer than this module's other imports need.
        from trainop.frameworks.registry import REGISTRY

        plugin = REGISTRY.get(self.job.kind)
        rspec = self.job.replica_specs.get(self.rtype)
        template = copy.deepcopy(rspec.template) if rspec is not None else {}
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels.update(plugin.pod_labels(self.job, self.rtype, self.index))
        labels.update(self._labels)
        meta: dict[str, Any] = {
            "name": plugin.pod_name(self.job, self.rtype, self.index),
            "namespace": self.job.namespace,
            "uid": f"{plugin.pod_name(self.job, self.rtype, self.index)}-uid",
            "labels": labels,
        }
        # §3.1: annotations and finalizers are the only other template metadata a pod gets.
        for key in ("annotations", "finalizers"):
            value = (template.get("metadata") or {}).get(key)
            if value:
                meta[key] = value
        meta.update(self._meta)
        if self._owner is not None:
            meta["ownerReferences"] = [self._owner]
        spec = dict(template.get("spec") or {})
        policy = (rspec.restart_policy if rspec is not None else None) or plugin.info.default_restart_policy
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        status: dict[str, Any] = {"phase": self._phase}
        if self._conditions:
            status["conditions"] = self._conditions
        if self._reason is not None:
            status["reason"] = self._reason
        state = self._state if self._state is not None else {"waiting": {"reason": "ContainerCreating"}}
        if self._container_statuses:
            status["containerStatuses"] = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "ready": "running" in state,
                    "restartCount": self._restart_count,
                    "state": copy.deepcopy(state),
                }
                for c in spec.get("containers") or []
            ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _terminated(exit_code: int, reason: str, message: str | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": FIXED_TIME,
        "finishedAt": FIXED_TIME,
    }
    if message is not None:
        term["message"] = message
    return {"terminated": term}


def pod(job: TrainingJob | JobBuilder, rtype: str, index: int = 0) -> PodBuilder:
    """``pod(job, "Worker", 0).running().build()``; ``job`` may be a builder (it is built first)."""
    built = job.build() if isinstance(job, JobBuilder) else job
    return PodBuilder(built, rtype, index)


__all__ = [
    "FIXED_TIME",
    "JobBuilder",
    "PodBuilder",
    "jax_job",
    "job_builder",
    "mpi_job",
    "owner_reference",
    "paddle_job",
    "pod",
    "pytorch_job",
    "replica_name",
    "tf_job",
    "xgboost_job",
]


def written(action: Action) -> dict[str, Any]:
    """The object a create or update action writes (tests read its fields); any other action fails."""
    assert isinstance(action, CreateObject | UpdateObject), f"{type(action).__name__} writes no object"
    return action.obj
