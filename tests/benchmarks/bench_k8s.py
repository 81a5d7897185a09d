"""make bench-k8s: trainop's operator against the real Kubeflow Training Operator v1.9.4, side by side.

Both operators run alternately (A B A B ...) on a fresh test control plane each (hack/testenv; kwok
plays kubelet), at equal QPS/burst and at each one's shipped defaults, for two shapes: many small
PyTorchJobs (default 500 x (1 Master + 3 Workers)) and one big job (default 1 x (1 Master + 500
Workers)). Upstream is built from the Go module proxy into the test control plane's binary cache once
(``go install ...@v1.9.4``) and gets its own CRDs from the same module; its certificate readiness gate
is satisfied as ../shared/reference/upstream-operator.md describes. The apiserver's audit log is the
one clock for both: every figure but RSS and CPU comes from it. Pods are bound to nodes up front and
succeed after ``--run-duration`` (so early jobs finish while later ones are still being created).

Printed per run and as medians with ratios (trainop / upstream): seconds from the first job created
until every pod and Service exists and until every job showed Running; p99 of master pod Succeeded
-> job status Succeeded; jobs that never showed Running before Succeeded; peak RSS; CPU seconds; API
requests (by verb and resource). Asserts nothing.

    python tests/benchmarks/bench_k8s.py [--jobs 500] [--workers 3] [--big-workers 500] [--rounds 2]
        [--modes equal,defaults] [--qps 200] [--burst 400] [--operators upstream,trainop]
    (each option also as env: BENCH_K8S_JOBS=50 BENCH_K8S_BIG_WORKERS=0 BENCH_K8S_ROUNDS=1 ...;
    BENCH_K8S_PYSPY=/tmp/spy: py-spy samples of trainop's runs; BENCH_K8S_PROFILE=file: cProfile)
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from trainop.backends.kubernetes import resources as r
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import ControlPlane, K8sEnv, find_bin_dir, free_port

REPO = Path(__file__).resolve().parents[2]
NODE_PODS = 110  # testenv's per-node pod capacity
UPSTREAM_VERSION = "v1.9.4"
UPSTREAM_PKG = "github.com/kubeflow/training-operator/cmd/training-operator.v1"
UPSTREAM_BIN = "training-operator.v1"
UPSTREAM_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # hard-coded in upstream
UPSTREAM_NS = "kubeflow"
UPSTREAM_SCHEMES = 6  # "Starting workers" once per enabled kind
BENCH_UA = "bench-k8s"
NS = "bench"

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources:
  - {group: coordination.k8s.io, resources: [leases]}
  - {group: "", resources: [nodes, nodes/status]}
- level: None
  nonResourceURLs: ["/*"]
- level: Request
  verbs: [update, patch]
  resources:
  - {group: "", resources: [pods/status]}
  - {group: kubeflow.org, resources: ["*/status"]}
- level: Metadata
"""


# --- building and starting upstream ------------------------------------------------------------------------


def go_env(name: str) -> str:
    return subprocess.run(["go", "env", name], check=True, capture_output=True, text=True).stdout.strip()


def ensure_upstream(bin_dir: Path) -> Path:
    """The upstream binary in the test control plane's cache, built from the module proxy if missing."""
    binary = bin_dir / UPSTREAM_BIN
    if not os.access(binary, os.X_OK):
        print(f"bench-k8s: building upstream {UPSTREAM_PKG}@{UPSTREAM_VERSION} into {bin_dir} (CPU-minutes)")
        env = {**os.environ, "GOBIN": str(bin_dir), "CGO_ENABLED": "0"}
        subprocess.run(["go", "install", f"{UPSTREAM_PKG}@{UPSTREAM_VERSION}"], check=True, env=env)
    return binary


def upstream_crds() -> Path:
    return (
        Path(go_env("GOMODCACHE"))
        / f"github.com/kubeflow/training-operator@{UPSTREAM_VERSION}/manifests/base/crds"
    )


def _rsa_pem(key: rsa.RSAPrivateKey) -> bytes:
    # PKCS#1 ("RSA PRIVATE KEY"): cert-controller only keeps keys it can parse this way.
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def upstream_certs() -> dict[str, bytes]:
    """A CA and serving pair upstream's cert rotator accepts as valid (so it never rotates them)."""
    now = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    until = now + dt.timedelta(days=3650)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "training-operator-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("training-operator-ca")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    dns = "training-operator.kubeflow.svc"
    import ipaddress

    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(dns), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return {
        "ca.crt": ca.public_bytes(pem),
        "ca.key": _rsa_pem(ca_key),
        "tls.crt": leaf.public_bytes(pem),
        "tls.key": _rsa_pem(key),
    }


def prepare_upstream(env: K8sEnv) -> None:
    """Pre-fill the webhook Secret and the hard-coded serving-cert directory (its readiness gate)."""
    import base64

    certs = upstream_certs()
    env.create_namespace(UPSTREAM_NS)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "training-operator-webhook-cert", "namespace": UPSTREAM_NS},
        "data": {k: base64.b64encode(v).decode() for k, v in certs.items()},
    }
    f = Path(tempfile.mkdtemp(prefix="bench-k8s-secret-")) / "secret.json"
    f.write_text(json.dumps(secret))
    env.kubectl("apply", "-f", str(f))
    UPSTREAM_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (UPSTREAM_CERT_DIR / name).write_bytes(certs[name])


# --- one run ------------------------------------------------------------------------------------------------


@dataclass
class Config:
    op: str  # "upstream" | "trainop"
    mode: str  # "equal" | "defaults"
    jobs: int
    workers: int
    qps: float
    burst: int
    upstream_threads: int
    trainop_threads: int | None
    run_duration: str
    timeout: float

    @property
    def shape(self) -> str:
        return f"{self.jobs} x (1 Master + {self.workers} Workers)"


def operator_cmd(cfg: Config, env: K8sEnv, bin_dir: Path) -> tuple[list[str], dict[str, str], int]:
    health = free_port()
    common = [
        f"--metrics-bind-address=127.0.0.1:{free_port()}",
        f"--health-probe-bind-address=127.0.0.1:{health}",
    ]
    e = {**os.environ, "KUBECONFIG": str(env.kubeconfig)}
    if cfg.op == "upstream":
        cmd = [str(bin_dir / UPSTREAM_BIN), *common, f"--webhook-server-port={free_port()}"]
        if cfg.mode == "equal":
            cmd += [f"--kube-api-qps={cfg.qps:g}", f"--kube-api-burst={cfg.burst}"]
            cmd += [f"--controller-threads={cfg.upstream_threads}"]
        e["MY_POD_NAMESPACE"] = UPSTREAM_NS
        e.pop("TMPDIR", None)
        return cmd, e, health
    prof = os.environ.get("BENCH_K8S_PROFILE")  # a file: run trainop under cProfile
    cmd = [sys.executable, *(["-m", "cProfile", "-o", prof] if prof else []), "-m", "trainop.operator"]
    cmd += [f"--kubeconfig={env.kubeconfig}", "--enable-webhook=false", *common]
    if cfg.mode == "equal":
        cmd += [f"--kube-api-qps={cfg.qps:g}", f"--kube-api-burst={cfg.burst}"]
        if cfg.trainop_threads:
            cmd += [f"--controller-threads={cfg.trainop_threads}"]
    return cmd, e, health


def proc_stats(pid: int) -> tuple[float, float]:
    """(peak RSS in MB, CPU seconds) of a live process, from /proc."""
    hwm = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return hwm, (int(fields[11]) + int(fields[12])) / ticks


def http_ok(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def job_manifest(i: int, cfg: Config, nodes: int) -> dict[str, Any]:
    node = f"kwok-node-{i % nodes}"

    def bind(t: dict[str, Any]) -> None:
        if 1 + cfg.workers <= NODE_PODS - 10:  # no kube-scheduler in what is measured
            t["spec"]["nodeName"] = node
        # else one job outgrows a node: kube-scheduler places its pods (the same for both operators)
        ann = t.setdefault("metadata", {}).setdefault("annotations", {})
        ann.update({"sim.trainop.dev/outcome": "succeed", "sim.trainop.dev/run-duration": cfg.run_duration})

    obj = pytorch_job(f"bench-{i:04d}").master(1).workers(cfg.workers).template(bind).build_dict()
    obj["metadata"] = {"name": obj["metadata"]["name"], "namespace": NS}
    return obj


def condition_true(obj: dict[str, Any] | None, type_: str) -> bool:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conds)


class AuditPlane(ControlPlane):
    """The test control plane with an apiserver audit log (JSON lines) at ``audit_log``."""

    @property
    def audit_log(self) -> Path:
        return self.run_dir / "audit.log"

    def _spawn(self, name: str, args: list[str], *rest: Any, **kw: Any) -> None:
        if name == "kube-apiserver":
            policy = self.run_dir / "audit-policy.yaml"
            policy.write_text(AUDIT_POLICY)
            args = [
                *args,
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-maxsize=0",
                "--audit-log-mode=batch",  # the log's writes stay off the request path
                "--audit-log-batch-max-wait=1s",
            ]
        super()._spawn(name, args, *rest, **kw)


def start_plane(nodes: int) -> AuditPlane:
    rd = Path(tempfile.mkdtemp(prefix=f"trainop-testenv-run-{os.getpid()}-"))
    plane = AuditPlane(bin_dir=find_bin_dir(), run_dir=rd, nodes=nodes)
    try:
        plane.start()
    except BaseException:
        print(plane.logs(), file=sys.stderr)
        plane.stop()
        raise
    return plane


def ts(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


@dataclass
class Figures:
    cfg: Config
    objects_s: float = float("nan")
    running_s: float = float("nan")
    p99_s: float = float("nan")
    never_running: int = 0
    succeeded: int = 0
    rss_mb: float = float("nan")
    cpu_s: float = float("nan")
    requests: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    user_agent: str = ""


def operator_ua(ua: str, op: str) -> bool:
    if op == "upstream":
        return ua.startswith("training-operator")
    return ua.startswith("trainop-operator/")


def analyse(cfg: Config, audit: Path, fig: Figures) -> None:
    """Every figure the audit log holds, for the operator's user agent."""
    n_pods = cfg.jobs * (1 + cfg.workers)
    t_first_job = float("inf")
    creates: dict[str, list[float]] = {"pods": [], "services": []}
    running_at: dict[str, float] = {}
    succeeded_at: dict[str, float] = {}
    master_done: dict[str, float] = {}
    ids: set[str] = set()
    uas: Counter[str] = Counter()
    for line in audit.open():
        ev = json.loads(line)
        ua = ev.get("userAgent", "")
        ref = ev.get("objectRef") or {}
        res = ref.get("resource", "")
        sub = ref.get("subresource", "")
        verb = ev.get("verb", "")
        code = (ev.get("responseStatus") or {}).get("code", 0)
        t = ts(ev["stageTimestamp"])
        if ev.get("stage") != "ResponseComplete":
            if ev.get("stage") == "ResponseStarted" and operator_ua(ua, cfg.op):
                ids.add(ev["auditID"])  # a watch still open at the end
            continue
        if ua.startswith(BENCH_UA) and verb == "create" and res == "pytorchjobs":
            t_first_job = min(t_first_job, t)
        if res == "pods" and sub == "status" and verb in ("patch", "update"):
            body = ev.get("requestObject") or {}
            name = ref.get("name", "")
            if (body.get("status") or {}).get("phase") == "Succeeded" and name.endswith("-master-0"):
                master_done.setdefault(name.removesuffix("-master-0"), t)
        if not operator_ua(ua, cfg.op):
            continue
        uas[ua.split(" ")[0]] += 1
        ids.add(ev["auditID"])
        fig.by_kind[f"{verb} {res}{'/' + sub if sub else ''}"] += 1
        if verb == "create" and res in creates and code == 201:
            creates[res].append(t)
        if res == "pytorchjobs" and sub == "status" and verb in ("update", "patch") and code < 300:
            body = ev.get("requestObject")
            name = ref.get("name", "")
            if condition_true(body, "Running"):
                running_at.setdefault(name, t)
            if condition_true(body, "Succeeded"):
                succeeded_at.setdefault(name, t)
    fig.requests = len(ids)
    fig.user_agent = ", ".join(uas)
    created = sorted(creates["pods"])[n_pods - 1 : n_pods] + sorted(creates["services"])[n_pods - 1 : n_pods]
    if len(created) == 2:
        fig.objects_s = max(created) - t_first_job
    if len(running_at) == cfg.jobs:
        fig.running_s = max(running_at.values()) - t_first_job
    fig.succeeded = len(succeeded_at)
    fig.never_running = sum(1 for j, t in succeeded_at.items() if not (running_at.get(j, 1e30) < t))
    lags = sorted(t - master_done[j] for j, t in succeeded_at.items() if j in master_done)
    if lags:
        fig.p99_s = lags[min(len(lags) - 1, int(0.99 * len(lags)))]


def settle(audit: Path, op: str, deadline: float, quiet: float = 4.0) -> None:
    """Until the operator sent no request for ``quiet`` seconds (its last events drained)."""
    pos, last_change = 0, time.monotonic()
    while time.monotonic() < deadline:
        with audit.open("rb") as f:
            f.seek(pos)
            chunk = f.read()
        pos += len(chunk)
        if op == "upstream":
            seen = b'"userAgent":"training-operator' in chunk
        else:
            seen = b'"userAgent":"trainop-operator/' in chunk
        if seen:
            last_change = time.monotonic()
        elif time.monotonic() - last_change > quiet:
            return
        time.sleep(0.5)


def wait_until(pred: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise TimeoutError(f"bench-k8s: {what} not within {timeout:g} s")


async def drive(env: K8sEnv, cfg: Config, nodes: int) -> int:
    """Create the jobs; return how many Succeeded before the timeout (watched)."""
    api = AsyncClient(KubeConfig.from_file(env.kubeconfig), trust_env=False)
    api._client._client.headers["User-Agent"] = BENCH_UA  # tell ours apart in the audit log
    done: set[str] = set()
    res = r.JOB_RESOURCES["PyTorchJob"]

    async def watch() -> None:
        async for _, obj in api.watch(res, namespace=NS):
            if condition_true(dict(obj), "Succeeded"):
                done.add(dict(obj)["metadata"]["name"])

    w = asyncio.create_task(watch())
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            await api.create(res(job_manifest(i, cfg, nodes)))

    await asyncio.gather(*(one(i) for i in range(cfg.jobs)))
    end = time.monotonic() + cfg.timeout
    while len(done) < cfg.jobs and time.monotonic() < end:
        await asyncio.sleep(0.2)
    w.cancel()
    await api.close()
    return len(done)


def run_one(cfg: Config, bin_dir: Path) -> Figures:
    fig = Figures(cfg)
    n_pods = cfg.jobs * (1 + cfg.workers)
    nodes = max(3, -(-n_pods // (NODE_PODS - 10)))
    plane = start_plane(nodes)
    env = K8sEnv.from_plane(plane)
    proc: subprocess.Popen[bytes] | None = None
    log = plane.run_dir / f"{cfg.op}.log"
    try:
        if cfg.op == "upstream":
            env.kubectl("apply", "--server-side", "-k", str(upstream_crds()))
            prepare_upstream(env)
        else:
            env.kubectl("apply", "--server-side", "-k", str(REPO / "manifests" / "crds"))
        env.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/pytorchjobs.kubeflow.org")
        env.create_namespace(NS)
        cmd, penv, health = operator_cmd(cfg, env, bin_dir)
        with log.open("ab") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO, env=penv)

        def ready() -> bool:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(
                    f"{cfg.op} exited {proc.returncode}; log {log}:\n{log.read_text()[-3000:]}"
                )
            if not http_ok(health, "/readyz"):
                return False
            return cfg.op != "upstream" or log.read_text().count("Starting workers") >= UPSTREAM_SCHEMES

        wait_until(ready, 120, f"{cfg.op} ready")
        spy = None
        if os.environ.get("BENCH_K8S_PYSPY") and cfg.op == "trainop":  # a flame graph of the run
            out = f"{os.environ['BENCH_K8S_PYSPY']}-{cfg.mode}-{cfg.jobs}x{cfg.workers}.txt"
            spy_cmd = ["py-spy", "record", "--pid", str(proc.pid), "-f", "raw", "-r", "100", "-o", out]
            spy = subprocess.Popen(spy_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fig.succeeded = asyncio.run(drive(env, cfg, nodes))
        settle(plane.audit_log, cfg.op, time.monotonic() + 120)
        fig.rss_mb, fig.cpu_s = proc_stats(proc.pid)
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=30)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        time.sleep(1.5)  # the audit log's last batch (batch-max-wait 1 s)
        if cfg.op == "trainop" and log.exists():  # why a watch was opened again, if it was
            reasons = [ln for ln in log.read_text(errors="replace").splitlines() if "watch error" in ln]
            if reasons:
                print(f"  ({len(reasons)} watch errors; first: {reasons[0][-200:]})", flush=True)
        audit_copy = Path(tempfile.mkdtemp(prefix="bench-k8s-audit-")) / "audit.log"
        if plane.audit_log.exists():
            shutil.copy(plane.audit_log, audit_copy)
        plane.stop()
    analyse(cfg, audit_copy, fig)
    keep = os.environ.get("BENCH_K8S_KEEP_AUDIT")  # a directory: keep each run's audit log there
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(
            audit_copy, Path(keep) / f"{cfg.op}-{cfg.mode}-{cfg.jobs}x{cfg.workers}-{time.time_ns()}.log"
        )
    shutil.rmtree(audit_copy.parent, ignore_errors=True)
    return fig


# --- printing -----------------------------------------------------------------------------------------------


def line(fig: Figures) -> str:
    c = fig.cfg
    rate = f"{c.qps:g}/{c.burst}" if c.mode == "equal" else "defaults"
    return (
        f"  {c.op:8} {rate:9} objects {fig.objects_s:6.2f} s  running {fig.running_s:6.2f} s  "
        f"p99 {fig.p99_s:6.2f} s  never-Running {fig.never_running:4}  succeeded {fig.succeeded}/{c.jobs}  "
        f"RSS {fig.rss_mb:5.0f} MB  CPU {fig.cpu_s:6.1f} s  requests {fig.requests:6}"
    )


FIGURES = [
    ("all pods + Services exist (s)", "objects_s", "{:.2f}"),
    ("all jobs Running (s)", "running_s", "{:.2f}"),
    ("pod Succeeded -> job status p99 (s)", "p99_s", "{:.2f}"),
    ("jobs never Running before Succeeded", "never_running", "{:.0f}"),
    ("peak RSS (MB)", "rss_mb", "{:.0f}"),
    ("CPU seconds", "cpu_s", "{:.1f}"),
    ("API requests", "requests", "{:.0f}"),
]


def summary(title: str, figs: list[Figures]) -> None:
    print(f"\n{title}")
    ops = {f.cfg.op for f in figs}
    print(f"  {'figure':38} {'upstream (median)':>18} {'trainop (median)':>18} {'ratio':>7}")
    for label, attr, fmt in FIGURES:
        med: dict[str, float] = {}
        for op in ops:
            vals = [float(getattr(f, attr)) for f in figs if f.cfg.op == op]
            med[op] = statistics.median(vals) if vals else float("nan")
        up, tr = med.get("upstream", float("nan")), med.get("trainop", float("nan"))
        ratio = f"{tr / up:.2f}" if up and up == up and tr == tr else "-"
        print(f"  {label:38} {fmt.format(up):>18} {fmt.format(tr):>18} {ratio:>7}")
    for op in sorted(ops):
        kinds: Counter[str] = Counter()
        for f in figs:
            if f.cfg.op == op:
                kinds.update(f.by_kind)
        n = sum(1 for f in figs if f.cfg.op == op)
        top = ", ".join(f"{k} {v / n:.0f}" for k, v in kinds.most_common(10))
        print(f"  {op} requests/run: {top}")


def env_default(name: str, default: Any) -> Any:
    v = os.environ.get(f"BENCH_K8S_{name}")
    return type(default)(v) if v is not None else default


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=env_default("JOBS", 500))
    p.add_argument("--workers", type=int, default=env_default("WORKERS", 3))
    p.add_argument("--big-workers", type=int, default=env_default("BIG_WORKERS", 500), help="0: skip")
    p.add_argument("--rounds", type=int, default=env_default("ROUNDS", 2), help="A B pairs per setting")
    p.add_argument("--modes", default=env_default("MODES", "equal,defaults"))
    p.add_argument("--operators", default=env_default("OPERATORS", "upstream,trainop"))
    p.add_argument("--qps", type=float, default=env_default("QPS", 200.0))
    p.add_argument("--burst", type=int, default=env_default("BURST", 400))
    p.add_argument("--upstream-threads", type=int, default=env_default("UPSTREAM_THREADS", 8))
    p.add_argument(
        "--trainop-threads", type=int, default=env_default("TRAINOP_THREADS", 0), help="0: default"
    )
    p.add_argument("--run-duration", default=env_default("RUN_DURATION", "30s"), help="how long pods run")
    p.add_argument("--timeout", type=float, default=env_default("TIMEOUT", 900.0))
    p.add_argument(
        "--defaults-rounds", type=int, default=env_default("DEFAULTS_ROUNDS", 0), help="0: --rounds"
    )
    p.add_argument(
        "--defaults-jobs",
        type=int,
        default=env_default("DEFAULTS_JOBS", 0),
        help="jobs of the many-jobs shape in the defaults mode (0: --jobs); upstream's 20 QPS makes it slow",
    )
    args = p.parse_args()
    # Bytecode for the operator as an installed package has it (pip compiles on install): without it,
    # and with PYTHONDONTWRITEBYTECODE set, every start compiles trainop again (~0.15 s CPU per run).
    compileall.compile_dir(REPO / "src" / "trainop", quiet=1)
    bin_dir = find_bin_dir()
    ops = args.operators.split(",")
    if "upstream" in ops:
        ensure_upstream(bin_dir)
    shapes = [(args.jobs, args.workers)] + ([(1, args.big_workers)] if args.big_workers else [])
    for shape_jobs, workers in shapes:
        for mode in args.modes.split(","):
            jobs = (
                args.defaults_jobs
                if mode == "defaults" and shape_jobs > 1 and args.defaults_jobs
                else shape_jobs
            )
            figs: list[Figures] = []
            rounds = args.defaults_rounds if mode == "defaults" and args.defaults_rounds else args.rounds
            for rnd in range(rounds):
                for op in ops:
                    cfg = Config(
                        op, mode, jobs, workers, args.qps, args.burst, args.upstream_threads,
                        args.trainop_threads or None, args.run_duration, args.timeout,
                    )  # fmt: skip
                    try:
                        fig = run_one(cfg, bin_dir)
                    except Exception as exc:  # one failed run must not lose the others' figures
                        print(f"  {op:8} {mode:9} FAILED: {exc!r}"[:2000], flush=True)
                        continue
                    figs.append(fig)
                    print(line(fig) + f"  [round {rnd + 1}; {fig.user_agent}]", flush=True)
            rate = f"both at {args.qps:g}/{args.burst} (upstream {args.upstream_threads} threads)"
            if mode == "defaults":
                rate = "each at its defaults (upstream 20/30, 1 thread)"
            summary(f"bench-k8s: {jobs} PyTorchJobs x (1 Master + {workers} Workers), {rate}", figs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
