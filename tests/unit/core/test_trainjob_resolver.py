"""The runtime resolver, one table per shipped runtime: each pod's env, name, hostname and the steps'
order, compared with what Kubeflow Trainer v2.3.0's plugins produce for the same TrainJob.

Upstream files each case follows: pkg/runtime/framework/plugins/torch/torch.go (PET_* env),
plugins/mpi/mpi.go (hostfile, SSH volume, Open MPI env, node counts), plugins/jax/jax.go,
plugins/xgboost/xgboost.go, plugins/jobset/{jobset,builder}.go (initializers, trainer overrides,
endpoints, runtime patch checks), plugins/coscheduling/coscheduling.go, and the runtimes of
manifests/base/runtimes/ (trainop's equivalents live in manifests/runtimes/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import parse_trainer_object
from trainop.core.trainjob import (
    LoopbackTrainJobTopology,
    ResolvedTrainJob,
    RuntimeResolutionError,
    find_runtime,
    resolve_trainjob,
)
from trainop.frameworks.registry import REGISTRY

RUNTIMES_DIR = Path(__file__).resolve().parents[3] / "manifests" / "runtimes"
RANK = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}


def runtime(name: str) -> TrainingRuntime:
    rt = parse_trainer_object(yaml.safe_load((RUNTIMES_DIR / f"{name}.yaml").read_text()))
    assert isinstance(rt, TrainingRuntime)
    return rt


def trainjob(name: str, runtime_name: str, **spec: Any) -> TrainJob:
    doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"runtimeRef": {"name": runtime_name}, **spec},
    }
    job = parse_trainer_object(doc)
    assert isinstance(job, TrainJob)
    return job


def resolve(job: TrainJob, rt: TrainingRuntime, **kw: Any) -> ResolvedTrainJob:
    return resolve_trainjob(job, rt, REGISTRY, **kw)


def env_of(resolved: ResolvedTrainJob, step: str, container: str = "node") -> dict[str, Any]:
    c = resolved.step(step).container(container)  # type: ignore[union-attr]
    assert c is not None
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}


def shipped() -> list[str]:
    return sorted(p.stem for p in RUNTIMES_DIR.glob("*.yaml") if p.name != "kustomization.yaml")


@pytest.mark.parametrize("name", shipped())
def test_shipped_runtimes_are_valid(name: str) -> None:
    from trainop.api.trainer_rules import validate_runtime

    rt = runtime(name)
    assert validate_runtime(rt) == []
    assert rt.metadata.labels and "trainer.kubeflow.org/framework" in rt.metadata.labels


# --- torch (kubeflow/trainer@v2.3.0 examples/yaml/01-multi-node.yaml on torch-distributed) ----------


@pytest.mark.parametrize(
    ("trainer", "want_nproc"),
    [
        pytest.param({"numNodes": 3}, "1", id="auto without GPU or CPU request is 1"),
        pytest.param({"numNodes": 3, "numProcPerNode": 2}, "2", id="numProcPerNode as written"),
        pytest.param(
            {"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
            "auto",
            id="auto with GPUs",
        ),
        pytest.param(
            {"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "3500m"}}},
            "4",
            id="auto from the CPU request",
        ),
    ],
)
def test_torch_env(trainer: dict[str, Any], want_nproc: str) -> None:
    job = trainjob(
        "multi-node-example",
        "torch-distributed",
        trainer={**trainer, "command": ["torchrun", "train.py"], "env": [{"name": "EXTRA", "value": "x"}]},
    )
    got = resolve(job, runtime("torch-distributed"))
    assert env_of(got, "node") == {
        "EXTRA": "x",
        "PET_NNODES": "3",
        "PET_NPROC_PER_NODE": want_nproc,
        "PET_NODE_RANK": RANK,
        "PET_MASTER_ADDR": "multi-node-example-node-0-0.multi-node-example",
        "PET_MASTER_PORT": "29500",
    }
    node = got.step("node")
    assert node is not None
    container = node.container("node")
    assert container is not None
    assert container["command"] == ["torchrun", "train.py"]
    assert container["ports"] == [{"containerPort": 29500}]
    assert (node.template["spec"]["parallelism"], node.template["spec"]["completions"]) == (3, 3)
    pods = got.pods()
    assert [p.name for p in pods] == [f"multi-node-example-node-0-{i}" for i in range(3)]
    second = pods[1].pod
    assert second["spec"]["hostname"] == "multi-node-example-node-0-1"
    assert second["spec"]["subdomain"] == "multi-node-example"
    assert second["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert second["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
        "jobset.sigs.k8s.io/jobset-name": "multi-node-example",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": "0",
        "batch.kubernetes.io/job-completion-index": "1",
    }
    assert got.build_service()["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "multi-node-example"}
    assert got.order() == [["node"]]


def test_torch_on_one_machine_addresses_the_loopback() -> None:
    job = trainjob("local", "torch-distributed", trainer={"numNodes": 2})
    topology = LoopbackTrainJobTopology(ports={("node", 0, 0): 41234})
    env = env_of(resolve(job, runtime("torch-distributed"), topology=topology), "node")
    assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("127.0.0.1", "41234")


def test_no_trainer_section_gets_no_torch_env() -> None:
    """torch.go only finds the trainer container when the TrainJob has a trainer section."""
    got = resolve(trainjob("bare", "torch-distributed"), runtime("torch-distributed"))
    assert env_of(got, "node") == {}
    assert [p.name for p in got.pods()] == ["bare-node-0-0"]


# --- MPI (deepspeed-distributed) -------------------------------------------------------------------------


def test_mpi_launcher_as_node() -> None:
    job = trainjob(
        "ds", "deepspeed-distributed", trainer={"numNodes": 3, "command": ["mpirun", "python", "t.py"]}
    )
    got = resolve(job, runtime("deepspeed-distributed"))
    node, launcher = got.step("node"), got.step("launcher")
    assert node is not None and launcher is not None
    assert (node.count, launcher.count) == (2, 1)
    assert got.order() == [["node"], ["launcher"]]
    assert env_of(got, "launcher") == {
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_set_default_slots": "1",
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
    }
    hostfile = next(o for o in got.objects if o["kind"] == "ConfigMap")
    assert hostfile["metadata"]["name"] == "ds-mpi-hostfile"
    assert hostfile["data"]["hostfile"] == (
        "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n"
    )
    secret = next(o for o in got.objects if o["kind"] == "Secret")
    assert (secret["metadata"]["name"], secret["type"]) == ("ds-mpi-ssh-auth", "kubernetes.io/ssh-auth")
    launcher_container = launcher.container("node")
    assert launcher_container is not None
    assert launcher_container["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    assert [v["name"] for v in launcher.pod_spec["volumes"]] == ["mpi-ssh-auth", "mpi-hostfile"]
    assert launcher_container["command"] == ["mpirun", "python", "t.py"]
    assert got.publish_not_ready and got.success_targets == ("launcher",)


def test_mpi_slots_from_gpus() -> None:
    job = trainjob(
        "ds",
        "deepspeed-distributed",
        trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
    )
    got = resolve(job, runtime("deepspeed-distributed"))
    assert env_of(got, "launcher")["OMPI_MCA_orte_set_default_slots"] == "4"
    node = got.step("node")
    assert node is not None and node.container("node")["resources"] == {"limits": {"nvidia.com/gpu": 4}}  # type: ignore[index]


# --- JAX and XGBoost ------------------------------------------------------------------------------------


def test_jax_env() -> None:
    got = resolve(trainjob("jx", "jax-distributed", trainer={"numNodes": 2}), runtime("jax-distributed"))
    assert env_of(got, "node") == {
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": RANK,
        "JAX_COORDINATOR_ADDRESS": "jx-node-0-0.jx:29500",
    }


@pytest.mark.parametrize(
    ("resources", "workers"),
    [
        pytest.param(None, "3", id="CPU: one worker per node"),
        pytest.param({"limits": {"nvidia.com/gpu": 2}}, "6", id="GPU: one per GPU"),
    ],
)
def test_xgboost_env(resources: dict[str, Any] | None, workers: str) -> None:
    trainer: dict[str, Any] = {"numNodes": 3}
    if resources:
        trainer["resourcesPerNode"] = resources
    got = resolve(trainjob("xg", "xgboost-distributed", trainer=trainer), runtime("xgboost-distributed"))
    assert env_of(got, "node") == {
        "DMLC_TRACKER_URI": "xg-node-0-0.xg",
        "DMLC_TRACKER_PORT": "29500",
        "DMLC_TASK_ID": RANK,
        "DMLC_NUM_WORKER": workers,
    }


# --- initializers ---------------------------------------------------------------------------------------


def test_initializers_run_first_on_a_shared_claim() -> None:
    job = trainjob(
        "ft",
        "torch-distributed-with-initializers",
        initializer={
            "dataset": {
                "storageUri": "hf://org/data",
                "env": [{"name": "IGNORE_PATTERNS", "value": "*.bin"}],
            },
            "model": {"storageUri": "s3://bucket/model", "secretRef": {"name": "s3-creds"}},
        },
        trainer={"numNodes": 2},
    )
    got = resolve(job, runtime("torch-distributed-with-initializers"))
    assert got.order() == [["dataset-initializer", "model-initializer"], ["node"]]
    assert env_of(got, "dataset-initializer", "dataset-initializer") == {
        "STORAGE_URI": "hf://org/data",
        "IGNORE_PATTERNS": "*.bin",
    }
    model = got.step("model-initializer")
    assert model is not None
    assert model.container("model-initializer")["envFrom"] == [{"secretRef": {"name": "s3-creds"}}]  # type: ignore[index]
    pvc = next(o for o in got.objects if o["kind"] == "PersistentVolumeClaim")
    assert pvc["metadata"]["name"] == "initializer-ft"
    for step in got.steps:
        assert step.pod_spec["volumes"] == [
            {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-ft"}}
        ]
    assert [p.name for p in got.pods()] == [
        "ft-dataset-initializer-0-0",
        "ft-model-initializer-0-0",
        "ft-node-0-0",
        "ft-node-0-1",
    ]


# --- patches, gang, errors --------------------------------------------------------------------------------


def test_runtime_patches_merge_and_propagate() -> None:
    """kubeflow/trainer@v2.3.0 examples/yaml/02-runtime-patches.yaml's shape."""
    job = trainjob(
        "patched",
        "torch-distributed",
        trainer={"numNodes": 1},
        runtimePatches=[
            {
                "manager": "trainer.kubeflow.org/user",
                "trainingRuntimeSpec": {
                    "template": {
                        "metadata": {"labels": {"team": "a"}},
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "spec": {
                                            "template": {
                                                "metadata": {"labels": {"extra": "yes"}},
                                                "spec": {
                                                    "nodeSelector": {"pool": "gpu"},
                                                    "containers": [
                                                        {
                                                            "name": "node",
                                                            "volumeMounts": [
                                                                {"name": "d", "mountPath": "/d"}
                                                            ],
                                                        }
                                                    ],
                                                    "volumes": [{"name": "d", "emptyDir": {}}],
                                                },
                                            }
                                        }
                                    },
                                }
                            ]
                        },
                    }
                },
            }
        ],
    )
    got = resolve(job, runtime("torch-distributed"))
    assert got.labels == {"team": "a"}
    pod = got.pods()[0].pod
    assert pod["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert pod["metadata"]["labels"]["extra"] == "yes"
    node = pod["spec"]["containers"][0]
    assert node["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
    assert node["volumeMounts"] == [{"name": "d", "mountPath": "/d"}]


def test_coscheduling_pod_group() -> None:
    doc = runtime("torch-distributed").to_dict()
    doc["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    rt = parse_trainer_object(doc)
    assert isinstance(rt, TrainingRuntime)
    job = trainjob(
        "gang",
        "torch-distributed",
        trainer={"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "500m"}}},
    )
    got = resolve(job, rt)
    group = next(o for o in got.objects if o["kind"] == "PodGroup")
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {"minMember": 2, "minResources": {"cpu": "1"}, "scheduleTimeoutSeconds": 60}
    assert got.pods()[0].pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"


@pytest.mark.parametrize(
    ("runtime_name", "spec", "want"),
    [
        pytest.param(
            "torch-distributed",
            {
                "trainer": {
                    "env": [{"name": "PET_NNODES", "value": "9"}, {"name": "PET_MASTER_ADDR", "value": "x"}]
                }
            },
            [
                'spec.trainer.env: Invalid value: [{"name":"PET_NNODES","value":"9"},{"name":"PET_MASTER_AD'
                'DR",'
                '"value":"x"}]: must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_'
                "NNODES]"
            ],
            id="torch reserved env",
        ),
        pytest.param(
            "xgboost-distributed",
            {"trainer": {"env": [{"name": "A", "value": "1"}, {"name": "DMLC_TASK_ID", "value": "0"}]}},
            ["spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime"],
            id="xgboost reserved env",
        ),
        pytest.param(
            "deepspeed-distributed",
            {"trainer": {"env": [{"name": "OMPI_MCA_orte_set_default_slots", "value": "2"}]}},
            [
                'spec.trainer.env: Invalid value: [{"name":"OMPI_MCA_orte_set_default_slots","value":"2"}]: '
                "must not have reserved envs, invalid envs configured: [OMPI_MCA_orte_set_default_slots]"
            ],
            id="MPI reserved env",
        ),
        pytest.param(
            "torch-distributed",
            {"initializer": {"dataset": {"storageUri": "hf://x/y"}}},
            [
                'spec.runtimeRef: Invalid value: {"name":"torch-distributed","apiGroup":"trainer.kubeflow.o'
                'rg",'
                '"kind":"ClusterTrainingRuntime"}: must have dataset-initializer job when trainJob is confi'
                "gured "
                "with input datasetConfig"
            ],
            id="initializer on a runtime without one",
        ),
        pytest.param(
            "torch-distributed",
            {
                "runtimePatches": [
                    {
                        "manager": "a.io/b",
                        "trainingRuntimeSpec": {
                            "template": {"spec": {"replicatedJobs": [{"name": "worker"}]}}
                        },
                    }
                ]
            },
            [
                'spec.runtimePatches: Invalid value: [{"manager":"a.io/b","trainingRuntimeSpec":{"template"'
                ':{"spec":'
                '{"replicatedJobs":[{"name":"worker"}]}}}}]: must not have replicated job that doesn\'t exi'
                "st in the "
                "runtime job template"
            ],
            id="patch of an unknown replicated job",
        ),
    ],
)
def test_admission_errors(runtime_name: str, spec: dict[str, Any], want: list[str]) -> None:
    with pytest.raises(RuntimeResolutionError) as exc:
        resolve(trainjob("bad", runtime_name, **spec), runtime(runtime_name))
    assert [str(e) for e in exc.value.errors] == want


def test_find_runtime() -> None:
    shipped_runtimes = [runtime(n) for n in shipped()]
    assert find_runtime(trainjob("a", "jax-distributed"), shipped_runtimes).name == "jax-distributed"
    with pytest.raises(RuntimeResolutionError) as exc:
        find_runtime(trainjob("a", "nope"), shipped_runtimes)
    assert str(exc.value.errors[0]) == (
        'spec.RuntimeRef: Invalid value: {"name":"nope"}: clustertrainingruntimes.trainer.kubeflow.org "nop'
        'e" not '
        "found: specified clusterTrainingRuntime must be created before the TrainJob is created"
    )
