"""Pure translation of a Pod (as the core builds it) into the host processes the local backend runs.

``build_pod_processes`` gives each container its argv, working directory and environment with the
kubelet's rules (later duplicates win, ``$(VAR)`` expansion, fieldRef/resourceFieldRef), volume
mount paths rewritten to host directories, and GPUs through CUDA_VISIBLE_DEVICES.
``build_local_env`` adds the env defaults that keep the traffic of every framework on loopback, and
what the kind's plugin adds on one machine (its ``LocalEnv`` capability).
``build_rsh_agent`` is the script that stands in for a kind's remote-exec agent (its ``RemoteExec``
capability names the ConfigMap key and the pods it reaches). ``detect_pod_errors`` says, with a field
path, what the local backend cannot run. No I/O here: the caller passes the host environment,
hostname and directories in a ``LocalContext``.
"""

from __future__ import annotations

import base64
import copy
import math
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from trainop.api.constants import (
    ENV_CUDA_VISIBLE_DEVICES,
    ENV_GLOO_SOCKET_IFNAME,
    ENV_NCCL_SOCKET_IFNAME,
    ENV_TP_SOCKET_IFNAME,
    LOOPBACK_IFNAME,
    RESOURCE_NVIDIA_GPU,
)
from trainop.api.errors import FieldError, invalid, not_supported, required
from trainop.api.names import validate_dns1123_label
from trainop.backends.local.images import build_image_entrypoint
from trainop.core.gang import compute_quantity
from trainop.core.plugin import Capabilities, ExecAgent, capabilities
from trainop.frameworks.registry import REGISTRY

POD_IP = "127.0.0.1"
DEFAULT_GRACE_SECONDS = 30.0  # pod.spec.terminationGracePeriodSeconds default
SUPPORTED_VOLUMES = ("emptyDir", "configMap", "hostPath", "persistentVolumeClaim")
_FIELD_REFS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels['<key>']",
    "metadata.annotations['<key>']",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.podIP",
    "status.podIPs",
    "status.hostIP",
    "status.hostIPs",
)


@dataclass(frozen=True, slots=True)
class LocalContext:
    """What the pure render needs to know about the machine and the job."""

    host_env: Mapping[str, str]
    base_dir: str  # the manifest's directory: relative workingDir (and no workingDir) resolve here
    hostname: str
    cpu_count: int = 1
    memory_bytes: int = 0
    ephemeral_bytes: int = 0
    volume_dirs: Mapping[str, str] = field(default_factory=dict)  # volume name → host directory
    gpus: Mapping[str, Sequence[str]] = field(default_factory=dict)  # container name → GPU ids
    machine_has_gpus: bool = False
    kind: str = ""  # the job's kind (PyTorchJob …): which loopback env defaults apply
    python: str = "python"  # the interpreter a known image's entrypoint runs (images.KNOWN_IMAGES)


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """One container as a host process. ``noop`` (a reason) marks an operator helper not run locally."""

    container: str
    init: bool
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    noop: str | None = None


@dataclass(frozen=True, slots=True)
class PodProcesses:
    init: tuple[ProcessSpec, ...]
    main: tuple[ProcessSpec, ...]
    grace_seconds: float


# ---------------------------------------------------------------------------------------------------
# $(VAR) expansion, exactly as the kubelet's forked golang expansion package does it.


_VAR_REF = re.compile(r"\$(?:\$|\(([^)]*)\))")  # $$, or $(NAME) up to the first ")"


def expand_vars(text: str, lookup: Callable[[str], str | None]) -> str:
    """``$(NAME)`` → its value (kept verbatim when unknown), ``$$`` → ``$``, anything else untouched
    (an unterminated ``$(`` too)."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return "$"
        value = lookup(m.group(1))
        return value if value is not None else m.group(0)

    return _VAR_REF.sub(one, text)


# ---------------------------------------------------------------------------------------------------
# Quantities (resource.Quantity) for resourceFieldRef and GPU counts.


def parse_quantity(value: object) -> Decimal | None:
    """A Kubernetes quantity (``500m``, ``2Gi``, ``1e3``, ``4``) as a Decimal; None when malformed."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        q = compute_quantity(str(value))
    except (ValueError, ArithmeticError):  # (decimal.InvalidOperation: "1.2.3Mi")
        return None
    return q if q.is_finite() else None


def detect_gpu_count(container: Mapping[str, Any]) -> int:
    """``resources.limits["nvidia.com/gpu"]`` of a container (GPUs are requested through limits)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {} if isinstance(resources, dict) else {}
    q = parse_quantity(limits.get(RESOURCE_NVIDIA_GPU)) if isinstance(limits, dict) else None
    return int(q) if q is not None and q > 0 else 0


def build_gpu_wants(pod: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(container name, GPU count) for each app container of ``pod`` that asks for GPUs."""
    spec = pod.get("spec") or {}
    return [
        (str(c.get("name", "")), n)
        for c in spec.get("containers") or []
        if isinstance(c, dict) and (n := detect_gpu_count(c)) > 0
    ]


def _resource_value(
    container: Mapping[str, Any], resource: str, divisor: object, ctx: LocalContext
) -> str | None:
    """resourceFieldRef, best effort: a missing limit is the machine's capacity (like node allocatable)."""
    section, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    capacity = {
        "cpu": Decimal(ctx.cpu_count),
        "memory": Decimal(ctx.memory_bytes),
        "ephemeral-storage": Decimal(ctx.ephemeral_bytes),
    }
    if name not in capacity or section not in ("limits", "requests"):
        return None
    if section == "limits":
        q = parse_quantity(limits.get(name)) if name in limits else capacity[name]
    else:
        # API defaulting: an unset request equals the limit; with neither, the request is zero.
        raw = requests.get(name, limits.get(name))
        q = parse_quantity(raw) if raw is not None else Decimal(0)
    div = parse_quantity(divisor) if divisor not in (None, "") else Decimal(1)
    if q is None or not div:
        return None
    return str(math.ceil(q / div))


# ---------------------------------------------------------------------------------------------------
# Environment.


def _field_ref(path: str, pod: Mapping[str, Any], ctx: LocalContext) -> str | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", "default"),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": ctx.hostname,
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": POD_IP,
        "status.podIPs": POD_IP,
        "status.hostIP": POD_IP,
        "status.hostIPs": POD_IP,
    }
    if path in simple:
        return str(simple[path])
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    return None


def _capabilities_of(kind: str) -> Capabilities | None:
    """``kind``'s plugin's capabilities (None: an unknown kind)."""
    return capabilities(REGISTRY.get(kind)) if kind in REGISTRY else None


def local_noop_helpers() -> dict[str, str]:
    """Helper containers the operator injects that have no job to do on one machine (name → why),
    as the plugins declare them. They are marked completed without running, and only when they are
    not part of the user's template."""
    declared = [capabilities(plugin).noop_helpers for plugin in REGISTRY.plugins()]
    return {name: why for d in declared if d is not None for name, why in d.local_noop_helpers.items()}


def build_loopback_env(kind: str, env: Mapping[str, str]) -> dict[str, str]:
    """The env defaults that keep a ``kind`` job's own traffic on the loopback interface, for a
    container whose environment so far is ``env`` (host env + its env list): every kind's, then the
    kind's plugin's (``LoopbackEnv.build_loopback_env``). A variable already there is the user's choice
    and is kept. Local backend only: on Kubernetes each pod has its own network namespace and these
    stay unset."""
    # Gloo (torch.distributed, Horovod), NCCL's bootstrap and torch RPC's TensorPipe pick the
    # interface the hostname resolves to, often a LAN address; a script of any kind may use them.
    out = {
        name: LOOPBACK_IFNAME
        for name in (ENV_GLOO_SOCKET_IFNAME, ENV_NCCL_SOCKET_IFNAME, ENV_TP_SOCKET_IFNAME)
        if name not in env
    }
    caps = _capabilities_of(kind)
    if caps is not None and caps.loopback_env is not None:
        out.update(caps.loopback_env.build_loopback_env(env, POD_IP))
    return out


def build_local_env(
    kind: str, pod: Mapping[str, Any], env: Mapping[str, str], listed: Collection[str] = ()
) -> dict[str, str]:
    """What the local backend sets on top of a container's environment ``env`` (host env + its env
    list, whose names are ``listed``): the loopback defaults, then the kind's plugin's own
    (``LocalEnv.build_local_env``: which agent hosts an elastic rendezvous store, a private TMPDIR)."""
    out = build_loopback_env(kind, env)
    caps = _capabilities_of(kind)
    if caps is not None and caps.local_env is not None:
        out.update(caps.local_env.build_local_env(pod, env, listed, POD_IP))
    return out


def build_container_env(
    container: Mapping[str, Any], pod: Mapping[str, Any], ctx: LocalContext
) -> tuple[dict[str, str], dict[str, str]]:
    """(the process environment, the container's own variables for command/args expansion).

    Host env first, then the container's env list in order (later duplicates win; ``$(VAR)`` sees
    only entries defined earlier in the list, like the kubelet), then what the local backend
    injects (CUDA_VISIBLE_DEVICES, the loopback defaults).
    """
    own: dict[str, str] = {}
    pod_containers = [c for c in ((pod.get("spec") or {}).get("containers") or []) if isinstance(c, dict)]
    for entry in container.get("env") or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name = str(entry["name"])
        if isinstance(vf := entry.get("valueFrom"), dict):
            value: str | None = None
            if isinstance(vf.get("fieldRef"), dict):
                value = _field_ref(str(vf["fieldRef"].get("fieldPath", "")), pod, ctx)
            elif isinstance(vf.get("resourceFieldRef"), dict):
                ref = vf["resourceFieldRef"]
                target = container
                if ref.get("containerName"):
                    target = next(
                        (c for c in pod_containers if c.get("name") == ref["containerName"]), container
                    )
                value = _resource_value(target, str(ref.get("resource", "")), ref.get("divisor"), ctx)
            if value is None:
                continue  # optional configMap/secret refs that cannot be resolved here
            own[name] = value
        else:
            own[name] = expand_vars(str(entry.get("value", "")), own.get)
    cname = str(container.get("name", ""))
    if cname in ctx.gpus:
        own[ENV_CUDA_VISIBLE_DEVICES] = ",".join(ctx.gpus[cname])
    elif ctx.machine_has_gpus and ENV_CUDA_VISIBLE_DEVICES not in own:
        # Like a pod without a GPU limit on a GPU node: it sees no GPU (they belong to other replicas).
        own[ENV_CUDA_VISIBLE_DEVICES] = ""
    own.update(build_local_env(ctx.kind, pod, {**ctx.host_env, **own}, own.keys()))
    env = {**ctx.host_env, **own}
    return env, own


def build_rendered_pod(pod: Mapping[str, Any], kind: str, host_env: Mapping[str, str]) -> dict[str, Any]:
    """``pod`` as ``trainop render --backend local`` shows it: with the env the local backend sets when
    it starts each container's process (build_local_env): a variable already listed gets its new
    value in place, the others are added at the end. A container without a command (an operator
    helper) is not started, so it is shown as is."""
    out = copy.deepcopy(dict(pod))
    for key in ("initContainers", "containers"):
        for c in (out.get("spec") or {}).get(key) or []:
            if not isinstance(c, dict) or not has_command(c):
                continue
            entries = [e for e in c.get("env") or [] if isinstance(e, dict) and e.get("name")]
            listed = {str(e["name"]): str(e.get("value", "")) for e in entries}
            extra = build_local_env(kind, out, {**host_env, **listed}, listed.keys())
            for e in reversed(entries):  # the last of duplicates is the one that counts
                if e["name"] in extra:
                    e.pop("valueFrom", None)
                    e["value"] = extra.pop(e["name"])
            if extra:
                c["env"] = [*(c.get("env") or []), *({"name": k, "value": v} for k, v in extra.items())]
    return out


# ---------------------------------------------------------------------------------------------------
# Volumes: mount paths become host directories, in the strings a process receives.


def build_mount_table(container: Mapping[str, Any], volume_dirs: Mapping[str, str]) -> list[tuple[str, str]]:
    """(mountPath, host path) for each of the container's mounts we can place, longest path first."""
    out: list[tuple[str, str]] = []
    for m in container.get("volumeMounts") or []:
        if not isinstance(m, dict):
            continue
        host = volume_dirs.get(str(m.get("name", "")))
        mount_path = str(m.get("mountPath", "")).rstrip("/")
        if host is None or not mount_path:
            continue
        sub = str(m.get("subPath") or "").strip("/")
        out.append((mount_path, f"{host.rstrip('/')}/{sub}" if sub else host))
    return sorted(out, key=lambda t: len(t[0]), reverse=True)


def rewrite_mount_paths(text: str, table: Sequence[tuple[str, str]]) -> str:
    """Replace each mount path where it appears as a whole path (``/etc/mpi/hostfile``,
    ``--dir=/data``), never inside a longer name (``/database``, ``/x/etc/mpi``)."""
    if not table or "/" not in text:
        return text
    mapping = dict(table)
    pattern = re.compile(r"(?<![\w.\-/])(" + "|".join(re.escape(p) for p, _ in table) + r")(?![\w.\-])")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def build_configmap_files(
    configmap: Mapping[str, Any],
    source: Mapping[str, Any],
    replaced: Mapping[str, str] = MappingProxyType({}),
) -> dict[str, tuple[bytes, int]]:
    """The files a configMap volume shows (relative path → (content, mode)), honouring ``items``,
    ``defaultMode`` and item modes. A key of ``replaced`` the ConfigMap has shows the local content
    instead (the kind's rsh agent: ``build_agent_files``)."""
    default_mode = source.get("defaultMode")
    mode0 = int(default_mode) if isinstance(default_mode, int) else 0o644
    data: dict[str, bytes] = {k: str(v).encode() for k, v in (configmap.get("data") or {}).items()}
    for k, v in (configmap.get("binaryData") or {}).items():
        data[k] = base64.b64decode(str(v))
    for k, v in replaced.items():
        if k in data:
            data[k] = v.encode()
    items = source.get("items")
    if not isinstance(items, list) or not items:
        return {k: (v, mode0) for k, v in data.items()}
    out: dict[str, tuple[bytes, int]] = {}
    for item in items:
        if not isinstance(item, dict) or item.get("key") not in data:
            continue
        rel = str(item.get("path") or item["key"])
        if detect_volume_path_errors(rel):
            continue  # never written outside the volume (refused at submit, see detect_pod_errors)
        mode = item.get("mode")
        out[rel] = (data[item["key"]], int(mode) if isinstance(mode, int) else mode0)
    return out


def detect_volume_path_errors(rel: str) -> list[str]:
    """Why ``rel`` cannot name a file inside a volume (the API server's validateLocalDescendingPath
    messages for configMap items' ``path``): empty when it can."""
    errs = []
    if rel.startswith("/"):
        errs.append("must be a relative path")
    if ".." in rel.split("/"):
        errs.append("must not contain '..'")
    if not rel or "\0" in rel:
        errs.append("must be a non-empty path without NUL")
    return errs


# ---------------------------------------------------------------------------------------------------
# The rsh agent: stands in for `kubectl exec <pod> -- /bin/sh -c "<cmd>"` (MPI's kubexec.sh, §3.9).


def _dq(text: str) -> str:
    """``text`` as the inside of a double-quoted shell word (a literal, even in a case pattern)."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


def build_rsh_agent(exec_dir: str, kind: str, agent: ExecAgent, job: str | None = None) -> str:
    """The script a ``kind`` job's launcher calls as ``<agent> <pod> <cmd…>`` (Open MPI's rsh agent):
    it runs the command with that replica's environment and working directory, from the context file
    the runner writes for it (``build_exec_context``).

    Like upstream's RBAC (exec only into this job's workers, §3.9), it reaches only the pods of this
    job that ``agent`` names (``<job>-launcher``, ``<job>-worker-<n>``) and only while their context
    exists; any other name (another job's pod, ``../``) is refused before a path is built. ``job``
    defaults to the exec directory's parent's name (StatePaths.exec_dir: ``jobs/<ns>/<job>/exec``)."""
    d = exec_dir.rstrip("/")
    name = job if job is not None else d.rsplit("/", 2)[-2] if d.count("/") >= 1 else ""
    q = shlex.quote
    refuse = f'refuse "not a replica of {_dq(kind)} $job (only {_dq(agent.reachable)})"'
    cases = [f'  "$job{_dq(suffix)}") ;;\n' for suffix in agent.names]
    for prefix in agent.indexed:
        cases += [
            f'  "$job{_dq(prefix)}"*)\n',
            f'    case "${{pod#"$job{_dq(prefix)}"}}" in\n',
            f'      ""|*[!0-9]*) {refuse} ;;\n',
            "    esac ;;\n",
        ]
    return (
        "#!/bin/sh\n"
        "# trainop local backend: runs a command in a replica's context (replaces kubectl exec).\n"
        'pod="$1"; shift\n'
        f"job={q(name)}\n"
        "refuse() {\n"
        '  echo "trainop rsh agent: refusing \\"$pod\\": $1" >&2\n'
        "  exit 255\n"
        "}\n"
        'case "$pod" in\n'
        f"{''.join(cases)}"
        f"  *) {refuse} ;;\n"
        "esac\n"
        f'ctx={q(d)}/"$pod".sh\n'
        'if [ ! -f "$ctx" ]; then\n'
        '  echo "trainop rsh agent: replica $pod of this job is not running on this machine" >&2\n'
        "  exit 255\n"
        "fi\n"
        'exec /bin/sh "$ctx" /bin/sh -c "$*"\n'
    )


def build_agent_files(kind: str, exec_dir: str, job: str) -> dict[str, str]:
    """The ConfigMap keys whose content a ``kind`` job sees replaced on this machine: its rsh agent's
    (``RemoteExec``) becomes ``build_rsh_agent``'s script for the exec contexts in ``exec_dir``;
    nothing for a kind without one."""
    remote = capabilities(REGISTRY.get(kind)).remote_exec if kind in REGISTRY else None
    if remote is None:
        return {}
    return {remote.exec_agent.key: build_rsh_agent(exec_dir, kind, remote.exec_agent, job)}


def build_exec_context(spec: ProcessSpec) -> str:
    """A shell script that runs ``"$@"`` exactly as ``spec``'s process runs: its env and directory."""
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in spec.env.items() if "=" not in k and "\0" not in v)
    return f'#!/bin/sh\ncd {shlex.quote(spec.cwd)} || exit 1\nexec env -i {env} "$@"\n'


# ---------------------------------------------------------------------------------------------------
# Pod → processes.


def _working_dir(container: Mapping[str, Any], table: Sequence[tuple[str, str]], ctx: LocalContext) -> str:
    wd = container.get("workingDir")
    if not wd:
        return ctx.base_dir
    wd = rewrite_mount_paths(str(wd), table)
    if wd.startswith("/"):
        return wd
    return f"{ctx.base_dir.rstrip('/')}/{wd}".rstrip("/") if wd not in (".", "./") else ctx.base_dir


def build_process(
    container: Mapping[str, Any],
    pod: Mapping[str, Any],
    ctx: LocalContext,
    *,
    init: bool,
    noop: str | None = None,
) -> ProcessSpec:
    table = build_mount_table(container, ctx.volume_dirs)
    env, own = build_container_env(container, pod, ctx)
    env = {k: rewrite_mount_paths(v, table) if k in own else v for k, v in env.items()}
    own = {k: env[k] for k in own}
    command = container.get("command") or list(
        build_image_entrypoint(str(container.get("image") or ""), ctx.python) or ()
    )
    argv = tuple(
        rewrite_mount_paths(expand_vars(str(a), own.get), table)
        for a in [*command, *(container.get("args") or [])]
    )
    return ProcessSpec(
        container=str(container.get("name", "")),
        init=init,
        argv=argv,
        cwd=_working_dir(container, table, ctx),
        env=env,
        noop=noop,
    )


def build_pod_processes(pod: Mapping[str, Any], ctx: LocalContext, template_init_count: int) -> PodProcesses:
    """Every container of ``pod`` as a process spec. Init containers past the template's own
    (``template_init_count``) that are known operator helpers become no-ops."""
    spec = pod.get("spec") or {}
    noop_helpers = local_noop_helpers()
    inits: list[ProcessSpec] = []
    for i, c in enumerate(spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        noop = noop_helpers.get(str(c.get("name"))) if i >= template_init_count else None
        inits.append(build_process(c, pod, ctx, init=True, noop=noop))
    mains = [
        build_process(c, pod, ctx, init=False) for c in spec.get("containers") or [] if isinstance(c, dict)
    ]
    grace = spec.get("terminationGracePeriodSeconds")
    if not isinstance(grace, int | float) or isinstance(grace, bool):
        grace = DEFAULT_GRACE_SECONDS
    return PodProcesses(init=tuple(inits), main=tuple(mains), grace_seconds=float(grace))


# ---------------------------------------------------------------------------------------------------
# What the local backend cannot run, reported against the user's manifest.


_NO_CONFIGMAPS = "Forbidden: the local backend has no ConfigMaps or Secrets to read; "
_RESOURCE_FIELDS = [
    f"{s}.{r}" for s in ("limits", "requests") for r in ("cpu", "memory", "ephemeral-storage")
]


def _field_ref_error(path: str, ref: Mapping[str, Any]) -> FieldError | None:
    fp = str(ref.get("fieldPath", ""))
    if _field_ref(fp, {"metadata": {}}, LocalContext({}, "/", "")) is None:
        return not_supported(f"{path}.fieldPath", fp, _FIELD_REFS)
    return None


def _resource_ref_error(path: str, ref: Mapping[str, Any]) -> FieldError | None:
    res = str(ref.get("resource", ""))
    if _resource_value({}, res, None, LocalContext({}, "/", "", 1, 1, 1)) is None:
        return not_supported(f"{path}.resource", res, _RESOURCE_FIELDS)
    return None


def _key_ref_error(path: str, ref: Mapping[str, Any]) -> FieldError | None:
    if ref.get("optional"):
        return None
    return FieldError(
        path, _NO_CONFIGMAPS + "put the value in env[].value (or mark the reference optional: true)"
    )


# env[].valueFrom's sources in the order they are looked for, each with why the local backend cannot
# resolve it (None: it can).
_VALUE_FROM_ERRORS: dict[str, Callable[[str, Mapping[str, Any]], FieldError | None]] = {
    "fieldRef": _field_ref_error,
    "resourceFieldRef": _resource_ref_error,
    "configMapKeyRef": _key_ref_error,
    "secretKeyRef": _key_ref_error,
}


def _value_from_error(path: str, vf: Mapping[str, Any]) -> FieldError | None:
    for key, error in _VALUE_FROM_ERRORS.items():  # the first source found decides
        if isinstance(vf.get(key), dict):
            return error(f"{path}.{key}", vf[key])
    return None


def _env_errors(path: str, container: Mapping[str, Any], limit: int) -> Iterable[FieldError]:
    """The user's env entries (the first ``limit``) whose valueFrom the local backend cannot resolve;
    the envFrom sources it cannot read."""
    for j, entry in enumerate((container.get("env") or [])[:limit]):
        vf = entry.get("valueFrom") if isinstance(entry, dict) else None
        if isinstance(vf, dict) and (err := _value_from_error(f"{path}.env[{j}].valueFrom", vf)):
            yield err
    for j, src in enumerate(container.get("envFrom") or []):
        if isinstance(src, dict) and not any(isinstance(v, dict) and v.get("optional") for v in src.values()):
            yield FieldError(f"{path}.envFrom[{j}]", _NO_CONFIGMAPS + "list the variables under env")


def detect_pod_errors(
    pod: Mapping[str, Any], template: Mapping[str, Any], path: str, configmaps: Iterable[str] = ()
) -> list[FieldError]:
    """Why ``pod`` (built by the core from ``template``, found at ``path`` in the manifest) cannot run
    as host processes. The core appends what it injects after the template's own entries, so an index
    below the template's count is the user's and is reported at the user's path. ``configmaps``: the
    ConfigMaps the job itself creates (the only ones that exist locally)."""
    known_cms = set(configmaps)
    noop_helpers = local_noop_helpers()
    spec = pod.get("spec") or {}
    tspec = template.get("spec") or {}
    errs: list[FieldError] = []
    for key in ("initContainers", "containers"):
        tcontainers = tspec.get(key) or []
        for i, c in enumerate(spec.get(key) or []):
            if not isinstance(c, dict):
                continue
            cpath = f"{path}.template.spec.{key}[{i}]"
            if i >= len(tcontainers):  # injected by the operator
                if not has_command(c) and not (key == "initContainers" and c.get("name") in noop_helpers):
                    errs.append(_command_error(f"{path} (container {c.get('name')!r} added by the operator)"))
                continue
            errs += _user_container_errors(c, tcontainers[i], cpath)
    tvols = len(tspec.get("volumes") or [])
    for i, v in enumerate((spec.get("volumes") or [])[:tvols]):
        if isinstance(v, dict):
            errs += _volume_errors(v, f"{path}.template.spec.volumes[{i}]", known_cms)
    return errs


def has_command(container: Mapping[str, Any]) -> bool:
    """A command of its own, or an image whose entrypoint trainop provides (images.KNOWN_IMAGES)."""
    return (
        bool(container.get("command"))
        or build_image_entrypoint(str(container.get("image") or ""), "") is not None
    )


def _command_error(path: str) -> FieldError:
    return required(
        path,
        "the local backend runs host processes, so each container needs a command "
        "(the image's entrypoint is not used, except for the images of train(): docs/finetune.md); "
        'add e.g. command: ["python", "train.py"]',
    )


def _user_container_errors(c: Mapping[str, Any], template: Any, cpath: str) -> list[FieldError]:
    """A container of the user's template: its name (it names its log file,
    logs/<ns>/<job>/<pod>/<container>.<n>.log), subPaths, command and env."""
    errs = validate_dns1123_label(c.get("name"), f"{cpath}.name")
    for j, m in enumerate(c.get("volumeMounts") or []):
        sub = m.get("subPath") if isinstance(m, dict) else None
        if isinstance(sub, str) and sub:  # a directory inside the volume, never above it
            errs.extend(
                invalid(f"{cpath}.volumeMounts[{j}].subPath", sub, msg)
                for msg in detect_volume_path_errors(sub)
            )
    if not has_command(c):
        errs.append(_command_error(f"{cpath}.command"))
    tenv = len(template.get("env") or []) if isinstance(template, dict) else 0
    errs.extend(_env_errors(cpath, c, tenv))
    return errs


def _volume_errors(v: Mapping[str, Any], vpath: str, known_cms: set[str]) -> list[FieldError]:
    """A volume of the user's template: its name (it names its directory), configMap item paths, and
    whether the local backend has its source."""
    kinds = [k for k in v if k != "name"]
    errs = validate_dns1123_label(v.get("name"), f"{vpath}.name")
    cm = v.get("configMap")
    for j, item in enumerate((cm.get("items") if isinstance(cm, dict) else None) or []):
        rel = item.get("path") if isinstance(item, dict) else None
        if isinstance(rel, str):
            errs.extend(
                invalid(f"{vpath}.configMap.items[{j}].path", rel, m) for m in detect_volume_path_errors(rel)
            )
    if isinstance(cm, dict) and cm.get("name") not in known_cms and not cm.get("optional"):
        msg = (
            f'Not found: "{cm.get("name")}": the local backend has only the ConfigMaps the job itself '
            "creates; use a hostPath volume pointing at a local directory instead"
        )
        errs.append(FieldError(f"{vpath}.configMap.name", msg))
    elif not any(k in SUPPORTED_VOLUMES for k in kinds):
        msg = (
            f'Unsupported value: "{kinds[0] if kinds else ""}": the local backend supports emptyDir (a '
            "per-replica directory), configMap (created by the job), hostPath (used as is) and "
            "persistentVolumeClaim (a directory of the job, shared by its replicas) volumes"
        )
        errs.append(FieldError(vpath, msg))
    pvc = v.get("persistentVolumeClaim")
    if isinstance(pvc, dict):  # the claim names its directory here (a label: no dots, no slashes)
        errs += validate_dns1123_label(pvc.get("claimName"), f"{vpath}.persistentVolumeClaim.claimName")
    return errs
