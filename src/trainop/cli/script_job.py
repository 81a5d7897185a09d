"""A PyTorchJob from a command line, without YAML: ``trainop run --nnodes 2 --nproc-per-node 2 --
python train.py --lr 0.1``. Flags follow torchrun (``--nnodes``, ``--nproc-per-node``,
``--max-restarts``) and TorchX's ``dist.ddp`` (``-j NNODESxNPROC``, ``--gpu``, ``--image``, ``-e``);
docs/cli.md says why. Pure: arguments in, a manifest (a dict a cluster accepts as is) out.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

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


def parse_j(text: str) -> tuple[int, str]:
    """TorchX's ``-j``: ``2x4`` → 2 nodes of 4 processes; ``3`` → 3 nodes of 1."""
    m = re.fullmatch(r"(\d+)(?:x(\d+|auto|cpu|gpu))?", text.strip())
    if m is None or int(m.group(1)) < 1:
        raise ScriptJobError(f'-j "{text}": use NNODES or NNODESxNPROC_PER_NODE, e.g. -j 2x4')
    return int(m.group(1)), m.group(2) or "1"


def compute_nnodes(nnodes: int | None, workers: int | None, j: str | None) -> tuple[int, str | None]:
    """(nodes, nproc from -j) out of the three ways to say how many replicas: torchrun's ``--nnodes``
    (every node, the Master included), PyTorchJob's ``--workers`` (Workers besides the Master), TorchX's
    ``-j``. At most one of them."""
    given = [f for f, v in (("--nnodes", nnodes), ("--workers", workers), ("-j", j)) if v is not None]
    if len(given) > 1:
        raise ScriptJobError(f"{' and '.join(given)} both say how many replicas; use one")
    if j is not None:
        n, nproc = parse_j(j)
        return n, nproc
    if workers is not None:
        if workers < 0:
            raise ScriptJobError("--workers must be 0 or more (the Workers besides the Master)")
        return workers + 1, None
    if nnodes is not None and nnodes < 1:
        raise ScriptJobError("--nnodes must be at least 1 (the Master)")
    return nnodes or 1, None


def check_nproc(value: str) -> str:
    if value in NPROC_WORDS or (value.isdigit() and int(value) >= 1):
        return value
    raise ScriptJobError(f'--nproc-per-node "{value}": use a count (1, 2 …) or auto, cpu, gpu (as torchrun)')


def build_command(argv: Sequence[str], nproc_per_node: str | None) -> list[str]:
    """The container command: ``train.py ARGS`` runs under ``python``; with several processes per node
    a Python command runs under ``torchrun``, which reads the PET_* variables the operator sets
    (nodes, node rank, master address, processes per node)."""
    if not argv:
        raise ScriptJobError("no command to run: trainop run [OPTIONS] -- python train.py [ARGS]")
    cmd = list(argv)
    if cmd[0].endswith(".py"):
        cmd = ["python", *cmd]
    if nproc_per_node in (None, "1"):
        return cmd
    exe = os.path.basename(cmd[0])
    if exe == "torchrun" or cmd[:3] == [cmd[0], "-m", "torch.distributed.run"]:
        return cmd
    if re.fullmatch(r"python[0-9.]*", exe) and len(cmd) > 1:
        return ["torchrun", *cmd[1:]]  # `python -m pkg` → `torchrun -m pkg` too
    raise ScriptJobError(
        f"--nproc-per-node {nproc_per_node} starts several processes through torchrun: give a Python "
        f'command (python train.py …) or torchrun itself, not "{cmd[0]}"'
    )


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
    """The PyTorchJob: a Master and ``nnodes - 1`` Workers running the command; restartPolicy Never
    unless ``max_restarts`` (then OnFailure with backoffLimit = max_restarts, as torchrun's restarts
    of a failed group)."""
    container: dict[str, object] = {
        "name": "pytorch",
        "image": s.image,
        "command": build_command(s.command, s.nproc_per_node),
    }
    if s.env:
        container["env"] = [{"name": k, "value": v} for k, v in s.env]
    if s.gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": s.gpus}}
    policy = "OnFailure" if s.max_restarts else "Never"

    def replicas(n: int) -> dict[str, object]:
        # A copy each: YAML would otherwise print the shared container as an anchor and an alias.
        one = copy.deepcopy(container)
        return {"replicas": n, "restartPolicy": policy, "template": {"spec": {"containers": [one]}}}

    specs = {"Master": replicas(1)}
    if s.nnodes > 1:
        specs["Worker"] = replicas(s.nnodes - 1)
    spec: dict[str, object] = {}
    if s.nproc_per_node not in (None, "1"):
        spec["nprocPerNode"] = s.nproc_per_node
    if s.max_restarts:
        spec["runPolicy"] = {"backoffLimit": s.max_restarts}
    spec["pytorchReplicaSpecs"] = specs
    meta: dict[str, object] = {"name": s.name}
    if s.namespace:
        meta["namespace"] = s.namespace
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}
