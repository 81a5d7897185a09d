"""Each pod's env (in order), hostname, subdomain and the pods' order, compared case by case with the
tables of Kubeflow Trainer v2.3.0's own plugin tests (github.com/kubeflow/trainer/v2@v2.3.0, which
hack/testenv/build.sh fetches; the file and the test case's name head each row). The TrainJobs run on
trainop's shipped runtimes (manifests/runtimes); tests/integration/k8s/test_trainjob_upstream_crds.py
shows upstream's own runtimes resolve to the same pods.

Upstream's tables feed the plugin a runtime.Info whose pod set has a single `node` container; the
JobSet plugin (plugins/jobset/jobset.go, Endpoints) names the pods `<job>-<rjob>-<jobIdx>-<podIdx>`
under the subdomain `<job>`, which these rows check as well. Upstream's MPI tables give the hostfile
made-up endpoints (`trainJob-node-1-0`); the rows here keep their shape (order, slots) on real names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import parse_trainer_object
from trainop.core.trainjob import ResolvedTrainJob, resolve_trainjob
from trainop.frameworks.registry import REGISTRY

RUNTIMES_DIR = Path(__file__).resolve().parents[3] / "manifests" / "runtimes"
# constants.JobCompletionIndexFieldPath
INDEX = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
TORCH = "pkg/runtime/framework/plugins/torch/torch_test.go"
MPI = "pkg/runtime/framework/plugins/mpi/mpi_test.go"
JAX = "pkg/runtime/framework/plugins/jax/jax_test.go"
XGBOOST = "pkg/runtime/framework/plugins/xgboost/xgboost_test.go"


def resolve(name: str, runtime: str, trainer: dict[str, Any]) -> ResolvedTrainJob:
    rt = parse_trainer_object(yaml.safe_load((RUNTIMES_DIR / f"{runtime}.yaml").read_text()))
    job = parse_trainer_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
        }
    )
    assert isinstance(rt, TrainingRuntime) and isinstance(job, TrainJob)
    return resolve_trainjob(job, rt, REGISTRY)


def env(resolved: ResolvedTrainJob, step: str) -> list[tuple[str, Any]]:
    c = resolved.step(step).container("node")  # type: ignore[union-attr]
    assert c is not None
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in c.get("env") or []]


def torch_env(job: str, nnodes: str, nproc: str) -> list[tuple[str, Any]]:
    """torch.go's order: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT."""
    return [
        ("PET_NNODES", nnodes),
        ("PET_NPROC_PER_NODE", nproc),
        ("PET_NODE_RANK", INDEX),
        ("PET_MASTER_ADDR", f"{job}-node-0-0.{job}"),
        ("PET_MASTER_PORT", "29500"),
    ]


def cpus(n: str) -> dict[str, Any]:
    return {"image": "test:image", "resourcesPerNode": {"requests": {"cpu": n}}}


@pytest.mark.parametrize(
    ("job", "trainer", "want"),
    [
        pytest.param(
            "trainJob",
            {"numNodes": 2},
            torch_env("trainJob", "2", "1"),
            id=f"{TORCH}: trainJob numNodes is respected rather than mlPolicy one",
        ),
        pytest.param(
            "test-job",
            cpus("4"),
            torch_env("test-job", "1", "4"),
            id=f"{TORCH}: nproc_per_node=auto with CPU limit",
        ),
        pytest.param(
            "test-job",
            {"image": "test:image"},
            torch_env("test-job", "1", "1"),
            id=f"{TORCH}: nproc_per_node=auto with no CPU resources",
        ),
        pytest.param(
            "test-job",
            cpus("3"),
            torch_env("test-job", "1", "3"),
            id=f"{TORCH}: nproc_per_node=auto with CPU request but no limit",
        ),
        pytest.param(
            "test-job",
            cpus("2.5"),
            torch_env("test-job", "1", "3"),
            id=f"{TORCH}: nproc_per_node=auto with millicore CPU limit",
        ),
        pytest.param(
            "test-job",
            cpus("0.7"),
            torch_env("test-job", "1", "1"),
            id=f"{TORCH}: nproc_per_node=auto with fractional CPU limit",
        ),
        pytest.param(
            "test-job",
            cpus("2500m"),
            torch_env("test-job", "1", "3"),
            id=f"{TORCH}: nproc_per_node=auto with millicore CPU limit in m format",
        ),
        pytest.param(
            "test-job",
            {"image": "test:image", "resourcesPerNode": {"requests": {"example.com/gpu": "2"}}},
            torch_env("test-job", "1", "auto"),
            id=f"{TORCH}: nproc_per_node=auto with GPU request should remain auto",
        ),
        pytest.param(
            "test-job",
            {**cpus("8"), "numProcPerNode": 3},
            torch_env("test-job", "1", "3"),
            id=f"{TORCH}: explicitly set nproc_per_node should be preserved",
        ),
        pytest.param(
            "cpu-gpu-job",
            {"image": "test:image", "resourcesPerNode": {"requests": {"cpu": "6", "example.com/gpu": "2"}}},
            torch_env("cpu-gpu-job", "1", "auto"),
            id=f"{TORCH}: nproc_per_node=auto resolves to GPU count when GPU resources present",
        ),
        pytest.param(
            "cpu-frac-job",
            cpus("3.7"),
            torch_env("cpu-frac-job", "1", "4"),
            id=f"{TORCH}: nproc_per_node=cpu with fractional CPU",
        ),
        pytest.param(
            "gpu-job",
            {
                "numNodes": 4,
                "image": "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-runtime",
                "resourcesPerNode": {"requests": {"cpu": "8", "memory": "16Gi", "example.com/gpu": "4"}},
            },
            torch_env("gpu-job", "4", "auto"),
            id=f"{TORCH}: multi-node multi-GPU training with complete info",
        ),
    ],
)
def test_torch(job: str, trainer: dict[str, Any], want: list[tuple[str, Any]]) -> None:
    got = resolve(job, "torch-distributed", trainer)
    assert env(got, "node") == want
    n = int(want[0][1])
    assert [(p.name, p.pod["spec"]["hostname"], p.pod["spec"]["subdomain"]) for p in got.pods()] == [
        (f"{job}-node-0-{i}", f"{job}-node-0-{i}", job) for i in range(n)
    ]
    node = got.step("node")
    assert node is not None
    assert (node.container("node") or {})["ports"] == [{"containerPort": 29500}]


def jax_env(job: str, n: str) -> list[tuple[str, Any]]:
    return [
        ("JAX_NUM_PROCESSES", n),
        ("JAX_PROCESS_ID", INDEX),
        ("JAX_COORDINATOR_ADDRESS", f"{job}-node-0-0.{job}:29500"),
    ]


@pytest.mark.parametrize(
    ("job", "trainer", "want"),
    [
        pytest.param(
            "single-node-job",
            {"numNodes": 1},
            jax_env("single-node-job", "1"),
            id=f"{JAX}: single node JAX training",
        ),
        pytest.param(
            "multi-node-job",
            {"numNodes": 4},
            jax_env("multi-node-job", "4"),
            id=f"{JAX}: multi-node JAX training",
        ),
    ],
)
def test_jax(job: str, trainer: dict[str, Any], want: list[tuple[str, Any]]) -> None:
    got = resolve(job, "jax-distributed", trainer)
    assert env(got, "node") == want
    assert [p.name for p in got.pods()] == [f"{job}-node-0-{i}" for i in range(trainer["numNodes"])]
    assert {p.pod["spec"]["subdomain"] for p in got.pods()} == {job}


def xgboost_env(job: str, workers: str) -> list[tuple[str, Any]]:
    return [
        ("DMLC_TRACKER_URI", f"{job}-node-0-0.{job}"),
        ("DMLC_TRACKER_PORT", "29500"),
        ("DMLC_TASK_ID", INDEX),
        ("DMLC_NUM_WORKER", workers),
    ]


@pytest.mark.parametrize(
    ("job", "trainer", "want"),
    [
        pytest.param(
            "multi-node-job",
            {"numNodes": 4},
            xgboost_env("multi-node-job", "4"),
            id=f"{XGBOOST}: multi-node XGBoost training (CPU)",
        ),
        pytest.param(
            "gpu-job",
            {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}}},
            xgboost_env("gpu-job", "4"),
            id=f"{XGBOOST}: XGBoost training with GPU resources",
        ),
    ],
)
def test_xgboost(job: str, trainer: dict[str, Any], want: list[tuple[str, Any]]) -> None:
    got = resolve(job, "xgboost-distributed", trainer)
    assert env(got, "node") == want
    assert [p.name for p in got.pods()] == [f"{job}-node-0-{i}" for i in range(trainer["numNodes"])]


# mpi.go: the launcher's env, in this order; the nodes get none (only the SSH volume).
def openmpi_env(slots: str) -> list[tuple[str, Any]]:
    return [
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_set_default_slots", slots),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
    ]


@pytest.mark.parametrize(
    ("trainer", "want_pods", "want_hostfile", "slots"),
    [
        pytest.param(
            {"numNodes": 10},
            [f"trainJob-node-0-{i}" for i in range(9)] + ["trainJob-launcher-0-0"],
            "".join(f"trainJob-node-0-{i}.trainJob slots=1\n" for i in range(9))
            + "trainJob-launcher-0-0.trainJob slots=1\n",
            "1",
            # runLauncherAsNode: the launcher is one of numNodes (node Count 9 of 10), and it is in the
            # hostfile; the pod sets' order is the runtime template's (deepspeed_distributed.yaml: node,
            # then launcher), and so is the hostfile's.
            id=f"{MPI}: runLauncherAsNode is true",
        ),
        pytest.param(
            {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}}},
            ["trainJob-node-0-0", "trainJob-launcher-0-0"],
            "trainJob-node-0-0.trainJob slots=4\ntrainJob-launcher-0-0.trainJob slots=4\n",
            "4",
            id=f"{MPI}: numProcPerNode is set to number of GPUs in TrainJob",
        ),
    ],
)
def test_mpi(trainer: dict[str, Any], want_pods: list[str], want_hostfile: str, slots: str) -> None:
    got = resolve("trainJob", "deepspeed-distributed", trainer)
    assert env(got, "launcher") == openmpi_env(slots)
    assert env(got, "node") == []
    assert [p.name for p in got.pods()] == want_pods
    assert got.order() == [["node"], ["launcher"]]  # dependsOn: node Ready
    (hostfile,) = (o for o in got.objects if o["kind"] == "ConfigMap")
    assert (hostfile["metadata"]["name"], hostfile["data"]) == (
        "trainJob-mpi-hostfile",
        {"hostfile": want_hostfile},
    )
    (secret,) = (o for o in got.objects if o["kind"] == "Secret")
    assert secret["metadata"]["name"] == "trainJob-mpi-ssh-auth"
