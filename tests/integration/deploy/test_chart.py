"""charts/trainop with real Helm: `helm lint`, `helm template` against the committed golden renders,
values that are wrong fail with the value's path and what to change, and the chart renders the same
objects as `kubectl kustomize manifests/overlays/standalone` (upstream's install path)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from golden import GOLDEN, NAMESPACE, VALUES, render

from trainop.testing.deploy import CHART, REPO, find_helm
from trainop.testing.testenv import find_bin_dir

# What Helm adds to every object and kustomize does not (charts/trainop/templates/_helpers.tpl), and the
# CRDs' keep annotation (crds.keep).
HELM_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version",
               "helm.sh/chart"}  # fmt: skip
HELM_ANNOTATIONS = {"helm.sh/resource-policy"}


def objects(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(text) if o}


def without_helm_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    for key, drop in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
        kept = {k: v for k, v in (meta.get(key) or {}).items() if k not in drop}
        if kept:
            meta[key] = kept
        else:
            meta.pop(key, None)
    return obj


def test_helm_lint_passes_with_defaults_and_every_value() -> None:
    helm = str(find_helm())
    for values in VALUES.values():
        cmd = [helm, "lint", "--strict", str(CHART)] + (["--values", str(values)] if values else [])
        got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert got.returncode == 0 and "0 chart(s) failed" in got.stdout, got.stdout + got.stderr


@pytest.mark.parametrize("stem", sorted(VALUES))
def test_template_matches_golden(stem: str) -> None:
    got = render(VALUES[stem])
    assert got.returncode == 0, got.stderr
    want = (GOLDEN / f"{stem}.yaml").read_text()
    # On a difference: review it, then `make chart-golden`.
    assert got.stdout == want


def test_everything_render_sets_each_value() -> None:
    objs = objects((GOLDEN / "everything.yaml").read_text())
    dep = objs[("Deployment", "training-operator")]
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert dep["spec"]["replicas"] == 2
    assert c["image"] == "registry.example.com/ml/trainop:0.1.0-rc1" and c["imagePullPolicy"] == "Always"
    assert c["args"] == [
        "--metrics-bind-address=:8090",
        "--health-probe-bind-address=:8081",
        "--webhook-server-port=9444",
        "--manage-webhook-cert=false",
        "--trainer-progress",
        "--leader-elect",
        "--enable-scheme=pytorchjob",
        "--enable-scheme=mpijob",
        "--namespace=team-a",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--controller-threads=8",
        "--gang-scheduler-name=volcano",
        "--zap-log-level=debug",
    ]
    assert pod["nodeSelector"] and pod["tolerations"] and pod["affinity"] and pod["imagePullSecrets"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    vwc = objs[("ValidatingWebhookConfiguration", "validator.training-operator.kubeflow.org")]
    assert [w["rules"][0]["resources"] for w in vwc["webhooks"]] == [["mpijobs"], ["pytorchjobs"]]
    assert {w["failurePolicy"] for w in vwc["webhooks"]} == {"Ignore"}
    assert {w["clientConfig"]["service"]["namespace"] for w in vwc["webhooks"]} == {NAMESPACE}
    # cert-manager: its Certificate fills the Secret the pod mounts, its injector the caBundle.
    assert ("Secret", "training-operator-webhook-cert") not in objs
    cert = objs[("Certificate", "training-operator-webhook-cert")]
    assert cert["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "internal-ca"}
    assert cert["spec"]["dnsNames"][0] == f"training-operator.{NAMESPACE}.svc"
    assert vwc["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/training-operator-webhook-cert"
    }
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts["webhook-cert"] == "/tmp/k8s-webhook-server/serving-certs"
    assert {"name": "webhook-cert", "secret": {"secretName": "training-operator-webhook-cert"}} in pod[
        "volumes"
    ]
    svc = objs[("Service", "training-operator")]
    assert [(p["name"], p["port"], p["targetPort"]) for p in svc["spec"]["ports"]] == [
        ("monitoring-port", 8090, 8090), ("webhook-server", 443, 9444),
    ]  # fmt: skip
    monitor = objs[("ServiceMonitor", "training-operator")]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["endpoints"][0]["port"] == "monitoring-port"
    rules = objs[("PrometheusRule", "training-operator")]
    assert [r["alert"] for r in rules["spec"]["groups"][0]["rules"]] == [
        "TrainopWorkQueueStuck", "TrainopReconcileErrors", "TrainopLeaseLost",
    ]  # fmt: skip
    dash = objs[("ConfigMap", "training-operator-dashboard")]
    assert dash["metadata"]["namespace"] == "monitoring"
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dash["data"]["trainop.json"] == (
        REPO / "monitoring/grafana/trainop-dashboard.json"
    ).read_text().rstrip("\n")
    crds = [o for (kind, _), o in objs.items() if kind == "CustomResourceDefinition"]
    assert len(crds) == len(list((CHART / "files" / "crds").glob("*.yaml")))
    assert not any("annotations" in c["metadata"] for c in crds)  # crds.keep: false


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ["--set", "replicaCount=2", "--set", "leaderElection.enabled=false"],
            "replicaCount: 2 replicas need leaderElection.enabled: true",
            id="replicas without leader election",
        ),
        pytest.param(
            ["--set", "enabledKinds={pytorchjob,trainjob}"],
            'enabledKinds: "trainjob" is not a kind; use some of jaxjob, mpijob, paddlejob, pytorchjob, '
            "tfjob, xgboostjob",
            id="unknown kind",
        ),
        pytest.param(
            ["--set", "trainerProgress.enabled=true", "--set", "webhook.enabled=false"],
            "trainerProgress.enabled: true needs webhook.enabled: true",
            id="progress without the webhook",
        ),
        pytest.param(
            ["--set", "logLevel=verbose"], 'logLevel: "verbose"; use debug, info or error', id="log level"
        ),
    ],
)
def test_wrong_values_name_the_value_and_the_fix(flags: list[str], message: str) -> None:
    got = render(None, *flags)
    assert got.returncode != 0
    assert message in got.stderr, got.stderr
    assert "goroutine" not in got.stderr  # an error message, not a crash


def test_chart_and_kustomize_render_the_same_objects() -> None:
    kubectl = find_bin_dir() / "kubectl"
    kustomized = subprocess.run(
        [str(kubectl), "kustomize", str(REPO / "manifests/overlays/standalone")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    chart = render(None)
    assert chart.returncode == 0, chart.stderr
    want = objects(kustomized)
    # Helm creates the namespace (--create-namespace); the overlay ships it as an object.
    assert want.pop(("Namespace", NAMESPACE))
    got = {key: without_helm_metadata(obj) for key, obj in objects(chart.stdout).items()}
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_helm_labels_are_only_added(tmp_path: Path) -> None:
    """The chart's objects carry the manifests' labels plus Helm's, so selectors written for a
    kustomize install (app.kubernetes.io/name=training-operator) find a Helm install's objects too."""
    for obj in objects(render(None).stdout).values():
        labels = obj["metadata"].get("labels") or {}
        if obj["kind"] != "CustomResourceDefinition":
            assert labels.get("app.kubernetes.io/name") == "training-operator", obj["kind"]
            assert set(labels) >= HELM_LABELS, obj["kind"]
