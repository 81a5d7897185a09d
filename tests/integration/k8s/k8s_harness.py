"""Helpers for the operator's integration tests: run ``python -m trainop.operator`` as a real process
against the test control plane, scrape its endpoints, and read jobs and their pods.

The operator runs as a subprocess (as in production), so a test can SIGKILL and restart it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightkube import ApiError, Client
from lightkube.core.client import LabelSelector
from lightkube.types import PatchType
from prometheus_client.parser import text_string_to_metric_families

from trainop.backends.kubernetes import resources as r
from trainop.testing.testenv import K8sEnv, free_port, start_env, wait_for

REPO = Path(__file__).resolve().parents[3]
V1_CRDS = [
    f"crd/{p}.kubeflow.org"
    for p in ("pytorchjobs", "tfjobs", "xgboostjobs", "mpijobs", "paddlejobs", "jaxjobs")
]


def install_crds(env: K8sEnv) -> None:
    """trainop's generated CRDs (manifests/crds), once the v1 kinds' are Established."""
    env.kubectl("apply", "-k", str(REPO / "manifests" / "crds"))
    env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *V1_CRDS)


@contextlib.contextmanager
def own_control_plane(**kw: Any) -> Iterator[K8sEnv]:
    """A control plane of a module's own, for what the session's cannot share (CRDs are cluster-wide,
    and so are nodes and schedulers); ``kw`` as ``start_env``'s."""
    plane = start_env(keep_run_dir=bool(os.environ.get("TRAINOP_TESTENV_KEEP")), **kw)
    try:
        yield K8sEnv.from_plane(plane)
    finally:
        plane.stop()


@contextlib.contextmanager
def running_operator(env: K8sEnv, args: list[str], log_path: Path) -> Iterator[OperatorProcess]:
    """An operator process, ready, stopped after."""
    op = OperatorProcess(env, args, log_path).start()
    try:
        op.wait_ready()
        yield op
    finally:
        op.stop()


@contextlib.contextmanager
def fresh_namespace(env: K8sEnv, prefix: str, test_name: str) -> Iterator[str]:
    """A namespace named after the test, deleted after it."""
    base = re.sub(r"[^a-z0-9-]+", "-", test_name.lower())[:40].strip("-")
    ns = env.create_namespace(f"{prefix}-{base}-{secrets.token_hex(3)}")
    try:
        yield ns
    finally:
        env.delete_namespace(ns)


@dataclass
class OperatorProcess:
    """One ``python -m trainop.operator`` process; ``args`` are its flags (ports are added here)."""

    env: K8sEnv
    args: list[str]
    log_path: Path
    kubeconfig: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    metrics_port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig or self.env.kubeconfig), **self.extra_env}
        env.pop("KUBEFLOW_NAMESPACE", None)
        cmd = [
            sys.executable,
            "-m",
            "trainop.operator",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
            "--zap-log-level=debug",
            *self.args,
        ]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        return self

    # --- endpoints ------------------------------------------------------------------------------------
    def get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def wait_ready(self, timeout: float = 90.0) -> None:
        def ready() -> bool | None:
            self.check_alive()
            return self.get(self.probe_port, "/readyz")[0] == 200 or None

        wait_for(ready, timeout, f"operator /readyz ({self.log_path})")

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample on /metrics by (name, sorted labels)."""
        _, text = self.get(self.metrics_port, "/metrics")
        out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def metric(self, name: str, **labels: str) -> float:
        """The sum of ``name`` over the samples whose labels include ``labels`` (0 when absent)."""
        want = set(labels.items())
        return sum(v for (n, ls), v in self.metrics().items() if n == name and want <= set(ls))

    def writes(self) -> float:
        """API requests that change something (POST/PUT/PATCH/DELETE), from rest_client_requests_total."""
        return sum(
            self.metric("rest_client_requests_total", method=m) for m in ("POST", "PUT", "PATCH", "DELETE")
        )

    # --- lifecycle ------------------------------------------------------------------------------------
    def check_alive(self) -> None:
        assert self.proc is not None
        rc = self.proc.poll()
        if rc is not None:
            raise AssertionError(f"operator exited with {rc}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)

    def wait_reconciled(self, kind: str, namespace: str, name: str, resource_version: str) -> None:
        """Until a reconcile pass of this operator has decided on the job at ``resource_version`` or
        later (its debug line, controller/jobs.py): what that pass would do is then done. This is how a
        test proves that something does NOT happen, instead of sleeping through a window."""
        pattern = re.compile(
            rf"reconciled {re.escape(kind)} {re.escape(namespace)}/{re.escape(name)} at resourceVersion (\d+)"
        )

        def seen() -> bool | None:
            self.check_alive()
            text = self.log_path.read_text(errors="replace")
            return any(int(v) >= int(resource_version) for v in pattern.findall(text)) or None

        wait_for(
            seen,
            60,
            f"{self.log_path.name}: a reconcile of {kind} {namespace}/{name} at rv {resource_version}",
        )

    def kill(self) -> None:
        """SIGKILL: no lease release, no flushing, like a node failure."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


StartOperator = Callable[..., OperatorProcess]  # the start_operator fixture: (*flags, name=, wait=, ...)


def job_resource(kind: str) -> Any:
    return r.JOB_RESOURCES[kind]


@dataclass
class Cluster:
    """Reads and writes for one test namespace through a lightkube admin client."""

    env: K8sEnv
    namespace: str
    client: Client = field(init=False)
    _nudges: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.client = self.env.client(namespace=self.namespace)

    def close(self) -> None:
        self.client.close()

    # jobs
    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["namespace"] = self.namespace
        obj["metadata"].pop("uid", None)
        return dict(self.client.create(job_resource(obj["kind"])(obj)))

    def job(self, kind: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.client.get(job_resource(kind), name, namespace=self.namespace))
        except ApiError as e:
            if e.status.code == 404:
                return None
            raise

    def patch_job(self, kind: str, name: str, patch: dict[str, Any]) -> None:
        self.client.patch(
            job_resource(kind), name, patch, namespace=self.namespace, patch_type=PatchType.MERGE
        )

    def nudge_job(self, kind: str, name: str) -> str:
        """Touch an annotation of the job (which every operator ignores) so that it is reconciled again;
        returns the job's new resourceVersion, for OperatorProcess.wait_reconciled."""
        self._nudges += 1
        obj = self.client.patch(
            job_resource(kind),
            name,
            {"metadata": {"annotations": {"test.trainop.dev/nudge": str(self._nudges)}}},
            namespace=self.namespace,
            patch_type=PatchType.MERGE,
        )
        return str(dict(obj)["metadata"]["resourceVersion"])

    def settled(self, operator: OperatorProcess, kind: str, name: str) -> None:
        """Until ``operator`` has reconciled the job after every change made so far."""
        operator.wait_reconciled(kind, self.namespace, name, self.nudge_job(kind, name))

    def delete_job(self, kind: str, name: str) -> None:
        with contextlib.suppress(ApiError):
            self.client.delete(job_resource(kind), name, namespace=self.namespace)

    def condition(self, kind: str, name: str, ctype: str) -> dict[str, Any] | None:
        job = self.job(kind, name) or {}
        for c in (job.get("status") or {}).get("conditions") or []:
            if c.get("type") == ctype:
                return dict(c)
        return None

    def wait_condition(
        self, kind: str, name: str, ctype: str, status: str = "True", timeout: float = 90.0
    ) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            c = self.condition(kind, name, ctype)
            return c if c is not None and c.get("status") == status else None

        return wait_for(check, timeout, f"{kind} {self.namespace}/{name} condition {ctype}={status}")

    def watch_condition(
        self, kind: str, name: str, ctype: str, *, since: dict[str, Any], status: str = "True",
        timeout: float = 90.0,
    ) -> dict[str, Any]:  # fmt: skip
        """Wait until some version of the job, from ``since`` (the object ``create`` returned) on, has
        condition ``ctype=status``. A watch delivers every version, where polling sees only the one that is
        current at each poll: a job with ttlSecondsAfterFinished=1 may be Succeeded for well under a
        second (completionTime has whole-second precision), then gone, and a poll can miss it."""

        def matching(obj: dict[str, Any]) -> dict[str, Any] | None:
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c.get("type") == ctype and c.get("status") == status:
                    return dict(c)
            return None

        async def watch() -> dict[str, Any] | None:
            client = self.env.async_client(namespace=self.namespace)
            try:
                async with asyncio.timeout(timeout):
                    stream = client.watch(
                        job_resource(kind),
                        namespace=self.namespace,
                        fields={"metadata.name": name},
                        resource_version=since["metadata"]["resourceVersion"],
                    )
                    async for _, obj in stream:
                        got = matching(dict(obj))
                        if got is not None:
                            return got
            except TimeoutError:
                return None
            finally:
                await client.close()
            return None

        got = matching(since) or asyncio.run(watch())
        if got is None:
            now = self.condition_types(kind, name)
            raise TimeoutError(
                f"timed out after {timeout:.0f}s waiting for {kind} {self.namespace}/{name} to reach "
                f"{ctype}={status} (conditions now: {now}, or the job is gone)"
            )
        return got

    def condition_types(self, kind: str, name: str) -> list[tuple[str, str]]:
        job = self.job(kind, name) or {}
        return [(c["type"], c["status"]) for c in (job.get("status") or {}).get("conditions") or []]

    # owned objects
    def owned(self, res: Any, job_name: str | None = None) -> list[dict[str, Any]]:
        """The objects of kind ``res`` in the namespace (those of the job ``job_name`` if given)."""
        labels: LabelSelector | None = {"training.kubeflow.org/job-name": job_name} if job_name else None
        items = [dict(o) for o in self.client.list(res, namespace=self.namespace, labels=labels)]
        return sorted(items, key=lambda o: o["metadata"]["name"])

    def pods(self, job_name: str) -> list[dict[str, Any]]:
        return self.owned(r.Pod, job_name)

    def live_pods(self, job_name: str) -> list[dict[str, Any]]:
        return [p for p in self.pods(job_name) if not p["metadata"].get("deletionTimestamp")]

    def services(self, job_name: str) -> list[dict[str, Any]]:
        return self.owned(r.Service, job_name)

    def get(self, res: Any, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.client.get(res, name, namespace=self.namespace))
        except ApiError as e:
            if e.status.code == 404:
                return None
            raise

    def events(self, name: str) -> list[dict[str, Any]]:
        evs = [dict(e) for e in self.client.list(r.Event, namespace=self.namespace)]
        return [e for e in evs if (e.get("involvedObject") or {}).get("name") == name]

    def event_reasons(self, name: str) -> set[str]:
        return {str(e.get("reason")) for e in self.events(name)}


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """A container's env as {name: value, or {"valueFrom": ...}}."""
    out: dict[str, Any] = {}
    for e in container.get("env") or []:
        out[e["name"]] = e["value"] if "value" in e else {"valueFrom": e.get("valueFrom")}
    return out


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    for c in pod["spec"]["containers"]:
        if c["name"] == name:
            return dict(c)
    raise AssertionError(f"pod {pod['metadata']['name']} has no container {name}")


def annotate(template_ops: dict[str, str]) -> Any:
    """A JobBuilder.template() callback that sets pod-template annotations (kwok's pod fate)."""

    def op(template: dict[str, Any]) -> None:
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(template_ops)

    return op


def wait_gone(check: Any, timeout: float = 60.0, what: str = "objects to go away") -> None:
    wait_for(lambda: check() == [] or None, timeout, what)
