"""kubeflow-training's ``utils`` module: the template builders and helpers notebooks import from it.

Same names, signatures and results as ``kubeflow.training.utils.utils`` 1.9.4; the objects they build
are ``kubernetes.client`` models and this SDK's ``KubeflowOrgV1*`` models. ``TrainingClient`` itself
builds jobs as JSON (``trainop.sdk.funcjob``) and needs none of this. No I/O except where upstream's
function does it (reading the kube-config or the service-account namespace).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import queue
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from trainop.sdk import constants, models

logger = logging.getLogger(__name__)

# Upstream's module is kubeflow.training.utils.utils: `from ….utils import utils` and
# `import ….utils.utils` work here too (the import system finds the name in sys.modules).
utils = sys.modules[__name__]
sys.modules[f"{__name__}.utils"] = utils


class StatusLogger:
    """Logger to print Training Job statuses."""

    def __init__(self, header: str, column_format: str) -> None:
        self.header = header
        self.column_format = column_format
        self.first_call = True

    def __call__(self, *values: Any) -> None:
        if self.first_call:
            logger.debug(self.header)
            self.first_call = False
        logger.debug(self.column_format.format(*values))


class FakeResponse:
    """A RESTResponse stand-in holding ``obj`` as JSON, for ``ApiClient.deserialize``."""

    def __init__(self, obj: Any) -> None:
        self.data = json.dumps(obj)


class SetEncoder(json.JSONEncoder):
    """JSON encoder that writes sets as lists and types as their names."""

    def default(self, obj: Any) -> Any:
        if isinstance(obj, set):
            return list(obj)
        if isinstance(obj, type):
            return obj.__name__
        return json.JSONEncoder.default(self, obj)


def is_running_in_k8s() -> bool:
    """Upstream's test: the service-account secrets directory exists."""
    return os.path.isdir("/var/run/secrets/kubernetes.io/")


def get_default_target_namespace() -> str:
    """The service-account namespace in a pod, else the kube-config context's, else ``default``."""
    if not is_running_in_k8s():
        try:
            from kubernetes import config

            _, current_context = config.list_kube_config_contexts()
            return str(current_context["context"]["namespace"])
        except Exception:
            return constants.DEFAULT_NAMESPACE
    with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
        return f.readline()


def wrap_log_stream(q: queue.Queue[Any], stream: Iterator[Any]) -> None:
    """Copy ``stream``'s items onto ``q``, then None."""
    for logline in stream:
        q.put(logline)
    q.put(None)


def get_log_queue_pool(streams: list[Iterator[Any]]) -> list[queue.Queue[Any]]:
    """One bounded queue per stream, each fed by its own thread."""
    pool: list[queue.Queue[Any]] = []
    for stream in streams:
        q: queue.Queue[Any] = queue.Queue(maxsize=100)
        pool.append(q)
        threading.Thread(target=wrap_log_stream, args=(q, stream)).start()
    return pool


def has_condition(conditions: list[Any], condition_type: str) -> bool:
    """True if ``conditions`` has one of ``condition_type`` whose status is ``"True"``."""
    return any(c.type == condition_type and c.status == constants.CONDITION_STATUS_TRUE for c in conditions)


def get_script_for_python_packages(packages_to_install: list[str], pip_index_url: str) -> str:
    """Shell lines that pip-install ``packages_to_install`` from ``pip_index_url`` (upstream's text;
    ``TrainingClient`` quotes each requirement, see docs/sdk.md)."""
    packages_str = " ".join([str(package) for package in packages_to_install])
    return textwrap.dedent(
        f"""
        if ! [ -x "$(command -v pip)" ]; then
            python -m ensurepip || python -m ensurepip --user || apt-get install python-pip
        fi

        PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet \
        --no-warn-script-location --index-url {pip_index_url} {packages_str}
        """
    )


def get_command_using_train_func(
    train_func: Callable[..., Any],
    entrypoint: str,
    train_func_parameters: dict[str, Any] | None = None,
    packages_to_install: list[str] | None = None,
    pip_index_url: str = constants.DEFAULT_PIP_INDEX_URL,
) -> tuple[list[str], list[str]]:
    """Container command and args that run ``train_func`` (upstream's script text)."""
    if not callable(train_func):
        raise ValueError(f"Training function must be callable, got function type: {type(train_func)}")
    func_code = textwrap.dedent(inspect.getsource(train_func))
    if train_func_parameters is None:
        func_code = f"{func_code}\n{train_func.__name__}()\n"
    else:
        func_code = f"{func_code}\n{train_func.__name__}({train_func_parameters})\n"
    exec_script = textwrap.dedent(
        """
                program_path=$(mktemp -d)
                read -r -d '' SCRIPT << EOM\n
                {func_code}
                EOM
                printf "%s" \"$SCRIPT\" > \"$program_path/ephemeral_script.py\"
                {entrypoint} \"$program_path/ephemeral_script.py\""""
    )
    exec_script = exec_script.format(func_code=func_code, entrypoint=entrypoint)
    if packages_to_install is not None:
        exec_script = get_script_for_python_packages(packages_to_install, pip_index_url) + exec_script
    return list(constants.DEFAULT_COMMAND), [exec_script]


def get_container_spec(
    name: str,
    base_image: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    resources: Any = None,
    volume_mounts: list[Any] | None = None,
    env_vars: Any = None,
) -> Any:
    """A ``V1Container``; ``resources`` as a dict is lower-cased, ``gpu`` → ``nvidia.com/gpu``, and
    used as both requests and limits."""
    if name is None or base_image is None:
        raise ValueError("Container name or base image cannot be none")
    if env_vars:
        if isinstance(env_vars, dict):
            env_vars = [models.V1EnvVar(name=k, value=v) for k, v in env_vars.items()]
        elif isinstance(env_vars, list):
            env_vars = [v if isinstance(v, models.V1EnvVar) else models.V1EnvVar(**v) for v in env_vars]
    container_spec = models.V1Container(
        name=name,
        image=base_image,
        command=command,
        args=args,
        volume_mounts=volume_mounts,
        env=env_vars,
    )
    if isinstance(resources, dict):
        resources = {k.lower(): v for k, v in resources.items()}
        if "gpu" in resources:
            resources["nvidia.com/gpu"] = resources.pop("gpu")
        resources = models.V1ResourceRequirements(requests=resources, limits=resources)
    container_spec.resources = resources
    return container_spec


def get_pod_template_spec(
    containers: list[Any],
    init_containers: list[Any] | None = None,
    volumes: list[Any] | None = None,
) -> Any:
    """A ``V1PodTemplateSpec`` around ``containers``, with the Istio sidecar disabled."""
    return models.V1PodTemplateSpec(
        metadata=models.V1ObjectMeta(annotations={constants.ISTIO_SIDECAR_INJECTION: "false"}),
        spec=models.V1PodSpec(init_containers=init_containers, containers=containers, volumes=volumes),
    )


def get_tfjob_template(
    name: str,
    namespace: str,
    pod_template_spec: Any,
    num_workers: int,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    num_chief_replicas: int | None = None,
    num_ps_replicas: int | None = None,
) -> models.KubeflowOrgV1TFJob:
    """A TFJob with Chief, PS and Worker replicas sharing ``pod_template_spec``."""
    tfjob = models.KubeflowOrgV1TFJob(
        api_version=constants.API_VERSION,
        kind=constants.TFJOB_KIND,
        metadata=models.V1ObjectMeta(name=name, namespace=namespace, labels=labels, annotations=annotations),
        spec=models.KubeflowOrgV1TFJobSpec(
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy=None),
            tf_replica_specs={},
        ),
    )
    for replica_type, replicas in (
        (constants.REPLICA_TYPE_CHIEF, num_chief_replicas),
        (constants.REPLICA_TYPE_PS, num_ps_replicas),
        (constants.REPLICA_TYPE_WORKER, num_workers),
    ):
        if replicas is not None:
            tfjob.spec.tf_replica_specs[replica_type] = models.KubeflowOrgV1ReplicaSpec(
                replicas=replicas, template=pod_template_spec
            )
    return tfjob


def get_pytorchjob_template(
    name: str,
    namespace: str,
    num_workers: int,
    worker_pod_template_spec: Any,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    master_pod_template_spec: Any = None,
    num_procs_per_worker: int | str | None = None,
) -> models.KubeflowOrgV1PyTorchJob:
    """A PyTorchJob: Master (its own template, else the Worker's) and ``num_workers`` - 1 Workers."""
    pytorchjob = models.KubeflowOrgV1PyTorchJob(
        api_version=constants.API_VERSION,
        kind=constants.PYTORCHJOB_KIND,
        metadata=models.V1ObjectMeta(name=name, namespace=namespace, labels=labels, annotations=annotations),
        spec=models.KubeflowOrgV1PyTorchJobSpec(
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy=None),
            pytorch_replica_specs={},
        ),
    )
    if num_procs_per_worker is not None:
        pytorchjob.spec.nproc_per_node = str(num_procs_per_worker)
    pytorchjob.spec.pytorch_replica_specs[constants.REPLICA_TYPE_MASTER] = models.KubeflowOrgV1ReplicaSpec(
        replicas=1, template=master_pod_template_spec or worker_pod_template_spec
    )
    if num_workers > 1:
        pytorchjob.spec.pytorch_replica_specs[constants.REPLICA_TYPE_WORKER] = (
            models.KubeflowOrgV1ReplicaSpec(replicas=num_workers - 1, template=worker_pod_template_spec)
        )
    return pytorchjob


def get_pvc_spec(pvc_name: str, namespace: str, storage_config: dict[str, Any]) -> Any:
    """The ``V1PersistentVolumeClaim`` ``train()`` creates for the model and dataset."""
    if pvc_name is None or namespace is None:
        raise ValueError("One of the required storage config argument is None")
    if "size" not in storage_config:
        storage_config["size"] = constants.PVC_DEFAULT_SIZE
    if "access_modes" not in storage_config:
        storage_config["access_modes"] = constants.PVC_DEFAULT_ACCESS_MODES
    pvc_spec = models.V1PersistentVolumeClaim(
        api_version="v1",
        kind="PersistentVolumeClaim",
        metadata={"name": pvc_name, "namespace": namespace},
        spec=models.V1PersistentVolumeClaimSpec(
            access_modes=storage_config["access_modes"],
            resources=models.V1ResourceRequirements(requests={"storage": storage_config["size"]}),
        ),
    )
    if "storage_class" in storage_config:
        pvc_spec.spec.storage_class_name = storage_config["storage_class"]
    return pvc_spec


def add_event_to_dict(
    events_dict: dict[str, list[str]],
    event: Any,
    object_kind: str,
    object_name: str,
    object_creation_timestamp: datetime,
) -> None:
    """Add ``event`` as ``"<time> <message>"`` under ``"<kind lower>/<name>"`` when it is about that
    object and not older than it."""
    if (
        event.involved_object.kind == object_kind
        and event.involved_object.name == object_name
        and event.metadata.creation_timestamp >= object_creation_timestamp
    ):
        event_key = f"{object_kind.lower()}/{object_name}"
        event_time = event.metadata.creation_timestamp.strftime("%Y-%m-%d %H:%M:%S")
        events_dict.setdefault(event_key, []).append(f"{event_time} {event.message}")
