"""make bench-k8s: the operator on the real test control plane, against a floor measured in the same run.

500 PyTorchJobs x (1 Master + 3 Workers) are created at once; the operator (a subprocess, like in
production, at --kube-api-qps/--kube-api-burst 200/400) must create 2,000 pods and 2,000 Services
and bring every job to Running (kwok plays kubelet). Printed: seconds from the first and from the
last job created until every pod and Service exists and until every job is Running; API requests
per job; the operator's peak RSS and CPU seconds. The floor: the same 4,000 objects created by a
bare async client through the same 200/400 token bucket. Prints figures; asserts nothing.

    python tests/benchmarks/bench_k8s.py [--jobs 500] [--workers 3] [--qps 200] [--burst 400]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig
from prometheus_client.parser import text_string_to_metric_families

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import build_client, load_config
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import ControlPlane, K8sEnv, free_port, start_env, wait_for

REPO = Path(__file__).resolve().parents[2]
NODE_PODS = 110  # testenv's per-node pod capacity


def proc_stats(pid: int) -> tuple[float, float]:
    """(peak RSS in MB, CPU seconds) of a live process, from /proc."""
    hwm = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return hwm, cpu


def scrape_requests(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "rest_client_requests_total":
                key = f"{s.labels['method']} {s.labels['code']}"
                out[key] = out.get(key, 0.0) + s.value
    return out


@dataclass
class Progress:
    """First-seen times of objects, fed by watches."""

    t0: float
    seen: dict[str, set[str]] = field(
        default_factory=lambda: {"Pod": set(), "Service": set(), "Running": set()}
    )
    done_at: dict[str, float] = field(default_factory=dict)
    targets: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, name: str) -> None:
        bucket = self.seen[what]
        if name in bucket:
            return
        bucket.add(name)
        if len(bucket) >= self.targets.get(what, 1 << 30) and what not in self.done_at:
            self.done_at[what] = time.monotonic()


async def watch_into(
    api: AsyncClient, res: Any, ns: str, on_event: Callable[[str, dict[str, Any]], None]
) -> None:
    async for kind, obj in api.watch(res, namespace=ns):
        on_event(kind, dict(obj))


def running(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Running" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def job_manifest(i: int, ns: str, workers: int, nodes: int) -> dict[str, Any]:
    # Pods are bound to a kwok node up front (spec.nodeName), so the scheduler's own rate limit is not
    # what gets measured; the floor below creates the very same pods.
    node = f"kwok-node-{i % nodes}"

    def bind(t: dict[str, Any]) -> None:
        t["spec"]["nodeName"] = node

    obj = pytorch_job(f"bench-{i:04d}").master(1).workers(workers).template(bind).build_dict()
    obj["metadata"] = {"name": obj["metadata"]["name"], "namespace": ns}
    return obj


async def create_all(api: AsyncClient, objs: list[Any], concurrency: int) -> tuple[float, float]:
    """Create every object; returns (monotonic time of the first response, of the last)."""
    sem = asyncio.Semaphore(concurrency)
    stamps: list[float] = []

    async def one(o: Any) -> None:
        async with sem:
            await api.create(o)
            stamps.append(time.monotonic())

    await asyncio.gather(*(one(o) for o in objs))
    return min(stamps), max(stamps)


def start_operator(env: K8sEnv, args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    metrics = free_port()
    # BENCH_K8S_PROFILE=<file>: run the operator under cProfile (for finding hot spots).
    prof = os.environ.get("BENCH_K8S_PROFILE")
    cmd = [
        sys.executable, *(["-m", "cProfile", "-o", prof] if prof else []), "-m", "trainop.operator",
        f"--kubeconfig={env.kubeconfig}",
        f"--kube-api-qps={args.qps:g}", f"--kube-api-burst={args.burst}",
        f"--controller-threads={args.threads}",
        "--enable-webhook=false",
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{free_port()}",
    ]  # fmt: skip
    with log.open("ab") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    return proc, metrics


def strip_for_floor(obj: dict[str, Any], kind: str, ns: str) -> dict[str, Any]:
    """An object the operator created, as a fresh create request in another namespace (no owner)."""
    meta = obj["metadata"]
    out = {k: copy.deepcopy(v) for k, v in obj.items() if k != "status"}
    out["apiVersion"], out["kind"] = "v1", kind
    out["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
    out["metadata"]["namespace"] = ns
    if kind == "Service":
        out["spec"] = {k: v for k, v in out["spec"].items() if k not in ("clusterIPs",)}
    return out


async def run(env: K8sEnv, args: argparse.Namespace) -> None:
    ns, floor_ns = "bench-operator", "bench-floor"
    for name in (ns, floor_ns):
        env.create_namespace(name)
    n_pods = args.jobs * (1 + args.workers)
    api = AsyncClient(KubeConfig.from_file(env.kubeconfig), trust_env=False)
    log = Path(tempfile.mkdtemp(prefix="bench-k8s-")) / "operator.log"
    proc, metrics_port = start_operator(env, args, log)
    try:
        wait_for(lambda: scrape_requests(metrics_port) or None, 60, "operator metrics")
        await asyncio.sleep(2)  # informers listed and watching
        baseline = scrape_requests(metrics_port)
        jobs = [
            r.JOB_RESOURCES["PyTorchJob"](job_manifest(i, ns, args.workers, args.nodes))
            for i in range(args.jobs)
        ]
        prog = Progress(time.monotonic(), targets={"Pod": n_pods, "Service": n_pods, "Running": args.jobs})

        def on_owned(kind: str) -> Callable[[str, dict[str, Any]], None]:
            return lambda ev, obj: prog.add(kind, obj["metadata"]["name"]) if ev != "DELETED" else None

        def on_job(ev: str, obj: dict[str, Any]) -> None:
            if ev != "DELETED" and running(obj):
                prog.add("Running", obj["metadata"]["name"])

        watches = [
            asyncio.create_task(watch_into(api, r.Pod, ns, on_owned("Pod"))),
            asyncio.create_task(watch_into(api, r.Service, ns, on_owned("Service"))),
            asyncio.create_task(watch_into(api, r.JOB_RESOURCES["PyTorchJob"], ns, on_job)),
        ]
        await asyncio.sleep(1)
        first_job, last_job = await create_all(api, jobs, concurrency=64)
        deadline = time.monotonic() + args.timeout
        while len(prog.done_at) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        running_at = scrape_requests(metrics_port)
        rss, cpu = proc_stats(proc.pid)
        # Events go last (lowest priority): let them drain to count every request a job costs.
        prev = -1.0
        while time.monotonic() < deadline:
            total = sum(scrape_requests(metrics_port).values())
            if total == prev:
                break
            prev = total
            await asyncio.sleep(2)
        settled = scrape_requests(metrics_port)
        rss, cpu = proc_stats(proc.pid)
        for w in watches:
            w.cancel()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    # --- the floor: the same objects, a bare client, the same token bucket --------------------------------
    pods = [dict(p) async for p in api.list(r.Pod, namespace=ns)]
    svcs = [dict(s) async for s in api.list(r.Service, namespace=ns)]
    floor_objs = [r.Pod(strip_for_floor(p, "Pod", floor_ns)) for p in pods] + [
        r.Service(strip_for_floor(s, "Service", floor_ns)) for s in svcs
    ]
    bare = build_client(load_config(str(env.kubeconfig)), qps=args.qps, burst=args.burst)
    t_floor = time.monotonic()
    _, floor_last = await create_all(bare.api, floor_objs, concurrency=200)
    floor_s = floor_last - t_floor
    await bare.aclose()
    await api.close()

    def delta(a: dict[str, float], b: dict[str, float]) -> float:
        return sum(a.values()) - sum(b.values())

    objects = len(pods) + len(svcs)
    t_objects = max(prog.done_at.get("Pod", float("nan")), prog.done_at.get("Service", float("nan")))
    t_running = prog.done_at.get("Running", float("nan"))
    print(f"bench-k8s: {args.jobs} PyTorchJobs x (1 Master + {args.workers} Workers), QPS/burst {args.qps:g}/{args.burst}, "
          f"{args.threads} workers, {args.nodes} kwok nodes")  # fmt: skip
    print(f"  jobs created in                         {last_job - first_job:7.2f} s")
    print(f"  all {len(pods)} pods + {len(svcs)} services exist   {t_objects - last_job:7.2f} s after the last job "
          f"({t_objects - first_job:.2f} s after the first)")  # fmt: skip
    print(f"  every job Running                       {t_running - last_job:7.2f} s after the last job "
          f"({t_running - first_job:.2f} s after the first)")  # fmt: skip
    print(f"  floor: bare client, same {objects} objects {floor_s:7.2f} s")
    op_from_first = objects / (t_objects - first_job)
    op_from_last = objects / max(1e-9, t_objects - last_job)
    floor_tp = objects / floor_s
    print(f"  throughput (objects/s): floor {floor_tp:.0f}; operator {op_from_first:.0f} counted from the first job "
          f"(x{op_from_first / floor_tp:.2f} floor), {op_from_last:.0f} from the last (x{op_from_last / floor_tp:.2f})")  # fmt: skip
    print(f"  API requests per job: {delta(running_at, baseline) / args.jobs:.2f} until Running, "
          f"{delta(settled, baseline) / args.jobs:.2f} with every event sent")  # fmt: skip
    by_kind = {k: settled.get(k, 0) - baseline.get(k, 0) for k in sorted(set(settled) | set(baseline))}
    print("    " + ", ".join(f"{k}: {v:.0f}" for k, v in by_kind.items() if v))
    print(f"  operator peak RSS {rss:.0f} MB, CPU {cpu:.1f} s (log: {log})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=500)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--qps", type=float, default=200)
    p.add_argument("--burst", type=int, default=400)
    p.add_argument("--threads", type=int, default=32, help="--controller-threads of the operator")
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args()
    pods = 2 * args.jobs * (1 + args.workers)  # operator phase + floor phase stay on the nodes
    args.nodes = max(3, -(-pods // (NODE_PODS - 10)))
    state = os.environ.get("TRAINOP_TESTENV_STATE")
    plane: ControlPlane | None = None
    if state:
        env = K8sEnv.from_state(Path(state))
        args.nodes = len(env.nodes)
    else:
        plane = start_env(nodes=args.nodes)
        env = K8sEnv.from_plane(plane)
    try:
        env.kubectl("apply", "-k", str(REPO / "manifests" / "crds"))
        env.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/pytorchjobs.kubeflow.org")
        asyncio.run(run(env, args))
    finally:
        if plane is not None:
            plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
