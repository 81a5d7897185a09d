"""The deployment files agree with the code (issue 26): the chart's copies of the manifests and
monitoring files are current, every series the dashboard and the alert rules read is one the operator
serves, and the image and Deployment ask for the same non-root user and read-only root filesystem.

Helm, Prometheus and the image themselves are exercised in tests/integration/deploy.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics_core import Metric

from trainop.operator.metrics import OperatorMetrics
from trainop.testing.deploy import (
    CHART,
    REPO,
    Query,
    alert_queries,
    alert_rules,
    dashboard,
    dashboard_queries,
    detect_metric_names,
)

# chart copy -> its source (`make chart-files`, run by `make crds`)
COPIES = {
    **{f"files/crds/{p.name}": p for p in sorted((REPO / "manifests/crds").glob("*.yaml"))
       if p.name != "kustomization.yaml"},
    "files/rbac/cluster-role.yaml": REPO / "manifests/base/cluster-role.yaml",
    "files/rbac/role.yaml": REPO / "manifests/base/role.yaml",
    "files/webhook/validating-webhook-configuration.yaml":
        REPO / "manifests/base/validating-webhook-configuration.yaml",
    "files/monitoring/trainop-dashboard.json": REPO / "monitoring/grafana/trainop-dashboard.json",
    "files/monitoring/trainop-alerts.yaml": REPO / "monitoring/prometheus/trainop-alerts.yaml",
}  # fmt: skip


def served_series() -> set[str]:
    """Every sample name the operator's /metrics can carry."""
    names: set[str] = set()
    family: Metric
    for family in OperatorMetrics().registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}.get(family.type, [""])
        names.update(family.name + s for s in suffixes)
    return names


@pytest.mark.parametrize("copy", sorted(COPIES), ids=str)
def test_chart_copy_is_current(copy: str) -> None:
    source = COPIES[copy]
    assert (CHART / copy).read_bytes() == source.read_bytes(), f"charts/trainop/{copy} differs: run make crds"


def test_chart_has_no_stale_copies() -> None:
    got = {str(p.relative_to(CHART)) for p in (CHART / "files").rglob("*") if p.is_file()}
    assert got == set(COPIES), "run make crds (it refreshes charts/trainop/files)"


def test_chart_version_is_the_package_version() -> None:
    from trainop import __version__

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)


@pytest.mark.parametrize(
    "query", dashboard_queries() + alert_queries(), ids=lambda q: q.source if isinstance(q, Query) else ""
)
def test_every_series_a_query_reads_is_served(query: Query) -> None:
    used = detect_metric_names(query.expr)
    assert used, f"{query.source}: reads none of the operator's series: {query.expr}"
    assert used <= served_series(), f"{query.source}: not served: {sorted(used - served_series())}"


def test_the_dashboard_covers_what_the_issue_lists() -> None:
    used = set().union(*(detect_metric_names(q.expr) for q in dashboard_queries()))
    want = {
        # jobs by state and framework, restarts
        "training_operator_jobs_created_total", "training_operator_jobs_successful_total",
        "training_operator_jobs_failed_total", "training_operator_jobs_restarted_total",
        "training_operator_jobs_deleted_total",
        # reconcile rate, latency and errors
        "controller_runtime_reconcile_total", "controller_runtime_reconcile_time_seconds_bucket",
        "controller_runtime_reconcile_errors_total",
        # work queue
        "workqueue_depth",
        # API requests by verb and code, throttling
        "rest_client_requests_total", "rest_client_rate_limiter_duration_seconds_bucket",
        # pods created and deleted
        "training_operator_pods_created_total", "training_operator_pods_deleted_total",
        # memory and CPU
        "process_resident_memory_bytes", "process_cpu_seconds_total",
    }  # fmt: skip
    assert want <= used, sorted(want - used)


def test_dashboard_panels_use_the_datasource_variable_and_unique_ids() -> None:
    dash = dashboard()
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "job"} <= variables
    for panel in dash["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert 'job=~"$job"' in target["expr"], (panel["title"], target["expr"])


def test_alerts_cover_queue_errors_and_lease() -> None:
    rules = {r["alert"]: r for r in alert_rules()}
    assert set(rules) == {"TrainopWorkQueueStuck", "TrainopReconcileErrors", "TrainopLeaseLost"}
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert re.fullmatch(r"\d+m", rule["for"]), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def test_image_and_deployment_agree_on_user_and_filesystem() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=", dockerfile, re.M), "the base must be a build argument"
    assert re.search(r"^FROM \$\{BASE\}", dockerfile, re.M)
    user = re.findall(r"^USER (\d+):(\d+)$", dockerfile, re.M)
    assert user == [("65532", "65532")]
    dep = yaml.safe_load((REPO / "manifests/base/deployment.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (65532, 65532)
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    # The Deployment's command resolves to the image's venv (PATH) and is the image's entrypoint.
    assert pod["containers"][0]["command"] == ["python", "-m", "trainop.operator"]
    assert 'ENTRYPOINT ["python", "-m", "trainop.operator"]' in dockerfile
    assert "PATH=/opt/trainop/bin:" in dockerfile


def test_dockerignore_keeps_the_context_to_what_the_dockerfile_copies() -> None:
    copied = re.findall(r"^COPY (?!--from)(.+) \S+$", (REPO / "Dockerfile").read_text(), re.M)
    sources = {s for line in copied for s in line.split()}
    allowed = {line[1:] for line in (REPO / ".dockerignore").read_text().splitlines() if line.startswith("!")}
    assert sources == allowed == {"pyproject.toml", "README.md", "src"}
    assert "*" in (REPO / ".dockerignore").read_text().splitlines()


def test_mount_points_resolve_inside_the_image(tmp_path: Path) -> None:
    """Debian's /var/run is a link to /run: the Service account's mount point is found inside the image's
    root, never by following the link out to the host's /run."""
    from trainop.testing.deploy import SA_DIR, build_path_in_root

    (tmp_path / "var").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "var" / "run").symlink_to("/run")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "alt").symlink_to("../run/x")
    assert build_path_in_root(tmp_path, SA_DIR) == "/run/secrets/kubernetes.io/serviceaccount"
    assert build_path_in_root(tmp_path, "/etc/alt/y") == "/run/x/y"
    assert build_path_in_root(tmp_path, "/opt/trainop") == "/opt/trainop"
