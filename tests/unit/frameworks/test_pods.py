"""Whole pod specs after ``customize_pod``: which containers get env (§3.3), init containers (§3.4),
MPI's worker and launcher pods (§3.9), labels (§3.1)."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.core.topology import LoopbackTopology, ServiceTopology
from trainop.frameworks.pytorch import PyTorchPlugin
from trainop.frameworks.registry import REGISTRY, build_registry
from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job, tf_job, xgboost_job

from .helpers import customized, defaulted, fresh_pod

K8S = ServiceTopology()


def E(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def wait_script(addr: str, tries: int) -> str:
    return (
        f'tries=0; until nslookup "{addr}"; do tries=$((tries + 1)); '
        f'if [ "$tries" -ge {tries} ]; then echo "master {addr} not found"; exit 1; fi; '
        f"echo waiting for master; sleep 2; done"
    )


def init_pytorch(addr: str, image: str = "alpine:3.10", tries: int = 100) -> dict[str, Any]:
    return {
        "name": "init-pytorch",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": ["sh", "-c", wait_script(addr, tries)],
    }


PT_ENV_W0 = [
    E("PYTHONUNBUFFERED", "1"),
    E("MASTER_PORT", "23456"),
    E("PET_MASTER_PORT", "23456"),
    E("MASTER_ADDR", "a-master-0"),
    E("PET_MASTER_ADDR", "a-master-0"),
    E("WORLD_SIZE", "2"),
    E("RANK", "1"),
    E("PET_NODE_RANK", "1"),
    E("PET_NPROC_PER_NODE", "auto"),
    E("PET_NNODES", "2"),
]
PT_PORTS = [{"name": "pytorchjob-port", "containerPort": 23456}]
IMG = "example.com/pytorch:test"


SPEC_CASES = [
    pytest.param(
        pytorch_job("a")
        .master(1)
        .workers(1)
        .container("Worker", name="sidecar", image="busybox")
        .init_container("Worker", name="fetch", image="busybox"),
        "Worker",
        0,
        {
            "containers": [
                {"name": "pytorch", "image": IMG, "ports": PT_PORTS, "env": PT_ENV_W0},
                {"name": "sidecar", "image": "busybox", "env": PT_ENV_W0},
            ],
            "initContainers": [{"name": "fetch", "image": "busybox"}, init_pytorch("a-master-0")],
            "restartPolicy": "OnFailure",
        },
        id="pytorch worker: env in every container, not in init containers; init-pytorch after the user's",
    ),
    pytest.param(
        pytorch_job("a").workers(1).restart_policy("ExitCode"),
        "Worker",
        0,
        {
            "containers": [
                {
                    "name": "pytorch",
                    "image": IMG,
                    "ports": PT_PORTS,
                    "env": [
                        E("PYTHONUNBUFFERED", "1"),
                        E("PET_NPROC_PER_NODE", "auto"),
                        E("PET_NNODES", "1"),
                    ],
                }
            ],
            "restartPolicy": "Never",
        },
        id="pytorch without Master: no init container",
    ),
    pytest.param(
        tf_job("t")
        .namespace("ns")
        .workers(2)
        .template(
            lambda t: t["spec"]["containers"].insert(0, {"name": "sidecar", "image": "busybox"}),
        )
        .container("Worker", name="tensorflow", image="second"),
        "Worker",
        0,
        {
            "containers": [
                {"name": "sidecar", "image": "busybox"},
                {
                    "name": "tensorflow",
                    "image": "example.com/tensorflow:test",
                    "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                    "env": [
                        E(
                            "TF_CONFIG",
                            '{"cluster":{"worker":["t-worker-0.ns.svc:2222","t-worker-1.ns.svc:2222"]},'
                            '"task":{"type":"worker","index":0},"environment":"cloud"}',
                        )
                    ],
                },
                {"name": "tensorflow", "image": "second"},
            ],
            "restartPolicy": "Never",
        },
        id="tf: only the first tensorflow container gets TF_CONFIG",
    ),
    pytest.param(
        xgboost_job("x").master(1).container("Master", name="exporter", image="busybox"),
        "Master",
        0,
        {
            "containers": [
                {
                    "name": "xgboost",
                    "image": "example.com/xgboost:test",
                    "ports": [{"name": "xgboostjob-port", "containerPort": 9999}],
                    "env": [
                        E("MASTER_PORT", "9999"),
                        E("MASTER_ADDR", "x-master-0"),
                        E("WORLD_SIZE", "1"),
                        E("RANK", "0"),
                        E("PYTHONUNBUFFERED", "1"),
                    ],
                },
                {
                    "name": "exporter",
                    "image": "busybox",
                    "env": [
                        E("MASTER_PORT", "9999"),
                        E("MASTER_ADDR", "x-master-0"),
                        E("WORLD_SIZE", "1"),
                        E("RANK", "0"),
                        E("PYTHONUNBUFFERED", "1"),
                    ],
                },
            ],
            "restartPolicy": "Never",
        },
        id="xgboost: env in every container",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2),
        "Worker",
        1,
        {
            "containers": [
                {
                    "name": "mpi",
                    "image": "example.com/mpi:test",
                    "command": ["sleep"],
                    "args": ["365d"],
                    "volumeMounts": [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}],
                }
            ],
            "volumes": [
                {
                    "name": "mpi-job-config",
                    "configMap": {
                        "name": "m-config",
                        "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
                    },
                }
            ],
            "restartPolicy": "Never",
        },
        id="mpi worker: sleep 365d when no command, kubexec.sh mounted, no env",
    ),
    pytest.param(
        mpi_job("m").launcher().workers(2).command(["python", "serve.py"], rtype="Worker"),
        "Worker",
        0,
        {
            "containers": [
                {
                    "name": "mpi",
                    "image": "example.com/mpi:test",
                    "command": ["python", "serve.py"],
                    "volumeMounts": [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}],
                }
            ],
            "volumes": [
                {
                    "name": "mpi-job-config",
                    "configMap": {
                        "name": "m-config",
                        "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
                    },
                }
            ],
            "restartPolicy": "Never",
        },
        id="mpi worker: the user's command is kept",
    ),
    pytest.param(
        mpi_job("m")
        .namespace("ns")
        .launcher()
        .workers(1)
        .command(["mpirun", "-n", "2", "app"], rtype="Launcher"),
        "Launcher",
        0,
        {
            "containers": [
                {
                    "name": "mpi",
                    "image": "example.com/mpi:test",
                    "command": ["mpirun", "-n", "2", "app"],
                    "env": [
                        E("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
                        E("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                        E("NVIDIA_VISIBLE_DEVICES", ""),
                        E("NVIDIA_DRIVER_CAPABILITIES", ""),
                        E("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
                        E("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
                    ],
                    "volumeMounts": [
                        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                    ],
                }
            ],
            "initContainers": [
                {
                    "name": "kubectl-delivery",
                    "image": "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",
                    "imagePullPolicy": "IfNotPresent",
                    "env": [E("TARGET_DIR", "/opt/kube"), E("NAMESPACE", "ns")],
                    "volumeMounts": [
                        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
                        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                    ],
                    "resources": {
                        "limits": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
                        "requests": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
                    },
                }
            ],
            "serviceAccountName": "m-launcher",
            "volumes": [
                {"name": "mpi-job-kubectl", "emptyDir": {}},
                {
                    "name": "mpi-job-config",
                    "configMap": {
                        "name": "m-config",
                        "items": [
                            {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
                            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
                        ],
                    },
                },
            ],
            "restartPolicy": "Never",
        },
        id="mpi launcher: kubectl-delivery, env, mounts, volumes, default service account",
    ),
]


@pytest.mark.parametrize(("builder", "rtype", "index", "want"), SPEC_CASES)
def test_pod_spec(builder: JobBuilder, rtype: str, index: int, want: dict[str, Any]) -> None:
    got = customized(defaulted(builder), rtype, index, K8S)["spec"]
    assert got == want


def test_mpi_launcher_keeps_its_service_account_and_drops_replica_index() -> None:
    job = defaulted(
        mpi_job("m")
        .launcher()
        .workers(1)
        .template(lambda t: t["spec"].update(serviceAccountName="mine"), "Launcher")
    )
    pod = fresh_pod(job, "Launcher", 0)
    pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "0"  # as a generic core would add
    REGISTRY.get("MPIJob").customize_pod(job, "Launcher", 0, pod, K8S)
    assert (pod["metadata"], pod["spec"]["serviceAccountName"]) == (
        {
            "name": "m-launcher",
            "namespace": "default",
            "labels": {
                "training.kubeflow.org/operator-name": "mpijob-controller",
                "training.kubeflow.org/job-name": "m",
                "training.kubeflow.org/replica-type": "launcher",
                "training.kubeflow.org/job-role": "master",
            },
        },
        "mine",
    )


def test_init_container_flags_come_from_the_plugin_object() -> None:
    registry = build_registry(
        pytorch_init_container_image="registry.local/alpine:3.19", pytorch_init_container_max_tries=7
    )
    job = defaulted(pytorch_job("a").master(1).workers(1))
    pod = fresh_pod(job, "Worker", 0)
    registry.get("PyTorchJob").customize_pod(job, "Worker", 0, pod, LoopbackTopology(ports={}))
    assert pod["spec"]["initContainers"] == [init_pytorch("127.0.0.1", "registry.local/alpine:3.19", 7)]
    assert isinstance(registry.get("PyTorchJob"), PyTorchPlugin)


LABEL_CASES = [
    pytest.param(
        pytorch_job("a").master(1).workers(2),
        "Master",
        0,
        {"job-role": "master"},
        id="pytorch master-0 is the master role",
    ),
    pytest.param(pytorch_job("a").master(1).workers(2), "Worker", 0, {}, id="pytorch worker-0 with a Master"),
    pytest.param(mpi_job("m").launcher().workers(1), "Worker", 0, {}, id="mpi worker"),
]


@pytest.mark.parametrize(("builder", "rtype", "index", "extra"), LABEL_CASES)
def test_pod_labels(builder: JobBuilder, rtype: str, index: int, extra: dict[str, str]) -> None:
    job = defaulted(builder)
    plugin = REGISTRY.get(job.kind)
    want = {
        "training.kubeflow.org/operator-name": plugin.info.controller_name,
        "training.kubeflow.org/job-name": job.name,
        "training.kubeflow.org/replica-type": rtype.lower(),
        "training.kubeflow.org/replica-index": str(index),
        **{f"training.kubeflow.org/{k}": v for k, v in extra.items()},
    }
    assert plugin.pod_labels(job, rtype, index) == want
