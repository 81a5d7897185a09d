"""``trainop run --dry-run`` without YAML (cli/script_job.py) prints a PyTorchJob that a cluster takes
as it is: created for real through ``kubectl apply`` with trainop's CRDs and its validating webhook
(``failurePolicy: Fail``), stored exactly as printed, and reconciled by the operator into its pods and
Services; and accepted unchanged by upstream v1.9.4's CRDs (a server-side dry run, as the
failure-policy tests check the annotations)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from k8s_harness import REPO, Cluster, names
from test_failure_policy import _with_defaults, upstream_crds  # noqa: F401  (a fixture, used by name)
from test_webhook import SELECTOR_LABEL, Webhook, serving_webhook

from trainop.testing.testenv import K8sEnv, wait_for

# id → the flags after `trainop run --dry-run`, as typed (no quoting: split at spaces)
FLAG_SETS: dict[str, str] = {
    "the DDP demo's script, torchrun's flags": (
        "--nnodes 2 --nproc-per-node 2 -e EPOCHS=3 examples/pytorch/ddp-digits/train.py"
    ),
    "every option: -j, env, GPUs, restarts, image, name": (
        "-j 3x2 -e EPOCHS=3 --gpu 1 --max-restarts 2 --image example.com/digits:1 --name digits"
        " -- python train.py --lr 0.1"
    ),
    "--workers, python -m": "--workers 1 -- python -m models.mnist",
}


def dry_run(flags: list[str]) -> tuple[str, dict[str, Any]]:
    """What the CLI prints (from the repository root, where the demo's path is valid), and it parsed."""
    printed = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", "run", "--dry-run", *flags],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=REPO,
    ).stdout
    return printed, yaml.safe_load(printed)


@pytest.fixture(scope="module")
def webhook(k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """An operator serving the validating webhook (and reconciling), as installed on a cluster."""
    with serving_webhook(k8s_env, tmp_path_factory.mktemp("webhook")) as wh:
        yield wh


@pytest.mark.parametrize("flags", [pytest.param(flags.split(), id=i) for i, flags in FLAG_SETS.items()])
def test_applied_through_the_webhook_stored_as_printed_and_reconciled(
    webhook: Webhook, cluster: Cluster, flags: list[str]
) -> None:
    ns = cluster.namespace
    webhook.env.kubectl("label", "namespace", ns, f"{SELECTOR_LABEL}={webhook.token}")
    printed, doc = dry_run(flags)
    name = doc["metadata"]["name"]
    applied = webhook.env.kubectl("apply", "-f", "-", input=printed, namespace=ns, check=False)
    stored = cluster.job("PyTorchJob", name) or {}
    got = {
        "apply": (applied.returncode, applied.stdout.strip(), applied.stderr),
        "name": stored.get("metadata", {}).get("name"),
        "spec": stored.get("spec"),
    }
    assert got == {
        "apply": (0, f"pytorchjob.kubeflow.org/{name} created", ""),
        "name": name,
        "spec": _with_defaults(doc["spec"]),
    }
    # The operator takes it as any job: a pod and a Service per replica, then the Created condition.
    replicas = doc["spec"]["pytorchReplicaSpecs"]
    want = [
        f"{name}-master-0",
        *(f"{name}-worker-{i}" for i in range(replicas.get("Worker", {}).get("replicas", 0))),
    ]
    wait_for(lambda: names(cluster.pods(name)) == want or None, 60, f"the pods of {name}")
    wait_for(lambda: names(cluster.services(name)) == want or None, 60, f"the Services of {name}")
    cluster.wait_condition("PyTorchJob", name, "Created")
    cluster.delete_job("PyTorchJob", name)


def test_upstream_v1_9_crds_accept_it_unchanged(
    k8s_env: K8sEnv,
    upstream_crds: list[dict[str, Any]],  # noqa: F811
    k8s_namespace: str,
) -> None:
    got: dict[str, Any] = {}
    want: dict[str, Any] = {}
    for ident, flags in FLAG_SETS.items():
        printed, doc = dry_run(flags.split())
        out = k8s_env.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=printed, namespace=k8s_namespace
        )
        obj = json.loads(out.stdout)
        got[ident] = (obj["metadata"]["name"], obj["spec"])
        want[ident] = (doc["metadata"]["name"], _with_defaults(doc["spec"]))
    assert got == want


def test_the_printed_manifest_names_a_namespace_only_when_asked() -> None:
    """--dry-run names no namespace unless -n is given (kubectl apply's -n or context then decides)."""
    _, doc = dry_run(["--nnodes", "2", "--", "python", "train.py"])
    _, with_ns = dry_run(["-n", "team", "--nnodes", "2", "--", "python", "train.py"])
    assert ("namespace" in doc["metadata"], with_ns["metadata"].get("namespace")) == (False, "team")
