"""Run a Trainer v2 TrainJob on this machine: every pod of every step as host processes, steps in
their ``dependsOn`` order (initializers before the trainer), addresses on the loopback interface.

The runtime resolver (``trainop.core.trainjob``) decides the steps, pods and env, with a loopback
topology (node 0 at 127.0.0.1 on a free port); ``render.build_pod_processes`` turns each pod into
processes exactly as the local backend does for kubeflow.org/v1 jobs. This runner only starts, waits,
streams and stops: a pod whose container exits non-zero restarts every pod while the runtime's
JobSet ``failurePolicy.maxRestarts`` allows, then fails the TrainJob (JobSet's default failure
policy; its ``rules`` and a Job's own pod retries are not applied here), and the TrainJob is
Complete when every pod of the success policy's target steps succeeded. It runs in the foreground
of ``trainop run`` and records the TrainJob under the home for ``get``/``describe``/``logs``/
``delete`` (``trainjob_state.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import yaml

from trainop.api.constants import (
    COND_FAILED,
    COND_TRAINJOB_COMPLETE,
    NODE,
    REASON_ALL_JOBS_COMPLETED,
    REASON_FAILED_JOBS,
    REASON_REACHED_MAX_RESTARTS,
)
from trainop.api.errors import FieldError, InvalidJobError, required
from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import load_trainer_object
from trainop.backends.local.api import build_host_env
from trainop.backends.local.paths import ensure_home
from trainop.backends.local.ports import probe_free_port
from trainop.backends.local.procs import start_ticks
from trainop.backends.local.render import LocalContext, ProcessSpec, build_pod_processes
from trainop.backends.local.runner import EXIT_START_ERROR, start_error_message
from trainop.backends.local.trainjob_state import STOP_GRACE, TrainJobRecord, build_identity
from trainop.core.trainjob import (
    LoopbackTrainJobTopology,
    PodPlan,
    ResolvedTrainJob,
    RuntimeResolutionError,
    find_runtime,
    resolve_trainjob,
)
from trainop.core.trainjob_status import (
    MESSAGE_COMPLETED,
    MESSAGE_FAILED_JOBS,
    compute_max_restarts,
    count_jobs_status,
    set_condition,
)
from trainop.frameworks.registry import REGISTRY

ENV_TRAINOP_RUNTIMES = "TRAINOP_RUNTIMES"  # a directory of extra runtime manifests
SHIPPED_RUNTIMES = Path(__file__).resolve().parents[2] / "runtimes"  # trainop/runtimes
POLL = 0.05


def shipped_runtime_dirs() -> list[Path]:
    """Where ``trainop run`` looks for (Cluster)TrainingRuntimes besides the manifest itself:
    ``$TRAINOP_RUNTIMES``, then the runtimes trainop ships as package data (``trainop/runtimes``,
    which ``make crds`` copies to manifests/runtimes for ``kubectl apply -k``)."""
    dirs = [Path(extra)] if (extra := os.environ.get(ENV_TRAINOP_RUNTIMES)) else []
    return [*dirs, SHIPPED_RUNTIMES]


def load_runtimes(dirs: Sequence[Path]) -> list[TrainingRuntime]:
    out: list[TrainingRuntime] = []
    for d in dirs:
        for path in sorted(d.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") in ("TrainingRuntime", "ClusterTrainingRuntime"):
                    model = load_trainer_object(doc)
                    assert isinstance(model, TrainingRuntime)
                    out.append(model)
    return out


def split_trainer_documents(docs: Sequence[Any]) -> tuple[TrainJob, list[TrainingRuntime]]:
    """One TrainJob and any runtimes beside it in the same file (upstream's 05-multi-step example has
    both); raises InvalidJobError with what to change."""
    models = [load_trainer_object(doc) for doc in docs]
    jobs = [m for m in models if isinstance(m, TrainJob)]
    if len(jobs) != 1:
        msg = f"the file holds {len(jobs)} TrainJobs; trainop run takes one (and any runtimes)"
        raise InvalidJobError([FieldError("", msg)])
    return jobs[0], [m for m in models if isinstance(m, TrainingRuntime)]


def resolve_file(
    docs: Sequence[Any], *, namespace: str | None = None, local: bool = False
) -> ResolvedTrainJob:
    """The file's TrainJob on its runtime (beside it in the file, under ``$TRAINOP_RUNTIMES`` or
    shipped): as a cluster runs it, or ``local``: node 0 at 127.0.0.1 on a free port. Raises
    InvalidJobError."""
    job, runtimes = split_trainer_documents(docs)
    if namespace is not None:
        job.metadata.namespace = namespace
    try:
        runtime = find_runtime(job, [*runtimes, *load_runtimes(shipped_runtime_dirs())])
        if not local:
            return resolve_trainjob(job, runtime, REGISTRY)
        ml = runtime.spec.ml_policy
        if ml is not None and ml.mpi is not None:
            msg = (
                f"the runtime {runtime.name!r} uses the MPI policy (sshd on every node), which trainop "
                "does not run on one machine yet: run it on a cluster, or use an MPIJob locally"
            )
            raise RuntimeResolutionError([FieldError("spec.runtimeRef", msg)])
        topology = LoopbackTrainJobTopology(ports={(NODE, 0, 0): probe_free_port()})
        return resolve_trainjob(job, runtime, REGISTRY, topology)
    except RuntimeResolutionError as exc:
        raise InvalidJobError(exc.errors, kind=job.kind, name=job.name) from None


@dataclass
class _Proc:
    spec: ProcessSpec
    popen: subprocess.Popen[bytes]
    reader: threading.Thread
    ticks: int | None = None  # its start time (procs.start_ticks): with the pid, its identity


@dataclass
class _PodState:
    plan: PodPlan
    inits: list[ProcessSpec]
    mains: list[ProcessSpec]
    phase: str = "Pending"  # Pending, Running, Succeeded, Failed
    running: list[_Proc] = field(default_factory=list)
    exit_code: int | None = None
    failed_container: str = ""
    start_error: str = ""  # a container that could not start: why (runner.start_error_message)


class LocalTrainJobRun:
    """One foreground run: ``run()`` returns 0 when the TrainJob is Complete, 1 when it Failed."""

    def __init__(
        self,
        resolved: ResolvedTrainJob,
        base_dir: Path,
        out: IO[str],
        *,
        record: TrainJobRecord,
    ) -> None:
        self.resolved = resolved
        self.base_dir = base_dir
        self.out = out
        self.host_env = build_host_env(os.environ)
        self.host_env.setdefault("PYTHONUNBUFFERED", "1")
        self.workdir = Path(tempfile.mkdtemp(prefix=f"trainop-{resolved.job.name}-"))
        self.pods: dict[str, _PodState] = {}
        self.lock = threading.Lock()
        self.reason = ""
        self.record = record
        self.created = datetime.now(UTC)
        self._written: dict[str, Any] | None = None
        self._runner = build_identity(os.getpid())
        self.restarts = 0
        self.policy_max_restarts = compute_max_restarts(resolved)  # None: no failurePolicy
        self.max_restarts = self.policy_max_restarts or 0

    # -- building ------------------------------------------------------------------------------------

    def _volume_dirs(self, plan: PodPlan) -> dict[str, str]:
        out: dict[str, str] = {}
        for vol in (plan.pod.get("spec") or {}).get("volumes") or []:
            name = str(vol.get("name", ""))
            if isinstance(vol.get("hostPath"), dict):
                out[name] = str(vol["hostPath"].get("path", ""))
                continue
            if isinstance(vol.get("persistentVolumeClaim"), dict):  # one directory per claim, shared
                target = self.workdir / "claims" / str(vol["persistentVolumeClaim"].get("claimName", name))
            else:  # emptyDir and anything else: the pod's own
                target = self.workdir / "pods" / plan.name / name
            target.mkdir(parents=True, exist_ok=True)
            out[name] = str(target)
        return out

    def _prepare(self, plan: PodPlan) -> _PodState:
        ctx = LocalContext(
            host_env=self.host_env,
            base_dir=str(self.base_dir),
            hostname=socket.gethostname(),
            cpu_count=os.cpu_count() or 1,
            volume_dirs=self._volume_dirs(plan),
            python=sys.executable,  # a known image's entrypoint (Trainer v2's initializers: images.py)
        )
        procs = build_pod_processes(plan.pod, ctx, template_init_count=10**6)
        for spec in [*procs.init, *procs.main]:
            if not spec.argv:
                msg = (
                    "a command: the local backend runs commands, not images; set spec.trainer.command "
                    "(or the runtime's command for this container)"
                )
                raise InvalidJobError([required(f"pod {plan.name} container {spec.container}", msg)])
        return _PodState(plan, list(procs.init), list(procs.main))

    # -- running -------------------------------------------------------------------------------------

    def run(self) -> int:
        job = self.resolved.job
        try:
            for plan in self.resolved.pods():
                self.pods[plan.name] = self._prepare(plan)
            self.record.create(self._snapshot(None))
            self._say(
                f"trainjob.trainer.kubeflow.org/{job.name} created (runtime {self.resolved.runtime.name})"
            )
            while True:
                self._start_ready_steps()
                self._advance()
                verdict = self._verdict()
                if verdict == "Failed" and self.restarts < self.max_restarts:
                    self._restart_all()
                    continue
                if verdict is not None:
                    break
                self._save(None)
                time.sleep(POLL)
        except KeyboardInterrupt:
            verdict = "Failed"
            self.reason = "interrupted"
        finally:
            self._stop_all()
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._save(verdict)
        self._say(f"TrainJob {job.name} {verdict}" + (f": {self.reason}" if self.reason else ""))
        return 0 if verdict == "Complete" else 1

    def _restart_all(self) -> None:
        """JobSet's failure policy without rules: a failed pod restarts every step's pods, at most
        ``maxRestarts`` times (the claim directories are kept, as the JobSet's PVCs are)."""
        self.restarts += 1
        self._say(
            f"TrainJob {self.resolved.job.name}: {self.reason}; restarting every pod "
            f"({self.restarts}/{self.max_restarts}, the runtime's failurePolicy.maxRestarts)"
        )
        self._stop_all()
        self.reason = ""
        self.pods = {plan.name: self._prepare(plan) for plan in self.resolved.pods()}

    # -- the record (trainop get/describe/logs/delete: backends/local/trainjob_state.py) ----------------

    def _snapshot(self, verdict: str | None) -> dict[str, Any]:
        job = self.resolved.job.model_copy(deep=True)
        job.metadata.creation_timestamp = job.metadata.creation_timestamp or self.created
        obj = job.to_dict()
        pods = []
        for state in self.pods.values():
            pod = {**state.plan.pod, "status": {"phase": state.phase}}
            if state.exit_code is not None:
                pod["status"]["exitCode"] = state.exit_code
                pod["status"]["failedContainer"] = state.failed_container or None
            pods.append(pod)
        status: dict[str, Any] = {
            "conditions": [],
            "jobsStatus": count_jobs_status(
                self.resolved, {p["metadata"]["name"]: p for p in pods}, suspended=False
            ),
        }
        now = datetime.now(UTC)
        if verdict == "Complete":
            set_condition(
                status, COND_TRAINJOB_COMPLETE, "True", REASON_ALL_JOBS_COMPLETED, MESSAGE_COMPLETED, now
            )
        elif verdict == "Failed":
            # JobSet's reasons: FailedJobs, or ReachedMaxRestarts under a failurePolicy.
            reason = REASON_FAILED_JOBS if self.policy_max_restarts is None else REASON_REACHED_MAX_RESTARTS
            reason = reason if self.reason != "interrupted" else "Interrupted"
            set_condition(status, COND_FAILED, "True", reason, self.reason or MESSAGE_FAILED_JOBS, now)
        obj["status"] = status
        live = [p for s in self.pods.values() for p in s.running if p.popen.poll() is None]
        return {
            "object": obj,
            "runtime": self.resolved.runtime.name,
            "runner": self._runner,
            "restarts": self.restarts,
            "sessions": [[p.popen.pid, p.ticks] for p in live] if verdict is None else [],
            "pods": pods,
        }

    def _save(self, verdict: str | None) -> None:
        """Rewrite the record when what it says changed (once per change, not once per poll)."""
        snap = self._snapshot(verdict)
        key = {k: v for k, v in snap.items() if k != "object"} | {"status": snap["object"]["status"]}
        for cond in key["status"]["conditions"]:
            cond.pop("lastTransitionTime", None)
        if key != self._written:
            self.record.write(snap)
            self._written = key

    def _say(self, text: str) -> None:
        with self.lock:
            self.out.write(text + "\n")
            self.out.flush()

    def _step_pods(self, step: str) -> list[_PodState]:
        return [p for p in self.pods.values() if p.plan.step == step]

    def _dep_met(self, step: str, status: str) -> bool:
        met = ("Succeeded",) if status == "Complete" else ("Running", "Succeeded")  # Ready: no probes here
        return all(p.phase in met for p in self._step_pods(step))

    def _start_ready_steps(self) -> None:
        for step in self.resolved.steps:
            if not all(self._dep_met(d, s) for d, s in step.depends_on):
                continue
            for pod in self._step_pods(step.name):
                if pod.phase == "Pending":  # (not started yet)
                    pod.phase = "Running"
                    self._launch_next(pod)

    def _launch_next(self, pod: _PodState) -> None:
        """Start the pod's next init container, or all its main containers once the inits are done. A
        container that cannot start fails the pod with containerd's StartError, as a v1 job's does."""
        specs = [pod.inits.pop(0)] if pod.inits else pod.mains
        if not pod.inits:
            pod.mains = []
        pod.running = []
        for spec in specs:
            try:
                pod.running.append(self._spawn(pod.plan.name, spec))
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                pod.phase, pod.exit_code, pod.failed_container = "Failed", EXIT_START_ERROR, spec.container
                pod.start_error = start_error_message(spec, exc)
                self._say(f"[{pod.plan.name}] {pod.start_error}")
                return

    def _spawn(self, pod: str, spec: ProcessSpec) -> _Proc:
        popen = subprocess.Popen(
            list(spec.argv),
            cwd=spec.cwd or None,
            env=dict(spec.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        prefix = f"[{pod}]" if spec.container in (NODE, "") else f"[{pod}/{spec.container}]"
        log = self.record.log_path(pod, spec.container or NODE)
        reader = threading.Thread(target=self._pump, args=(popen, prefix, log), daemon=True)
        reader.start()
        return _Proc(spec, popen, reader, start_ticks(popen.pid))

    def _pump(self, popen: subprocess.Popen[bytes], prefix: str, log: Path) -> None:
        assert popen.stdout is not None
        with open(log, "ab") as sink:
            for raw in iter(popen.stdout.readline, b""):
                with contextlib.suppress(OSError):  # deleted under us: the terminal still gets it
                    sink.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    sink.flush()
                self._say(f"{prefix} {raw.decode(errors='replace').rstrip()}")

    def _advance(self) -> None:
        for pod in self.pods.values():
            if pod.phase != "Running" or not pod.running:
                continue
            codes = [p.popen.poll() for p in pod.running]
            for proc, code in zip(pod.running, codes, strict=True):
                if code is not None and code != 0:
                    proc.reader.join(timeout=1)
                    pod.phase, pod.exit_code, pod.failed_container = "Failed", code, proc.spec.container
                    return
            if all(c == 0 for c in codes):
                for proc in pod.running:
                    proc.reader.join(timeout=1)
                if pod.inits or pod.mains:
                    self._launch_next(pod)
                else:
                    pod.phase, pod.exit_code, pod.running = "Succeeded", 0, []

    def _verdict(self) -> str | None:
        first = next((p for p in self.pods.values() if p.phase == "Failed"), None)
        if first is not None:
            self.reason = f"pod {first.plan.name} failed: " + (
                first.start_error or f"container {first.failed_container} exited with code {first.exit_code}"
            )
            return "Failed"
        targets = self.resolved.success_targets or tuple(s.name for s in self.resolved.steps)
        done = [all(p.phase == "Succeeded" for p in self._step_pods(t)) for t in targets]
        if (self.resolved.success_operator == "Any" and any(done)) or all(done):
            return "Complete"
        return None

    def _stop_all(self) -> None:
        live = [proc for pod in self.pods.values() for proc in pod.running if proc.popen.poll() is None]
        for proc in live:
            _signal_group(proc.popen, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for proc in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            if proc.popen.poll() is None:
                _signal_group(proc.popen, signal.SIGKILL)
                proc.popen.wait()
            proc.reader.join(timeout=1)


def _signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)


def run_trainjob_file(
    docs: Sequence[Any], base_dir: Path, out: IO[str], *, namespace: str | None = None
) -> int:
    """``trainop run FILE`` for a file holding a TrainJob (and optionally runtimes)."""
    resolved = resolve_file(docs, namespace=namespace, local=True)
    record = TrainJobRecord(ensure_home(), resolved.job.namespace, resolved.job.name)
    # trainop delete stops a running TrainJob with SIGTERM to this process: stop the pods as Ctrl-C does
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return LocalTrainJobRun(resolved, base_dir, out, record=record).run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def render_trainjob(docs: Sequence[Any]) -> list[dict[str, Any]]:
    """The pods and objects a TrainJob becomes on a cluster (``trainop run --dry-run`` / render)."""
    resolved = resolve_file(docs)
    return [*resolved.objects, resolved.build_service(), *(p.pod for p in resolved.pods())]
