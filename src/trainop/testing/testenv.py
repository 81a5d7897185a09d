"""A real Kubernetes control plane for tests: etcd, kube-apiserver, controller-manager, scheduler, kwok.

Pytest plugin (``k8s_env`` session fixture, ``k8s_namespace`` per test) and the ``up``/``down`` CLI
behind ``hack/testenv/up``. It starts the binaries that ``hack/testenv/build.sh`` put in the cache;
it never builds, downloads or mocks anything. See hack/testenv/README.md for the API and the flags.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import ctypes
import datetime as dt
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import yaml

if TYPE_CHECKING:
    import lightkube

__all__ = [
    "SIM_DELETE_DELAY",
    "SIM_EXIT_CODE",
    "SIM_FAIL_TIMES",
    "SIM_OUTCOME",
    "SIM_REASON",
    "SIM_RUN_DURATION",
    "SIM_START",
    "SIM_START_DELAY",
    "BuildMissingError",
    "CertPair",
    "ControlPlane",
    "K8sEnv",
    "find_bin_dir",
    "find_trainer_dir",
    "free_port",
    "issue_cert",
    "k8s_env",
    "k8s_namespace",
    "start_env",
    "wait_for",
]

T = TypeVar("T")
C = TypeVar("C")

BUILD_COMMAND = "make testenv"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")

# Fake nodes: enough GPUs and CPUs for multi-replica training jobs; kwok manages the ones
# carrying this annotation (its --manage-nodes-with-annotation-selector). ephemeral-storage is
# declared as a kubelet does: without it a pod requesting any (MPI's launcher init container asks
# for 5Gi, as upstream's) is never scheduled (issue 11).
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
DEFAULT_NODES = 3
NODE_CAPACITY = {
    "cpu": "32",
    "memory": "256Gi",
    "ephemeral-storage": "200Gi",
    "pods": "110",
    "nvidia.com/gpu": "8",
}

# Pod annotations from which kwok plays out a pod's fate (values: hack/testenv/kwok-stages.yaml).
SIM_START = "sim.trainop.dev/start"
SIM_START_DELAY = "sim.trainop.dev/start-delay"
SIM_OUTCOME = "sim.trainop.dev/outcome"
SIM_RUN_DURATION = "sim.trainop.dev/run-duration"
SIM_EXIT_CODE = "sim.trainop.dev/exit-code"
SIM_REASON = "sim.trainop.dev/reason"
SIM_FAIL_TIMES = "sim.trainop.dev/fail-times"
SIM_DELETE_DELAY = "sim.trainop.dev/delete-delay"

# GC and namespace deletion are what the operator's tests rely on; the serviceaccount and root CA
# publisher controllers make pods admissible like on a real cluster (ServiceAccount admission is on).
KCM_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
)

START_TIMEOUT_S = 120.0
STARTUP_POLL_S = 0.1  # start-up is seconds: poll its components often

# scheduler-plugins (hack/testenv/tools/scheduler-plugins), started with scheduler_plugins=True: a
# second kube-scheduler with the Coscheduling plugin under this scheduler name (profile as in its
# manifests/coscheduling/scheduler-config.yaml), and its controller, which writes PodGroup status.
SCHEDULER_PLUGINS_BINARIES = ("sp-scheduler", "sp-controller")
SCHEDULER_PLUGINS_NAME = "scheduler-plugins-scheduler"
# Volcano PodGroup CRD generated from volcano.sh/apis (hack/testenv/crds/generate-volcano.sh).
VOLCANO_CRD = "scheduling.volcano.sh_podgroups.yaml"


class BuildMissingError(RuntimeError):
    """The control-plane binaries are not in the cache; the message says how to build them."""

    @classmethod
    def of(cls, what: str, where: Path, missing: Sequence[str], cold: str) -> BuildMissingError:
        """``what`` lacks ``missing`` in the cache directory ``where``; ``cold``: how long building it
        from nothing takes."""
        return cls(
            f"{what} missing in {where}: {', '.join(missing)}. Run `{BUILD_COMMAND}` at the repository "
            f"root to build it ({cold} cold on 2 cores; `hack/testenv/build.sh --background` detaches)."
        )


# --------------------------------------------------------------------------------------------
# Locating the binaries


def _repo_testenv_dir() -> Path | None:
    """hack/testenv of the checkout this module runs from (editable install), or of $PWD's repo."""
    override = os.environ.get("TRAINOP_TESTENV_DIR")
    if override:
        return Path(override)
    candidates = [Path(__file__).resolve().parents[3], *Path.cwd().resolve().parents, Path.cwd().resolve()]
    for root in candidates:
        if (root / "hack" / "testenv" / "versions.env").is_file():
            return root / "hack" / "testenv"
    return None


def _read_versions(testenv_dir: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for line in (testenv_dir / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            versions[key.strip()] = value.strip()
    return versions


def find_bin_dir() -> Path:
    """The cache directory build.sh fills, keyed by the pinned versions (same rule as build.sh).

    ``TRAINOP_TESTENV_BIN_DIR`` overrides it (e.g. binaries restored by CI from elsewhere).
    """
    override = os.environ.get("TRAINOP_TESTENV_BIN_DIR")
    if override:
        return Path(override)
    testenv_dir = _repo_testenv_dir()
    if testenv_dir is None:
        raise BuildMissingError(
            "cannot find hack/testenv/versions.env (run from the trainop checkout, or set "
            "TRAINOP_TESTENV_DIR to its hack/testenv, or TRAINOP_TESTENV_BIN_DIR to the binaries)"
        )
    v = _read_versions(testenv_dir)
    key = f"k8s-{v['KUBERNETES_VERSION']}_etcd-{v['ETCD_VERSION']}_kwok-{v['KWOK_VERSION']}"
    cache = os.environ.get("TRAINOP_TESTENV_CACHE")
    if cache:
        root = Path(cache)
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainop" / "testenv"
    return root / key / "bin"


def find_versioned_dir(prefix: str, variable: str) -> tuple[Path, str]:
    """A tool's cache directory beside the binaries', ``<prefix>-<version>`` with the version pinned in
    versions.env as ``variable`` (same rule as build.sh); and that version."""
    bin_dir = find_bin_dir()
    testenv_dir = _repo_testenv_dir()
    if testenv_dir is None:
        raise BuildMissingError("cannot find hack/testenv/versions.env; set TRAINOP_TESTENV_DIR")
    version = _read_versions(testenv_dir)[variable]
    return bin_dir.parent.parent / f"{prefix}-{version}", version


def find_scheduler_plugins_dir() -> Path:
    """scheduler-plugins' cache directory (bin/ and crds/)."""
    return find_versioned_dir("scheduler-plugins", "SCHEDULER_PLUGINS_VERSION")[0]


def find_trainer_dir() -> Path:
    """Kubeflow Trainer's own manifests, copied by build.sh from its Go module: ``crds/`` (the three
    trainer.kubeflow.org CRDs), ``runtimes/`` (manifests/base/runtimes) and ``examples/``
    (examples/yaml). Keyed by KUBEFLOW_TRAINER_VERSION; raises BuildMissingError if not fetched."""
    trainer_dir, version = find_versioned_dir("kubeflow-trainer", "KUBEFLOW_TRAINER_VERSION")
    if not list((trainer_dir / "crds").glob("trainer.kubeflow.org_*.yaml")):
        raise BuildMissingError(
            f"Kubeflow Trainer {version}'s manifests are missing in {trainer_dir}. Fetch them with "
            f"`{BUILD_COMMAND}` at the repository root (a few seconds: `go mod download` of "
            f"github.com/kubeflow/trainer/v2@{version}, then offline)."
        )
    return trainer_dir


def _check_scheduler_plugins(sp_dir: Path) -> None:
    missing = [b for b in SCHEDULER_PLUGINS_BINARIES if not os.access(sp_dir / "bin" / b, os.X_OK)]
    if missing or not list((sp_dir / "crds").glob("*.yaml")):
        what = "scheduler-plugins (the gang-scheduling tests' Coscheduling scheduler)"
        raise BuildMissingError.of(what, sp_dir, missing or ["crds"], "about 5 min")


def _check_binaries(bin_dir: Path) -> None:
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise BuildMissingError.of("test control plane binaries", bin_dir, missing, "about 5-10 min")


# --------------------------------------------------------------------------------------------
# Certificates and kubeconfig


@dataclass(frozen=True)
class _Pki:
    ca_crt: Path
    ca_key: Path
    serving_crt: Path
    serving_key: Path
    admin_crt: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path

    @classmethod
    def at(cls, d: Path) -> _Pki:
        """Each file in ``d``, named after its field: ``ca_crt`` is ca.crt."""
        return cls(**{f.name: d / ".".join(f.name.rsplit("_", 1)) for f in fields(cls)})


@dataclass(frozen=True)
class CertPair:
    """A certificate signed by the test CA: PEM files, plus the CA bundle clients must trust."""

    cert_file: Path
    key_file: Path
    ca_file: Path

    @property
    def ca_bundle_b64(self) -> str:
        """The CA as base64 PEM: the ``caBundle`` of a webhook or APIService clientConfig."""
        return base64.b64encode(self.ca_file.read_bytes()).decode()


def _validity() -> tuple[dt.datetime, dt.datetime]:
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # tolerate a little clock skew
    return now, now + dt.timedelta(days=3650)


def _write_private_key(path: Path, key: Any) -> None:
    from trainop.operator.pki import build_key_pem

    path.write_bytes(build_key_pem(key))
    path.chmod(0o600)


def issue_cert(
    ca_crt: Path,
    ca_key: Path,
    out_crt: Path,
    out_key: Path,
    common_name: str,
    organizations: Sequence[str] = (),
    hosts: Sequence[str] = (),
) -> CertPair:
    """Sign a leaf cert with the test CA: a serving cert if ``hosts`` (DNS names / IPs) are given,
    else a client cert whose CN is the Kubernetes user name and whose O entries are its groups.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from trainop.operator.pki import build_leaf_cert, build_name, build_private_key

    ca = x509.load_pem_x509_certificate(ca_crt.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    assert isinstance(signer, ec.EllipticCurvePrivateKey)
    key = build_private_key()
    not_before, not_after = _validity()
    cert = build_leaf_cert(
        ca=ca,
        ca_key=signer,
        key=key,
        subject=build_name(common_name, organizations),
        not_before=not_before,
        not_after=not_after,
        hosts=hosts,
    )
    out_crt.parent.mkdir(parents=True, exist_ok=True)
    out_crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private_key(out_key, key)
    return CertPair(out_crt, out_key, ca_crt)


def _write_pki(pki_dir: Path) -> _Pki:
    """One CA signs the apiserver's serving cert and the client certs (CN=user, O=group)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from trainop.operator.pki import build_ca_cert, build_name, build_private_key

    pki_dir.mkdir(parents=True, exist_ok=True)
    pki = _Pki.at(pki_dir)
    ca_key = build_private_key()
    ca = build_ca_cert(ca_key, build_name("trainop-testenv-ca"), *_validity())
    pki.ca_crt.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_private_key(pki.ca_key, ca_key)
    hosts = ("localhost", "kubernetes", "kubernetes.default.svc", "127.0.0.1")
    issue_cert(pki.ca_crt, pki.ca_key, pki.serving_crt, pki.serving_key, "kube-apiserver", hosts=hosts)
    issue_cert(pki.ca_crt, pki.ca_key, pki.admin_crt, pki.admin_key, "trainop-admin", ["system:masters"])
    # Service-account tokens: RS256 is what every client and the apiserver default expect.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_private_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki


def _kubeconfig(server: str, ca: Path, user: dict[str, str], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "trainop-testenv", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "admin", "user": user}],
        "contexts": [
            {
                "name": "trainop-testenv",
                "context": {"cluster": "trainop-testenv", "user": "admin", "namespace": namespace},
            }
        ],
        "current-context": "trainop-testenv",
    }


# --------------------------------------------------------------------------------------------
# Processes


def _free_ports(n: int) -> list[int]:
    """n distinct free loopback ports; all sockets are held open together so they differ."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One free loopback port (e.g. for a process under test to listen on)."""
    return _free_ports(1)[0]


_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:
    """Runs in the child before exec: die with the parent even if it is SIGKILLed (Linux only).

    The child is also a process-group leader (start_new_session), so teardown can signal the
    whole group; PDEATHSIG covers the case where no teardown code runs at all.
    """
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _child_env() -> dict[str, str]:
    # Every component talks to 127.0.0.1 only; a proxy from the environment must not intercept
    # that (the apiserver's webhook and etcd clients honour HTTPS_PROXY).
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def start_component(
    cmd: Sequence[str], log: Path, *, cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """A test-environment component (a control-plane binary, Kueue's manager): stdout and stderr
    appended to ``log``, no stdin, the leader of a process group of its own (teardown signals the
    group) that dies with this process (``_child_setup``)."""
    with log.open("ab") as f:
        return subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            preexec_fn=_child_setup,
        )


def check_component(name: str, popen: subprocess.Popen[bytes], log: Path, lines: int = 25) -> None:
    """Raise when the component has exited (``wait_for`` then stops waiting), with its log's last lines."""
    rc = popen.poll()
    if rc is not None:
        raise _ComponentExited(f"{name} exited with code {rc}; last lines of {log}:\n{_log_tail(log, lines)}")


def stop_components(popens: Sequence[subprocess.Popen[bytes]], grace_s: float = 10.0) -> None:
    """SIGTERM every component's process group at once (``start_component``: each leads its own), then
    SIGKILL what is left after the grace period: nothing may outlive the session."""
    for popen in popens:
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for popen in popens:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=max(0.1, deadline - time.monotonic()))
    for popen in popens:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)  # stray children in the group, too
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=5)


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


def _http_status(port: int, path: str, context: ssl.SSLContext | None = None) -> int:
    """Status of a GET on loopback (HTTPS with ``context``); 0 when nothing answers."""
    conn = (
        http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
        if context is not None
        else http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    )
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return 0
    finally:
        conn.close()


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


# --------------------------------------------------------------------------------------------
# The control plane


@dataclass
class ControlPlane:
    """Starts and stops the processes; K8sEnv is the test-facing view of a started one.

    ``run_dir`` holds pki/, kubeconfigs and logs/; etcd's data lives on /dev/shm (tmpfs) when
    available. ``stop()`` is idempotent and also registered with atexit.
    """

    bin_dir: Path
    run_dir: Path
    nodes: int = DEFAULT_NODES
    stages: Sequence[Path] = ()
    keep_run_dir: bool = False
    node_capacity: dict[str, str] = field(default_factory=lambda: dict(NODE_CAPACITY))
    scheduler_plugins_dir: Path | None = None  # set: run the Coscheduling scheduler and its controller
    procs: list[_Proc] = field(default_factory=list)
    etcd_dir: Path | None = None
    server: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    token: str = ""
    started_s: float = 0.0
    _stopped: bool = False

    # paths, fixed by run_dir
    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def token_kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig-token"

    @property
    def pki_dir(self) -> Path:
        return self.run_dir / "pki"

    @property
    def log_dir(self) -> Path:
        return self.run_dir / "logs"

    def start(self) -> None:
        t0 = time.monotonic()
        _check_binaries(self.bin_dir)
        if not self.stages:
            self.stages = _default_stage_files()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(exist_ok=True)
        atexit.register(self.stop)
        pki = _write_pki(self.pki_dir)
        self.token = secrets.token_hex(16)
        (self.run_dir / "tokens.csv").write_text(
            f'{self.token},trainop-admin,trainop-admin,"system:masters"\n'
        )
        etcd_parent = _etcd_parent_dir(self.run_dir)
        _sweep_stale(etcd_parent, "trainop-etcd-")
        self.etcd_dir = Path(tempfile.mkdtemp(prefix=f"trainop-etcd-{os.getpid()}-", dir=etcd_parent))

        # Ports can be taken between picking and binding; a component that exits at startup
        # (e.g. "address already in use") makes us retry with fresh ports.
        for attempt in range(3):
            try:
                self._start_once(pki)
                break
            except _ComponentExited:
                if attempt == 2:
                    raise
                self._stop_processes()
                shutil.rmtree(self.etcd_dir, ignore_errors=True)
                self.etcd_dir.mkdir()
        self.started_s = time.monotonic() - t0

    def _start_once(self, pki: _Pki) -> None:
        etcd_port, etcd_peer, api_port, kcm_port, sched_port = _free_ports(5)
        self.ports = {"etcd": etcd_port, "apiserver": api_port, "kcm": kcm_port, "scheduler": sched_port}
        self.server = f"https://127.0.0.1:{api_port}"
        user = {"client-certificate": str(pki.admin_crt), "client-key": str(pki.admin_key)}
        self.kubeconfig.write_text(yaml.safe_dump(_kubeconfig(self.server, pki.ca_crt, user)))
        self.token_kubeconfig.write_text(
            yaml.safe_dump(_kubeconfig(self.server, pki.ca_crt, {"token": self.token}))
        )
        assert self.etcd_dir is not None
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{etcd_peer}"
        self._spawn(
            "etcd",
            [
                "--name=trainop",
                f"--data-dir={self.etcd_dir}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=trainop={peer_url}",
                "--unsafe-no-fsync=true",  # tmpfs anyway; this also skips the WAL fsyncs' syscalls
                "--log-level=warn",
            ],
        )

        def etcd_ready() -> bool | None:
            self._check_alive()
            return True if _http_status(etcd_port, "/readyz") == 200 else None

        # etcd is up in well under a second; waiting spares the apiserver log a page of retries.
        wait_for(etcd_ready, START_TIMEOUT_S, "etcd /readyz", STARTUP_POLL_S)
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki.serving_crt}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_crt}",
                f"--token-auth-file={self.run_dir / 'tokens.csv'}",
                f"--service-account-issuer={self.server}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                # A loopback advertise address makes the `kubernetes` Endpoints reconciler fail
                # in a loop ("may not be in the loopback range").
                "--endpoint-reconciler-type=none",
                # This plugin taints every new Node not-ready:NoSchedule; the node-lifecycle
                # controller that would lift the taint is not run (it would also evict pods from
                # nodes whose kwok heartbeat lags on a busy 2-core box). Tests taint nodes
                # themselves when they want to.
                "--disable-admission-plugins=TaintNodesByCondition",
                # Fairness queues cost CPU on 2 cores and only matter under overload.
                "--enable-priority-and-fairness=false",
                "--profiling=false",
            ],
        )

        def readyz() -> bool | None:
            self._check_alive()
            return True if self._get(api_port, "/readyz", pki) == 200 else None

        wait_for(readyz, START_TIMEOUT_S, "kube-apiserver /readyz", STARTUP_POLL_S)

        kcm_args = [
            # No --authentication/authorization-kubeconfig: with them KCM and the scheduler look
            # for a requestheader CA the apiserver does not have and log errors in a loop; their
            # /healthz is always allowed anyway, and nothing else calls them.
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={kcm_port}",
            f"--controllers={','.join(_kcm_controllers())}",
            "--use-service-account-credentials=false",
            f"--root-ca-file={pki.ca_crt}",
            f"--cert-dir={self.run_dir / 'kcm-certs'}",
        ]
        self._spawn("kube-controller-manager", kcm_args)
        self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                f"--cert-dir={self.run_dir / 'scheduler-certs'}",
            ],
        )
        kwok_workdir = self.run_dir / "kwok"
        kwok_workdir.mkdir(exist_ok=True)
        self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--config={','.join(str(s) for s in self.stages)}",
                f"--manage-nodes-with-annotation-selector={'='.join(KWOK_NODE_ANNOTATION)}",
                # Pod IPs: keep clear of the service range above.
                "--cidr=10.244.0.1/16",
                "--node-ip=10.240.0.1",
            ],
            # kwok also loads $KWOK_WORKDIR/kwok.yaml if it exists; isolate it from ~/.kwok.
            extra_env={"KWOK_WORKDIR": str(kwok_workdir)},
        )
        self._create_nodes()
        health_ports = [kcm_port, sched_port]
        if self.scheduler_plugins_dir is not None:
            health_ports.append(self._start_scheduler_plugins(self.scheduler_plugins_dir))

        def all_ready() -> bool | None:
            self._check_alive()
            ok = all(self._get(p, "/healthz", None) == 200 for p in health_ports)
            return True if ok and self._nodes_ready() and self._default_sa() else None

        what = "controller-manager, scheduler and Ready kwok nodes"
        wait_for(all_ready, START_TIMEOUT_S, what, STARTUP_POLL_S)

    def _start_scheduler_plugins(self, sp_dir: Path) -> int:
        """Install scheduler-plugins' CRDs, start its Coscheduling scheduler and its PodGroup
        controller; returns the scheduler's health port."""
        env = K8sEnv.from_plane(self)
        env.kubectl("apply", "--server-side", "-f", str(sp_dir / "crds"))
        env.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "crd/podgroups.scheduling.x-k8s.io"
        )
        port, metrics, probe = _free_ports(3)
        config = self.run_dir / "coscheduling-config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                    "profiles": [
                        {
                            "schedulerName": SCHEDULER_PLUGINS_NAME,
                            "plugins": {
                                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                                "queueSort": {
                                    "enabled": [{"name": "Coscheduling"}],
                                    "disabled": [{"name": "*"}],
                                },
                            },
                            "pluginConfig": [
                                {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                            ],
                        }
                    ],
                }
            )
        )
        self._spawn(
            "sp-scheduler",
            [
                f"--config={config}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.run_dir / 'sp-scheduler-certs'}",
                f"--v={os.environ.get('TRAINOP_TESTENV_SCHEDULER_V', '0')}",
                # Coscheduling (v0.31.8) reads PodGroups through its own cache, a watch apart from the
                # one whose PodGroup Update event requeues the gang: a pod retried the moment
                # minMember or minResources changed can still see the old values (seen at -v=4:
                # "resource gap" 1 ms after the event) and waits unschedulable for the next event, or
                # this flush (default 5 minutes). Shorter here, so the gang tests wait on the scheduler
                # seconds, not minutes; what it binds is unchanged.
                "--pod-max-in-unschedulable-pods-duration=20s",
            ],
            binary=sp_dir / "bin" / "sp-scheduler",
        )
        self._spawn(
            "sp-controller",
            [f"--metricsAddr=127.0.0.1:{metrics}", f"--probeAddr=127.0.0.1:{probe}"],
            extra_env={"KUBECONFIG": str(self.kubeconfig)},
            binary=sp_dir / "bin" / "sp-controller",
        )
        return port

    def _spawn(
        self, name: str, args: list[str], extra_env: dict[str, str] | None = None, binary: Path | None = None
    ) -> None:
        log = self.log_dir / f"{name}.log"
        cmd = [str(binary or self.bin_dir / name), *args]
        popen = start_component(cmd, log, cwd=self.run_dir, env={**_child_env(), **(extra_env or {})})
        self.procs.append(_Proc(name, popen, log))

    def _check_alive(self) -> None:
        for p in self.procs:
            check_component(p.name, p.popen, p.log)

    def _get(self, port: int, path: str, pki: _Pki | None) -> int:
        """HTTPS GET on loopback; with pki, verified and as admin, else unverified and anonymous."""
        if pki is not None:
            ctx = ssl.create_default_context(cafile=str(pki.ca_crt))
            ctx.load_cert_chain(str(pki.admin_crt), str(pki.admin_key))
        else:
            # KCM and scheduler serve a self-signed cert and allow /healthz anonymously.
            ctx = ssl._create_unverified_context()
        return _http_status(port, path, ctx)

    def _client(self) -> lightkube.Client:
        return K8sEnv.from_plane(self).client()

    def _create_nodes(self) -> None:
        from lightkube.models.core_v1 import NodeSpec, NodeStatus
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Node

        with contextlib.closing(self._client()) as client:
            for i in range(self.nodes):
                name = f"kwok-node-{i}"
                node = Node(
                    metadata=ObjectMeta(
                        name=name,
                        annotations={KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1]},
                        labels={
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            "type": "kwok",
                            "trainop.dev/testenv": "true",
                        },
                    ),
                    spec=NodeSpec(),
                    status=NodeStatus(
                        capacity=dict(self.node_capacity), allocatable=dict(self.node_capacity)
                    ),
                )
                client.create(node)

    def _nodes_ready(self) -> bool:
        from lightkube.resources.core_v1 import Node

        with contextlib.closing(self._client()) as client:
            nodes = list(client.list(Node))
        ready = sum(
            any(c.type == "Ready" and c.status == "True" for c in (n.status and n.status.conditions) or [])
            for n in nodes
        )
        return len(nodes) >= self.nodes and ready == len(nodes)

    def _default_sa(self) -> bool:
        """The serviceaccount controller created `default` in `default`: KCM is working (an ApiError
        until then, which ``wait_for`` counts as not yet)."""
        from lightkube.resources.core_v1 import ServiceAccount

        with contextlib.closing(self._client()) as client:
            client.get(ServiceAccount, "default", namespace="default")
        return True

    def _stop_processes(self) -> None:
        stop_components([p.popen for p in reversed(self.procs)])
        self.procs.clear()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stop_processes()
        if self.etcd_dir is not None:
            shutil.rmtree(self.etcd_dir, ignore_errors=True)
        if not self.keep_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def logs(self, lines: int = 40) -> str:
        """The last lines of every component's log, for failure messages."""
        out = []
        for log in sorted(self.log_dir.glob("*.log")):
            out.append(f"==> {log.name} <==\n{_log_tail(log, lines)}")
        return "\n".join(out)


def _sweep_stale(parent: Path, prefix: str) -> None:
    """Remove `<prefix><pid>-*` dirs whose pid is gone: what a SIGKILLed session left behind.

    (Its processes died with it through PDEATHSIG; only the directories remain.)
    """
    for d in parent.glob(f"{prefix}*"):
        pid = d.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _etcd_parent_dir(fallback: Path) -> Path:
    """/dev/shm if it is a writable tmpfs with room, else `fallback` (on disk).

    etcd preallocates two 64 MiB WAL segments, which a container's default 64 MiB /dev/shm
    cannot hold; on disk, --unsafe-no-fsync keeps it fast enough.
    """
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 1 << 30:
            return shm
    except OSError:
        pass
    return fallback


class _ComponentExited(RuntimeError):
    pass


def _kcm_controllers() -> list[str]:
    extra = [c for c in os.environ.get("TRAINOP_TESTENV_KCM_CONTROLLERS", "").split(",") if c]
    return [*KCM_CONTROLLERS, *extra]


def _default_stage_files() -> list[Path]:
    testenv_dir = _repo_testenv_dir()
    if testenv_dir is None:
        raise BuildMissingError("cannot find hack/testenv (kwok stages); set TRAINOP_TESTENV_DIR")
    return [testenv_dir / "kwok-node-stages.yaml", testenv_dir / "kwok-stages.yaml"]


# --------------------------------------------------------------------------------------------
# The test-facing API


@dataclass(frozen=True)
class K8sEnv:
    """A running control plane, as tests see it.

    Attributes: ``kubeconfig`` (admin, client cert in system:masters), ``token_kubeconfig`` (same
    admin via a static bearer token), ``server`` (https URL), ``ca_file``, ``bin_dir``, ``run_dir``
    and ``nodes`` (names of the kwok nodes). Methods build clients and run kubectl.
    """

    kubeconfig: Path
    token_kubeconfig: Path
    server: str
    ca_file: Path
    bin_dir: Path
    run_dir: Path
    nodes: tuple[str, ...]
    token: str

    @classmethod
    def from_plane(cls, plane: ControlPlane) -> K8sEnv:
        return cls(
            kubeconfig=plane.kubeconfig,
            token_kubeconfig=plane.token_kubeconfig,
            server=plane.server,
            ca_file=plane.pki_dir / "ca.crt",
            bin_dir=plane.bin_dir,
            run_dir=plane.run_dir,
            nodes=tuple(f"kwok-node-{i}" for i in range(plane.nodes)),
            token=plane.token,
        )

    @classmethod
    def from_state(cls, state_file: Path) -> K8sEnv:
        """Attach to a control plane started by ``hack/testenv/up`` (its state.json)."""
        s = json.loads(state_file.read_text())
        values: dict[str, Any] = {
            f.name: Path(s[f.name]) if f.type == "Path" else s[f.name] for f in fields(cls)
        }
        return cls(**{**values, "nodes": tuple(s["nodes"])})

    def to_state(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}

    # -- clients -------------------------------------------------------------------------------

    def client(
        self, namespace: str | None = None, field_manager: str | None = "trainop-tests"
    ) -> lightkube.Client:
        """A sync lightkube Client as cluster admin; close it (or use it in a `with`) when done."""
        import lightkube

        return self._admin(lightkube.Client, namespace, field_manager)

    def async_client(
        self, namespace: str | None = None, field_manager: str | None = "trainop-tests"
    ) -> lightkube.AsyncClient:
        """An async lightkube AsyncClient as cluster admin (``await client.close()`` when done)."""
        import lightkube

        return self._admin(lightkube.AsyncClient, namespace, field_manager)

    def _admin(self, cls: Callable[..., C], namespace: str | None, field_manager: str | None) -> C:
        from lightkube.config.kubeconfig import KubeConfig

        config = KubeConfig.from_file(self.kubeconfig)
        return cls(config, namespace=namespace, field_manager=field_manager, trust_env=False)

    def client_as_token(self, token: str, namespace: str | None = None) -> lightkube.Client:
        """A sync Client authenticating with a bearer token (e.g. from ``kubectl create token``)."""
        import lightkube
        from lightkube.config.kubeconfig import KubeConfig

        conf = _kubeconfig(self.server, self.ca_file, {"token": token}, namespace or "default")
        return lightkube.Client(KubeConfig.from_dict(conf), namespace=namespace, trust_env=False)

    def issue_serving_cert(
        self, directory: Path, hosts: Sequence[str] = ("127.0.0.1", "localhost")
    ) -> CertPair:
        """A serving cert for e.g. an admission webhook on 127.0.0.1, signed by the cluster CA.

        Put ``pair.ca_bundle_b64`` in the webhook's ``clientConfig.caBundle``.
        """
        pki = _Pki.at(self.ca_file.parent)
        name = secrets.token_hex(4)
        return issue_cert(
            pki.ca_crt,
            pki.ca_key,
            directory / f"{name}.crt",
            directory / f"{name}.key",
            hosts[0],
            hosts=hosts,
        )

    def user_kubeconfig(self, directory: Path, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig authenticating as `user` in `groups` by client certificate.

        The user has no rights unless bound.
        """
        pki = _Pki.at(self.ca_file.parent)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", user)
        pair = issue_cert(
            pki.ca_crt, pki.ca_key, directory / f"{safe}.crt", directory / f"{safe}.key", user, groups
        )
        path = directory / f"{safe}.kubeconfig"
        user_entry = {"client-certificate": str(pair.cert_file), "client-key": str(pair.key_file)}
        path.write_text(yaml.safe_dump(_kubeconfig(self.server, self.ca_file, user_entry)))
        return path

    def kubeconfig_env(self) -> dict[str, str]:
        """os.environ plus KUBECONFIG, for subprocesses (e.g. the operator under test)."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    # -- kubectl -------------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
        namespace: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the cached kubectl against this cluster; raise CalledProcessError (with stderr) if check."""
        cmd = [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}"]
        if namespace:
            cmd.append(f"--namespace={namespace}")
        cmd.extend(args)
        res = subprocess.run(
            cmd, input=input, capture_output=True, text=True, timeout=timeout, env=_child_env()
        )
        if check and res.returncode != 0:
            raise subprocess.CalledProcessError(res.returncode, cmd, res.stdout, res.stderr)
        return res

    def kubectl_json(self, *args: str, namespace: str | None = None) -> Any:
        """``kubectl <args> -o json``, parsed."""
        return json.loads(self.kubectl(*args, "-o", "json", namespace=namespace).stdout)

    def apply_yaml(self, text_or_path: str | Path, namespace: str | None = None) -> str:
        """Server-side apply one or many YAML documents; returns kubectl's output.

        The documents are a string, or a file/dir path.

        A ``str`` that names an existing file is treated as a path; anything else as YAML text.
        """
        args = ["apply", "--server-side", "--force-conflicts", "--field-manager=trainop-tests"]
        if isinstance(text_or_path, Path):
            return self.kubectl(*args, "-f", str(text_or_path), namespace=namespace).stdout
        if "\n" not in text_or_path and len(text_or_path) < 4096 and Path(text_or_path).exists():
            return self.kubectl(*args, "-f", text_or_path, namespace=namespace).stdout
        return self.kubectl(*args, "-f", "-", input=text_or_path, namespace=namespace).stdout

    # -- namespaces and waiting ----------------------------------------------------------------

    def create_namespace(self, name: str, labels: dict[str, str] | None = None, timeout: float = 30.0) -> str:
        """Create a namespace and wait for its `default` ServiceAccount (pods are admitted only then)."""
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import Namespace, ServiceAccount

        with contextlib.closing(self.client()) as c:
            c.create(Namespace(metadata=ObjectMeta(name=name, labels=labels or {})))
            # An ApiError (404) until it exists: wait_for counts that as not yet.
            wait_for(
                lambda: c.get(ServiceAccount, "default", namespace=name),
                timeout,
                f"ServiceAccount {name}/default",
            )
        return name

    def delete_namespace(self, name: str, wait: bool = False, timeout: float = 60.0) -> None:
        from lightkube import ApiError
        from lightkube.resources.core_v1 import Namespace

        with contextlib.closing(self.client()) as c:
            try:
                c.delete(Namespace, name)
            except ApiError as e:
                if e.status.code != 404:
                    raise
                return
            if wait:

                def gone() -> bool:
                    try:
                        c.get(Namespace, name)
                    except ApiError as e:
                        return e.status.code == 404
                    return False

                wait_for(gone, timeout=timeout, what=f"namespace {name} deleted")


def wait_for(
    check: Callable[[], T | None], timeout: float = 60.0, what: str = "condition", interval: float = 0.2
) -> T:
    """Poll ``check`` until it returns something other than None or False (exceptions count as not yet,
    but a control-plane component that exited ends the wait at once).

    Tests should wait with generous timeouts instead of sleeping or asserting wall-clock times.
    """
    deadline = time.monotonic() + timeout
    last_err: BaseException | None = None
    while True:
        try:
            got = check()
            if got is not None and got is not False:
                return got
        except _ComponentExited:
            raise
        except Exception as e:  # the thing polled is not up yet: keep the reason for the error
            last_err = e
        if time.monotonic() > deadline:
            suffix = f" (last error: {last_err!r})" if last_err else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{suffix}")
        time.sleep(interval)


# --------------------------------------------------------------------------------------------
# Pytest plugin


def start_env(
    nodes: int = DEFAULT_NODES,
    keep_run_dir: bool = False,
    run_dir: Path | None = None,
    *,
    node_capacity: dict[str, str] | None = None,
    scheduler_plugins: bool = False,
) -> ControlPlane:
    """Start a control plane from the cached binaries; raises BuildMissingError if they are missing.

    ``node_capacity``: each kwok node's capacity (default NODE_CAPACITY). ``scheduler_plugins``: also
    run scheduler-plugins' Coscheduling scheduler (as SCHEDULER_PLUGINS_NAME) and PodGroup controller,
    with its CRDs installed (the gang-scheduling tests)."""
    bin_dir = find_bin_dir()
    _check_binaries(bin_dir)
    sp_dir = None
    if scheduler_plugins:
        sp_dir = find_scheduler_plugins_dir()
        _check_scheduler_plugins(sp_dir)
    if run_dir is None:
        _sweep_stale(Path(tempfile.gettempdir()), "trainop-testenv-run-")
    rd = run_dir or Path(tempfile.mkdtemp(prefix=f"trainop-testenv-run-{os.getpid()}-"))
    plane = ControlPlane(
        bin_dir=bin_dir,
        run_dir=rd,
        nodes=nodes,
        keep_run_dir=keep_run_dir,
        node_capacity=dict(node_capacity or NODE_CAPACITY),
        scheduler_plugins_dir=sp_dir,
    )
    try:
        plane.start()
    except BaseException as e:
        logs = plane.logs()
        plane.keep_run_dir = True  # keep the logs that explain the failure
        plane.stop()
        if isinstance(e, BuildMissingError | KeyboardInterrupt):
            raise
        raise RuntimeError(f"test control plane failed to start: {e}\n{logs}\n(run dir kept: {rd})") from e
    return plane


@pytest.fixture(scope="session")
def k8s_env(pytestconfig: pytest.Config) -> Iterator[K8sEnv]:
    """A real control plane for the whole session (etcd, apiserver, KCM, scheduler, kwok + nodes).

    Set TRAINOP_TESTENV_STATE to a running ``hack/testenv/up``'s state.json to reuse that one
    instead (it is then left running). Missing binaries FAIL the test with the build command.
    """
    state = os.environ.get("TRAINOP_TESTENV_STATE")
    if state:
        yield K8sEnv.from_state(Path(state))
        return
    missing = ""
    try:
        _check_binaries(find_bin_dir())
    except BuildMissingError as e:
        missing = str(e)
    if missing:  # outside the except: the report then shows the message once, without a traceback
        pytest.fail(missing, pytrace=False)
    plane = start_env(keep_run_dir=bool(os.environ.get("TRAINOP_TESTENV_KEEP")))
    try:
        # Shown even with output capture on: the warm-start time is a figure we track.
        reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
        capman = pytestconfig.pluginmanager.get_plugin("capturemanager")
        line = (
            f"[testenv] control plane up in {plane.started_s:.1f}s at {plane.server} (run dir "
            f"{plane.run_dir})"
        )
        if reporter is not None and capman is not None:
            with capman.global_and_fixture_disabled():
                reporter.write_line("\n" + line)
        else:
            sys.stderr.write(line + "\n")
        yield K8sEnv.from_plane(plane)
    finally:
        plane.stop()


def _namespace_name(nodeid: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", nodeid.split("::")[-1].lower()).strip("-")
    return f"t-{base[:48].rstrip('-')}-{secrets.token_hex(3)}"


@pytest.fixture
def k8s_namespace(k8s_env: K8sEnv, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test (deleted afterwards, without waiting for it to go)."""
    name = k8s_env.create_namespace(_namespace_name(request.node.nodeid), labels={"trainop.dev/test": "true"})
    try:
        yield name
    finally:
        k8s_env.delete_namespace(name)


# --------------------------------------------------------------------------------------------
# CLI: hack/testenv/up and down


def _default_state_dir() -> Path:
    return Path(
        os.environ.get("TRAINOP_TESTENV_UP_DIR")
        or Path(tempfile.gettempdir()) / f"trainop-testenv-{os.getuid()}"
    )


def _serve(state_dir: Path, nodes: int) -> int:
    """Run a control plane until SIGTERM/SIGINT (the detached child of `up`)."""
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    plane = start_env(nodes=nodes, run_dir=state_dir / "run")
    env = K8sEnv.from_plane(plane)
    state = {**env.to_state(), "pid": os.getpid(), "started_s": round(plane.started_s, 1)}
    (state_dir / "state.json").write_text(json.dumps(state, indent=2))
    try:
        while not stop:
            time.sleep(0.5)
            for p in plane.procs:
                if p.popen.poll() is not None:
                    sys.stderr.write(
                        f"{p.name} exited ({p.popen.returncode}); stopping\n{_log_tail(p.log)}\n"
                    )
                    stop = True
    finally:
        plane.stop()
        with contextlib.suppress(OSError):
            (state_dir / "state.json").unlink()
    return 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    return True


def _up(state_dir: Path, nodes: int) -> int:
    state_file = state_dir / "state.json"
    if state_file.exists() and _pid_alive(json.loads(state_file.read_text())["pid"]):
        print(
            "# already running (stop it with hack/testenv/down)\nexport "
            f"KUBECONFIG={state_dir / 'run' / 'kubeconfig'}"
        )
        return 0
    shutil.rmtree(state_dir, ignore_errors=True)
    state_dir.mkdir(parents=True)
    try:
        _check_binaries(find_bin_dir())
    except BuildMissingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    log = state_dir / "serve.log"
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "trainop.testing.testenv", "serve", f"--dir={state_dir}", f"--nodes={nodes}"]
    with log.open("ab") as f:
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # survives this shell; `down` stops it
        )
    while not state_file.exists():
        if child.poll() is not None:
            print(f"error: control plane failed to start; see {log}\n{_log_tail(log, 60)}", file=sys.stderr)
            return 1
        if time.monotonic() - t0 > START_TIMEOUT_S + 30:
            child.terminate()
            print(
                f"error: control plane not ready after {START_TIMEOUT_S + 30:.0f}s; see {log}",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.2)
    state = json.loads(state_file.read_text())
    print(
        f"# control plane up in {time.monotonic() - t0:.1f}s (pid {state['pid']}, logs in "
        f"{state['run_dir']}/logs)"
    )
    print(f"# tests can reuse it: export TRAINOP_TESTENV_STATE={state_file}")
    print(f"export KUBECONFIG={state['kubeconfig']}")
    return 0


def _down(state_dir: Path) -> int:
    state_file = state_dir / "state.json"
    if not state_file.exists():
        print("# not running")
        shutil.rmtree(state_dir, ignore_errors=True)
        return 0
    pid = json.loads(state_file.read_text())["pid"]
    if _pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not _pid_alive(pid), 30, "the control plane to stop")
    shutil.rmtree(state_dir, ignore_errors=True)
    print("# stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainop.testing.testenv", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "serve", "bin-dir"])
    parser.add_argument(
        "--dir", type=Path, default=None, help="state directory (default: $TMPDIR/trainop-testenv-$UID)"
    )
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    args = parser.parse_args(argv)
    state_dir: Path = args.dir or _default_state_dir()
    if args.command == "up":
        return _up(state_dir, args.nodes)
    if args.command == "down":
        return _down(state_dir)
    if args.command == "serve":
        return _serve(state_dir, args.nodes)
    print(find_bin_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
