"""manifests/ installs with a client-side ``kubectl apply -k``, and its least-privilege RBAC is enough:
the operator runs as the manifests' ServiceAccount (its own token, not admin) through a whole job
life, leader election, the webhook certificate and caBundle, MPI's launcher Role (RBAC escalation
rules) and, with ``--trainer-progress``, a pod's progress post (TokenReview, the pod, the CA
ConfigMap, the job's annotation through the webhook), with no request forbidden."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import REPO, Cluster, OperatorProcess, annotate, free_port
from test_progress import post, token_for

from trainop.api.constants import ANNOTATION_TRAINER_STATUS
from trainop.backends.kubernetes import resources as r
from trainop.operator.webhook import WEBHOOK_KINDS, webhook_name, webhook_path
from trainop.testing.builders import mpi_job, pytorch_job
from trainop.testing.testenv import SIM_OUTCOME, K8sEnv, wait_for

OVERLAY = REPO / "manifests" / "overlays" / "standalone"
NS = "kubeflow"
VWC = "validator.training-operator.kubeflow.org"
SELECTOR_LABEL = "trainop.dev/manifests-test"
SA_USER = f"system:serviceaccount:{NS}:training-operator"


def sa_kubeconfig(env: K8sEnv, token: str, path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "t",
                        "cluster": {"server": env.server, "certificate-authority": str(env.ca_file)},
                    }
                ],
                "users": [{"name": "training-operator", "user": {"token": token}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "training-operator"}}],
                "current-context": "t",
            }
        )
    )
    return path


@dataclass
class Reapplied:
    stdout: str
    ca_bundles: list[str | None]


@dataclass
class Installed:
    op: OperatorProcess
    token: str
    reapplied: Reapplied
    port: int


@pytest.fixture(scope="module")
def installed(k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("manifests")
    token = secrets.token_hex(4)
    port = free_port()

    def not_terminating() -> bool | None:  # a previous run's namespace may still be going away
        got = k8s_env.kubectl("get", "namespace", NS, "-o", "jsonpath={.status.phase}", check=False)
        return got.returncode != 0 or got.stdout == "Active" or None

    wait_for(not_terminating, 120, f"namespace {NS} from an earlier run to be deleted")
    try:
        first = k8s_env.kubectl("apply", "-k", str(OVERLAY))
        assert "deployment.apps/training-operator created" in first.stdout, first.stdout
        # The operator injects caBundle into the configuration; re-applying the manifests must keep it.
        bundle = "dGVzdA=="
        k8s_env.kubectl("patch", "validatingwebhookconfiguration", VWC, "--type=json", "-p",
                        json.dumps([{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle",
                                     "value": bundle}
                                    for i in range(len(WEBHOOK_KINDS))]))  # fmt: skip
        again = k8s_env.kubectl("apply", "-k", str(OVERLAY))
        with k8s_env.client() as c:
            vwc: dict[str, Any] = dict(c.get(r.ValidatingWebhookConfiguration, VWC))
        reapplied = Reapplied(again.stdout, [w["clientConfig"].get("caBundle") for w in vwc["webhooks"]])
        # The API server cannot reach the in-cluster Service here: point the webhooks at the test's
        # operator on loopback, and only at this module's namespaces.
        for w in vwc["webhooks"]:
            kind = w["name"].split(".")[1]
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-{kind}"}
            w["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: token}}
        with k8s_env.client() as c:
            c.replace(r.ValidatingWebhookConfiguration(vwc))
        sa_token = k8s_env.kubectl(
            "create", "token", "training-operator", "-n", NS, "--duration=2h"
        ).stdout.strip()
        op = OperatorProcess(
            k8s_env,
            [
                "--leader-elect",
                f"--webhook-server-port={port}",
                "--webhook-host=127.0.0.1",
                "--webhook-cert-host=127.0.0.1",
                f"--cert-dir={tmp / 'certs'}",
                "--trainer-progress",
            ],
            tmp / "operator.log",
            kubeconfig=sa_kubeconfig(k8s_env, sa_token, tmp / "sa.kubeconfig"),
            extra_env={"MY_POD_NAMESPACE": NS, "MY_POD_NAME": "training-operator-test"},
        ).start()
        try:
            op.wait_ready()
            wait_for(lambda: op.metric("leader_election_master_status") == 1 or None, 60, "leadership")
            yield Installed(op, token, reapplied, port)
        finally:
            op.stop()
    finally:
        # Never leave a failurePolicy=Fail webhook behind. The CRDs stay (other tests use them).
        for obj in (f"validatingwebhookconfiguration/{VWC}", "clusterrolebinding/training-operator",
                    "clusterrole/training-operator", f"namespace/{NS}"):  # fmt: skip
            k8s_env.kubectl("delete", obj, "--ignore-not-found", "--wait=false", check=False)


def test_apply_is_idempotent_client_side(installed: Installed, k8s_env: K8sEnv) -> None:
    again = installed.reapplied
    assert "deployment.apps/training-operator unchanged" in again.stdout
    assert "clusterrole.rbac.authorization.k8s.io/training-operator unchanged" in again.stdout
    assert again.ca_bundles == ["dGVzdA=="] * len(WEBHOOK_KINDS)  # the injected caBundle survives a re-apply
    with k8s_env.client() as c:
        vwc = dict(c.get(r.ValidatingWebhookConfiguration, VWC))
    # Upstream's five (§2.1) and MPIJob's (operator/webhook.py: our CRDs keep pod templates opaque).
    assert sorted(w["name"] for w in vwc["webhooks"]) == sorted(webhook_name(k) for k in WEBHOOK_KINDS)
    shipped = yaml.safe_load((REPO / "manifests/base/validating-webhook-configuration.yaml").read_text())
    assert {w["name"]: w["clientConfig"]["service"]["path"] for w in shipped["webhooks"]} == {
        webhook_name(k): webhook_path(k) for k in WEBHOOK_KINDS
    }
    assert all(
        w["failurePolicy"] == "Fail" and w["rules"][0]["operations"] == ["CREATE", "UPDATE"]
        for w in vwc["webhooks"]
    )
    # The operator has replaced the test's placeholder with its own CA.
    assert all(w["clientConfig"].get("caBundle") not in (None, "dGVzdA==") for w in vwc["webhooks"])


def test_deployment_is_hardened(installed: Installed, k8s_env: K8sEnv) -> None:
    dep = k8s_env.kubectl_json("get", "deployment", "training-operator", namespace=NS)
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    got = {
        "runAsNonRoot": pod["securityContext"]["runAsNonRoot"],
        "readOnlyRootFilesystem": c["securityContext"]["readOnlyRootFilesystem"],
        "allowPrivilegeEscalation": c["securityContext"]["allowPrivilegeEscalation"],
        "drop": c["securityContext"]["capabilities"]["drop"],
        "requests": sorted(c["resources"]["requests"]),
        "limits": sorted(c["resources"]["limits"]),
        "probes": (c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"]),
    }
    assert got == {
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "drop": ["ALL"],
        "requests": ["cpu", "memory"],
        "limits": ["cpu", "memory"],
        "probes": ("/healthz", "/readyz"),
    }


def test_cluster_role_has_no_wildcards(installed: Installed, k8s_env: K8sEnv) -> None:
    role = k8s_env.kubectl_json("get", "clusterrole", "training-operator")
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule.get("resources", []), rule
    # Secrets are never read cluster-wide; creating one is allowed (a TrainJob's MPI SSH keys).
    assert all(
        rule["verbs"] == ["create"] for rule in role["rules"] if "secrets" in rule.get("resources", [])
    )


def test_service_account_runs_a_job_end_to_end(installed: Installed, cluster: Cluster) -> None:
    cluster.env.kubectl("label", "namespace", cluster.namespace, f"{SELECTOR_LABEL}={installed.token}")
    # Admission goes through the operator running with the manifests' RBAC.
    bad = cluster.env.kubectl(
        "apply", "-f", "-", namespace=cluster.namespace, check=False,
        input=yaml.safe_dump({**pytorch_job("bad").master(2).build_dict(), "metadata": {"name": "bad"}}),
    )  # fmt: skip
    assert "denied the request: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in bad.stderr
    job = pytorch_job("sa").master(1).workers(1).run_policy(ttl_seconds_after_finished=1)
    created = cluster.create(job.template(annotate({SIM_OUTCOME: "succeed"})).build_dict())
    try:
        # Watched, not polled: with TTL=1 the job may be Succeeded for only a fraction of a second.
        cluster.watch_condition("PyTorchJob", "sa", "Succeeded", since=created)
    except TimeoutError:
        raise AssertionError(installed.op.log_tail(80)) from None
    wait_for(lambda: cluster.job("PyTorchJob", "sa") is None or None, 60, "TTL deletion")
    # MPI: creating the launcher Role needs every right it grants (RBAC escalation check).
    cluster.create(mpi_job("mpi").launcher(1).workers(1).build_dict())
    wait_for(lambda: cluster.get(r.Pod, "mpi-launcher") or None, 60, "MPI launcher pod")
    assert cluster.get(r.Role, "mpi-launcher") is not None
    # No RBAC denial anywhere in the operator's log (a 403 can also mean "namespace is being terminated",
    # which other tests' namespaces legitimately cause, so the log is checked, not the 403 count).
    denied = [
        line for line in installed.op.log_path.read_text().splitlines() if f'User "{SA_USER}" cannot' in line
    ]
    assert denied == []


def test_service_account_takes_a_progress_post(
    installed: Installed, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.env.kubectl("label", "namespace", cluster.namespace, f"{SELECTOR_LABEL}={installed.token}")
    cluster.create(pytorch_job("prog").master(1).build_dict())
    wait_for(lambda: cluster.get(r.Pod, "prog-master-0"), 60, "prog's pod")
    cm = wait_for(lambda: cluster.get(r.ConfigMap, "prog-tls-config"), 30, "the CA ConfigMap")
    ca = tmp_path / "ca.crt"
    ca.write_text(cm["data"]["ca.crt"])
    url = f"https://127.0.0.1:{installed.port}/apis/kubeflow.org/v1/namespaces/{cluster.namespace}/pytorchjobs/prog/status"
    token = token_for(cluster.env, cluster.namespace, "prog-master-0", "trainer.kubeflow.org")
    body = json.dumps({"trainerStatus": {"progressPercentage": 7}}).encode()
    assert post(url, ca, token, body) == (200, '{"ok":true}\n'), installed.op.log_tail(40)
    job = cluster.job("PyTorchJob", "prog") or {}
    assert json.loads(job["metadata"]["annotations"][ANNOTATION_TRAINER_STATUS])["progressPercentage"] == 7
    denied = [
        line for line in installed.op.log_path.read_text().splitlines() if f'User "{SA_USER}" cannot' in line
    ]
    assert denied == []
