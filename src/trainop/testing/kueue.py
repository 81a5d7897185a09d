"""The real Kueue manager on the test control plane (issue 25): CRDs, webhooks, one manager process.

``start_kueue(env, run_dir)`` runs the binary ``hack/testenv/build.sh`` put in the cache out of
cluster, as its Deployment would run in it: its own configuration, its defaulting and validating
webhooks registered with the API server (a URL clientConfig on 127.0.0.1, certificates from the test
CA), internal certificate management off. It builds, downloads and mocks nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainop.testing.testenv import (
    BuildMissingError,
    K8sEnv,
    _child_env,
    _free_ports,
    _http_status,
    _log_tail,
    check_component,
    find_versioned_dir,
    start_component,
    stop_components,
    wait_for,
)

__all__ = [
    "KUEUE_FRAMEWORKS",
    "KUEUE_NAMESPACE_LABEL",
    "PRIORITY_LABEL",
    "QUEUE_LABEL",
    "KueueManager",
    "cluster_queue",
    "find_kueue_dir",
    "local_queue",
    "resource_flavor",
    "start_kueue",
    "workload_priority_class",
]

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# The kubeflow.org/v1 kinds Kueue v0.17 integrates (its MPIJob integration is mpi-operator's v2beta1).
KUEUE_FRAMEWORKS = (
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/jaxjob",
)
# Kueue's job webhooks are called for namespaces with this label only, so the rest of the suite never
# goes through them (and a manager that died cannot block other tests' jobs).
KUEUE_NAMESPACE_LABEL = ("trainop.dev/kueue", "true")
KUEUE_SYSTEM_NAMESPACE = "kueue-system"
# Kueue reads its metrics serving certificate from this fixed path when its internal certificate
# management is off (cmd/kueue/main.go: metricsCertPath); in a cluster it is a mounted Secret.
METRICS_CERT_PATH = "/etc/kueue/metrics/certs"
WEBHOOK_CONFIGS = ("kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration")
START_TIMEOUT_S = 120.0


def find_kueue_dir() -> Path:
    """Kueue's cache directory (bin/kueue, config/)."""
    return find_versioned_dir("kueue", "KUEUE_VERSION")[0]


def _check_kueue(kueue_dir: Path) -> None:
    missing = [
        p
        for p in ("bin/kueue", "config/crd", "config/webhook/manifests.yaml")
        if not (kueue_dir / p).exists()
    ]
    if missing:
        raise BuildMissingError.of("Kueue", kueue_dir, missing, "a few minutes")


# --------------------------------------------------------------------------------------------
# Objects


def resource_flavor(
    name: str, node_labels: dict[str, str] | None = None, tolerations: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_labels:
        spec["nodeLabels"] = dict(node_labels)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(
    name: str,
    flavor: str,
    quota: dict[str, str],
    *,
    preemption: dict[str, str] | None = None,
    admission_checks: Sequence[str] = (),
) -> dict[str, Any]:
    """A ClusterQueue for every namespace, one flavor with ``quota`` (resource → nominal quota)."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": sorted(quota),
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in sorted(quota.items())],
                    }
                ],
            }
        ],
    }
    if preemption:
        spec["preemption"] = dict(preemption)
    if admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in admission_checks]}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


# --------------------------------------------------------------------------------------------
# The manager


def build_webhook_configs(
    manifests: str, port: int, ca_bundle_b64: str, plurals: Iterable[str]
) -> list[dict[str, Any]]:
    """Kueue's webhook manifests (config/components/webhook/manifests.yaml) for this run: only the
    webhooks of Kueue's own API and of ``plurals`` (kubeflow.org), each called at
    ``https://127.0.0.1:<port><path>``; the job webhooks only in namespaces labelled
    KUEUE_NAMESPACE_LABEL."""
    wanted = set(plurals)
    out = []
    for doc, name in zip((d for d in yaml.safe_load_all(manifests) if d), WEBHOOK_CONFIGS, strict=True):
        kept = []
        for hook in doc["webhooks"]:
            groups = {g for rule in hook["rules"] for g in rule["apiGroups"]}
            resources = {r for rule in hook["rules"] for r in rule["resources"]}
            versions = {v for rule in hook["rules"] for v in rule["apiVersions"]}
            if groups == {"kueue.x-k8s.io"}:
                pass
            elif groups == {"kubeflow.org"} and versions == {"v1"} and resources <= wanted:
                hook["namespaceSelector"] = {"matchLabels": dict([KUEUE_NAMESPACE_LABEL])}
            else:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle_b64}
            kept.append(hook)
        out.append({**doc, "metadata": {"name": name}, "webhooks": kept})
    return out


@dataclass
class KueueManager:
    """One Kueue manager process against ``env``; ``stop()`` unregisters its webhooks and ends it."""

    env: K8sEnv
    run_dir: Path
    kueue_dir: Path
    frameworks: Sequence[str] = KUEUE_FRAMEWORKS
    version: str = ""
    started_s: float = 0.0
    ports: dict[str, int] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.run_dir / "kueue.log"

    def start(self) -> KueueManager:
        t0 = time.monotonic()
        _check_kueue(self.kueue_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        config = self.kueue_dir / "config"
        crds = sorted((config / "crd").glob("*.yaml"))
        self.env.kubectl("apply", "--server-side", "--force-conflicts", *(f"--filename={c}" for c in crds))
        names = [f"crd/{yaml.safe_load(c.read_text())['metadata']['name']}" for c in crds]
        self.env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
        if self.env.kubectl("get", "namespace", KUEUE_SYSTEM_NAMESPACE, check=False).returncode != 0:
            self.env.kubectl("create", "namespace", KUEUE_SYSTEM_NAMESPACE)

        health, metrics, webhook = _free_ports(3)
        self.ports = {"health": health, "metrics": metrics, "webhook": webhook}
        # The webhook's serving cert in its certDir; the metrics cert where main.go reads it, under an
        # etc/ of the run directory that the manager sees as /etc (mount namespace, below).
        serving = self.env.issue_serving_cert(self.run_dir)
        cert_dir = self.run_dir / "webhook-certs"
        etc = self.run_dir / "etc"
        metrics_dir = etc / METRICS_CERT_PATH.removeprefix("/etc/")
        for d in (cert_dir, metrics_dir):
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(serving.cert_file, d / "tls.crt")
            shutil.copy(serving.key_file, d / "tls.key")
        cfg = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": KUEUE_SYSTEM_NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "metrics": {"bindAddress": f"127.0.0.1:{metrics}"},
            "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(cert_dir)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 50, "burst": 100},
            "integrations": {"frameworks": list(self.frameworks)},
        }
        cfg_path = self.run_dir / "kueue-config.yaml"
        cfg_path.write_text(yaml.safe_dump(cfg))
        self._spawn(etc, cfg_path)

        def ready() -> bool | None:
            self.check_alive()
            return True if _http_status(health, "/readyz") == 200 else None

        wait_for(ready, START_TIMEOUT_S, f"Kueue /readyz (log {self.log})")
        self.version = self._logged_version()
        manifests = (config / "webhook" / "manifests.yaml").read_text()
        plurals = [f.split("/")[1] + "s" for f in self.frameworks]
        hooks = build_webhook_configs(manifests, webhook, serving.ca_bundle_b64, plurals)
        self.env.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": hooks}
        ))  # fmt: skip

        def webhook_answers() -> bool | None:
            self.check_alive()
            # A dry-run create goes through Kueue's ResourceFlavor webhooks: they answer once the API
            # server has loaded the configurations.
            res = self.env.kubectl(
                "create",
                "--dry-run=server",
                "-f",
                "-",
                input=json.dumps(resource_flavor("probe")),
                check=False,
            )
            return True if res.returncode == 0 else None

        wait_for(webhook_answers, START_TIMEOUT_S, f"Kueue's webhooks answering (log {self.log})")
        self.started_s = time.monotonic() - t0
        return self

    def _spawn(self, etc: Path, cfg_path: Path) -> None:
        """The manager in a private mount namespace whose /etc is the run directory's etc/ (with the
        host's hosts, resolv.conf and nsswitch.conf bound in): nothing is written outside the run
        directory, and no other process sees the certificates."""
        unshare = shutil.which("unshare")
        if unshare is None:
            raise BuildMissingError("Kueue's tests need `unshare` (util-linux): apt-get install util-linux")
        script = (
            'set -e; e="$1"; shift; '
            "for f in hosts resolv.conf nsswitch.conf; do "
            '[ -f "/etc/$f" ] && : >"$e/$f" && mount --bind "/etc/$f" "$e/$f"; done; '
            'mount --rbind "$e" /etc; exec "$@"'
        )
        userns = [] if os.geteuid() == 0 else ["--map-root-user"]
        cmd = [
            unshare, "--mount", "--propagation=private", *userns, "--", "/bin/sh", "-c", script, "sh",
            str(etc), str(self.kueue_dir / "bin" / "kueue"), f"--config={cfg_path}",
            # The visibility API server would write self-signed certificates under /visibility.
            "--feature-gates=VisibilityOnDemand=false",
        ]  # fmt: skip
        env = {**_child_env(), "KUBECONFIG": str(self.env.kubeconfig)}
        self.proc = start_component(cmd, self.log, cwd=self.run_dir, env=env)

    def _logged_version(self) -> str:
        """The version the manager logs at start ("Initializing", gitVersion: build.sh's stamp)."""
        m = re.search(r'"gitVersion":\s*"([^"]+)"', self.log.read_text(errors="replace"))
        return m.group(1) if m else "unknown"

    def check_alive(self) -> None:
        assert self.proc is not None
        check_component("Kueue", self.proc, self.log, 40)

    def log_tail(self, lines: int = 40) -> str:
        return _log_tail(self.log, lines)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.env.kubectl(
                "delete", "--ignore-not-found", "--wait=false",
                f"mutatingwebhookconfiguration/{WEBHOOK_CONFIGS[0]}",
                f"validatingwebhookconfiguration/{WEBHOOK_CONFIGS[1]}",
            )  # fmt: skip
        if self.proc is not None:
            stop_components([self.proc], grace_s=15)


def start_kueue(env: K8sEnv, run_dir: Path, frameworks: Sequence[str] = KUEUE_FRAMEWORKS) -> KueueManager:
    """Start the cached Kueue manager against ``env``; raises BuildMissingError if it is not built.
    The job CRDs of ``frameworks`` must be installed first (Kueue sets up only the integrations whose
    API it finds at start)."""
    manager = KueueManager(env=env, run_dir=run_dir, kueue_dir=find_kueue_dir(), frameworks=frameworks)
    try:
        return manager.start()
    except BaseException:
        manager.stop()
        raise
