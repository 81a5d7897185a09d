"""The generated CRDs on a real kube-apiserver: plain client-side `kubectl apply -k` installs them, every
example is stored unchanged (nothing pruned), and the schema rules of contract §1.1/§1.2 hold there:
int types, the suspend default, queue immutability, the scale and status subresources, printer columns.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from trainop.api.kinds import KIND_INFO
from trainop.testing.builders import mpi_job, pytorch_job, tf_job
from trainop.testing.examples import find_example_jobs
from trainop.testing.testenv import K8sEnv

pytestmark = [pytest.mark.k8s, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "manifests" / "crds"


@pytest.fixture(scope="module")
def crds(k8s_env: K8sEnv) -> str:
    # Client-side apply on purpose: it stores the whole CRD in the last-applied annotation (256 KiB cap),
    # which upstream's 450-680 KB CRDs overflow.
    out = k8s_env.kubectl("apply", "-k", str(CRD_DIR), timeout=120).stdout
    names = [f"crd/{info.plural}.kubeflow.org" for info in KIND_INFO.values()]
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names, timeout=90)
    return out


def _create(env: K8sEnv, ns: str, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    obj = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k not in ("namespace", "uid")}}
    return env.kubectl(
        "create", "-f", "-", "-o", "json", *extra, input=json.dumps(obj), namespace=ns, check=False
    )


def test_client_side_apply_installs_every_crd(k8s_env: K8sEnv, crds: str) -> None:
    for info in KIND_INFO.values():
        crd = k8s_env.kubectl_json("get", f"crd/{info.plural}.kubeflow.org")
        annotation = crd["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        assert len(annotation) < 64 * 1024
        assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]


@pytest.mark.parametrize("doc", find_example_jobs(ROOT))
def test_examples_are_stored_unchanged(
    k8s_env: K8sEnv, k8s_namespace: str, crds: str, doc: dict[str, Any]
) -> None:
    sent = copy.deepcopy(doc)
    res = _create(k8s_env, k8s_namespace, sent)
    assert res.returncode == 0, res.stderr
    stored = json.loads(res.stdout)
    want = copy.deepcopy(sent["spec"])
    if "runPolicy" in want:
        # §1.2: the one schema default; like upstream's CRD, it applies only where runPolicy is written.
        want["runPolicy"].setdefault("suspend", False)
    assert stored["spec"] == want


def test_string_for_an_integer_is_rejected(k8s_env: K8sEnv, k8s_namespace: str, crds: str) -> None:
    obj = pytorch_job("strings").master(1).workers(2).build_dict()
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "2"
    res = _create(k8s_env, k8s_namespace, obj)
    assert res.returncode != 0
    assert "spec.pytorchReplicaSpecs.Worker.replicas in body must be of type integer" in res.stderr


def test_unknown_fields_rejected_by_strict_kubectl_and_pruned_otherwise(
    k8s_env: K8sEnv, k8s_namespace: str, crds: str
) -> None:
    obj = pytorch_job("typo").master(1).workers(1).run_policy(backoff_limit=1).build_dict()
    obj["spec"]["runPolicy"]["backofLimit"] = 3
    strict = _create(k8s_env, k8s_namespace, obj)
    assert strict.returncode != 0
    assert 'unknown field "spec.runPolicy.backofLimit"' in strict.stderr
    lax = _create(k8s_env, k8s_namespace, obj, "--validate=false")
    assert lax.returncode == 0, lax.stderr
    assert json.loads(lax.stdout)["spec"]["runPolicy"] == {"backoffLimit": 1, "suspend": False}


def test_queue_is_immutable(k8s_env: K8sEnv, k8s_namespace: str, crds: str) -> None:
    obj = tf_job("queued").workers(1).run_policy(scheduling_policy={"queue": "a"}).build_dict()
    assert _create(k8s_env, k8s_namespace, obj).returncode == 0
    patch = {"spec": {"runPolicy": {"schedulingPolicy": {"queue": "b"}}}}
    res = k8s_env.kubectl(
        "patch", "tfjob/queued", "--type=merge", "-p", json.dumps(patch), namespace=k8s_namespace, check=False
    )
    assert res.returncode != 0
    assert "spec.runPolicy.schedulingPolicy.queue is immutable" in res.stderr


def test_scale_subresource(k8s_env: K8sEnv, k8s_namespace: str, crds: str) -> None:
    assert _create(k8s_env, k8s_namespace, pytorch_job("elastic").workers(2).build_dict()).returncode == 0
    k8s_env.kubectl("scale", "pytorchjob/elastic", "--replicas=3", namespace=k8s_namespace)
    got = k8s_env.kubectl_json("get", "pytorchjob/elastic", namespace=k8s_namespace)
    assert got["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    assert _create(k8s_env, k8s_namespace, tf_job("fixed").workers(2).build_dict()).returncode == 0
    res = k8s_env.kubectl("scale", "tfjob/fixed", "--replicas=3", namespace=k8s_namespace, check=False)
    assert res.returncode != 0, "TFJob has no scale subresource (§1.1)"


@pytest.mark.parametrize(
    ("builder", "resource", "header"),
    [
        pytest.param(
            pytorch_job("cols").master(1).workers(1), "pytorchjob", ["NAME", "STATE", "AGE"], id="PyTorchJob"
        ),
        pytest.param(
            mpi_job("cols").launcher(1).workers(1), "mpijob", ["NAME", "AGE", "STATE"], id="MPIJob Age first"
        ),
    ],
)
def test_printer_columns_and_status_subresource(
    k8s_env: K8sEnv, k8s_namespace: str, crds: str, builder: Any, resource: str, header: list[str]
) -> None:
    assert _create(k8s_env, k8s_namespace, builder.build_dict()).returncode == 0
    status = {
        "status": {
            "conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]
        }
    }
    k8s_env.kubectl(
        "patch",
        f"{resource}/cols",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
        namespace=k8s_namespace,
    )
    lines = k8s_env.kubectl("get", resource, namespace=k8s_namespace).stdout.splitlines()
    assert lines[0].split() == header
    row = dict(zip(header, lines[1].split(), strict=True))
    assert (row["NAME"], row["STATE"]) == ("cols", "Running")
