"""The small Protocol every framework plugin implements, plus the shared data it exchanges with core.

Re-exported by ``trainop.frameworks.base``.

``FrameworkPlugin`` is what core calls on every kind (names, labels, the pod, the §4.4 status rule);
what only some kinds do is a small capability Protocol (extra objects, a launcher, the local
backend's env and rsh agent) asked with ``isinstance``, so core and the backends never test a kind's
name. A kind's admission rules and defaults are its spec model's hooks
(``trainop.api.common.JobSpec``); the static facts, quirks included, its ``KindInfo`` row. Pure: no
I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from trainop.api.common import TrainingJob
from trainop.api.kinds import KindInfo
from trainop.core.plan import Event
from trainop.core.pods import detect_index
from trainop.core.topology import Topology


@dataclass(slots=True)
class PodView:
    """An observed pod with the fields every step reads, looked up once per pass: core's steps and
    the plugins' rules (``ReplicaCounts.pods``) read the same objects."""

    obj: dict[str, Any]  # the raw pod, for anything rarer (TF's exit code, MPI's eviction)
    name: str
    phase: str
    deleting: bool = False
    # Created by an earlier whole-job restart than the current one: being replaced, not counted.
    old: bool = False

    @property
    def index(self) -> int | None:
        """The replica-index label; None when absent or malformed. Read when asked (TF and MPI do):
        parsing it for every pod of every pass cost the steady pass about 10 %."""
        return detect_index(self.obj)


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """One replica type's view for the status rule (§4.2, §4.4), built by core from the pods."""

    replicas: int  # desired (defaulted) replicas
    active: int
    succeeded: int
    failed: int
    restart_policy: str  # defaulted replica restartPolicy
    # Its pods, those of an earlier whole-job restart and terminating ones included.
    pods: tuple[PodView, ...] = ()

    @property
    def expected(self) -> int:
        return self.replicas - self.succeeded


@dataclass(frozen=True, slots=True)
class ConditionUpdate:
    """One ``setCondition`` call the status rule makes, in order (§4.1 rules applied by core).

    Core applies the list in order with the §4.1 rules (Failed is terminal, same type+status+reason is
    a no-op, Running and Restarting replace each other, ...), so a later update sees the earlier ones.

    ``event``: also emit an event with this type; its reason is ``event_reason`` when set (MPI's
    Failed condition is ``MPIJobMPIJobFailed`` but its event ``MPIJobFailed``, §9.6), else ``reason``;
    its message is ``message``. ``metric``: a counter to increment ("jobs_successful", "jobs_failed",
    "jobs_restarted"). ``complete``: set completionTime if unset. ``set_condition=False``: emit the
    event / metric only and leave the conditions alone (upstream computes some conditions on a copy it
    then discards, so only their events survive: MPI's status helper, §4.4).
    """

    type: str
    reason: str
    message: str
    status: Literal["True", "False"] = "True"
    event: Literal["Normal", "Warning"] | None = None
    metric: str | None = None
    complete: bool = False
    event_reason: str | None = None
    set_condition: bool = True


class FrameworkPlugin(Protocol):
    """What core calls on every kind. ``job`` is always the DEFAULTED job (§1.4).

    Everything else a kind may do is an optional capability below, asked with ``isinstance`` (the
    Protocols are runtime-checkable): core and the backends never test a kind's name.
    """

    info: KindInfo

    def replica_indices(self, job: TrainingJob, rtype: str) -> range:
        """Indices of the pods that should exist for this type (a launcher: ``range(1)``)."""
        ...

    def pod_name(self, job: TrainingJob, rtype: str, index: int) -> str: ...

    def pod_labels(self, job: TrainingJob, rtype: str, index: int) -> dict[str, str]:
        """The operator's labels for pod ``rtype``/``index`` (§3.1; a launcher has no replica-index,
        §3.9), to lay over the template's labels."""
        ...

    def customize_pod(
        self, job: TrainingJob, rtype: str, index: int, pod: dict[str, Any], topology: Topology
    ) -> None:
        """Add env, init containers, volumes, default commands to ``pod`` (a fresh Pod dict built by
        core from the template, with name, labels and restartPolicy already set)."""
        ...

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        """The kind's success/failure rule (§4.4) as ordered condition updates.

        ``counts`` has one entry per replica type of the job, with its pods (TF reads worker 0's exit
        code, MPI the launcher's phase); ``job.status`` holds the in-flight conditions of this pass
        (TF keeps an existing Restarting, XGBoost sets Running only when absent).
        """
        ...


@runtime_checkable
class ExtraObjects(Protocol):
    """The kind owns objects besides pods and Services (MPI's RBAC and ConfigMap, PyTorch's HPA)."""

    # Kubernetes kinds of those objects (the operator watches them), and whether they carry the
    # ``app`` label the operator can select them by server-side (§3.9) or must be filtered after decoding.
    owned_kinds: tuple[str, ...]
    owned_labelled: bool

    def build_extra_objects(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts], topology: Topology
    ) -> list[dict[str, Any]]:
        """Owned objects to create, or to replace when their content drifted. Each carries its
        namespace and the job's controller ownerReference. An object missing from the list is NOT a
        request to delete it (MPI's objects outlive the launcher; the HPA's removal on suspend is
        core's, §4.10)."""
        ...


@runtime_checkable
class PodEvents(Protocol):
    """The kind's pods' create events are its own (MPI's launcher, §6.3), not core's generic ones.
    (MPI's other launcher facts, no Services and failed pods left alone, are ``KindInfo`` rows.)"""

    def build_pod_events(self, job: TrainingJob, rtype: str, name: str) -> tuple[Event, Event]:
        """(done, on_error) events of creating pod ``name`` of ``rtype`` (§6.3)."""
        ...


# The local backend's three capabilities, one purpose each (issue 22: one bundle forced no-op stubs on
# the kinds that need only one part). None is used on Kubernetes.
@runtime_checkable
class LoopbackEnv(Protocol):
    """The framework's own traffic needs settings to stay on the loopback address of one machine."""

    def build_loopback_env(self, env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
        """Defaults that keep the framework's own traffic on the loopback address ``pod_ip``, for a
        container whose environment so far is ``env``; a variable already there is kept."""
        ...


@runtime_checkable
class LocalEnv(Protocol):
    """The kind adds variables of its own on one machine (a rendezvous host, a private TMPDIR)."""

    def build_local_env(
        self, pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str], pod_ip: str
    ) -> dict[str, str]:
        """Variables to set on top of a container's environment ``env`` (host env + its env list,
        whose names are ``listed``); a variable the user set is left alone."""
        ...


@runtime_checkable
class LocalNoopHelpers(Protocol):
    """The kind injects helper init containers that have nothing to do on one machine."""

    local_noop_helpers: Mapping[str, str]  # container name → why it has nothing to do


@dataclass(frozen=True, slots=True)
class ExecAgent:
    """A kind's rsh agent, as ``RemoteExec`` declares it: the ConfigMap ``key`` (its file name in the
    volume) that holds it, and which of a job's pods it may reach, as suffixes of ``<job>``: exact
    names (``"-launcher"``) and prefixes a replica index follows (``"-worker-"``). ``reachable`` is
    what a refusal calls them ("its launcher and workers")."""

    key: str
    names: tuple[str, ...]
    indexed: tuple[str, ...]
    reachable: str


@runtime_checkable
class RemoteExec(Protocol):
    """The kind's pods start commands in one another through an rsh agent kept in a ConfigMap the kind
    owns (MPI's ``kubexec.sh``, which runs ``kubectl exec``, §3.9). One machine has no kubectl exec:
    the local backend writes its own agent under that key, one that runs the command in a replica's
    context and reaches only the pods ``exec_agent`` names. Never used on Kubernetes."""

    exec_agent: ExecAgent


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The optional capabilities one plugin has (None: it has not), resolved once per plugin."""

    extra_objects: ExtraObjects | None
    pod_events: PodEvents | None
    loopback_env: LoopbackEnv | None
    local_env: LocalEnv | None
    noop_helpers: LocalNoopHelpers | None
    remote_exec: RemoteExec | None


# id(plugin) → (plugin, its capabilities); the plugin is held so its id is never reused.
_CAPABILITIES: dict[int, tuple[FrameworkPlugin, Capabilities]] = {}


def capabilities(plugin: FrameworkPlugin) -> Capabilities:
    """``plugin``'s capabilities, resolved on first use: ``isinstance`` on a runtime Protocol inspects
    every member, and core asks on every pass."""
    entry = _CAPABILITIES.get(id(plugin))
    if entry is not None and entry[0] is plugin:
        return entry[1]
    caps = Capabilities(
        extra_objects=plugin if isinstance(plugin, ExtraObjects) else None,
        pod_events=plugin if isinstance(plugin, PodEvents) else None,
        loopback_env=plugin if isinstance(plugin, LoopbackEnv) else None,
        local_env=plugin if isinstance(plugin, LocalEnv) else None,
        noop_helpers=plugin if isinstance(plugin, LocalNoopHelpers) else None,
        remote_exec=plugin if isinstance(plugin, RemoteExec) else None,
    )
    _CAPABILITIES[id(plugin)] = (plugin, caps)
    return caps
