"""The operator as a platform engineer deploys it (issue 26), on the test control plane:

- `helm install` of charts/trainop (CRDs, RBAC, Service, webhook, Deployment) succeeds;
- the Deployment's container is the built image (`make image`), run from its root filesystem under
  unshare/chroot as its non-root user on a read-only root, with the chart's arguments and the in-cluster
  config files a pod gets (Service account token, CA, namespace; no kubeconfig), as the chart's
  ServiceAccount, so the chart's RBAC is what it has;
- through it the webhook answers and PyTorchJobs run to Succeeded (and Failed, and restart);
- a real Prometheus scrapes it, loads the alert rules, and every dashboard query returns series.

kwok runs no containers, so the API server cannot reach the chart's Service: as in test_manifests.py, the
webhook configuration is pointed at the image's webhook on loopback, for this module's namespaces only.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import Cluster, annotate

from trainop.backends.kubernetes import resources as r
from trainop.operator.webhook import webhook_path
from trainop.testing.builders import pytorch_job
from trainop.testing.deploy import (
    ALERTS,
    CHART,
    SA_DIR,
    ImageConfig,
    Query,
    alert_queries,
    build_container_command,
    build_grafana_expr,
    dashboard,
    dashboard_queries,
    extract_image,
    find_helm,
    find_prometheus_operator_crds,
    find_tool,
    image_archive,
    package_version,
)
from trainop.testing.testenv import (
    SIM_EXIT_CODE,
    SIM_OUTCOME,
    SIM_RUN_DURATION,
    K8sEnv,
    free_port,
    wait_for,
)

NS = "trainop-helm"
RELEASE = "trainop"
VWC = "validator.training-operator.kubeflow.org"
SELECTOR_LABEL = "trainop.dev/helm-test"
SCRAPE_JOB = "training-operator"
STANDBY_JOB = "training-operator-standby"
# The chart's cluster-scoped objects: removed after the module (the CRDs stay: crds.keep, other tests).
CLUSTER_SCOPED = [f"validatingwebhookconfiguration/{VWC}", "clusterrolebinding/training-operator",
                  "clusterrole/training-operator"]  # fmt: skip


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


@dataclass
class Container:
    """The image's entrypoint running as a process (see trainop.testing.deploy.build_container_command)."""

    proc: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    probe_port: int

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(
                f"the image's operator exited with {self.proc.returncode}:\n{self.log_tail()}"
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the operator itself (unshare and chroot exec it)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@dataclass
class Prometheus:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def api(self, path: str, **params: str) -> Any:
        status, body = http_get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        assert status == 200, f"{path} {params}: HTTP {status}: {body}"
        doc = json.loads(body)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data["resultType"])
        return list(data["result"])


@dataclass
class Installed:
    env: K8sEnv
    helm_output: str
    config: ImageConfig
    rootfs: Path
    op: Container
    token: str
    webhook_port: int


def helm(*args: str, check: bool = True, env: K8sEnv) -> subprocess.CompletedProcess[str]:
    cmd = [str(find_helm()), f"--kubeconfig={env.kubeconfig}", *args]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if check and got.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {got.returncode}:\n{got.stdout}\n{got.stderr}")
    return got


def adopt_existing_crds(env: K8sEnv) -> None:
    """The session's CRDs were applied with kubectl (conftest's crds fixture): mark them as this
    release's, which is how Helm takes over objects that exist (a cluster moving from kubectl apply -k)."""
    for path in sorted((CHART / "files" / "crds").glob("*.yaml")):
        name = next(d for d in yaml.safe_load_all(path.read_text()) if d)["metadata"]["name"]
        if env.kubectl("get", "crd", name, check=False).returncode != 0:
            continue
        env.kubectl("label", "--overwrite", "crd", name, "app.kubernetes.io/managed-by=Helm")
        env.kubectl("annotate", "--overwrite", "crd", name, f"meta.helm.sh/release-name={RELEASE}",
                    f"meta.helm.sh/release-namespace={NS}")  # fmt: skip


def point_webhooks(env: K8sEnv, token: str, port: int | None) -> None:
    """Point the webhooks at the image's webhook server on loopback (``port``), or back at the chart's
    Service (None: how `helm upgrade` must find them, or its patch would carry both); either way only
    for this module's namespaces, and keeping the caBundle the operator injected."""
    with env.client() as c:
        vwc: dict[str, Any] = dict(c.get(r.ValidatingWebhookConfiguration, VWC))
        for w in vwc["webhooks"]:
            path = webhook_path(w["name"].split(".")[1])
            bundle = {"caBundle": w["clientConfig"]["caBundle"]} if "caBundle" in w["clientConfig"] else {}
            if port is None:
                service = {"name": "training-operator", "namespace": NS, "path": path, "port": 443}
                w["clientConfig"] = {"service": service, **bundle}
            else:
                w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", **bundle}
            w["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: token}}
        c.replace(r.ValidatingWebhookConfiguration(vwc))


def chart_container(env: K8sEnv) -> dict[str, Any]:
    """The operator container of the Deployment the release installed."""
    dep = env.kubectl_json("get", "deployment", "training-operator", namespace=NS)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return dict(container)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ImageConfig, Path]]:
    find_tool("unshare")
    dest = tmp_path_factory.mktemp("image")
    config = extract_image(image_archive(), dest)
    yield config, dest / "rootfs"
    shutil.rmtree(dest, ignore_errors=True)


@pytest.fixture(scope="module")
def installed(
    k8s_env: K8sEnv, crds: None, image: tuple[ImageConfig, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    config, rootfs = image
    tmp = tmp_path_factory.mktemp("helm")
    token = secrets.token_hex(4)

    def not_terminating() -> bool | None:  # a previous run's namespace may still be going away
        got = k8s_env.kubectl("get", "namespace", NS, "-o", "jsonpath={.status.phase}", check=False)
        return got.returncode != 0 or got.stdout == "Active" or None

    wait_for(not_terminating, 120, f"namespace {NS} from an earlier run to be deleted")
    helm("uninstall", RELEASE, "-n", NS, "--ignore-not-found", env=k8s_env)
    adopt_existing_crds(k8s_env)
    op: Container | None = None
    try:
        out = helm("install", RELEASE, str(CHART), "-n", NS, "--create-namespace", env=k8s_env).stdout
        port = free_port()
        point_webhooks(k8s_env, token, port)
        # What the kubelet mounts into the pod for its ServiceAccount.
        sa = tmp / "serviceaccount"
        sa.mkdir()
        sa_token = k8s_env.kubectl("create", "token", "training-operator", "-n", NS, "--duration=2h").stdout
        (sa / "token").write_text(sa_token.strip())
        shutil.copy(k8s_env.ca_file, sa / "ca.crt")
        (sa / "namespace").write_text(NS)
        host, _, api_port = urllib.parse.urlparse(k8s_env.server).netloc.rpartition(":")
        container = chart_container(k8s_env)
        # The chart's arguments, with the ports moved off the well-known ones (the host's network) and
        # the webhook's certificate also valid for the loopback URL above.
        metrics_port, probe_port = free_port(), free_port()
        args = [a for a in container["args"] if not a.startswith(("--metrics-bind-address", "--health-probe",
                                                                   "--webhook-server-port"))]  # fmt: skip
        args += [
            f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{probe_port}",
            f"--webhook-server-port={port}",
            "--webhook-host=127.0.0.1",
            "--webhook-cert-host=127.0.0.1",
        ]
        assert container["command"] == config.entrypoint  # the Deployment runs the image's entrypoint
        env = {
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": api_port,
            "MY_POD_NAMESPACE": NS,
            "MY_POD_NAME": "training-operator-0",
        }
        cmd = build_container_command(rootfs, config, args, env=env, mounts={SA_DIR: sa})
        log = tmp / "operator.log"
        with log.open("ab") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        op = Container(proc, log, metrics_port, probe_port)

        def ready() -> bool | None:
            op.check_alive()
            return http_get(f"http://127.0.0.1:{probe_port}/readyz")[0] == 200 or None

        wait_for(ready, 120, f"the image's operator /readyz ({log})")
        yield Installed(k8s_env, out, config, rootfs, op, token, port)
    finally:
        if op is not None:
            op.stop()
        # Never leave a failurePolicy=Fail webhook behind; the CRDs stay (crds.keep; other tests use them).
        helm("uninstall", RELEASE, "-n", NS, "--ignore-not-found", check=False, env=k8s_env)
        for obj in (*CLUSTER_SCOPED, f"namespace/{NS}"):
            k8s_env.kubectl("delete", obj, "--ignore-not-found", "--wait=false", check=False)


@pytest.fixture(scope="module")
def standby(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A second replica with leader election, which stays a standby (the image's operator holds the
    Lease): scraped as its own job, it is the "no replica leads" case of the alert rules. Its metrics
    port is yielded."""
    tmp = tmp_path_factory.mktemp("standby")
    metrics_port, probe_port = free_port(), free_port()
    log = tmp / "standby.log"
    env = {**os.environ, "MY_POD_NAMESPACE": NS, "MY_POD_NAME": "training-operator-standby"}
    with log.open("ab") as f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainop.operator", f"--kubeconfig={installed.env.kubeconfig}",
             "--leader-elect", "--enable-webhook=false", f"--metrics-bind-address=127.0.0.1:{metrics_port}",
             f"--health-probe-bind-address=127.0.0.1:{probe_port}"],
            stdout=f, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:

        def standing_by() -> bool | None:
            if proc.poll() is not None:
                raise AssertionError(f"the standby exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            _, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
            return "leader_election_master_status{" in text or None

        wait_for(standing_by, 90, f"the standby's leader gauge ({log})")
        yield metrics_port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def prometheus(
    installed: Installed, standby: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Prometheus]:
    binary = find_tool("prometheus")
    tmp = tmp_path_factory.mktemp("prometheus")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [
            {
                "job_name": SCRAPE_JOB,
                "static_configs": [{"targets": [f"127.0.0.1:{installed.op.metrics_port}"]}],
            },
            {"job_name": STANDBY_JOB, "static_configs": [{"targets": [f"127.0.0.1:{standby}"]}]},
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = tmp / "prometheus.log"
    with log.open("ab") as f:
        proc = subprocess.Popen(
            [str(binary), f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=f, stderr=subprocess.STDOUT,
        )  # fmt: skip
    prom = Prometheus(proc, f"http://127.0.0.1:{port}", log)
    try:

        def ready() -> bool | None:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited with {proc.returncode}:\n{log.read_text()}")
            return http_get(f"{prom.url}/-/ready")[0] == 200 or None

        wait_for(ready, 60, "prometheus /-/ready")
        yield prom
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def succeed(after: str = "1s") -> Any:
    return annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: after})


def fail(code: int, after: str = "1s") -> Any:
    return annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: str(code), SIM_RUN_DURATION: after})


@pytest.fixture(scope="module")
def jobs_ran(installed: Installed, k8s_env: K8sEnv) -> Iterator[str]:
    """A PyTorchJob that succeeds (its pods cleaned up, then TTL-deleted), one that fails, and one whose
    worker is restarted: every job counter and pod counter of the dashboard moves."""
    ns = f"trainop-helm-jobs-{installed.token}"
    k8s_env.create_namespace(ns, labels={SELECTOR_LABEL: installed.token})
    cluster = Cluster(k8s_env, ns)
    try:
        ok = (
            pytorch_job("ok").master(1).workers(1).template(succeed())
            .run_policy(ttl_seconds_after_finished=1, clean_pod_policy="All")
        )  # fmt: skip
        created = cluster.create(ok.build_dict())
        cluster.create(pytorch_job("bad").master(1).restart_policy("Never").template(fail(3)).build_dict())
        cluster.create(
            pytorch_job("again").master(1).workers(1).restart_policy("ExitCode", "Worker")
            .template(fail(137), "Worker").build_dict()
        )  # fmt: skip
        try:
            cluster.watch_condition("PyTorchJob", "ok", "Succeeded", since=created)
            cluster.wait_condition("PyTorchJob", "bad", "Failed")
            cluster.wait_condition("PyTorchJob", "again", "Restarting")
        except (TimeoutError, AssertionError):
            raise AssertionError(installed.op.log_tail(80)) from None
        wait_for(lambda: cluster.job("PyTorchJob", "ok") is None or None, 60, "TTL deletion of ok")
        yield ns
    finally:
        cluster.close()
        k8s_env.delete_namespace(ns)


# --- the chart and the image ----------------------------------------------------------------------------


def test_helm_install_creates_the_release(installed: Installed) -> None:
    assert "STATUS: deployed" in installed.helm_output
    env = installed.env
    releases = json.loads(helm("list", "-n", NS, "-o", "json", env=env).stdout)
    assert [(x["name"], x["status"], x["app_version"]) for x in releases] == [
        (RELEASE, "deployed", package_version())
    ]
    for kind in ("deployment", "service", "serviceaccount", "role", "rolebinding"):
        env.kubectl("get", kind, "training-operator", namespace=NS)
    env.kubectl("get", "secret", "training-operator-webhook-cert", namespace=NS)
    for obj in CLUSTER_SCOPED:
        env.kubectl("get", obj)
    crds = [
        yaml.safe_load(p.read_text().split("---", 1)[1])
        for p in sorted((CHART / "files/crds").glob("*.yaml"))
    ]
    names = [f"crd/{c['metadata']['name']}" for c in crds]
    env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    for name in names:
        crd = env.kubectl_json("get", name)
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_the_image_is_the_package_non_root(installed: Installed) -> None:
    config, rootfs = installed.config, installed.rootfs
    assert config.user == "65532:65532"
    cmd = build_container_command(rootfs, config, ["--version"], env={}, mounts={})
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert (got.returncode, got.stdout.strip()) == (0, f"trainop {package_version()}"), got.stderr
    # The running operator: the image's user, and its root filesystem is not writable.
    status = Path(f"/proc/{installed.op.proc.pid}/status").read_text()
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    assert set(uids) == {"65532"}
    probe = build_container_command(rootfs, config, [], env={}, mounts={})
    probe[-1] = probe[-1].rsplit(" env -i ", 1)[0] + " /bin/sh -c 'touch /opt/trainop/x'"
    got = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    assert got.returncode != 0 and "Read-only file system" in got.stderr, got


def test_webhook_answers_through_the_image(installed: Installed, jobs_ran: str) -> None:
    env = installed.env
    bad = {**pytorch_job("bad-spec").master(2).build_dict(), "metadata": {"name": "bad-spec"}}
    got = env.kubectl("apply", "-f", "-", namespace=jobs_ran, check=False, input=yaml.safe_dump(bad))
    assert "denied the request: spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in got.stderr
    vwc = env.kubectl_json("get", "validatingwebhookconfiguration", VWC)
    assert all(w["clientConfig"].get("caBundle") for w in vwc["webhooks"])  # injected by the image's operator


def test_jobs_run_to_the_end_with_the_charts_rbac(installed: Installed, jobs_ran: str) -> None:
    # jobs_ran saw ok Succeeded (then deleted by its TTL), bad Failed and again Restarting.
    sa_user = f"system:serviceaccount:{NS}:training-operator"
    denied = [
        line for line in installed.op.log.read_text().splitlines() if f'User "{sa_user}" cannot' in line
    ]
    assert denied == []


def monitoring_values(on: str) -> list[str]:
    keys = ("grafanaDashboard.enabled", "metrics.serviceMonitor.enabled", "metrics.prometheusRule.enabled")
    return [RELEASE, str(CHART), "-n", NS, "--reuse-values", *(f"--set={k}={on}" for k in keys)]


def test_readme_upgrade_adds_the_dashboard_and_prometheus_operator_objects(installed: Installed) -> None:
    """README's `helm upgrade ... --set grafanaDashboard.enabled=true` (and the ServiceMonitor and
    PrometheusRule), against the Prometheus Operator's real CRDs."""
    env = installed.env
    crds = find_prometheus_operator_crds()
    for crd in crds:
        env.kubectl("apply", "--server-side", "-f", str(crd), timeout=120)
    try:
        names = ["crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com"]
        env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
        vwc_before = env.kubectl_json("get", "validatingwebhookconfiguration", VWC)["webhooks"]
        point_webhooks(env, installed.token, None)
        try:
            helm("upgrade", *monitoring_values("true"), env=env)
            # The upgrade keeps what the operator wrote into the chart's objects: the caBundle.
            after = env.kubectl_json("get", "validatingwebhookconfiguration", VWC)["webhooks"]
            assert [w["clientConfig"]["caBundle"] for w in after] == [
                w["clientConfig"]["caBundle"] for w in vwc_before
            ]
        finally:
            point_webhooks(env, installed.token, installed.webhook_port)
        cm = env.kubectl_json("get", "configmap", "training-operator-dashboard", namespace=NS)
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(cm["data"]["trainop.json"]) == dashboard()
        monitor = env.kubectl_json("get", "servicemonitor", "training-operator", namespace=NS)
        service = env.kubectl_json("get", "service", "training-operator", namespace=NS)
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"][0]["port"] in [p["name"] for p in service["spec"]["ports"]]
        rule = env.kubectl_json("get", "prometheusrule", "training-operator", namespace=NS)
        assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
        assert env.kubectl_json("get", "validatingwebhookconfiguration", VWC)["webhooks"] == vwc_before
    finally:
        point_webhooks(env, installed.token, None)
        helm("upgrade", *monitoring_values("false"), check=False, env=env)
        point_webhooks(env, installed.token, installed.webhook_port)
        for crd in crds:
            env.kubectl("delete", "-f", str(crd), "--ignore-not-found", "--wait=false", check=False)


# --- Prometheus -------------------------------------------------------------------------------------------


def finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(s["value"][1])) for s in result)


def test_every_dashboard_query_returns_series(prometheus: Prometheus, jobs_ran: str) -> None:
    queries = dashboard_queries()
    # The rates span the whole test, so every counter that moved shows it.
    exprs = {q: build_grafana_expr(q.expr, job=SCRAPE_JOB, rate_interval="5m", range_="10m") for q in queries}
    last: dict[Query, list[dict[str, Any]]] = {}

    def all_have_data() -> bool | None:
        for q, expr in exprs.items():
            last[q] = prometheus.query(expr)
        return all(finite(res) for res in last.values()) or None

    try:
        wait_for(all_have_data, 90, "every dashboard query to return series")
    except TimeoutError:
        empty = [f"{q.source}: {exprs[q]}" for q, res in last.items() if not finite(res)]
        raise AssertionError("no data for:\n" + "\n".join(empty)) from None
    # The job counters carry the jobs' namespace and framework.
    by_ns = prometheus.query(
        f'sum by (job_namespace, framework) (training_operator_jobs_created_total{{job="{SCRAPE_JOB}"}})'
    )
    assert {(s["metric"]["job_namespace"], s["metric"]["framework"]) for s in by_ns} >= {
        (jobs_ran, "pytorch")
    }
    methods = prometheus.query("sum by (method) (rest_client_requests_total)")
    assert {s["metric"]["method"] for s in methods} >= {"GET", "POST", "PUT", "DELETE"}


def test_alert_rules_evaluate_quiet_for_the_leader_firing_for_a_lone_standby(
    prometheus: Prometheus, jobs_ran: str
) -> None:
    """Every rule loads and evaluates without error. The image's operator (leader, queue worked, no
    errors) trips none; the standby, scraped alone as its own job, is a job where no replica leads:
    TrainopLeaseLost goes pending for it, and its unworked queue is not taken for a stuck one."""
    want: dict[str, set[str]] = {
        "TrainopWorkQueueStuck": set(),
        "TrainopReconcileErrors": set(),
        "TrainopLeaseLost": {STANDBY_JOB},
    }
    last: dict[str, Any] = {}

    def settled() -> bool | None:
        groups = prometheus.api("rules")["groups"]
        last["rules"] = rules = {r["name"]: r for g in groups for r in g["rules"]}
        if not rules or not all(r.get("lastEvaluation", "").startswith("20") for r in rules.values()):
            return None
        firing = {name: {a["labels"]["job"] for a in r.get("alerts", [])} for name, r in rules.items()}
        last["firing"] = firing
        return firing == want or None

    try:
        wait_for(settled, 60, "the alert rules to be evaluated")
    except TimeoutError:
        raise AssertionError(f"alerts by rule: {last.get('firing')}; rules: {last.get('rules')}") from None
    rules = last["rules"]
    assert set(rules) == {q.source.removeprefix("alert ") for q in alert_queries()}
    assert {(n, r["health"], r.get("lastError", "")) for n, r in rules.items()} == {
        (n, "ok", "") for n in rules
    }
    states = {n: r["state"] for n, r in rules.items()}
    # pending for its `for: 5m`, firing after (a slow run).
    assert states.pop("TrainopLeaseLost") in ("pending", "firing")
    assert states == {"TrainopWorkQueueStuck": "inactive", "TrainopReconcileErrors": "inactive"}
    for q in alert_queries():
        got = {s["metric"]["job"] for s in prometheus.query(q.expr)}
        assert got == want[q.source.removeprefix("alert ")], q.source
    # What they compare is there: the leader's gauge is 1, the standby's 0 with keys in its queue (the
    # queue rule must leave it out), and the leader's queue has been worked.
    leader = prometheus.query("max by (job) (leader_election_master_status)")
    assert {s["metric"]["job"]: s["value"][1] for s in leader} == {SCRAPE_JOB: "1", STANDBY_JOB: "0"}
    depth = prometheus.query(f'sum(workqueue_depth{{job="{STANDBY_JOB}"}})')
    assert float(depth[0]["value"][1]) > 0
    assert prometheus.query(f'sum(rate(workqueue_work_duration_seconds_count{{job="{SCRAPE_JOB}"}}[5m])) > 0')


def test_promtool_accepts_the_rules() -> None:
    got = subprocess.run([str(find_tool("promtool")), "check", "rules", str(ALERTS)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert got.returncode == 0 and "SUCCESS: 3 rules found" in got.stdout, got.stdout + got.stderr
