"""Kubeflow Trainer v2 TrainJobs on the test cluster: the operator creates the pods (named and
addressed as JobSet names them), the headless Service and the runtime's objects, and writes
upstream's conditions and jobsStatus; kwok plays each pod's fate from its annotations.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from k8s_harness import REPO, Cluster, OperatorProcess
from lightkube.types import PatchType

from trainop.backends.kubernetes import resources as r
from trainop.operator.trainjobs import TrainJobResource
from trainop.testing.testenv import SIM_OUTCOME, K8sEnv, wait_for

RUNTIMES = REPO / "manifests" / "runtimes"


@pytest.fixture(scope="module")
def runtimes(k8s_env: K8sEnv, crds: None) -> None:
    k8s_env.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/clustertrainingruntimes.trainer.kubeflow.org",
    )
    k8s_env.kubectl("apply", "-k", str(RUNTIMES))


def _patch(step: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "name": step,
        "template": {"spec": {"template": {"metadata": {"annotations": annotations}}}},
    }


def trainjob(name: str, runtime: str, fates: dict[str, str], **spec: Any) -> dict[str, Any]:
    patches = [_patch(step, {SIM_OUTCOME: fate}) for step, fate in fates.items() if fate]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {
                "name": runtime,
                **({"kind": "TrainingRuntime"} if runtime.startswith("ns-") else {}),
            },
            "runtimePatches": [
                {
                    "manager": "trainer.kubeflow.org/test",
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": patches}}},
                }
            ],
            **spec,
        },
    }


def create(cluster: Cluster, obj: dict[str, Any]) -> None:
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = cluster.namespace
    cluster.client.create(TrainJobResource(obj))


def get(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(cluster.client.get(TrainJobResource, name, namespace=cluster.namespace).to_dict())


def wait_condition(
    cluster: Cluster, name: str, ctype: str, status: str = "True", timeout: float = 60.0
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        for c in (get(cluster, name).get("status") or {}).get("conditions") or []:
            if c["type"] == ctype and c["status"] == status:
                return dict(c)
        return None

    return wait_for(check, timeout, f"TrainJob {name} {ctype}={status}")


def pods(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return [
        dict(p)
        for p in cluster.client.list(
            r.Pod, namespace=cluster.namespace, labels={"jobset.sigs.k8s.io/jobset-name": name}
        )
    ]


@pytest.fixture
def trainjobs(operator: OperatorProcess, runtimes: None, cluster: Cluster) -> Iterator[Cluster]:
    yield cluster


def test_torch_2x2_runs_to_complete(trainjobs: Cluster) -> None:
    create(
        trainjobs,
        trainjob(
            "torch",
            "torch-distributed",
            {"node": "succeed"},
            trainer={"numNodes": 2, "numProcPerNode": 2, "command": ["torchrun", "t.py"]},
        ),
    )
    wait_for(lambda: len(pods(trainjobs, "torch")) == 2 or None, 60, "two node pods")
    by_name = {p["metadata"]["name"]: p for p in pods(trainjobs, "torch")}
    assert sorted(by_name) == ["torch-node-0-0", "torch-node-0-1"]
    second = by_name["torch-node-0-1"]
    assert (second["spec"]["hostname"], second["spec"]["subdomain"]) == ("torch-node-0-1", "torch")
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in second["spec"]["containers"][0]["env"]}
    assert env["PET_MASTER_ADDR"] == "torch-node-0-0.torch"
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_MASTER_PORT"]) == ("2", "2", "29500")
    assert second["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert second["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    cond = wait_condition(trainjobs, "torch", "Complete")
    assert (cond["reason"], cond["message"]) == ("AllJobsCompleted", "jobset completed successfully")
    status = get(trainjobs, "torch")["status"]
    assert status["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]
    service = trainjobs.get(r.Service, "torch")
    assert service is not None and service["spec"]["clusterIP"] == "None"


def test_mpi_launcher_after_ready_nodes(trainjobs: Cluster) -> None:
    create(
        trainjobs,
        trainjob(
            "mpi",
            "deepspeed-distributed",
            {"node": "", "launcher": "succeed"},
            trainer={"numNodes": 3, "command": ["mpirun", "python", "t.py"]},
        ),
    )
    cond = wait_condition(trainjobs, "mpi", "Complete")
    assert cond["reason"] == "AllJobsCompleted"
    hostfile = trainjobs.get(r.ConfigMap, "mpi-mpi-hostfile")
    assert hostfile is not None
    assert (
        hostfile["data"]["hostfile"]
        == "mpi-node-0-0.mpi slots=1\nmpi-node-0-1.mpi slots=1\nmpi-launcher-0-0.mpi slots=1\n"
    )
    secret = trainjobs.get(r.Secret, "mpi-mpi-ssh-auth")
    assert secret is not None and set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
    wait_for(
        lambda: (
            [p["metadata"]["name"] for p in pods(trainjobs, "mpi") if p["status"].get("phase") == "Running"]
            == []
            or None
        ),
        60,
        "node pods stopped",
    )


def test_jax_runs_to_complete(trainjobs: Cluster) -> None:
    create(
        trainjobs,
        trainjob(
            "jx",
            "jax-distributed",
            {"node": "succeed"},
            trainer={"numNodes": 2, "command": ["python", "t.py"]},
        ),
    )
    wait_condition(trainjobs, "jx", "Complete")
    env = {e["name"]: e.get("value") for e in pods(trainjobs, "jx")[0]["spec"]["containers"][0]["env"]}
    assert env["JAX_COORDINATOR_ADDRESS"] == "jx-node-0-0.jx:29500"


def test_initializers_before_the_trainer(trainjobs: Cluster, k8s_env: K8sEnv) -> None:
    steps: list[dict[str, Any]] = []
    for name in ("dataset-initializer", "model-initializer"):
        steps.append(
            {
                "name": name,
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": name}},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": name,
                                        "image": "init",
                                        "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}],
                                    }
                                ],
                                "volumes": [{"name": "initializer", "emptyDir": {}}],
                            }
                        }
                    },
                },
            }
        )
    steps.append(
        {
            "name": "node",
            "dependsOn": [
                {"name": "dataset-initializer", "status": "Complete"},
                {"name": "model-initializer", "status": "Complete"},
            ],
            "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "t"}]}}},
            },
        }
    )
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {
            "name": "ns-with-init",
            "namespace": trainjobs.namespace,
            "labels": {"trainer.kubeflow.org/framework": "torch"},
        },
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": steps}}},
    }
    k8s_env.kubectl("apply", "-f", "-", input=json.dumps(runtime))
    fates = {"dataset-initializer": "succeed", "model-initializer": "succeed", "node": "succeed"}
    create(
        trainjobs,
        trainjob(
            "init",
            "ns-with-init",
            fates,
            initializer={"dataset": {"storageUri": "hf://a/b"}, "model": {"storageUri": "hf://c/d"}},
            trainer={"numNodes": 1},
        ),
    )
    wait_for(lambda: len(pods(trainjobs, "init")) >= 2 or None, 60, "initializer pods")
    first = {p["metadata"]["name"] for p in pods(trainjobs, "init")}
    assert "init-node-0-0" not in first or all(
        p["status"].get("phase") == "Succeeded"
        for p in pods(trainjobs, "init")
        if "initializer" in p["metadata"]["name"]
    )
    wait_condition(trainjobs, "init", "Complete")
    by_name = {p["metadata"]["name"]: p for p in pods(trainjobs, "init")}
    node_created = by_name["init-node-0-0"]["metadata"]["creationTimestamp"]
    for init in ("init-dataset-initializer-0-0", "init-model-initializer-0-0"):
        finished = by_name[init]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        assert finished <= node_created, (
            f"{init} finished {finished}, after the node was created {node_created}"
        )
    env = {
        e["name"]: e.get("value")
        for e in by_name["init-dataset-initializer-0-0"]["spec"]["containers"][0]["env"]
    }
    assert env["STORAGE_URI"] == "hf://a/b"


def test_a_failing_node_fails_the_trainjob(trainjobs: Cluster) -> None:
    create(trainjobs, trainjob("bad", "torch-distributed", {"node": "fail"}, trainer={"numNodes": 2}))
    cond = wait_condition(trainjobs, "bad", "Failed")
    assert (cond["reason"], cond["message"]) == (
        "FailedJobs",
        "jobset failed due to one or more job failures",
    )


def test_max_restarts_restarts_every_pod_then_fails_with_jobsets_reason(
    trainjobs: Cluster, k8s_env: K8sEnv
) -> None:
    """JobSet's failurePolicy.maxRestarts in the runtime: each failure of a node deletes every pod and
    starts the next attempt (pods labelled jobset.sigs.k8s.io/restart-attempt), twice; the third
    failure fails the TrainJob with JobSet's ReachedMaxRestarts."""
    runtime = yaml.safe_load((RUNTIMES / "torch-distributed.yaml").read_text())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {**runtime["metadata"], "name": "ns-restarting", "namespace": trainjobs.namespace}
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
    k8s_env.kubectl("apply", "-f", "-", input=json.dumps(runtime))
    create(trainjobs, trainjob("rs", "ns-restarting", {"node": "fail"}, trainer={"numNodes": 2}))
    attempts: set[str] = set()

    def failed() -> dict[str, Any] | None:
        for p in pods(trainjobs, "rs"):
            attempts.add(p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"])
        for c in (get(trainjobs, "rs").get("status") or {}).get("conditions") or []:
            if c["type"] == "Failed" and c["status"] == "True":
                return dict(c)
        return None

    cond = wait_for(failed, 120, "TrainJob rs Failed")
    assert (cond["reason"], cond["message"]) == (
        "ReachedMaxRestarts",
        "jobset failed due to reaching max number of restarts",
    )
    assert get(trainjobs, "rs")["metadata"]["annotations"]["trainop.dev/jobset-restarts"] == "2"
    # The pods left are the last attempt's: the failed one (a node still running when the TrainJob
    # failed is deleted, so it may be gone).
    last = {p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for p in pods(trainjobs, "rs")}
    assert last == {"2"}
    assert "2" in attempts


def test_suspend_and_resume(trainjobs: Cluster) -> None:
    create(
        trainjobs, trainjob("sus", "torch-distributed", {"node": ""}, trainer={"numNodes": 2}, suspend=True)
    )
    cond = wait_condition(trainjobs, "sus", "Suspended")
    assert (cond["reason"], cond["message"]) == ("Suspended", "TrainJob is suspended")
    assert pods(trainjobs, "sus") == []
    trainjobs.client.patch(
        TrainJobResource,
        "sus",
        {"spec": {"suspend": False}},
        namespace=trainjobs.namespace,
        patch_type=PatchType.MERGE,
    )
    cond = wait_condition(trainjobs, "sus", "Suspended", status="False")
    assert cond["reason"] == "Resumed"
    wait_for(lambda: len(pods(trainjobs, "sus")) == 2 or None, 60, "pods after resume")


def test_active_deadline_seconds(trainjobs: Cluster) -> None:
    create(
        trainjobs,
        trainjob("late", "torch-distributed", {"node": ""}, trainer={"numNodes": 1}, activeDeadlineSeconds=3),
    )
    cond = wait_condition(trainjobs, "late", "Failed", timeout=60)
    assert (cond["reason"], cond["message"]) == ("DeadlineExceeded", "TrainJob exceeded its active deadline")


def test_the_cli_reads_and_deletes_trainjobs_on_the_cluster(trainjobs: Cluster, k8s_env: K8sEnv) -> None:
    """get trainjobs / get (no kind: v1 jobs and TrainJobs in one table) / get -w / get NAME / describe /
    logs / delete through the kubernetes backend's JobClient; run of a TrainJob says what to use instead."""
    create(trainjobs, trainjob("cli", "torch-distributed", {"node": "succeed"}, trainer={"numNodes": 2}))
    wait_condition(trainjobs, "cli", "Complete")
    env = {**os.environ, "KUBECONFIG": str(k8s_env.kubeconfig), "TRAINOP_BACKEND": "kubernetes"}
    argv = [sys.executable, "-m", "trainop.cli.main"]

    def trainop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, *args, "-n", trainjobs.namespace], capture_output=True, text=True, timeout=120, env=env
        )

    listed = trainop("get", "trainjobs")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:3] == ["cli", "Complete", "torch-distributed"]
    every = trainop("get")
    assert every.returncode == 0, every.stderr
    assert [line.split()[:3] for line in every.stdout.splitlines()] == [
        ["NAME", "KIND", "STATE"],
        ["cli", "TrainJob", "Complete"],
    ]
    assert every.stdout.splitlines()[1].split()[4:] == ["node", "1/1"]  # REPLICAS: the steps' child Jobs
    with subprocess.Popen(
        [*argv, "get", "-w", "-n", trainjobs.namespace], stdout=subprocess.PIPE, text=True, env=env
    ) as watcher:
        try:
            assert watcher.stdout is not None
            header, first = watcher.stdout.readline(), watcher.stdout.readline()
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(timeout=60)
        finally:
            watcher.kill()
    assert (header.split()[:3], first.split()[:3], code) == (
        ["NAME", "KIND", "STATE"],
        ["cli", "TrainJob", "Complete"],
        130,
    )
    as_json = json.loads(trainop("get", "cli", "-o", "json").stdout)
    assert as_json["status"]["jobsStatus"][0]["succeeded"] == 1
    described = trainop("describe", "cli").stdout
    assert "Complete=True AllJobsCompleted: jobset completed successfully" in described
    assert "  cli-node-0-1: Succeeded" in described
    # Its pods are found by upstream's labels; kwok plays them, so the cluster serves no logs: said in
    # one line naming the pod whose refusal came first (both are asked at once: either one).
    logs = trainop("logs", "cli")
    assert (logs.returncode, len(logs.stderr.splitlines())) == (3, 1), logs.stderr
    assert re.search(r"serves no logs for cli-node-0-[01] ", logs.stderr), logs.stderr
    unknown = trainop("logs", "cli", "--replica", "node-0-7")
    assert unknown.returncode == 3 and "node-0-0, node-0-1" in unknown.stderr, unknown.stderr
    deleted = trainop("delete", "cli")
    assert (deleted.returncode, deleted.stdout) == (0, "trainjob.trainer.kubeflow.org/cli deleted\n")
    wait_for(lambda: trainop("get", "trainjob", "cli").returncode == 3 or None, 60, "TrainJob cli gone")
