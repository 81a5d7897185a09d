"""What the operator creates for every kind, read back from the API server: pod and Service names,
labels, ownerReferences, restart policy, ports and injected env (contract §3, §6.2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from k8s_harness import Cluster, OperatorProcess, container, env_of, names
from lightkube import ALL_NS

from trainop.api.constants import LABEL_JOB_NAME as JOB_NAME_LABEL
from trainop.backends.kubernetes import resources as r
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)
from trainop.testing.testenv import wait_for

OP = "training.kubeflow.org/operator-name"
JOB = "training.kubeflow.org/job-name"
RT = "training.kubeflow.org/replica-type"
RI = "training.kubeflow.org/replica-index"
ROLE = "training.kubeflow.org/job-role"


def owner(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": job["kind"],
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def labels(ctrl: str, job: str, rt: str, index: int | None, master: bool = False) -> dict[str, str]:
    out = {OP: ctrl, JOB: job, RT: rt}
    if index is not None:
        out[RI] = str(index)
    if master:
        out[ROLE] = "master"
    return out


def wait_pods(cluster: Cluster, job: str, n: int) -> list[dict[str, Any]]:
    return wait_for(
        lambda: ((p := cluster.pods(job)) and len(p) == n and p) or None, 60, f"{n} pods of {job}"
    )


def pod_view(pod: dict[str, Any], default_container: str) -> dict[str, Any]:
    """The fields the contract fixes for a pod, from the stored object."""
    c = container(pod, default_container)
    return {
        "labels": pod["metadata"]["labels"],
        "ownerReferences": pod["metadata"]["ownerReferences"],
        "restartPolicy": pod["spec"]["restartPolicy"],
        "ports": [{"name": p.get("name"), "containerPort": p["containerPort"]} for p in c.get("ports") or []],
        "env": env_of(c),
        "initContainers": [i["name"] for i in pod["spec"].get("initContainers") or []],
    }


def service_view(svc: dict[str, Any]) -> dict[str, Any]:
    return {
        "labels": svc["metadata"]["labels"],
        "selector": svc["spec"]["selector"],
        "clusterIP": svc["spec"]["clusterIP"],
        "ports": [{"name": p.get("name"), "port": p["port"]} for p in svc["spec"]["ports"]],
        "ownerReferences": svc["metadata"]["ownerReferences"],
    }


PY = {"PYTHONUNBUFFERED": "1"}


def test_pytorchjob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(pytorch_job("pt").master(1).workers(2).build_dict())
    pods = wait_pods(cluster, "pt", 3)
    ns = cluster.namespace
    common = {"MASTER_PORT": "23456", "PET_MASTER_PORT": "23456", "MASTER_ADDR": "pt-master-0",
              "PET_MASTER_ADDR": "pt-master-0", "WORLD_SIZE": "3", "PET_NPROC_PER_NODE": "auto",
              "PET_NNODES": "3", **PY}  # fmt: skip
    want: dict[str, dict[str, Any]] = {
        "pt-master-0": {
            "labels": labels("pytorchjob-controller", "pt", "master", 0, master=True),
            "ownerReferences": owner(job),
            "restartPolicy": "OnFailure",
            "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
            "env": {**common, "RANK": "0", "PET_NODE_RANK": "0"},
            "initContainers": [],
        },
        **{
            f"pt-worker-{i}": {
                "labels": labels("pytorchjob-controller", "pt", "worker", i),
                "ownerReferences": owner(job),
                "restartPolicy": "OnFailure",
                "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                "env": {**common, "RANK": str(i + 1), "PET_NODE_RANK": str(i + 1)},
                "initContainers": ["init-pytorch"],
            }
            for i in range(2)
        },
    }
    assert {p["metadata"]["name"]: pod_view(p, "pytorch") for p in pods} == want
    init = pods[1]["spec"]["initContainers"][0]
    assert (init["image"], init["command"][:2]) == ("alpine:3.10", ["sh", "-c"])
    assert "nslookup" in init["command"][2] and "pt-master-0" in init["command"][2]

    svcs = wait_for(lambda: (len(s := cluster.services("pt")) == 3 and s) or None, 60, "3 services")
    assert {s["metadata"]["name"]: service_view(s) for s in svcs} == {
        name: {
            "labels": labels("pytorchjob-controller", "pt", rt, i),
            "selector": labels("pytorchjob-controller", "pt", rt, i),
            "clusterIP": "None",
            "ports": [{"name": "pytorchjob-port", "port": 23456}],
            "ownerReferences": owner(job),
        }
        for name, rt, i in (
            ("pt-master-0", "master", 0),
            ("pt-worker-0", "worker", 0),
            ("pt-worker-1", "worker", 1),
        )
    }
    # namespace-scoped: everything the job owns, looked for in every namespace, lives beside the job
    uid = job["metadata"]["uid"]
    owned = [
        (res.__name__, o["metadata"]["namespace"], o["metadata"]["name"])
        for res in (r.Pod, r.Service)
        for o in map(dict, cluster.client.list(res, namespace=ALL_NS, labels={JOB_NAME_LABEL: "pt"}))
        if any(ref["uid"] == uid for ref in o["metadata"].get("ownerReferences") or [])
    ]
    assert sorted(owned) == sorted([("Pod", ns, n) for n in want] + [("Service", ns, n) for n in want])


def test_tfjob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(tf_job("tf").ps(1).workers(2).build_dict())
    pods = wait_pods(cluster, "tf", 3)
    ns = cluster.namespace
    cluster_spec = {
        "ps": [f"tf-ps-0.{ns}.svc:2222"],
        "worker": [f"tf-worker-0.{ns}.svc:2222", f"tf-worker-1.{ns}.svc:2222"],
    }
    got = {}
    for p in pods:
        view = pod_view(p, "tensorflow")
        view["env"] = {k: json.loads(v) if k == "TF_CONFIG" else v for k, v in view["env"].items()}
        got[p["metadata"]["name"]] = view
    want: dict[str, dict[str, Any]] = {
        name: {
            "labels": labels("tfjob-controller", "tf", rt, i, master=(name == "tf-worker-0")),
            "ownerReferences": owner(job),
            "restartPolicy": "Never",
            "ports": [{"name": "tfjob-port", "containerPort": 2222}],
            "env": {
                "TF_CONFIG": {
                    "cluster": cluster_spec,
                    "task": {"type": rt, "index": i},
                    "environment": "cloud",
                }
            },
            "initContainers": [],
        }
        for name, rt, i in (("tf-ps-0", "ps", 0), ("tf-worker-0", "worker", 0), ("tf-worker-1", "worker", 1))
    }
    assert got == want
    # TF_CONFIG is compact JSON with cluster, task, environment in that order (§3.5).
    raw = env_of(container(pods[0], "tensorflow"))["TF_CONFIG"]
    assert raw.startswith('{"cluster":{"ps":') and raw.endswith(',"environment":"cloud"}')
    assert names(wait_for(lambda: (len(s := cluster.services("tf")) == 3 and s) or None, 60, "services")) == [
        "tf-ps-0",
        "tf-worker-0",
        "tf-worker-1",
    ]


def test_xgboostjob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(xgboost_job("xgb").master(1).workers(2).build_dict())
    pods = wait_pods(cluster, "xgb", 3)
    common = {"MASTER_PORT": "9999", "MASTER_ADDR": "xgb-master-0", "WORLD_SIZE": "3", "WORKER_PORT": "9999",
              "WORKER_ADDRS": "xgb-worker-0,xgb-worker-1", **PY}  # fmt: skip
    want: dict[str, dict[str, Any]] = {
        name: {
            "labels": labels("xgboostjob-controller", "xgb", rt, i, master=(rt == "master")),
            "ownerReferences": owner(job),
            "restartPolicy": "Never",
            "ports": [{"name": "xgboostjob-port", "containerPort": 9999}],
            "env": {**common, "RANK": str(rank)},
            "initContainers": [],
        }
        for name, rt, i, rank in (
            ("xgb-master-0", "master", 0, 0),
            ("xgb-worker-0", "worker", 0, 1),
            ("xgb-worker-1", "worker", 1, 2),
        )
    }
    assert {p["metadata"]["name"]: pod_view(p, "xgboost") for p in pods} == want


def test_paddlejob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(paddle_job("pd").master(1).workers(2).build_dict())
    pods = wait_pods(cluster, "pd", 3)
    common = {"PADDLE_JOB_ID": "pd", "PADDLE_NNODES": "3", **PY}
    pod_ip = {"valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}
    want: dict[str, dict[str, Any]] = {
        "pd-master-0": {
            "labels": labels("paddlejob-controller", "pd", "master", 0, master=True),
            "ownerReferences": owner(job),
            "restartPolicy": "OnFailure",
            "ports": [{"name": "master", "containerPort": 36543}],
            "env": {
                **common,
                "POD_IP_DUMMY": pod_ip,
                "PADDLE_MASTER": "$(POD_IP_DUMMY):36543",
                "PADDLE_SERVER_NUM": "1",
            },
            "initContainers": [],
        },
        **{
            f"pd-worker-{i}": {
                "labels": labels("paddlejob-controller", "pd", "worker", i),
                "ownerReferences": owner(job),
                "restartPolicy": "OnFailure",
                "ports": [{"name": "master", "containerPort": 36543}],
                "env": {**common, "PADDLE_MASTER": "pd-master-0:36543", "PADDLE_TRAINER_NUM": "1"},
                "initContainers": [],
            }
            for i in range(2)
        },
    }
    assert {p["metadata"]["name"]: pod_view(p, "paddle") for p in pods} == want


def test_jaxjob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(jax_job("jx").workers(2).build_dict())
    pods = wait_pods(cluster, "jx", 2)
    want: dict[str, dict[str, Any]] = {
        f"jx-worker-{i}": {
            "labels": labels("jaxjob-controller", "jx", "worker", i, master=(i == 0)),
            "ownerReferences": owner(job),
            "restartPolicy": "Never",
            "ports": [{"name": "jaxjob-port", "containerPort": 6666}],
            "env": {
                "COORDINATOR_PORT": "6666",
                "COORDINATOR_ADDRESS": "jx-worker-0",
                "NUM_PROCESSES": "2",
                "PROCESS_ID": str(i),
                **PY,
            },
            "initContainers": [],
        }
        for i in range(2)
    }
    assert {p["metadata"]["name"]: pod_view(p, "jax") for p in pods} == want
    svcs = wait_for(lambda: (len(s := cluster.services("jx")) == 2 and s) or None, 60, "services")
    assert [service_view(s)["ports"] for s in svcs] == [[{"name": "jaxjob-port", "port": 6666}]] * 2


def test_mpijob_objects(operator: OperatorProcess, cluster: Cluster) -> None:
    job = cluster.create(mpi_job("mpi").launcher(1).workers(2).build_dict())
    pods = wait_pods(cluster, "mpi", 3)
    got = {p["metadata"]["name"]: p for p in pods}
    assert sorted(got) == ["mpi-launcher", "mpi-worker-0", "mpi-worker-1"]
    assert got["mpi-launcher"]["metadata"]["labels"] == labels(
        "mpijob-controller", "mpi", "launcher", None, master=True
    )
    assert got["mpi-worker-1"]["metadata"]["labels"] == labels("mpijob-controller", "mpi", "worker", 1)
    assert all(p["metadata"]["ownerReferences"] == owner(job) for p in pods)
    launcher_env = env_of(container(got["mpi-launcher"], "mpi"))
    assert {k: launcher_env.get(k) for k in ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile")} == {
        "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    }
    assert env_of(container(got["mpi-worker-0"], "mpi")) == {}  # §3.9: no env for workers
    assert container(got["mpi-worker-0"], "mpi")["command"] == ["sleep"]
    assert [i["name"] for i in got["mpi-launcher"]["spec"]["initContainers"]] == ["kubectl-delivery"]
    assert got["mpi-launcher"]["spec"]["serviceAccountName"] == "mpi-launcher"
    assert cluster.services("mpi") == []  # MPIJob creates no Services

    def extras() -> dict[str, Any] | None:
        objs = {
            "ServiceAccount": cluster.get(r.ServiceAccount, "mpi-launcher"),
            "ConfigMap": cluster.get(r.ConfigMap, "mpi-config"),
            "Role": cluster.get(r.Role, "mpi-launcher"),
            "RoleBinding": cluster.get(r.RoleBinding, "mpi-launcher"),
        }
        return objs if all(objs.values()) else None

    objs = wait_for(extras, 60, "MPI ServiceAccount, ConfigMap, Role, RoleBinding")
    assert {k: v["metadata"]["ownerReferences"] for k, v in objs.items()} == {k: owner(job) for k in objs}
    assert objs["ConfigMap"]["data"]["hostfile"].split("\n")[:2] == [
        "mpi-worker-0 slots=1",
        "mpi-worker-1 slots=1",
    ]
    assert sorted(objs["ConfigMap"]["data"]) == ["discover_hosts.sh", "hostfile", "kubexec.sh"]
    rules = objs["Role"]["rules"]
    assert {
        "resources": ["pods/exec"],
        "verbs": ["create"],
        "resourceNames": ["mpi-worker-0", "mpi-worker-1"],
    } in [{k: v for k, v in rule.items() if k != "apiGroups"} for rule in rules]


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(pytorch_job("lbl").master(1).workers(1), id="PyTorchJob"),
        pytest.param(tf_job("lbl").workers(2), id="TFJob"),
    ],
)
def test_template_labels_and_annotations_are_kept(
    operator: OperatorProcess, cluster: Cluster, builder: JobBuilder
) -> None:
    def meta(t: dict[str, Any]) -> None:
        t["metadata"] = {"labels": {"team": "ml", OP: "spoofed"}, "annotations": {"note": "kept"}}

    cluster.create(builder.template(meta).build_dict())
    pods = wait_pods(cluster, "lbl", 2)
    # Template labels survive, operator labels win (§3.1), annotations are copied.
    assert {p["metadata"]["labels"]["team"] for p in pods} == {"ml"}
    assert {p["metadata"]["labels"][OP] for p in pods} == {f"{builder.kind.lower()}-controller"}
    assert {p["metadata"]["annotations"]["note"] for p in pods} == {"kept"}
