"""A PyTorchJob from a command line, without YAML: ``trainop run --nnodes 2 --nproc-per-node 2 --
python train.py --lr 0.1``. Flags follow torchrun (``--nnodes``, ``--nproc-per-node``,
``--max-restarts``) and TorchX's ``dist.ddp`` (``-j NNODESxNPROC``, ``--gpu``, ``--image``, ``-e``);
docs/cli.md says why. Pure: arguments in, a manifest (a dict a cluster accepts as is) out.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainop.api.constants import ANNOTATION_MAX_RESTARTS, LABEL_RESTART_ATTEMPT

DEFAULT_IMAGE = "docker.io/pytorch/pytorch:latest"
# torchrun's --nproc-per-node takes a count or one of these (and PyTorchJob's nprocPerNode too).
NPROC_WORDS = ("auto", "cpu", "gpu")


class ScriptJobError(ValueError):
    """An option combination that cannot become a job (one line, for exit code 2)."""


@dataclass(frozen=True, slots=True)
class ScriptJob:
    command: tuple[str, ...]
    name: str
    nnodes: int = 1
    nproc_per_node: str | None = None
    image: str = DEFAULT_IMAGE
    env: tuple[tuple[str, str], ...] = ()
    gpus: int = 0
    max_restarts: int = 0
    namespace: str | None = None
    # torchrun's -m / --no-python: how the command is run; agent_args: torchrun options passed to the
    # per-node torchrun (with several processes per node), e.g. ("--monitor-interval", "1").
    module: bool = False
    no_python: bool = False
    agent_args: tuple[str, ...] = ()


def parse_j(text: str) -> tuple[int, str]:
    """TorchX's ``-j``: ``2x4`` → 2 nodes of 4 processes; ``3`` → 3 nodes of 1."""
    m = re.fullmatch(r"(\d+)(?:x(\d+|auto|cpu|gpu))?", text.strip())
    if m is None or int(m.group(1)) < 1:
        raise ScriptJobError(f'-j "{text}": use NNODES or NNODESxNPROC_PER_NODE, e.g. -j 2x4')
    return int(m.group(1)), m.group(2) or "1"


def parse_nnodes(text: str) -> int:
    """torchrun's ``--nnodes``: ``N``, or ``MIN:MAX`` with MIN = MAX (a fixed size written as a range).
    An elastic range is refused: a script job is a fixed set of pods; elasticPolicy in a manifest
    (docs/cli.md) says how many may come and go."""
    m = re.fullmatch(r"(\d+)(?::(\d+))?", text.strip())
    if m is None:
        raise ScriptJobError(f'--nnodes "{text}": use a count (2) or MIN:MAX, as torchrun')
    low, high = int(m.group(1)), int(m.group(2) or m.group(1))
    if low != high:
        raise ScriptJobError(
            f'--nnodes "{text}": an elastic range needs a PyTorchJob with spec.elasticPolicy '
            f"(minReplicas {low}, maxReplicas {high}); run takes a fixed size: --nnodes {high}"
        )
    return low


def compute_nnodes(
    nnodes: str | int | None, workers: int | None, j: str | None, standalone: bool = False
) -> tuple[int, str | None]:
    """(nodes, nproc from -j) out of the three ways to say how many replicas: torchrun's ``--nnodes``
    (every node, the Master included), PyTorchJob's ``--workers`` (Workers besides the Master), TorchX's
    ``-j``. At most one of them. torchrun's ``--standalone`` is one node."""
    given = [f for f, v in (("--nnodes", nnodes), ("--workers", workers), ("-j", j)) if v is not None]
    if len(given) > 1:
        raise ScriptJobError(f"{' and '.join(given)} both say how many replicas; use one")
    n, nproc = _count_nodes(nnodes, workers, j)
    if standalone and n != 1:
        raise ScriptJobError(f"--standalone is one node (torchrun's single-node rendezvous), not {n}")
    return n, nproc


def _count_nodes(nnodes: str | int | None, workers: int | None, j: str | None) -> tuple[int, str | None]:
    if j is not None:
        return parse_j(j)
    if workers is not None:
        if workers < 0:
            raise ScriptJobError("--workers must be 0 or more (the Workers besides the Master)")
        return workers + 1, None
    n = parse_nnodes(str(nnodes)) if nnodes is not None else 1
    if n < 1:
        raise ScriptJobError("--nnodes must be at least 1 (the Master)")
    return n, None


def check_nproc(value: str) -> str:
    if value in NPROC_WORDS or (value.isdigit() and int(value) >= 1):
        return value
    raise ScriptJobError(f'--nproc-per-node "{value}": use a count (1, 2 …) or auto, cpu, gpu (as torchrun)')


def build_command(
    argv: Sequence[str],
    nproc_per_node: str | None,
    module: bool = False,
    no_python: bool = False,
    agent_args: Sequence[str] = (),
) -> list[str]:
    """The container command: ``train.py ARGS`` runs under ``python`` (``-m``: ``python -m MODULE``;
    ``--no-python``: the command as it is); with several processes per node a Python command runs
    under ``torchrun``, which reads the PET_* variables the operator sets (nodes, node rank, master
    address, processes per node), with ``agent_args`` (torchrun's own options) before the script."""
    if not argv:
        raise ScriptJobError("no command to run: trainop run [OPTIONS] -- python train.py [ARGS]")
    several = nproc_per_node not in (None, "1")
    if not several:  # one process per node: python runs the path as --run-path would
        agent_args = [a for a in agent_args if a != "--run-path"]
    if agent_args and not several:
        raise ScriptJobError(
            f"{agent_args[0]} is an option of torchrun's per-node agent, which runs only with several "
            "processes per node: add --nproc-per-node N (N > 1), or drop it"
        )
    cmd = list(argv)
    if no_python:
        return ["torchrun", *agent_args, "--no-python", *cmd] if several else cmd
    if module:
        return ["torchrun", *agent_args, "-m", *cmd] if several else ["python", "-m", *cmd]
    if cmd[0].endswith(".py"):
        cmd = ["python", *cmd]
    if not several:
        return cmd
    exe = os.path.basename(cmd[0])
    if exe == "torchrun" or cmd[:3] == [cmd[0], "-m", "torch.distributed.run"]:
        return cmd
    if re.fullmatch(r"python[0-9.]*", exe) and len(cmd) > 1:
        return ["torchrun", *agent_args, *cmd[1:]]  # `python -m pkg` → `torchrun -m pkg` too
    raise ScriptJobError(
        f"--nproc-per-node {nproc_per_node} starts several processes through torchrun: give a Python "
        f'command (python train.py …) or torchrun itself, not "{cmd[0]}"'
    )


def detect_torchrun(command: Sequence[str]) -> bool:
    """Whether the command is torchrun itself (which sets every rank's variables on its own)."""
    exe = os.path.basename(command[0]) if command else ""
    return exe == "torchrun" or list(command[1:3]) == ["-m", "torch.distributed.run"]


# What torchrun's agent sets in each worker's environment besides what the operator sets (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT), for one process per node (so LOCAL_RANK 0, and the node's
# rank is the process's). TORCHELASTIC_RESTART_COUNT is the whole-job restart under way where the
# pod says so (trainop's restart-attempt label, through the downward API), else 0.
_RANK_ENV_SCRIPT = (
    'export GROUP_RANK="$RANK" ROLE_RANK="$RANK" GROUP_WORLD_SIZE="$WORLD_SIZE" '
    'ROLE_WORLD_SIZE="$WORLD_SIZE" TORCHELASTIC_RESTART_COUNT="${TORCHELASTIC_RESTART_COUNT:-0}" '
    'TORCH_NCCL_ASYNC_ERROR_HANDLING="${TORCH_NCCL_ASYNC_ERROR_HANDLING:-1}"; exec "$@"'
)


def build_rank_env(s: ScriptJob) -> list[dict[str, object]]:
    """torchrun's constant per-worker variables for one process per node (the per-node ones come from
    ``_RANK_ENV_SCRIPT``)."""
    env: list[dict[str, object]] = [
        {"name": "LOCAL_RANK", "value": "0"},
        {"name": "LOCAL_WORLD_SIZE", "value": "1"},
        {"name": "ROLE_NAME", "value": "default"},
        {"name": "TORCHELASTIC_RUN_ID", "value": s.name},
        {"name": "TORCHELASTIC_MAX_RESTARTS", "value": str(s.max_restarts)},
        {"name": "TORCHELASTIC_USE_AGENT_STORE", "value": "False"},
    ]
    if s.max_restarts:
        ref = f"metadata.labels['{LABEL_RESTART_ATTEMPT}']"
        env.append({"name": "TORCHELASTIC_RESTART_COUNT", "valueFrom": {"fieldRef": {"fieldPath": ref}}})
    return env


def build_name_prefix(argv: Sequence[str]) -> str:
    """``train-`` for ``python train.py``, ``mnist-`` for ``python -m models.mnist`` (a DNS-1035 label)."""
    stem = ""
    args = list(argv)
    for i, a in enumerate(args):
        if a.endswith(".py"):
            stem = os.path.basename(a).removesuffix(".py")
            break
        if a == "-m" and i + 1 < len(args):
            stem = args[i + 1].rsplit(".", 1)[-1]
            break
    if not stem and args:
        stem = os.path.basename(args[0])
    stem = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")
    stem = re.sub(r"^[^a-z]+", "", stem)[:40].rstrip("-")
    return f"{stem or 'job'}-"


def parse_env(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise ScriptJobError(f'-e "{p}": use NAME=VALUE')
        out.append((key, value))
    return tuple(out)


def build_script_job(s: ScriptJob) -> dict[str, object]:
    """The PyTorchJob: a Master and ``nnodes - 1`` Workers running the command, restartPolicy Never.
    ``max_restarts`` is torchrun's: the whole job (every node) restarts on any replica's failure, at
    most that many times (trainop's whole-job restart, annotation trainop.dev/max-restarts), so a job
    whose attempt R+1 succeeds Succeeds. With one process per node the command runs under ``sh``,
    which adds torchrun's per-worker variables (LOCAL_RANK, GROUP_RANK …) and execs it."""
    command = build_command(s.command, s.nproc_per_node, s.module, s.no_python, s.agent_args)
    env: list[dict[str, object]] = [{"name": k, "value": v} for k, v in s.env]
    if not detect_torchrun(command):
        command = ["sh", "-c", _RANK_ENV_SCRIPT, command[0], *command]
        env = [*build_rank_env(s), *env]
    container: dict[str, object] = {"name": "pytorch", "image": s.image, "command": command}
    if env:
        container["env"] = env
    if s.gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": s.gpus}}

    def replicas(n: int) -> dict[str, object]:
        # A copy each: YAML would otherwise print the shared container as an anchor and an alias.
        one = copy.deepcopy(container)
        return {"replicas": n, "restartPolicy": "Never", "template": {"spec": {"containers": [one]}}}

    specs = {"Master": replicas(1)}
    if s.nnodes > 1:
        specs["Worker"] = replicas(s.nnodes - 1)
    spec: dict[str, object] = {}
    if s.nproc_per_node not in (None, "1"):
        spec["nprocPerNode"] = s.nproc_per_node
    spec["pytorchReplicaSpecs"] = specs
    meta: dict[str, object] = {"name": s.name}
    if s.namespace:
        meta["namespace"] = s.namespace
    # Always trainop's whole-job policy (0: no restart), as torchrun: a failure ends every node's
    # processes, where upstream's cleanPodPolicy None would leave the other ranks waiting on it.
    meta["annotations"] = {ANNOTATION_MAX_RESTARTS: str(s.max_restarts)}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}


# ---------------------------------------------------------------------------------------------------
# torchrun's command line, flag by flag (docs/cli.md's table is checked against these rows)

AS_IS, REFUSED = "accepted as-is", "refused"


@dataclass(frozen=True, slots=True)
class TorchrunFlag:
    """One torchrun option: its spellings (the dashed ones; torchrun's underscore spellings are taken
    too), whether it takes a value, and what ``trainop run`` does with it."""

    names: tuple[str, ...]
    takes_value: bool
    verdict: str
    meaning: str
    agent: bool = False  # passed to the per-node torchrun (several processes per node)


_RDZV_WHY = (
    "the operator wires the rendezvous: every node gets MASTER_ADDR/MASTER_PORT of master-0 and its "
    "own rank (PET_* for torchrun); drop it"
)
TORCHRUN_FLAGS: tuple[TorchrunFlag, ...] = (
    TorchrunFlag(
        ("--nnodes",), True, AS_IS, "N nodes: a Master and N-1 Workers; MIN:MAX only with MIN = MAX"
    ),
    TorchrunFlag(
        ("--nproc-per-node",), True, AS_IS, "processes per node (spec.nprocPerNode); over 1 under torchrun"
    ),
    TorchrunFlag(
        ("--max-restarts",), True, AS_IS, "whole-job restarts on any failure (trainop.dev/max-restarts)"
    ),
    TorchrunFlag(("--standalone",), False, AS_IS, "one node whose rendezvous is local (run's default)"),
    TorchrunFlag(("--module", "-m"), False, AS_IS, "the script is a module: python -m MODULE"),
    TorchrunFlag(("--no-python",), False, AS_IS, "the script is an executable, run as it is"),
    TorchrunFlag(("--run-path",), False, AS_IS, "one process per node runs the path anyway", agent=True),
    TorchrunFlag(("--monitor-interval",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--start-method",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--role",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--log-dir",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--redirects", "-r"), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--tee", "-t"), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--local-ranks-filter",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--log-line-prefix-template",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--duplicate-stdout-filters",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--duplicate-stderr-filters",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--event-log-handler",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--logs-specs",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--numa-binding",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--signals-to-handle",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--shutdown-timeout",), True, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--virtual-local-rank",), False, AS_IS, "passed to each node's torchrun", agent=True),
    TorchrunFlag(("--rdzv-backend",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--rdzv-endpoint",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--rdzv-id",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--rdzv-conf",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--node-rank",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--master-addr",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--master-port",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(("--local-addr",), True, REFUSED, _RDZV_WHY),
    TorchrunFlag(
        ("--print-completion",),
        True,
        REFUSED,
        "it prints torchrun's shell completion, not a job; trainop completion SHELL prints run's",
    ),
)
_BY_NAME = {n: f for f in TORCHRUN_FLAGS for n in f.names}


@dataclass(frozen=True, slots=True)
class RunArgv:
    """``trainop run``'s argv split as torchrun splits its own: options, then the script and everything
    after it (the script's own arguments), plus the torchrun flags run handles itself."""

    argv: list[str]
    standalone: bool = False
    module: bool = False
    no_python: bool = False
    agent_args: tuple[str, ...] = ()


def split_run_argv(
    argv: Sequence[str], options: dict[str, bool], is_command: Callable[[str], bool]
) -> RunArgv:
    """Normalise run's argv the way torchrun reads its own: ``--nproc_per_node=2`` is
    ``--nproc-per-node=2``; the first word that is a command (a .py script, an executable; with
    ``-m``/``--no-python`` whatever comes first) starts the command, and everything after it is the
    command's (``trainop run train.py --lr 0.1``). ``options``: run's own options and whether each takes
    a value. torchrun flags run handles here (``--standalone``, ``-m``, the agent's options) are taken
    out; a refused one raises ``ScriptJobError`` with the reason."""
    out: list[str] = []
    agent: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        if arg.startswith("-") and arg != "-":
            name, eq, value = arg.partition("=")
            if name.startswith("--"):
                name = name.replace("_", "-")
            takes = options.get(name)
            row = _BY_NAME.get(name) if takes is None else None
            if row is None:
                out.append(name + eq + value if takes is not None else arg)
                if takes and not eq and i + 1 < len(argv):
                    out.append(argv[i + 1])
                    i += 1
                i += 1
                continue
            if row.verdict == REFUSED:
                raise ScriptJobError(
                    f"{row.names[0]} (torchrun's) is not taken by trainop run: {row.meaning}"
                )
            if row.takes_value and not eq:
                if i + 1 >= len(argv):
                    raise ScriptJobError(f"{row.names[0]} needs a value")
                value = argv[i + 1]
                i += 1
            if row.agent:
                agent += [row.names[0], value] if row.takes_value else [row.names[0]]
            else:
                flags.add(row.names[0])
            i += 1
            continue
        if is_command(arg) or flags & {"--module", "--no-python"}:
            out += ["--", *argv[i:]]
            break
        out.append(arg)
        i += 1
    return RunArgv(
        out,
        standalone="--standalone" in flags,
        module="--module" in flags,
        no_python="--no-python" in flags,
        agent_args=tuple(agent),
    )
