"""The drop-in claim for Trainer v2, on a control plane of its own that holds kubeflow/trainer's OWN
CRDs (v2.3.0 from the Go module proxy, fetched by hack/testenv/build.sh; not the ones trainop
generates): upstream's runtimes and example TrainJobs, and trainop's shipped runtimes and example, are
accepted by them, and trainop's operator runs TrainJobs on upstream's runtimes to Complete on kwok.

Its own control plane because CRDs are cluster-wide: the session's has trainop's generated ones.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import (
    REPO,
    V1_CRDS,
    Cluster,
    OperatorProcess,
    fresh_namespace,
    own_control_plane,
    running_operator,
)

from trainop.api.trainer_rules import parse_trainer_object
from trainop.backends.kubernetes import resources as r
from trainop.core.trainjob import resolve_trainjob
from trainop.frameworks.registry import REGISTRY
from trainop.operator.trainjobs import TrainJobResource
from trainop.testing.testenv import SIM_OUTCOME, K8sEnv, find_trainer_dir, wait_for

TRAINER_CRDS = [
    f"crd/{p}.trainer.kubeflow.org" for p in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")
]


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture(scope="module")
def upstream() -> Path:
    return find_trainer_dir()


def established(env: K8sEnv, crd: str) -> bool | None:
    got = env.kubectl("get", crd, "-o", 'jsonpath={.status.conditions[?(@.type=="Established")].status}')
    return got.stdout == "True" or None


@pytest.fixture(scope="module")
def upstream_env(upstream: Path) -> Iterator[K8sEnv]:
    with own_control_plane(nodes=2) as env:
        # The operator watches the v1 kinds too: those CRDs are trainop's (the same as upstream v1's).
        for crd in sorted((REPO / "manifests" / "crds").glob("kubeflow.org_*.yaml")):
            env.kubectl("apply", "-f", str(crd))
        # Upstream's trainingruntimes CRD is past client-side apply's annotation limit: server-side.
        for crd in sorted((upstream / "crds").glob("*.yaml")):
            env.kubectl("apply", "--server-side", "-f", str(crd), timeout=120)
        for crd in (*TRAINER_CRDS, *V1_CRDS):  # (kubectl wait errs on a CRD whose status is not yet written)
            wait_for(functools.partial(established, env, crd), 60, f"{crd} Established")
        # Upstream's own ClusterTrainingRuntimes (torch, deepspeed, jax, xgboost, mlx, torchtune, ...).
        for path in sorted((upstream / "runtimes").rglob("*.yaml")):
            if path.name != "kustomization.yaml":
                env.kubectl("apply", "--server-side", "-f", str(path))
        yield env


@pytest.fixture
def namespace(upstream_env: K8sEnv, request: pytest.FixtureRequest) -> Iterator[str]:
    with fresh_namespace(upstream_env, "up", request.node.name) as ns:
        yield ns


@pytest.fixture(scope="module")
def operator(upstream_env: K8sEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("upstream-operator") / "operator.log"
    with running_operator(upstream_env, ["--enable-webhook=false"], log) as op:
        yield op


def create(env: K8sEnv, ns: str | None, obj: dict[str, Any]) -> dict[str, Any]:
    res = env.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj), namespace=ns, check=False)
    assert res.returncode == 0, f"{obj['kind']} {obj['metadata']['name']}: {res.stderr}"
    return dict(json.loads(res.stdout))


def test_upstream_runtimes_are_stored(upstream_env: K8sEnv, upstream: Path) -> None:
    names = {n.removeprefix("clustertrainingruntime.trainer.kubeflow.org/") for n in
             upstream_env.kubectl("get", "clustertrainingruntimes", "-o", "name").stdout.split()}  # fmt: skip
    want = {"torch-distributed", "deepspeed-distributed", "jax-distributed", "xgboost-distributed"}
    assert want <= names, names


def with_jobset_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """The runtime spec as upstream's schema stores it: JobSet's defaults on each replicated job
    (groupName "default", replicas 1; jobset_types.go markers, copied into trainer's CRDs)."""
    spec = copy.deepcopy(spec)
    for job in spec["template"]["spec"]["replicatedJobs"]:
        job.setdefault("groupName", "default")
        job.setdefault("replicas", 1)
    return spec


def test_shipped_runtimes_accepted_unchanged(upstream_env: K8sEnv) -> None:
    """manifests/runtimes under upstream's schema: stored as sent but for upstream's own schema
    defaults (renamed: upstream's runtimes of the same names are installed), so no field of ours is
    pruned; and trainop's generated CRD stores the same (tests/integration/api)."""
    for path in sorted((REPO / "manifests" / "runtimes").glob("*-*.yaml")):
        sent = docs(path)[0]
        sent["metadata"]["name"] = "ours-" + sent["metadata"]["name"]
        stored = create(upstream_env, None, sent)
        assert stored["spec"] == with_jobset_defaults(sent["spec"]), path.name


def test_example_trainjobs_accepted(upstream_env: K8sEnv, namespace: str, upstream: Path) -> None:
    """Upstream's examples/yaml (runtimes and TrainJobs) and trainop's TrainJob example, as they are."""
    sent = [d for p in sorted((upstream / "examples").glob("*.yaml")) for d in docs(p)]
    sent += docs(REPO / "examples" / "pytorch" / "ddp-digits" / "trainjob.yaml")
    kinds = sorted(d["kind"] for d in sent)
    assert kinds.count("TrainJob") == 6, kinds
    for obj in sent:
        ns = None if obj["kind"] == "ClusterTrainingRuntime" else namespace
        stored = create(upstream_env, ns, obj)
        if obj["kind"] == "TrainJob":
            assert stored["spec"]["trainer"] == obj["spec"]["trainer"], obj["metadata"]["name"]


# --- trainop's operator under upstream's CRDs, on upstream's runtimes -----------------------------------


def with_fates(obj: dict[str, Any], fates: dict[str, str]) -> dict[str, Any]:
    """The TrainJob plus a runtimePatch that gives each step's pods a kwok fate (upstream's API)."""
    obj = copy.deepcopy(obj)
    jobs = [
        {"name": step, "template": {"spec": {"template": {"metadata": {"annotations": {SIM_OUTCOME: fate}}}}}}
        for step, fate in fates.items()
    ]
    patch = {
        "manager": "trainer.kubeflow.org/test",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}},
    }
    obj["spec"].setdefault("runtimePatches", []).append(patch)
    return obj


def condition(c: Cluster, name: str, ctype: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = c.client.get(TrainJobResource, name, namespace=c.namespace).to_dict()
        for cond in (job.get("status") or {}).get("conditions") or []:
            if cond["type"] == ctype and cond["status"] == "True":
                return dict(cond)
        return None

    return wait_for(check, 90, f"TrainJob {name} {ctype}")


def pods(c: Cluster, name: str) -> dict[str, dict[str, Any]]:
    got = c.client.list(r.Pod, namespace=c.namespace, labels={"jobset.sigs.k8s.io/jobset-name": name})
    return {p.metadata.name: dict(p.to_dict()) for p in got}  # type: ignore[union-attr]


@pytest.fixture
def cluster(upstream_env: K8sEnv, namespace: str) -> Iterator[Cluster]:
    with contextlib.closing(Cluster(upstream_env, namespace)) as c:
        yield c


def test_upstream_example_runs_to_complete(
    operator: OperatorProcess, cluster: Cluster, upstream: Path
) -> None:
    """examples/yaml/01-multi-node.yaml on upstream's torch-distributed: 3 node pods addressed as
    JobSet addresses them, Complete with upstream's reason, jobsStatus in upstream's schema."""
    (example,) = docs(upstream / "examples" / "01-multi-node.yaml")
    create(cluster.env, cluster.namespace, with_fates(example, {"node": "succeed"}))
    cond = condition(cluster, "multi-node-example", "Complete")
    assert (cond["reason"], cond["message"]) == ("AllJobsCompleted", "jobset completed successfully")
    got = pods(cluster, "multi-node-example")
    assert sorted(got) == [f"multi-node-example-node-0-{i}" for i in range(3)]
    last = got["multi-node-example-node-0-2"]
    assert (last["spec"]["hostname"], last["spec"]["subdomain"]) == (
        "multi-node-example-node-0-2",
        "multi-node-example",
    )
    env = {e["name"]: e.get("value") for e in last["spec"]["containers"][0]["env"]}
    assert (env["PET_NNODES"], env["PET_MASTER_ADDR"]) == (
        "3",
        "multi-node-example-node-0-0.multi-node-example",
    )
    status = cluster.client.get(
        TrainJobResource, "multi-node-example", namespace=cluster.namespace
    ).to_dict()["status"]
    assert status["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_mpi_on_upstream_deepspeed_runtime_runs_to_complete(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "ds"},
        "spec": {"runtimeRef": {"name": "deepspeed-distributed"}, "trainer": {"numNodes": 3}},
    }
    create(cluster.env, cluster.namespace, with_fates(job, {"launcher": "succeed"}))
    assert condition(cluster, "ds", "Complete")["reason"] == "AllJobsCompleted"
    # runLauncherAsNode: the launcher is one of the 3 nodes (upstream's mpi plugin); the node pods
    # may already be gone once it completed, so the hostfile shows them.
    assert "ds-launcher-0-0" in pods(cluster, "ds")
    hostfile = cluster.get(r.ConfigMap, "ds-mpi-hostfile")
    assert hostfile is not None
    assert (
        hostfile["data"]["hostfile"]
        == "ds-node-0-0.ds slots=1\nds-node-0-1.ds slots=1\nds-launcher-0-0.ds slots=1\n"
    )


# --- trainop's resolver on upstream's runtime files ------------------------------------------------------


@pytest.mark.parametrize(
    ("upstream_file", "ours", "trainer"),
    [
        pytest.param(
            "torch_distributed.yaml", "torch-distributed", {"numNodes": 2, "numProcPerNode": 2}, id="torch"
        ),
        pytest.param("deepspeed_distributed.yaml", "deepspeed-distributed", {"numNodes": 3}, id="mpi"),
        pytest.param("jax_distributed.yaml", "jax-distributed", {"numNodes": 2}, id="jax"),
        pytest.param("xgboost_distributed.yaml", "xgboost-distributed", {"numNodes": 2}, id="xgboost"),
    ],
)
def test_upstream_runtime_resolves_as_the_shipped_one(
    upstream: Path, upstream_file: str, ours: str, trainer: dict[str, Any]
) -> None:
    """Upstream's runtime file and trainop's equivalent give the same pods, in the same order, with the
    same env, hostname and subdomain (tests/unit/core/test_trainjob_upstream_tables.py checks those
    against upstream's plugin tests), the same objects and the same steps' order."""
    job = parse_trainer_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "default"},
            "spec": {"runtimeRef": {"name": ours}, "trainer": {**trainer, "command": ["train"]}},
        }
    )

    def shape(path: Path) -> tuple[Any, ...]:
        rt = parse_trainer_object(docs(path)[0])
        got = resolve_trainjob(job, rt, REGISTRY)  # type: ignore[arg-type]
        pods = [
            (p.name, p.pod["spec"]["hostname"], p.pod["spec"]["subdomain"],
             [(c["name"], c.get("env")) for c in p.pod["spec"]["containers"]])
            for p in got.pods()
        ]  # fmt: skip
        objects = [
            (o["kind"], o["metadata"]["name"], o.get("data") if o["kind"] == "ConfigMap" else None)
            for o in got.objects
        ]
        return pods, objects, got.order(), got.success_targets, got.publish_not_ready

    assert shape(upstream / "runtimes" / upstream_file) == shape(
        REPO / "manifests" / "runtimes" / f"{ours}.yaml"
    )
