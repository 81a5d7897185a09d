"""Function mode of ``create_job`` (contract §7.3): a Python function → a job whose pods run it.

Builds the ``bash -c`` script (optional pip install, the function's source written to a temp file,
``torchrun`` or ``python -u``) and the job dict around it. The same script runs on Kubernetes and on the
local backend. Pure: takes the function's source text, never reads files or runs anything.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from trainop.sdk import constants
from trainop.sdk.models import build_plain

# Name of the file the function is written to (upstream's name; users see it in tracebacks).
SCRIPT_FILE = "ephemeral_script.py"
# Heredoc delimiter. Quoted in the script so bash copies the source verbatim (upstream's unquoted
# delimiter expanded ``$x`` and backticks inside the function: a deliberate fix).
HEREDOC_END = "EOM"


def build_entrypoint(kind: str, num_workers: int, num_procs_per_worker: int | str | None) -> str:
    """``torchrun`` for a PyTorchJob with more than one worker or procs per worker set, else ``python -u``."""
    if kind == constants.PYTORCHJOB_KIND and (num_workers > 1 or num_procs_per_worker is not None):
        return constants.ENTRYPOINT_TORCH
    return constants.ENTRYPOINT_PYTHON


def build_install_script(packages: Sequence[str], index_url: str) -> str:
    """Shell lines that install ``packages`` with the pod's own ``python`` (bootstrapping pip if needed).

    Each requirement is shell-quoted, so ``numpy>=1.26`` stays a requirement (upstream let bash read
    ``>`` as a redirection).
    """
    reqs = " ".join(shlex.quote(str(p)) for p in packages)
    return (
        'if ! [ -x "$(command -v pip)" ]; then\n'
        "    python -m ensurepip || python -m ensurepip --user || apt-get install python-pip\n"
        "fi\n"
        "PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet --no-warn-script-location "
        f"--index-url {shlex.quote(index_url)} {reqs}\n"
    )


def build_func_program(source: str, func_name: str, parameters: Mapping[str, Any] | None) -> str:
    """The Python file each replica runs: the function's source, then one call to it."""
    call = f"{func_name}()" if parameters is None else f"{func_name}({dict(parameters)!r})"
    return f"{source.rstrip()}\n\n{call}\n"


def build_func_script(
    source: str,
    func_name: str,
    entrypoint: str,
    parameters: Mapping[str, Any] | None = None,
    packages_to_install: Sequence[str] | None = None,
    pip_index_url: str = constants.DEFAULT_PIP_INDEX_URL,
) -> str:
    """The one argument of ``bash -c``: install packages, write the program to a temp dir, run it."""
    program = build_func_program(source, func_name, parameters)
    if any(line.strip() == HEREDOC_END for line in program.splitlines()):
        raise ValueError(
            f"the training function's source must not contain a line that is just {HEREDOC_END!r}"
        )
    run = (
        "program_path=$(mktemp -d)\n"
        f"read -r -d '' SCRIPT << '{HEREDOC_END}'\n"
        f"{program}"
        f"{HEREDOC_END}\n"
        f'printf "%s" "$SCRIPT" > "$program_path/{SCRIPT_FILE}"\n'
        f'{entrypoint} "$program_path/{SCRIPT_FILE}"\n'
    )
    if packages_to_install:
        return build_install_script(packages_to_install, pip_index_url) + run
    return run


def build_resources(resources: Any) -> dict[str, Any] | None:
    """``resources_per_worker``: a dict is lower-cased, ``gpu`` → ``nvidia.com/gpu``, and used as both
    requests and limits; a ResourceRequirements object passes through (§7.3)."""
    if resources is None:
        return None
    if isinstance(resources, Mapping):
        quantities: dict[str, Any] = {}
        for key, value in resources.items():
            k = str(key).lower()
            quantities["nvidia.com/gpu" if k == "gpu" else k] = build_plain(value)
        return {"requests": dict(quantities), "limits": dict(quantities)}
    plain = build_plain(resources)
    if not isinstance(plain, dict):
        raise ValueError(
            f"resources_per_worker must be a dict or a V1ResourceRequirements, got {type(resources).__name__}"
        )
    return plain


def build_env(env_vars: Any) -> list[dict[str, Any]] | None:
    """``env_vars``: a dict → EnvVar list; a list of V1EnvVar objects or dicts → plain EnvVars."""
    if env_vars is None:
        return None
    if isinstance(env_vars, Mapping):
        return [{"name": str(k), "value": str(v)} for k, v in env_vars.items()]
    if isinstance(env_vars, list | tuple):
        out = [build_plain(e) for e in env_vars]
        if not all(isinstance(e, dict) and "name" in e for e in out):
            raise ValueError(
                "env_vars must be a dict, or a list of V1EnvVar objects or {'name': ..., 'value': ...} dicts"
            )
        return out
    raise ValueError(f"env_vars must be a dict or a list, got {type(env_vars).__name__}")


def build_pod_template(
    kind: str,
    base_image: str,
    script: str | None,
    resources: Any = None,
    env_vars: Any = None,
    volumes: Sequence[Any] | None = None,
    volume_mounts: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The PodTemplateSpec every replica shares: the kind's container running ``script`` in ``base_image``."""
    container: dict[str, Any] = {"name": constants.JOB_PARAMETERS[kind]["container"], "image": base_image}
    if script is not None:
        container["command"] = list(constants.DEFAULT_COMMAND)
        container["args"] = [script]
    env = build_env(env_vars)
    if env:
        container["env"] = env
    res = build_resources(resources)
    if res is not None:
        container["resources"] = res
    if volume_mounts:
        container["volumeMounts"] = [build_plain(m) for m in volume_mounts]
    spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        spec["volumes"] = [build_plain(v) for v in volumes]
    return {"metadata": {"annotations": {constants.ISTIO_SIDECAR_INJECTION: "false"}}, "spec": spec}


def build_func_job(
    *,
    kind: str,
    name: str,
    namespace: str,
    template: dict[str, Any],
    num_workers: int,
    num_procs_per_worker: int | str | None = None,
    num_chief_replicas: int | None = None,
    num_ps_replicas: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The job around ``template`` (§7.3): PyTorchJob Master 1 + Worker n-1; TFJob Chief/PS/Worker."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"runPolicy": {}}

    def replica_spec(n: int) -> dict[str, Any]:
        return {"replicas": n, "template": copy.deepcopy(template)}  # every type gets its own copy

    replicas: dict[str, Any] = {}
    if kind == constants.TFJOB_KIND:
        if num_procs_per_worker is not None:
            raise ValueError("TFJob doesn't support num_procs_per_worker")
        if num_chief_replicas is not None:
            replicas[constants.REPLICA_TYPE_CHIEF] = replica_spec(num_chief_replicas)
        if num_ps_replicas is not None:
            replicas[constants.REPLICA_TYPE_PS] = replica_spec(num_ps_replicas)
        replicas[constants.REPLICA_TYPE_WORKER] = replica_spec(num_workers)
        spec["tfReplicaSpecs"] = replicas
    elif kind == constants.PYTORCHJOB_KIND:
        if num_chief_replicas is not None or num_ps_replicas is not None:
            raise ValueError("PyTorchJob doesn't support num_chief_replicas or num_ps_replicas")
        replicas[constants.REPLICA_TYPE_MASTER] = replica_spec(1)
        if num_workers > 1:
            replicas[constants.REPLICA_TYPE_WORKER] = replica_spec(num_workers - 1)
        spec["pytorchReplicaSpecs"] = replicas
        if num_procs_per_worker is not None:
            spec["nprocPerNode"] = str(num_procs_per_worker)
    else:
        raise ValueError(
            f"Job kind {kind} can't be created using function or image. Number of Workers must be set."
        )
    return {"apiVersion": constants.API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
