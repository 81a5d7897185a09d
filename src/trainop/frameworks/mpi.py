"""MPIJob (v1) plugin: kubectl-exec based Open MPI (§3.9). Worker pods idle until the launcher's
``mpirun`` reaches them through ``kubexec.sh``; the launcher gets the hostfile, the rsh agent and RBAC.

The file names, mount paths and ConfigMap content below are module constants and pure builders so the
local backend can materialise the same files. MPI creates no Services and never restarts failed pods
itself (§4.4). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ENV_I_MPI_HYDRA_BOOTSTRAP,
    ENV_I_MPI_HYDRA_BOOTSTRAP_EXEC,
    ENV_NVIDIA_DRIVER_CAPABILITIES,
    ENV_NVIDIA_VISIBLE_DEVICES,
    ENV_OMPI_BTL_TCP_IF_EXCLUDE,
    ENV_OMPI_BTL_TCP_IF_INCLUDE,
    ENV_OMPI_DEFAULT_SLOTS,
    ENV_OMPI_HOSTFILE,
    ENV_OMPI_KEEP_FQDN,
    ENV_OMPI_OOB_TCP_IF_EXCLUDE,
    ENV_OMPI_OOB_TCP_IF_INCLUDE,
    ENV_OMPI_RSH_AGENT,
    ENV_OMPI_RSH_ARGS,
    ENV_TMPDIR,
    LABEL_APP,
    LABEL_REPLICA_INDEX,
    LOOPBACK_IFNAME,
    MPI_HOSTFILE_DIR,
    MPI_HOSTFILE_NAME,
    MPI_HOSTFILE_SUFFIX,
    MPI_HOSTFILE_VOLUME,
    MPI_RESERVED_ENV,
    MPI_SSH_AUTH_SUFFIX,
    MPI_SSH_AUTH_VOLUME,
    NODE,
    OMPI_RSH_ARGS_DEFAULT,
    RESTART_EXIT_CODE,
)
from trainop.api.constants import LAUNCHER as STEP_LAUNCHER
from trainop.api.errors import FieldError, invalid
from trainop.api.kinds import MPIJobSpec
from trainop.api.trainer import MPIPolicy as MPIPolicySource
from trainop.core.convert import ConvertedTrainer
from trainop.core.naming import build_owner_reference, build_replica_labels
from trainop.core.plan import ERROR_PLACEHOLDER, Event
from trainop.core.pods import PHASE_RUNNING
from trainop.core.topology import Topology, replica_name
from trainop.core.trainjob import PolicyContext, Step, reserved_env_error, upsert_env, upsert_named
from trainop.frameworks.base import ConditionUpdate, ExecAgent, PodView, ReplicaCounts
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    failed_update,
    pod_spec_for_write,
    replicas_of,
    restarting_update,
    running_update,
    succeeded_update,
)

LAUNCHER = "Launcher"
WORKER = "Worker"

# Files and mounts (§3.9). The local backend writes the same three files under its own directory.
CONFIG_MOUNT_PATH = "/etc/mpi"
KUBECTL_MOUNT_PATH = "/opt/kube"
CONFIG_VOLUME = "mpi-job-config"
KUBECTL_VOLUME = "mpi-job-kubectl"
HOSTFILE = "hostfile"
KUBEXEC_SCRIPT = "kubexec.sh"
DISCOVER_HOSTS_SCRIPT = "discover_hosts.sh"
HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"
KUBEXEC_PATH = f"{CONFIG_MOUNT_PATH}/{KUBEXEC_SCRIPT}"
SCRIPT_MODE = 0o555
HOSTFILE_MODE = 0o444

LAUNCHER_SUFFIX = "-launcher"
CONFIG_SUFFIX = "-config"
KUBECTL_DELIVERY_NAME = "kubectl-delivery"
# --mpi-kubectl-delivery-image (§6.4); the ghcr.io location is where v1.9.1+ publish it.
DEFAULT_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
ENV_KUBECTL_TARGET_DIR = "TARGET_DIR"
ENV_DELIVERY_NAMESPACE = "NAMESPACE"
I_MPI_DEFAULT_BOOTSTRAP = "rsh"
WORKER_DEFAULT_COMMAND = ["sleep"]
WORKER_DEFAULT_ARGS = ["365d"]

RBAC_API_GROUP = "rbac.authorization.k8s.io"


def _spec(job: TrainingJob) -> MPIJobSpec:
    assert isinstance(job.spec, MPIJobSpec), f"not an MPIJob: {job.kind}"
    return job.spec


def launcher_name(job: TrainingJob) -> str:
    return f"{job.name}{LAUNCHER_SUFFIX}"


def config_map_name(job: TrainingJob) -> str:
    return f"{job.name}{CONFIG_SUFFIX}"


def worker_name(job: TrainingJob, index: int) -> str:
    return replica_name(job.name, WORKER, index)


def slots_per_worker(job: TrainingJob) -> int:
    slots = _spec(job).slots_per_worker
    return slots if slots is not None else 1


def is_gpu_launcher(job: TrainingJob) -> bool:
    """§3.9: a launcher container asks for a GPU (a limit key ending in ``.com/gpu`` or naming ``gpu``)."""
    rs = job.replica_specs.get(LAUNCHER)
    containers = rs.containers if rs is not None else []
    return any("gpu" in k for c in containers for k in (c.get("resources") or {}).get("limits") or {})


def launcher_service_account(job: TrainingJob) -> str:
    """The launcher template's serviceAccountName, else ``<job>-launcher``."""
    rs = job.replica_specs.get(LAUNCHER)
    name = rs.pod_spec.get("serviceAccountName") if rs is not None else None
    return name if isinstance(name, str) and name else launcher_name(job)


def build_hostfile(job: TrainingJob) -> str:
    """One ``<host> slots=<S>`` line per worker, the launcher first when it has a GPU."""
    slots = slots_per_worker(job)
    hosts = [launcher_name(job)] if is_gpu_launcher(job) else []
    hosts += [worker_name(job, i) for i in range(replicas_of(job, WORKER, default=0))]
    return "".join(f"{h} slots={slots}\n" for h in hosts)


def build_kubexec_script(job: TrainingJob) -> str:
    """Open MPI's rsh agent: run the remaining arguments inside pod ``$1`` via kubectl exec."""
    main = _spec(job).main_container
    container = f" --container {main}" if main else ""
    return (
        "#!/bin/sh\n"
        "# rsh agent for mpirun: $1 is the worker pod, the rest is the command to run there\n"
        "set -x\n"
        'POD_NAME="$1"\n'
        "shift\n"
        f'{KUBECTL_MOUNT_PATH}/kubectl exec "${{POD_NAME}}"{container} -- /bin/sh -c "$*"\n'
    )


def build_discover_hosts(job: TrainingJob, counts: Mapping[str, ReplicaCounts]) -> str:
    """``echo <pod>:<S>`` for each Running worker, sorted by name (GPU launcher first): what Horovod's
    elastic driver polls to learn the current hosts."""
    slots = slots_per_worker(job)
    running = sorted(p.name for p in _pods(counts, WORKER) if p.phase == PHASE_RUNNING)
    hosts = ([launcher_name(job)] if is_gpu_launcher(job) else []) + running
    return "#!/bin/sh\n" + "".join(f"echo {h}:{slots}\n" for h in hosts)


def build_config_data(job: TrainingJob, counts: Mapping[str, ReplicaCounts]) -> dict[str, str]:
    """The three files of ``<job>-config`` (§3.9), keyed by file name."""
    return {
        HOSTFILE: build_hostfile(job),
        KUBEXEC_SCRIPT: build_kubexec_script(job),
        DISCOVER_HOSTS_SCRIPT: build_discover_hosts(job, counts),
    }


def _owned(job: TrainingJob, api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    """An object the job owns, found again by its ``app`` label (§3.9)."""
    meta: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": {LABEL_APP: job.name}}
    meta["ownerReferences"] = [build_owner_reference(job)]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def build_role(job: TrainingJob) -> dict[str, Any]:
    """Read pods; exec only into this job's workers."""
    exec_rule: dict[str, Any] = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    workers = [worker_name(job, i) for i in range(replicas_of(job, WORKER, default=0))]
    if workers:  # upstream leaves resourceNames out (omitempty) when there are no workers
        exec_rule["resourceNames"] = workers
    read_rule = {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}
    return _owned(job, f"{RBAC_API_GROUP}/v1", "Role", launcher_name(job), rules=[read_rule, exec_rule])


def build_role_binding(job: TrainingJob) -> dict[str, Any]:
    account = {"kind": "ServiceAccount", "name": launcher_service_account(job), "namespace": job.namespace}
    role = {"apiGroup": RBAC_API_GROUP, "kind": "Role", "name": launcher_name(job)}
    name = launcher_name(job)
    return _owned(job, f"{RBAC_API_GROUP}/v1", "RoleBinding", name, subjects=[account], roleRef=role)


def _config_volume(job: TrainingJob, *keys: str) -> dict[str, Any]:
    """The ``<job>-config`` ConfigMap's files ``keys`` as a volume (the scripts executable)."""
    items = [{"key": k, "path": k, "mode": HOSTFILE_MODE if k == HOSTFILE else SCRIPT_MODE} for k in keys]
    return {"name": CONFIG_VOLUME, "configMap": {"name": config_map_name(job), "items": items}}


def _status_reason(pod: PodView) -> str:
    return str((pod.obj.get("status") or {}).get("reason") or "")


def _pods(counts: Mapping[str, ReplicaCounts], rtype: str) -> tuple[PodView, ...]:
    c = counts.get(rtype)
    return c.pods if c is not None else ()


def _find_launcher(job: TrainingJob, counts: Mapping[str, ReplicaCounts]) -> PodView | None:
    return next((p for p in _pods(counts, LAUNCHER) if p.name == launcher_name(job)), None)


class MPIPlugin(BasePlugin):
    """Capabilities: ``PodEvents`` (the launcher's create events), ``ExtraObjects``
    (RBAC and the ConfigMap, selected by their ``app`` label), ``LoopbackEnv`` (Open MPI on loopback),
    ``LocalEnv`` (a TMPDIR per replica), ``LocalNoopHelpers`` (kubectl-delivery) and ``RemoteExec``
    (kubexec.sh is the rsh agent the local backend replaces)."""

    kind: ClassVar[str] = "MPIJob"
    owned_kinds: tuple[str, ...] = ("ConfigMap", "ServiceAccount", "Role", "RoleBinding")
    owned_labelled: bool = True
    # §3.9: kubectl-delivery copies kubectl into /opt/kube for kubexec.sh; locally there is no kubectl exec.
    local_noop_helpers: Mapping[str, str] = MappingProxyType(
        {
            KUBECTL_DELIVERY_NAME: "the local backend's rsh agent replaces kubectl exec, so kubectl is "
            "not needed"
        }
    )

    # §3.9: mpirun reaches the workers through kubexec.sh, and a GPU launcher too (it is in the
    # hostfile); like the Role's exec rule, no other pod (names: launcher_name, worker_name).
    exec_agent: ExecAgent = ExecAgent(
        key=KUBEXEC_SCRIPT,
        names=(LAUNCHER_SUFFIX,),
        indexed=(f"-{WORKER.lower()}-",),
        reachable="its launcher and workers",
    )

    def __init__(self, kubectl_delivery_image: str = DEFAULT_KUBECTL_DELIVERY_IMAGE) -> None:
        super().__init__()
        self.kubectl_delivery_image = kubectl_delivery_image  # --mpi-kubectl-delivery-image

    # -- identity --
    def replica_indices(self, job: TrainingJob, rtype: str) -> range:
        if rtype == LAUNCHER:
            return range(1) if LAUNCHER in job.replica_specs else range(0)
        return range(replicas_of(job, rtype, default=0))

    def pod_name(self, job: TrainingJob, rtype: str, index: int) -> str:
        return launcher_name(job) if rtype == LAUNCHER else super().pod_name(job, rtype, index)

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return rtype == LAUNCHER

    def pod_labels(self, job: TrainingJob, rtype: str, index: int) -> dict[str, str]:
        if rtype != LAUNCHER:
            return super().pod_labels(job, rtype, index)
        # §3.9: the launcher carries no replica-index.
        return build_replica_labels(self.info, job.name, LAUNCHER, None, master=True)

    # -- pods --
    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        """The launcher's first container: the Open MPI agent and hostfile, blank NVIDIA_* for a CPU
        launcher, and the Intel MPI bootstrap pair where the user did not set it. Workers get none."""
        if rtype != LAUNCHER:
            return []
        env = [env_var(ENV_OMPI_RSH_AGENT, KUBEXEC_PATH), env_var(ENV_OMPI_HOSTFILE, HOSTFILE_PATH)]
        if not is_gpu_launcher(job):
            # Keep a CPU launcher off GPUs a permissive runtime might expose anyway.
            env += [env_var(ENV_NVIDIA_VISIBLE_DEVICES, ""), env_var(ENV_NVIDIA_DRIVER_CAPABILITIES, "")]
        rs = job.replica_specs.get(LAUNCHER)
        first = rs.containers[0] if rs is not None and rs.containers else {}
        user = {e.get("name") for e in first.get("env") or []}
        if ENV_I_MPI_HYDRA_BOOTSTRAP not in user:
            env.append(env_var(ENV_I_MPI_HYDRA_BOOTSTRAP, I_MPI_DEFAULT_BOOTSTRAP))
        if ENV_I_MPI_HYDRA_BOOTSTRAP_EXEC not in user:
            env.append(env_var(ENV_I_MPI_HYDRA_BOOTSTRAP_EXEC, KUBEXEC_PATH))
        return env

    def customize_pod(
        self, job: TrainingJob, rtype: str, index: int, pod: dict[str, Any], topology: Topology
    ) -> None:
        if rtype == LAUNCHER:
            self._customize_launcher(job, pod, topology)
        elif rtype == WORKER:
            self._customize_worker(job, pod)

    def _customize_worker(self, job: TrainingJob, pod: dict[str, Any]) -> None:
        spec = pod_spec_for_write(pod)
        containers = list(spec.get("containers") or [])
        if not containers:
            return  # validation (§2.4) rejects this before any pod is built
        first = dict(containers[0])
        if not first.get("command"):
            first["command"], first["args"] = list(WORKER_DEFAULT_COMMAND), list(WORKER_DEFAULT_ARGS)
        # Open MPI checks the agent's path on every rank, so workers mount kubexec.sh too.
        first["volumeMounts"] = [
            *(first.get("volumeMounts") or []),
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
        ]
        containers[0] = first
        spec["containers"] = containers
        spec["volumes"] = [*(spec.get("volumes") or []), _config_volume(job, KUBEXEC_SCRIPT)]

    def _customize_launcher(self, job: TrainingJob, pod: dict[str, Any], topology: Topology) -> None:
        labels = (pod.get("metadata") or {}).get("labels")
        if isinstance(labels, dict) and LABEL_REPLICA_INDEX in labels:
            pod["metadata"]["labels"] = {k: v for k, v in labels.items() if k != LABEL_REPLICA_INDEX}
        spec = pod_spec_for_write(pod)
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = launcher_name(job)
        mounts = [
            {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT_PATH},
            {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
        ]
        spec["initContainers"] = [*(spec.get("initContainers") or []), self.build_delivery_container(job)]
        containers = list(spec.get("containers") or [])
        if containers:
            first = dict(containers[0])
            first["env"] = [*(first.get("env") or []), *self.build_env(job, LAUNCHER, 0, topology)]
            first["volumeMounts"] = [*(first.get("volumeMounts") or []), *mounts]
            containers[0] = first
            spec["containers"] = containers
        spec["volumes"] = [
            *(spec.get("volumes") or []),
            {"name": KUBECTL_VOLUME, "emptyDir": {}},
            _config_volume(job, KUBEXEC_SCRIPT, HOSTFILE, DISCOVER_HOSTS_SCRIPT),
        ]

    def build_delivery_container(self, job: TrainingJob) -> dict[str, Any]:
        """``kubectl-delivery``: copies a kubectl binary into the shared ``/opt/kube`` before mpirun."""
        resources = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
        return {
            "name": KUBECTL_DELIVERY_NAME,
            "image": self.kubectl_delivery_image,
            "imagePullPolicy": "IfNotPresent",
            "env": [
                env_var(ENV_KUBECTL_TARGET_DIR, KUBECTL_MOUNT_PATH),
                env_var(ENV_DELIVERY_NAMESPACE, job.namespace),
            ],
            "volumeMounts": [
                {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT_PATH},
                {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH},
            ],
            "resources": {"limits": dict(resources), "requests": dict(resources)},
        }

    def build_extra_objects(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts], topology: Topology
    ) -> list[dict[str, Any]]:
        """ServiceAccount, ConfigMap ``<job>-config``, Role and RoleBinding ``<job>-launcher``, in the
        order upstream ensures them; [] once the launcher has finished (upstream stops touching them
        then). Objects to create or update, never a request to delete anything missing."""
        launcher = _find_launcher(job, counts)
        if launcher and launcher.phase in ("Succeeded", "Failed"):
            return []
        return [
            _owned(job, "v1", "ServiceAccount", launcher_service_account(job)),
            _owned(job, "v1", "ConfigMap", config_map_name(job), data=build_config_data(job, counts)),
            build_role(job),
            build_role_binding(job),
        ]

    def build_pod_events(self, job: TrainingJob, rtype: str, name: str) -> tuple[Event, Event]:
        """§3.9/§6.3: the launcher's create events are MPIJobRunning/MPIJobFailed; a worker's are the
        generic reasons with "worker pod" in the message."""
        if rtype == LAUNCHER:
            return (
                Event("Normal", "MPIJobRunning", f"launcher pod created success: {name}"),
                Event("Warning", "MPIJobFailed", f"launcher pod created failed: {ERROR_PLACEHOLDER}"),
            )
        return (
            Event("Normal", "SuccessfulCreatePod", f"Created worker pod: {name}"),
            Event("Warning", "FailedCreatePod", f"Error creating: {ERROR_PLACEHOLDER}"),
        )

    # -- the local backend --
    def build_loopback_env(self, env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
        """mpirun hands its daemons every non-loopback interface to call back on (oob), and the ranks
        talk over non-loopback interfaces only (btl tcp excludes 127.0.0.1/8 by default): both on lo,
        unless the user set the list either way (Open MPI refuses include and exclude together)."""
        out: dict[str, str] = {}
        for include, exclude in (
            (ENV_OMPI_OOB_TCP_IF_INCLUDE, ENV_OMPI_OOB_TCP_IF_EXCLUDE),
            (ENV_OMPI_BTL_TCP_IF_INCLUDE, ENV_OMPI_BTL_TCP_IF_EXCLUDE),
        ):
            if include not in env and exclude not in env:
                out[include] = LOOPBACK_IFNAME
        return out

    def build_local_env(
        self, pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str], pod_ip: str
    ) -> dict[str, str]:
        return build_mpi_tmpdir(pod, env, listed)

    # -- status --
    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer:
        """deepspeed-distributed: the Launcher's template and command become the trainer's; the
        launcher also counts as a node there (runLauncherAsNode), so numNodes is Workers + 1."""
        workers = job.replica_specs.get(WORKER)
        count = workers.replicas if workers is not None and workers.replicas is not None else 0
        return ConvertedTrainer(
            runtime="deepspeed-distributed",
            template_type=LAUNCHER,
            container=_spec(job).main_container or self.info.default_container,
            num_nodes=count + 1,
            num_proc_per_node=slots_per_worker(job),
            notes=(
                "Worker: its template is not carried over; the runtime's node pods run sshd from the "
                "deepspeed-runtime image, and mpirun reaches them over SSH (the MPIJob's kubectl exec agent "
                "is gone)",
                "the launcher is also a node (runLauncherAsNode), so the hostfile lists it with the workers",
            ),
            dropped_types=(WORKER,),
        )

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """§4.4 MPI: first the events of upstream's MPI status helper (its conditions land on a copy
        that is discarded, §9.6, so ``set_condition=False``), then the generic loop: Launcher running →
        Running, Launcher done → Succeeded (stop), any failed pod → Restarting under ExitCode, else
        Failed with reason ``MPIJobMPIJobFailed``."""
        out = self._helper_events(job, counts)
        for rtype in self.status_order(job):
            c = self.counts_for(counts, rtype, job.replica_specs.get(rtype))
            if rtype == LAUNCHER:
                if c.active > 0:
                    out.append(running_update(job, namespaced=False))
                if c.expected == 0:
                    out.append(succeeded_update(job, namespaced=False))
                    return out
            if c.failed > 0:
                if c.restart_policy == RESTART_EXIT_CODE:
                    out.append(restarting_update(job, c.failed, rtype))
                else:
                    out.append(failed_update(job, c.failed, rtype, reason=f"{job.kind}{job.kind}Failed"))
        return out

    def _helper_events(self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]) -> list[ConditionUpdate]:
        out: list[ConditionUpdate] = []
        ref = f"{job.namespace}/{job.name}"
        launcher = _find_launcher(job, counts)
        phase = launcher.phase if launcher else ""
        if phase == "Succeeded":
            out.append(_event_only("Normal", "mpijobsSucceeded", f"MPIJob {ref} successfully completed."))
        elif launcher and phase == "Failed":
            reason = _status_reason(launcher) or "MPIJobFailed"
            out.append(_event_only("Warning", reason, f"MPIJob {ref} has failed"))
        done = phase in ("Succeeded", "Failed")
        # Upstream looks at workers only while the launcher is unfinished: indices 0..replicas-1, a
        # missing pod counting as not running.
        n = 0 if done else replicas_of(job, WORKER, default=0)
        workers = {p.index: p for p in _pods(counts, WORKER)}
        in_range = [workers.get(i) for i in range(n)]
        evicted = sum(1 for p in in_range if p and p.phase == "Failed" and _status_reason(p) == "Evicted")
        if evicted:
            out.append(_event_only("Warning", "MPIJobEvicted", f"{evicted}/{n} workers are evicted"))
        if phase == "Running" and all(p and p.phase == "Running" for p in in_range):
            out.append(_event_only("Normal", "MPIJobRunning", f"MPIJob {ref} is running"))
        return out


def build_mpi_tmpdir(
    pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str]
) -> dict[str, str]:
    """A ``TMPDIR`` of its own for each replica of an MPIJob on the local backend (under the host's),
    unless the container's env list (``listed``) sets one.

    Open MPI puts each daemon's session directory at ``$TMPDIR/ompi.<hostname>.<uid>/jf.<job>``: on a
    cluster every pod has its own /tmp, but on one machine mpirun and the daemons in the workers
    would share that tree and race creating and removing it (orted then fails in orte_session_dir:
    "mkdir … File exists"). A replica's TMPDIR reaches its daemon through the rsh agent; Open MPI
    creates the directory, and removes what it put in it."""
    if ENV_TMPDIR in listed:
        return {}
    meta = pod.get("metadata") or {}
    name = meta.get("uid") or f"{meta.get('namespace', 'default')}-{meta.get('name', '')}"
    return {ENV_TMPDIR: f"{(env.get(ENV_TMPDIR) or '/tmp').rstrip('/')}/trainop-mpi-{name}"}


def _event_only(type_: str, reason: str, message: str) -> ConditionUpdate:
    return ConditionUpdate(
        type="",
        reason=reason,
        message=message,
        event="Normal" if type_ == "Normal" else "Warning",
        set_condition=False,
    )


class MPIPolicy:
    """Trainer v2's ``mlPolicy.mpi`` (kubeflow/trainer@v2.3.0 plugins/mpi/mpi.go): ``node`` pods number
    ``numNodes`` (one fewer when the launcher runs as a node); slots per node from ``numProcPerNode``
    (or the GPUs per node); the SSH key Secret ``<job>-mpi-ssh-auth`` mounted on ``node`` containers at
    ``sshAuthMountPath``; the hostfile ConfigMap ``<job>-mpi-hostfile`` (``<pod>.<subdomain> slots=N``
    per node pod) mounted on the launcher at /etc/mpi with Open MPI's env. The Secret is listed without
    its keys: generating them is the backend's (it holds the randomness), as upstream's Build does."""

    ml_policy = "mpi"

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        trainer = ctx.job.spec.trainer
        mpi = ctx.runtime.spec.ml_policy.mpi if ctx.runtime.spec.ml_policy else None
        if trainer is not None and mpi is not None:
            nodes = trainer.num_nodes if trainer.num_nodes is not None else 1
            if (
                nodes >= 2
                and mpi.run_launcher_as_node
                and (ctx.step(STEP_LAUNCHER) is None or ctx.step(NODE) is None)
            ):
                errs.append(
                    invalid(
                        "spec.trainer.numNodes",
                        trainer.num_nodes,
                        "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have "
                        "either launcher and node",
                    )
                )
        return errs + reserved_env_error(ctx.job, MPI_RESERVED_ENV)

    def enforce_ml_policy(self, ctx: PolicyContext) -> None:
        """mpi.go: the node count (the launcher is a node with runLauncherAsNode), the SSH Secret's and
        the hostfile's volumes and mounts, Open MPI's env on the launcher, and the two objects."""
        ml = ctx.runtime.spec.ml_policy
        mpi = ml.mpi if ml is not None else None
        if mpi is None:
            return
        trainer = ctx.job.spec.trainer
        job = ctx.job.name
        node = ctx.step(NODE)
        if node is not None and trainer is not None and trainer.num_nodes is not None:
            node.count = max(trainer.num_nodes - 1, 1) if mpi.run_launcher_as_node else trainer.num_nodes
        slots = _slots(ctx, mpi)
        secret, hostfile = f"{job}{MPI_SSH_AUTH_SUFFIX}", f"{job}{MPI_HOSTFILE_SUFFIX}"
        for step in ctx.steps:
            if step.name in (NODE, STEP_LAUNCHER):
                _mount_mpi_files(step, mpi, secret, hostfile, slots)
        lines = [
            f"{ctx.topology.host(job, step.name, ji, pi)} slots={slots}\n"
            for step in ctx.steps
            if step.name == NODE or (mpi.run_launcher_as_node and step.name == STEP_LAUNCHER)
            for ji in range(step.replicas)
            for pi in range(step.count)
        ]
        meta = {"namespace": ctx.job.namespace, "ownerReferences": [build_owner_reference(ctx.job)]}
        ctx.objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, **meta},
                "type": "kubernetes.io/ssh-auth",
                "immutable": True,
            }
        )
        ctx.objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": hostfile, **meta},
                "data": {MPI_HOSTFILE_NAME: "".join(lines)},
            }
        )


def _slots(ctx: PolicyContext, mpi: MPIPolicySource) -> int:
    """Each node's slots: the TrainJob's numProcPerNode, else the policy's; one per GPU when that is 1."""
    trainer = ctx.job.spec.trainer
    if trainer is not None and trainer.num_proc_per_node is not None:
        return int(trainer.num_proc_per_node)
    slots = int(mpi.num_proc_per_node or 1)
    return ctx.gpus_per_node() if slots == 1 and ctx.gpus_per_node() > 1 else slots


def _mount_mpi_files(step: Step, mpi: MPIPolicySource, secret: str, hostfile: str, slots: int) -> None:
    """The SSH keys on every node and the launcher; the hostfile and Open MPI's env on the launcher."""
    launcher = step.name == STEP_LAUNCHER
    volumes = step.pod_spec.setdefault("volumes", [])
    upsert_named(volumes, _ssh_volume(secret))
    if launcher:
        items = [{"key": MPI_HOSTFILE_NAME, "path": MPI_HOSTFILE_NAME, "mode": 0o444}]
        upsert_named(volumes, {"name": MPI_HOSTFILE_VOLUME, "configMap": {"name": hostfile, "items": items}})
    container = step.container(NODE)
    if container is None:
        return
    mounts = container.setdefault("volumeMounts", [])
    upsert_named(mounts, {"name": MPI_SSH_AUTH_VOLUME, "mountPath": mpi.ssh_auth_mount_path})
    if launcher:
        upsert_named(mounts, {"name": MPI_HOSTFILE_VOLUME, "mountPath": MPI_HOSTFILE_DIR})
        upsert_env(
            container,
            [
                env_var(ENV_OMPI_HOSTFILE, f"{MPI_HOSTFILE_DIR}/{MPI_HOSTFILE_NAME}"),
                env_var(ENV_OMPI_KEEP_FQDN, "true"),
                env_var(ENV_OMPI_DEFAULT_SLOTS, str(slots)),
                env_var(ENV_OMPI_RSH_ARGS, OMPI_RSH_ARGS_DEFAULT),
            ],
        )


def _ssh_volume(secret: str) -> dict[str, Any]:
    return {
        "name": MPI_SSH_AUTH_VOLUME,
        "secret": {
            "secretName": secret,
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }
