"""The generated trainer.kubeflow.org CRDs on a real kube-apiserver: the shipped runtimes and TrainJobs
in the shape of kubeflow/trainer@v2.3.0's examples/yaml are stored unchanged but for the schema
defaults, and the CRD rules answer with upstream's messages (trainjob_types.go markers)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.testing.testenv import K8sEnv

pytestmark = [pytest.mark.k8s, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[3]
CRDS = [f"crd/{p}.trainer.kubeflow.org" for p in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")]


@pytest.fixture(scope="module")
def trainer_crds(k8s_env: K8sEnv) -> None:
    k8s_env.kubectl("apply", "-k", str(ROOT / "manifests" / "crds"), timeout=120)
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *CRDS, timeout=90)


def _create(env: K8sEnv, ns: str | None, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return env.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(obj), namespace=ns, check=False)


def trainjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def test_shipped_runtimes_apply_unchanged(k8s_env: K8sEnv, trainer_crds: None) -> None:
    k8s_env.kubectl("apply", "-k", str(ROOT / "manifests" / "runtimes"))
    for path in sorted((ROOT / "manifests" / "runtimes").glob("*-*.yaml")):
        sent = yaml.safe_load(path.read_text())
        got = k8s_env.kubectl_json("get", f"clustertrainingruntime/{sent['metadata']['name']}")
        want = copy.deepcopy(sent["spec"])
        mpi = want.get("mlPolicy", {}).get("mpi")
        if mpi is not None:  # every MPI field is written in the shipped runtime: no default to add
            assert set(mpi) == {
                "numProcPerNode",
                "mpiImplementation",
                "sshAuthMountPath",
                "runLauncherAsNode",
            }
        for job in want["template"]["spec"]["replicatedJobs"]:  # JobSet's schema defaults, as upstream's CRD
            job.setdefault("groupName", "default")
            job.setdefault("replicas", 1)
        assert got["spec"] == want, path.name


def test_example_trainjob_stored_with_its_defaults(
    k8s_env: K8sEnv, k8s_namespace: str, trainer_crds: None
) -> None:
    """kubeflow/trainer@v2.3.0 examples/yaml/01-multi-node.yaml's shape (and the DDP demo's)."""
    sent = yaml.safe_load((ROOT / "examples" / "pytorch" / "ddp-digits" / "trainjob.yaml").read_text())
    res = _create(k8s_env, k8s_namespace, sent)
    assert res.returncode == 0, res.stderr
    stored = json.loads(res.stdout)["spec"]
    want = copy.deepcopy(sent["spec"])
    want["runtimeRef"].update(apiGroup="trainer.kubeflow.org", kind="ClusterTrainingRuntime")
    want.update(suspend=False, managedBy="trainer.kubeflow.org/trainjob-controller")
    assert stored == want


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            {**trainjob("x"), "metadata": {"name": "Upper"}},
            "metadata.name must match RFC 1035 DNS label format",
            id="name",
        ),
        pytest.param(
            trainjob("md", managedBy="someone"),
            "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
            id="managedBy",
        ),
        pytest.param(
            trainjob("np", trainer={"numProcPerNode": 0}),
            "numProcPerNode must be greater than or equal to 1",
            id="numProcPerNode",
        ),
        pytest.param(
            trainjob("ad", activeDeadlineSeconds=0),
            "spec.activeDeadlineSeconds in body should be greater than or equal to 1",
            id="activeDeadlineSeconds",
        ),
    ],
)
def test_crd_rules(
    k8s_env: K8sEnv, k8s_namespace: str, trainer_crds: None, obj: dict[str, Any], message: str
) -> None:
    res = _create(k8s_env, k8s_namespace, obj)
    assert res.returncode != 0
    assert message in res.stderr


def test_trainer_is_immutable(k8s_env: K8sEnv, k8s_namespace: str, trainer_crds: None) -> None:
    assert _create(k8s_env, k8s_namespace, trainjob("imm", trainer={"numNodes": 1})).returncode == 0
    patch = json.dumps({"spec": {"trainer": {"numNodes": 2}}})
    res = k8s_env.kubectl(
        "patch", "trainjob/imm", "--type=merge", "-p", patch, namespace=k8s_namespace, check=False
    )
    assert res.returncode != 0 and "field is immutable" in res.stderr
