"""PyTorchJob plugin: torchrun's env (§3.4), the ``init-pytorch`` wait-for-master init container, the
elastic HPA, and the success/failure rule of §4.4 (with and without Master, elastic shortcut).

Addresses come from the Topology, so the same env is right on Kubernetes and on the local backend.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ANCESTOR_TRAINER,
    API_VERSION,
    ENV_MASTER_ADDR,
    ENV_MASTER_PORT,
    ENV_PET_MASTER_ADDR,
    ENV_PET_MASTER_PORT,
    ENV_PET_MAX_RESTARTS,
    ENV_PET_NNODES,
    ENV_PET_NODE_RANK,
    ENV_PET_NPROC_PER_NODE,
    ENV_PET_RDZV_BACKEND,
    ENV_PET_RDZV_CONF,
    ENV_PET_RDZV_ENDPOINT,
    ENV_PET_RDZV_ID,
    ENV_PET_STANDALONE,
    ENV_RANK,
    ENV_WORLD_SIZE,
    FIELD_JOB_COMPLETION_INDEX,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    NODE,
    TORCH_RESERVED_ENV,
    TRAINER_PORT,
)
from trainop.api.errors import FieldError
from trainop.api.kinds import ElasticPolicy, PyTorchJobSpec
from trainop.core.convert import ConvertedTrainer
from trainop.core.naming import build_owner_reference
from trainop.core.topology import Topology
from trainop.core.trainjob import (
    PolicyContext,
    count_cpus,
    field_ref_env,
    reserved_env_error,
    upsert_env,
    upsert_port,
)
from trainop.frameworks.base import ConditionUpdate, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    generic_failure,
    peer_port,
    pod_spec_for_write,
    python_unbuffered,
    replicas_of,
    running_update,
    succeeded_update,
    total_replicas,
)

MASTER = "Master"
WORKER = "Worker"

# Operator flags of §6.4, as defaults of the plugin object.
DEFAULT_INIT_CONTAINER_IMAGE = "alpine:3.10"
DEFAULT_INIT_CONTAINER_MAX_TRIES = 100
INIT_CONTAINER_NAME = "init-pytorch"
DEFAULT_RDZV_BACKEND = "c10d"
# The c10d rendezvous setting that says whether an agent hosts the store (torch's rdzv_conf key).
RDZV_IS_HOST = "is_host"


def _spec(job: TrainingJob) -> PyTorchJobSpec:
    assert isinstance(job.spec, PyTorchJobSpec), f"not a PyTorchJob: {job.kind}"
    return job.spec


def nproc_per_node_int(spec: PyTorchJobSpec) -> int:
    """``P`` of §3.4: int(nprocPerNode), or 1 when unset or not an integer (``auto``, ``gpu``...)."""
    try:
        return int(spec.nproc_per_node) if spec.nproc_per_node is not None else 1
    except ValueError:
        return 1


def build_wait_for_master_script(master_addr: str, max_tries: int) -> str:
    """Shell for ``init-pytorch``: look the master up by name, up to ``max_tries`` times, 2 s apart."""
    return (
        f"tries=0; "
        f'until nslookup "{master_addr}"; do '
        f"tries=$((tries + 1)); "
        f'if [ "$tries" -ge {max_tries} ]; then echo "master {master_addr} not found"; exit 1; fi; '
        f"echo waiting for master; sleep 2; "
        f"done"
    )


class PyTorchPlugin(BasePlugin):
    """Capabilities: ``ExtraObjects`` (the elastic HPA, which carries no label of ours), ``LocalEnv``
    (which agent hosts the c10d store) and ``LocalNoopHelpers`` (``init-pytorch`` has nothing to wait
    for on one machine). Its Gloo, NCCL and TensorPipe loopback settings are every kind's."""

    kind: ClassVar[str] = "PyTorchJob"
    owned_kinds: tuple[str, ...] = ("HorizontalPodAutoscaler",)
    owned_labelled: bool = False
    # §3.4: init-pytorch waits until `<job>-master-0` resolves in cluster DNS; locally the master is the
    # loopback address.
    local_noop_helpers: Mapping[str, str] = MappingProxyType(
        {
            INIT_CONTAINER_NAME: "the master address is 127.0.0.1 on the local backend, so there is no "
            "DNS name to wait for"
        }
    )

    def __init__(
        self,
        init_container_image: str = DEFAULT_INIT_CONTAINER_IMAGE,
        init_container_max_tries: int = DEFAULT_INIT_CONTAINER_MAX_TRIES,
    ) -> None:
        super().__init__()
        # --pytorch-init-container-image / --pytorch-init-container-max-tries (§6.4).
        self.init_container_image = init_container_image
        self.init_container_max_tries = init_container_max_tries

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        # §3.1: Master-0 when a Master spec exists, else Worker-0.
        return index == 0 and rtype == (MASTER if MASTER in job.replica_specs else WORKER)

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """§3.4, in upstream's order: PYTHONUNBUFFERED; with a Master MASTER_PORT, PET_MASTER_PORT,
        MASTER_ADDR, PET_MASTER_ADDR, WORLD_SIZE, RANK, PET_NODE_RANK; PET_NPROC_PER_NODE; then either
        the elastic PET_RDZV_* block or PET_NNODES=N."""
        spec = _spec(job)
        n = total_replicas(job)
        env = [python_unbuffered()]
        if MASTER in job.replica_specs:
            port = str(peer_port(job, topology, self.info, MASTER, 0))
            addr = topology.host(job, MASTER, 0)
            rank = index + 1 if rtype == WORKER else index
            env += [
                env_var(ENV_MASTER_PORT, port),
                env_var(ENV_PET_MASTER_PORT, port),
                env_var(ENV_MASTER_ADDR, addr),
                env_var(ENV_PET_MASTER_ADDR, addr),
                env_var(ENV_WORLD_SIZE, str(n * nproc_per_node_int(spec))),
                env_var(ENV_RANK, str(rank)),
                env_var(ENV_PET_NODE_RANK, str(rank)),
            ]
        if spec.nproc_per_node is not None:
            env.append(env_var(ENV_PET_NPROC_PER_NODE, spec.nproc_per_node))
        if spec.elastic_policy is not None:
            env += self._elastic_env(job, spec.elastic_policy, topology)
        else:
            env.append(env_var(ENV_PET_NNODES, str(n)))
        return env

    def _elastic_env(self, job: TrainingJob, ep: ElasticPolicy, topology: Topology) -> list[dict[str, Any]]:
        # An explicit rdzvHost/rdzvPort is the user's choice and is used as written on both backends.
        host = ep.rdzv_host if ep.rdzv_host is not None else topology.host(job, WORKER, 0)
        port = ep.rdzv_port if ep.rdzv_port is not None else peer_port(job, topology, self.info, WORKER, 0)
        env = [
            env_var(ENV_PET_RDZV_ENDPOINT, f"{host}:{port}"),
            env_var(ENV_PET_RDZV_BACKEND, ep.rdzv_backend or DEFAULT_RDZV_BACKEND),
            env_var(ENV_PET_NNODES, self._nnodes(job, ep)),
        ]
        if ep.max_restarts is not None:
            env.append(env_var(ENV_PET_MAX_RESTARTS, str(ep.max_restarts)))
        if ep.n_proc_per_node is not None:  # deprecated since v1.7, still honoured
            env.append(env_var(ENV_PET_NPROC_PER_NODE, str(ep.n_proc_per_node)))
        if ep.rdzv_id is not None:
            env.append(env_var(ENV_PET_RDZV_ID, ep.rdzv_id))
        if ep.rdzv_conf:
            conf = ",".join(f"{c.key or ''}={c.value or ''}" for c in ep.rdzv_conf)
            env.append(env_var(ENV_PET_RDZV_CONF, conf))
        if ep.standalone:
            env.append(env_var(ENV_PET_STANDALONE, ""))
        return env

    @staticmethod
    def _nnodes(job: TrainingJob, ep: ElasticPolicy) -> str:
        # Defaulting fills min and max (§1.4 step 6); for an undefaulted job keep upstream's fallbacks.
        lo, hi = ep.min_replicas, ep.max_replicas
        if lo is None and hi is None:
            return str(replicas_of(job, WORKER))
        lo = lo if lo is not None else hi
        hi = hi if hi is not None else lo
        return f"{lo}:{hi}"

    def customize_pod(
        self, job: TrainingJob, rtype: str, index: int, pod: dict[str, Any], topology: Topology
    ) -> None:
        super().customize_pod(job, rtype, index, pod, topology)
        # §3.4: Worker pods wait for the master's name to resolve, only when a Master exists.
        if rtype == WORKER and MASTER in job.replica_specs:
            spec = pod_spec_for_write(pod)
            spec["initContainers"] = [
                *(spec.get("initContainers") or []),
                self.build_init_container(topology.host(job, MASTER, 0)),
            ]

    def build_init_container(self, master_addr: str) -> dict[str, Any]:
        return {
            "name": INIT_CONTAINER_NAME,
            "image": self.init_container_image,
            "imagePullPolicy": "IfNotPresent",
            "resources": {
                "limits": {"cpu": "100m", "memory": "20Mi"},
                "requests": {"cpu": "50m", "memory": "10Mi"},
            },
            "command": ["sh", "-c", build_wait_for_master_script(master_addr, self.init_container_max_tries)],
        }

    def build_extra_objects(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts], topology: Topology
    ) -> list[dict[str, Any]]:
        """The elastic HPA (§3.4) when ``elasticPolicy.metrics`` is set; nothing otherwise."""
        hpa = build_hpa(job)
        return [hpa] if hpa is not None else []

    def build_local_env(
        self, pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str], pod_ip: str
    ) -> dict[str, str]:
        return build_rdzv_host_conf(pod, env, pod_ip)

    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer:
        """torch-distributed: every pod a node (Master first), ``nprocPerNode`` processes each, the
        command under torchrun (which reads the PET_* variables)."""
        spec = _spec(job)
        notes = []
        nproc: int | None = nproc_per_node_int(spec)
        if spec.nproc_per_node is not None and not spec.nproc_per_node.isdigit():
            notes.append(
                f"nprocPerNode {spec.nproc_per_node!r}: numProcPerNode takes a number; unset, the torch "
                "policy counts the GPUs (or CPUs) of resourcesPerNode"
            )
            nproc = None
        if spec.elastic_policy is not None:
            notes.append(
                "elasticPolicy: Trainer v2 has no elastic TrainJob (removed in v2.2.0); nodes are fixed"
            )
        return ConvertedTrainer(
            runtime="torch-distributed",
            template_type=MASTER if MASTER in job.replica_specs else WORKER,
            container=self.info.default_container,
            num_nodes=total_replicas(job),
            num_proc_per_node=nproc,
            command_prefix=("torchrun", "--no-python"),
            keeps_command_when=("torchrun",),
            notes=tuple(notes),
        )

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 PyTorch: with a Master, Master running → Running and Master done → Succeeded (and stop,
        workers ignored); without, Worker done (or, elastic, any Worker succeeded) → Succeeded, else
        Worker running → Running. Every type then checks the generic failure rule."""
        elastic = _spec(job).elastic_policy is not None
        return compute_master_or_worker_conditions(self, job, counts, elastic_shortcut=elastic)


def compute_master_or_worker_conditions(
    plugin: BasePlugin, job: TrainingJob, counts: Mapping[str, ReplicaCounts], *, elastic_shortcut: bool
) -> list[ConditionUpdate]:
    """The status loop PyTorch and Paddle share (§4.4)."""
    out: list[ConditionUpdate] = []
    has_master = MASTER in job.replica_specs
    for rtype in plugin.status_order(job):
        c = plugin.counts_for(counts, rtype, job.replica_specs.get(rtype))
        if has_master:
            if rtype == MASTER:
                if c.active > 0:
                    out.append(running_update(job, namespaced=False))
                if c.expected == 0:
                    out.append(succeeded_update(job, namespaced=False))
                    return out  # upstream returns here: nothing after a Master success is looked at
        elif rtype == WORKER:
            if c.expected == 0 or (elastic_shortcut and c.succeeded > 0):
                out.append(succeeded_update(job, namespaced=True))
            elif c.active > 0:
                out.append(running_update(job, namespaced=True))
        out += generic_failure(job, rtype, c)
    return out


def build_rdzv_host_conf(pod: Mapping[str, Any], env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
    """``PET_RDZV_CONF`` with ``is_host`` for a c10d rendezvous at the local backend's ``pod_ip``:
    ``true`` on Worker 0 (whose address the endpoint names, §3.4), ``false`` on every other replica.

    On one machine every agent finds the endpoint's address to be its own, so without it whichever
    agent binds the port first hosts the store; on a cluster only worker-0's matches. An ``is_host``
    the user put in rdzvConf wins; another backend or endpoint is left to torch."""
    host, _, _ = env.get(ENV_PET_RDZV_ENDPOINT, "").rpartition(":")
    conf = env.get(ENV_PET_RDZV_CONF, "")
    keys = {item.partition("=")[0].strip() for item in conf.split(",")}
    if env.get(ENV_PET_RDZV_BACKEND) != DEFAULT_RDZV_BACKEND or host != pod_ip or RDZV_IS_HOST in keys:
        return {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    worker0 = labels.get(LABEL_REPLICA_TYPE) == WORKER.lower() and labels.get(LABEL_REPLICA_INDEX) == "0"
    entry = f"{RDZV_IS_HOST}={'true' if worker0 else 'false'}"
    return {ENV_PET_RDZV_CONF: f"{conf},{entry}" if conf else entry}


def build_hpa(job: TrainingJob) -> dict[str, Any] | None:
    """autoscaling/v2 HorizontalPodAutoscaler ``<job>`` scaling the job between the elastic bounds."""
    ep = _spec(job).elastic_policy
    if ep is None or ep.metrics is None:
        return None
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": job.kind, "name": job.name, "apiVersion": API_VERSION},
    }
    if ep.min_replicas is not None:
        spec["minReplicas"] = ep.min_replicas
    spec["maxReplicas"] = ep.max_replicas if ep.max_replicas is not None else ep.min_replicas
    spec["metrics"] = ep.metrics
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "ownerReferences": [build_owner_reference(job)],
        },
        "spec": spec,
    }


class TorchPolicy:
    """Trainer v2's ``mlPolicy.torch`` (kubeflow/trainer@v2.3.0 plugins/torch/torch.go): the node count
    from ``numNodes``, and torchrun's PET_* env on the trainer's ``node`` container (and on the
    ``envInjection`` targets): PET_NNODES, PET_NPROC_PER_NODE (``numProcPerNode``; ``auto`` becomes the
    CPU count when no GPU is asked for), PET_NODE_RANK from the Job completion index, and
    PET_MASTER_ADDR/PORT naming node 0. The same torchrun variables the PyTorchJob plugin writes.
    torchtune's command rewriting is not done: a ``tune run`` trainer keeps the command it was given."""

    ml_policy = "torch"

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]:
        errs = [
            FieldError(
                "spec.runtimeRef",
                f"Invalid value: {target.to_dict()}: envInjection target podSet "
                f'"{target.job_name}" container "{name}" not found in runtime template',
            )
            for target, name, container in _env_injection_targets(ctx)
            if container is None
        ]
        return errs + reserved_env_error(ctx.job, TORCH_RESERVED_ENV)

    def enforce_ml_policy(self, ctx: PolicyContext) -> None:
        """torch.go: the trainer's node count, the PET_* env on the trainer container (and on the
        envInjection targets), and the trainer port."""
        trainer = ctx.job.spec.trainer
        step = ctx.step_by_ancestor(ANCESTOR_TRAINER)
        if step is not None and trainer is not None and trainer.num_nodes is not None:
            step.count = trainer.num_nodes
        job = ctx.job.name
        pet = [
            env_var(ENV_PET_NNODES, str(step.count if step is not None else 1)),
            env_var(ENV_PET_NPROC_PER_NODE, _nproc_per_node(ctx)),
            field_ref_env(ENV_PET_NODE_RANK, FIELD_JOB_COMPLETION_INDEX),
        ]
        master = [
            env_var(ENV_PET_MASTER_ADDR, ctx.topology.host(job, NODE, 0, 0)),
            env_var(ENV_PET_MASTER_PORT, str(ctx.topology.port(job, NODE, 0, 0, TRAINER_PORT))),
        ]
        container = ctx.trainer_container()
        if container is not None and trainer is not None:
            upsert_env(container, ctx.trainer_env())
            upsert_env(container, pet)
            upsert_env(container, master)
            upsert_port(container, TRAINER_PORT)
        for _, _, c in _env_injection_targets(ctx):
            if c is not None:
                upsert_env(c, pet)
                upsert_env(c, master)


def _nproc_per_node(ctx: PolicyContext) -> str:
    """numProcPerNode as written; else ``auto`` with GPUs, or the CPUs per node (at least 1)."""
    trainer = ctx.job.spec.trainer
    if trainer is not None and trainer.num_proc_per_node is not None:
        return str(trainer.num_proc_per_node)
    if ctx.gpus_per_node():
        return "auto"
    return str(max(1, count_cpus(ctx.resources_per_node())))


def _env_injection_targets(ctx: PolicyContext) -> Iterator[tuple[Any, str, dict[str, Any] | None]]:
    """(target, container name, the container or None when the runtime has none) of each container the
    torch policy's envInjection targets name (init containers too)."""
    torch = ctx.runtime.spec.ml_policy.torch if ctx.runtime.spec.ml_policy else None
    for target in (torch.env_injection.targets or []) if torch and torch.env_injection else []:
        step = ctx.step(target.job_name or "")
        for name in target.container_names or []:
            container = step.container(name) or step.container(name, init=True) if step else None
            yield target, name, container


__all__ = [
    "PyTorchPlugin",
    "TorchPolicy",
    "build_hpa",
    "build_rdzv_host_conf",
    "build_wait_for_master_script",
]
