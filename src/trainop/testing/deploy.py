"""What the deployment tests share (issue 26): where Helm, promtool and the built image are, the
dashboard's queries and the alert rules as data, and the operator metric names a PromQL expression uses.

Nothing here starts a process; the tests under tests/*/deploy do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "trainop"
DASHBOARD = REPO / "monitoring" / "grafana" / "trainop-dashboard.json"
ALERTS = REPO / "monitoring" / "prometheus" / "trainop-alerts.yaml"

# Helm is built from the Go module proxy into the test control plane's cache (hack/testenv/build.sh
# builds it there too; `make deploy-tools` alone builds only it).
HELM_VERSION = "v3.22.0"
HELM_INSTALL = (
    f"GOBIN=~/.cache/trainop/testenv/helm-{HELM_VERSION}/bin "
    f"go install helm.sh/helm/v3/cmd/helm@{HELM_VERSION} (or make deploy-tools)"
)
DEBIAN_TOOLS = "apt-get install -y buildah podman mmdebstrap prometheus (or make deploy-tools)"

# Series every operator serves, and the prefixes of its own families: a query naming one of these
# prefixes must name a family the operator registers (operator/metrics.py).
OPERATOR_PREFIXES = (
    "training_operator_", "workqueue_", "controller_runtime_", "rest_client_", "leader_election_", "process_",
)  # fmt: skip
_METRIC = re.compile(r"\b(?:" + "|".join(OPERATOR_PREFIXES) + r")[a-zA-Z0-9_]*\b")


class ToolMissingError(RuntimeError):
    """A tool the deployment tests need is not installed; the message says how to install it."""


def find_helm() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = cache / "trainop" / "testenv" / f"helm-{HELM_VERSION}" / "bin" / "helm"
    if os.access(path, os.X_OK):
        return path
    raise ToolMissingError(f"helm {HELM_VERSION} is not at {path}: {HELM_INSTALL}")


def find_tool(name: str) -> Path:
    found = shutil.which(name)
    if found is None:
        raise ToolMissingError(f"{name} is not installed: {DEBIAN_TOOLS}")
    return Path(found)


def package_version() -> str:
    text = (REPO / "src" / "trainop" / "__init__.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    assert match, "src/trainop/__init__.py has no __version__"
    return match.group(1)


def image_archive() -> Path:
    """The OCI archive `make image` writes (TRAINOP_IMAGE_ARCHIVE overrides)."""
    override = os.environ.get("TRAINOP_IMAGE_ARCHIVE")
    path = Path(override) if override else REPO / "dist" / f"trainop-{package_version()}.oci.tar"
    if not path.is_file():
        raise ToolMissingError(f"no operator image at {path}: run `make image` (buildah, a few minutes)")
    return path


@dataclass(frozen=True)
class Query:
    """One PromQL expression of the dashboard or the alert rules, and where it comes from."""

    source: str  # "panel <title> <refId>" or "alert <name>"
    expr: str


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def dashboard_queries(dash: dict[str, Any] | None = None) -> list[Query]:
    dash = dashboard() if dash is None else dash
    out: list[Query] = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            out.append(Query(f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    return out


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def alert_queries() -> list[Query]:
    return [Query(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]


def build_grafana_expr(expr: str, *, job: str = ".*", rate_interval: str = "1m", range_: str = "5m") -> str:
    """The expression as Grafana sends it to Prometheus: its variables replaced."""
    return (
        expr.replace("$__rate_interval", rate_interval)
        .replace("$__range", range_)
        .replace("$job", job)
        .replace("${job}", job)
    )


def detect_metric_names(expr: str) -> set[str]:
    """The operator series an expression reads (names with one of OPERATOR_PREFIXES)."""
    return set(_METRIC.findall(expr))
