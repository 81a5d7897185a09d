"""What the deployment tests share (issue 26): where Helm, promtool and the built image are, the
dashboard's queries and the alert rules as data, and the operator metric names a PromQL expression uses.

Nothing here starts a long-lived process; the tests do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "trainop"
DASHBOARD = REPO / "monitoring" / "grafana" / "trainop-dashboard.json"
ALERTS = REPO / "monitoring" / "prometheus" / "trainop-alerts.yaml"

# Helm is built from the Go module proxy into the test control plane's cache by hack/testenv/build.sh.
HELM_INSTALL = "hack/testenv/build.sh (make testenv) builds it"
DEBIAN_TOOLS = "apt-get install -y buildah mmdebstrap prometheus skopeo (or make deploy-tools)"

# Series every operator serves, and the prefixes of its own families: a query naming one of these
# prefixes must name a family the operator registers (operator/metrics.py).
OPERATOR_PREFIXES = (
    "training_operator_", "workqueue_", "controller_runtime_", "rest_client_", "leader_election_", "process_",
)  # fmt: skip
_METRIC = re.compile(r"\b(?:" + "|".join(OPERATOR_PREFIXES) + r")[a-zA-Z0-9_]*\b")


class ToolMissingError(RuntimeError):
    """A tool the deployment tests need is not installed; the message says how to install it."""


def find_helm() -> Path:
    """hack/testenv/build.sh's Helm (its version pinned in hack/testenv/versions.env)."""
    build = REPO / "hack" / "testenv" / "build.sh"
    got = subprocess.run([str(build), "--print-helm"], capture_output=True, text=True, timeout=60)
    path = Path(got.stdout.strip())
    if got.returncode == 0 and os.access(path, os.X_OK):
        return path
    raise ToolMissingError(f"helm is not at {path or '?'}: {HELM_INSTALL}")


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


# --------------------------------------------------------------------------------------------
# The image: its root filesystem and configuration, and a command that runs its entrypoint the way a
# container runtime would (Docker and podman cannot run here: no engine, and crun may not set rlimits).

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class ImageConfig:
    user: str
    env: dict[str, str]
    entrypoint: list[str]
    workdir: str


def _blob(root: Path, digest: str) -> Path:
    algo, _, hexdigest = digest.partition(":")
    return root / "blobs" / algo / hexdigest


def extract_image(archive: Path, dest: Path) -> ImageConfig:
    """Unpack an OCI archive's single image into ``dest/rootfs`` (layers in order, whiteouts applied)
    and return its runtime configuration."""
    import tarfile

    layout = dest / "layout"
    rootfs = dest / "rootfs"
    layout.mkdir(parents=True)
    rootfs.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(layout, filter="fully_trusted")
    index = json.loads((layout / "index.json").read_text())
    (entry,) = index["manifests"]
    manifest = json.loads(_blob(layout, entry["digest"]).read_text())
    for layer in manifest["layers"]:
        with tarfile.open(_blob(layout, layer["digest"])) as tar:
            members = []
            for m in tar.getmembers():
                name = Path(m.name)
                if name.name == ".wh..wh..opq":
                    shutil.rmtree(rootfs / name.parent, ignore_errors=True)
                    (rootfs / name.parent).mkdir(parents=True, exist_ok=True)
                elif name.name.startswith(".wh."):
                    gone = rootfs / name.parent / name.name[len(".wh.") :]
                    if gone.is_dir() and not gone.is_symlink():
                        shutil.rmtree(gone)
                    else:
                        gone.unlink(missing_ok=True)
                else:
                    members.append(m)
            # Ownership and modes as in the image (this runs as root, like a container runtime).
            tar.extractall(rootfs, members=members, filter="fully_trusted", numeric_owner=True)
    config = json.loads(_blob(layout, manifest["config"]["digest"]).read_text())["config"]
    shutil.rmtree(layout)
    return ImageConfig(
        user=config.get("User", "0"),
        env=dict(e.split("=", 1) for e in config.get("Env", [])),
        entrypoint=list(config.get("Entrypoint") or []),
        workdir=config.get("WorkingDir") or "/",
    )


def build_container_command(
    rootfs: Path,
    config: ImageConfig,
    args: list[str],
    *,
    env: dict[str, str],
    mounts: dict[str, Path],
) -> list[str]:
    """argv that runs the image's entrypoint with ``args`` as a container would: in its own mount
    namespace, the root filesystem read-only, a tmpfs /tmp (the Deployment's emptyDir), /dev and /proc,
    ``mounts`` (container path -> host directory, read-only), the image's user and environment plus
    ``env``, and the host's network (a pod on the node network; the test control plane is on loopback)."""
    import shlex

    q = shlex.quote
    # Mount points as paths inside the root filesystem: /var/run is a link to /run in Debian, and a
    # link followed from the host would lead out of the image.
    inside = {build_path_in_root(rootfs, target): source for target, source in mounts.items()}
    lines = ["set -e", f"R={q(str(rootfs))}"]
    for target in inside:
        lines.append(f'mkdir -p "$R"{q(target)}')
    lines += [
        'mount --bind "$R" "$R"',
        'mount -o remount,bind,ro "$R"',
        'mount -t tmpfs -o size=16m,mode=1777 tmpfs "$R/tmp"',
        'mount --rbind /dev "$R/dev"',
        'mount -t proc proc "$R/proc"',
    ]
    for target, source in inside.items():
        lines.append(f'mount --bind {q(str(source))} "$R"{q(target)}')
        lines.append(f'mount -o remount,bind,ro "$R"{q(target)}')
    full_env = {**config.env, **env}
    argv = [*config.entrypoint, *args]
    lines.append(
        f'cd "$R"{q(config.workdir)} && exec chroot --userspec={q(config.user)} "$R" '
        f"env -i {' '.join(q(f'{k}={v}') for k, v in full_env.items())} {' '.join(q(a) for a in argv)}"
    )
    # No --fork: the shell execs chroot, which execs the entrypoint, so the process started is the
    # operator itself and gets the test's signals, as PID 1 of a container would.
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)]


def build_path_in_root(rootfs: Path, path: str) -> str:
    """``path`` with the root filesystem's symbolic links resolved inside it (absolute links re-rooted)."""
    parts = [p for p in path.split("/") if p]
    out: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            if out:
                out.pop()
            continue
        candidate = rootfs.joinpath(*out, part)
        if candidate.is_symlink():
            hops += 1
            assert hops < 40, f"{path}: too many symbolic links in {rootfs}"
            link = os.readlink(candidate)
            if link.startswith("/"):
                out = []
            parts = [p for p in link.split("/") if p and p != "."] + parts
            continue
        out.append(part)
    return "/" + "/".join(out)


# The Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), for installing the chart with its
# monitoring objects on the test control plane: read from the operator's Go module (the module proxy).
PROMETHEUS_OPERATOR_MODULE = "github.com/prometheus-operator/prometheus-operator@v0.85.0"


def find_prometheus_operator_crds() -> list[Path]:
    cmd = ["go", "mod", "download", "-json", PROMETHEUS_OPERATOR_MODULE]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO / "hack")
    if got.returncode != 0:
        raise ToolMissingError(f"go mod download {PROMETHEUS_OPERATOR_MODULE}: {got.stdout}{got.stderr}")
    crds = Path(json.loads(got.stdout)["Dir"]) / "example" / "prometheus-operator-crd"
    return [crds / f"monitoring.coreos.com_{n}.yaml" for n in ("servicemonitors", "prometheusrules")]
