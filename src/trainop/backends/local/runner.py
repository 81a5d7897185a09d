"""The local kubelet: runs each Pod the core creates as host processes and reports it as a kubelet would.

Init containers run first, in order; then every container runs, each as a session leader (its own
process group), with stdout and stderr in one log file per attempt. Restart semantics follow the
kubelet: Always/OnFailure restart in place with exponential back-off (1 s doubling to a cap),
Never leaves the container terminated; the pod phase is computed with the kubelet's rule. Deleting
a pod sends SIGTERM to each container's main process (once: it passes it on as it chooses) and
SIGKILL to its sessions after the grace period. A replica cannot outlive its supervisor unnoticed
(see ``_spawn``). The runner never decides anything about the job: it only runs pods and reports them
(Kubernetes Pod JSON) for the core.

Seams: everything the runner asks of the operating system (start a process, wait for exits, signal a
session, a process's identity) goes through a ``ProcessHost`` (``OsProcessHost``: Popen, waitpid,
killpg and /proc), and time through ``clock`` (only ``abandon``'s bounded wait reads the monotonic
clock); both are constructor arguments, so the restart, back-off and deletion rules are unit-tested
with a fake host and clock (tests/unit/backends/test_local_runner.py). Whether a pod may be scheduled
at all is asked of an optional ``SchedulingGate`` (the local gang: backends/local/gang.py) before the
runner allocates the pod's GPUs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from trainop.api.constants import ENV_TRAINOP_JOB_UID
from trainop.backends.local import procs
from trainop.backends.local.paths import StatePaths, open_log
from trainop.backends.local.render import (
    DEFAULT_GRACE_SECONDS,
    POD_IP,
    LocalContext,
    PodProcesses,
    ProcessSpec,
    build_agent_files,
    build_configmap_files,
    build_exec_context,
    build_gpu_wants,
    build_pod_processes,
)
from trainop.backends.local.store import ProcessRow, Store

BACKOFF_START = 1.0
DEFAULT_BACKOFF_MAX = 10.0
EXIT_START_ERROR = 128  # what containerd reports when a container cannot start
REFUSAL_PREFIX = "0/1 nodes are available: insufficient nvidia.com/gpu: "
NO_GPU_HINT = "nvidia-smi lists no GPU; TRAINOP_GPUS overrides the inventory"


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ProcessHandle(Protocol):
    """A started container process as the runner holds it (``subprocess.Popen`` is one)."""

    pid: int
    returncode: int | None  # set by the runner once it reaped the process


class ProcessHost(Protocol):
    """What the runner asks of the operating system. It decides nothing: which process to start or
    signal, and what an exit means for the pod, are the runner's."""

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], log: BinaryIO) -> ProcessHandle:
        """Start ``argv`` as the leader of a new session, stdout and stderr to ``log``. Raises
        OSError (FileNotFoundError naming ``argv[0]`` or ``cwd``), ValueError or SubprocessError
        when it cannot start."""
        ...

    def start_ticks(self, pid: int) -> int | None:
        """When ``pid`` started (clock ticks since boot): with the pid, the process's identity."""
        ...

    def wait_any(self) -> tuple[int, int] | None:
        """One exited child, reaped: (pid, exit code; -n when killed by signal n), or None when no
        child has exited."""
        ...

    def signal_session(self, sid: int, leader_ticks: int | None, sig: int) -> None:
        """Send ``sig`` as a kubelet would: SIGKILL once to every process of session ``sid``; any other
        signal (SIGTERM) to its main process only, which passes it on as it chooses (its session
        gets SIGKILL when it ends, ``_on_exit``). Nothing when the leader is alive but started at
        another time than ``leader_ticks``: the id was reused."""
        ...

    def kill_leftovers(self, sid: int, leader_ticks: int | None) -> int:
        """SIGKILL whatever still lives in the session of ``sid``, whose leader has exited; returns
        how many were found (0 too when the pid now names a later process)."""
        ...

    def kill_marked(self, name: str, value: str) -> int:
        """SIGKILL every process whose environment has ``name=value``, and its session when it is
        the job's; returns how many were marked."""
        ...


class OsProcessHost:
    """The real host: ``subprocess.Popen``, ``os.waitpid``, ``os.killpg``/``os.kill`` and /proc
    (backends/local/procs.py)."""

    def spawn(
        self, argv: Sequence[str], cwd: str, env: Mapping[str, str], log: BinaryIO
    ) -> subprocess.Popen[bytes]:
        """The process is bound to the supervisor's life before it runs any code of its own
        (procs.build_die_with_parent: PR_SET_PDEATHSIG, and if the supervisor died before that took
        effect, it kills itself before exec); see ``PodRunner._spawn``."""
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session and process group: killed as a whole
            close_fds=True,
            preexec_fn=procs.build_die_with_parent(),  # the supervisor has one thread: fork is safe
        )

    def start_ticks(self, pid: int) -> int | None:
        return procs.start_ticks(pid)

    def wait_any(self) -> tuple[int, int] | None:
        # Any child: our replicas, and orphans re-parented to us as subreaper.
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        return pid, os.waitstatus_to_exitcode(status)

    def signal_session(self, sid: int, leader_ticks: int | None, sig: int) -> None:
        if sig == signal.SIGKILL:
            procs.signal_session(sid, leader_ticks, sig)
        else:
            procs.signal_main(sid, leader_ticks, sig)

    def kill_leftovers(self, sid: int, leader_ticks: int | None) -> int:
        return procs.signal_session(sid, leader_ticks, signal.SIGKILL)

    def kill_marked(self, name: str, value: str) -> int:
        return procs.kill_marked(name, value)


class SchedulingGate(Protocol):
    """May a pod be scheduled now: a job-level admission in front of the runner's own per-pod
    scheduling (the GPUs each pod asks for). The local gang (backends/local/gang.py) is one.

    The runner calls ``begin_tick`` at the start of every ``tick``, then ``refusal`` for each pod that
    still waits to be scheduled, in order; a gate may answer the whole tick from one decision. It
    decides only; the runner records what it says."""

    def begin_tick(self) -> None:
        """A new tick: what the gate decided for the previous one may have changed."""
        ...

    def refusal(self, pod: Mapping[str, Any]) -> str | None:
        """None: ``pod`` may be scheduled now (the runner still allocates its GPUs). Otherwise why
        not, as a scheduler says it: the pod stays Pending with PodScheduled False (Unschedulable)
        and this message, and a FailedScheduling Warning is emitted once per new message."""
        ...


@dataclass(slots=True)
class ContainerRun:
    spec: ProcessSpec
    image: str
    restart_count: int = 0
    proc: ProcessHandle | None = None
    pid: int | None = None
    ticks: int | None = None
    attempt: int = -1
    started_at: float | None = None
    running: bool = False
    terminated: dict[str, Any] | None = None  # current terminated state (no restart pending)
    last_terminated: dict[str, Any] | None = None
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    next_start: float | None = None  # a start (or restart) is due at this time
    backoff: float = BACKOFF_START

    @property
    def done_ok(self) -> bool:
        return self.terminated is not None and self.terminated.get("exitCode") == 0


@dataclass(slots=True)
class PodRun:
    obj: dict[str, Any]  # metadata + spec, as the core created it
    created_at: float
    frozen_status: dict[str, Any] | None = None  # a pod loaded from the store with nothing running
    scheduled: bool = False
    unschedulable: str = ""
    pending_message: str = ""
    start_time: float | None = None
    plan: PodProcesses | None = None
    inits: list[ContainerRun] = field(default_factory=list)
    mains: list[ContainerRun] = field(default_factory=list)
    deletion_ts: float | None = None
    kill_at: float | None = None
    grace: float = DEFAULT_GRACE_SECONDS  # its plan's, once prepared
    transitions: dict[str, tuple[str, float]] = field(default_factory=dict)
    gpus: dict[str, tuple[str, ...]] = field(default_factory=dict)  # container → GPU ids

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def restart_policy(self) -> str:
        return str(self.obj.get("spec", {}).get("restartPolicy") or "Always")

    def all_runs(self) -> list[ContainerRun]:
        return [*self.inits, *self.mains]

    def live(self) -> list[ContainerRun]:
        return [c for c in self.all_runs() if c.running]


@dataclass(frozen=True, slots=True)
class JobIdentity:
    uid: str
    namespace: str
    name: str


class PodRunner:
    """All pods of one job, driven by the supervisor: ``add``/``delete`` from the core's actions,
    ``reap`` on SIGCHLD and ``tick`` on timers; ``pod_dicts`` is what the core observes. Processes
    go through ``host`` and time comes from ``clock`` (the real ones by default); ``gate``, when
    set, must admit a pod before it is scheduled (``SchedulingGate``)."""

    def __init__(
        self,
        store: Store,
        paths: StatePaths,
        job: JobIdentity,
        context: LocalContext,
        *,
        gpu_inventory: tuple[str, ...] = (),
        backoff_max: float = DEFAULT_BACKOFF_MAX,
        template_init_count: Callable[[dict[str, Any]], int] = lambda pod: 0,
        main_container: str | None = None,
        clock: Callable[[], float] = time.time,
        host: ProcessHost | None = None,
        gate: SchedulingGate | None = None,
    ) -> None:
        self.store = store
        self.paths = paths
        self.job = job
        self.context = context
        self.gpu_inventory = gpu_inventory
        self.backoff_max = backoff_max
        self.template_init_count = template_init_count
        self.main_container = main_container
        self.clock = clock
        self.host: ProcessHost = host if host is not None else OsProcessHost()
        self.gate = gate
        self.pods: dict[str, PodRun] = {}
        self.by_pid: dict[int, tuple[PodRun, ContainerRun]] = {}
        self.events: list[tuple[str, str, str]] = []  # (type, reason, message) for the job
        self.changed = False
        # Writes of the processes table the store refused, retried in order by ``flush``.
        self.unsaved: list[Callable[[], None]] = []

    # ---- lifecycle from the core's actions ----
    def add(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if name in self.pods:
            return  # AlreadyExists is success
        now = self.clock()
        pod.setdefault("metadata", {}).setdefault("creationTimestamp", rfc3339(now))
        self.pods[name] = PodRun(obj=pod, created_at=now)
        shutil.rmtree(self.paths.pod_dir(self.job.namespace, self.job.name, name), ignore_errors=True)
        self.changed = True

    def restore(self, pod: dict[str, Any]) -> None:
        """A pod from the store, run by an earlier supervisor: its last reported status is kept as is."""
        status = pod.get("status") or {}
        obj = {k: v for k, v in pod.items() if k != "status"}
        meta = dict(obj.get("metadata") or {})
        deleting = meta.pop("deletionTimestamp", None) is not None
        meta.pop("deletionGracePeriodSeconds", None)
        obj["metadata"] = meta
        run = PodRun(obj=obj, created_at=self.clock(), frozen_status=status)
        if deleting:  # its deletion was under way: nothing runs any more, so it completes now
            run.deletion_ts = run.kill_at = self.clock()
        self.pods[meta["name"]] = run

    def delete(self, name: str, grace: float | None = None) -> None:
        pod = self.pods.get(name)
        if pod is None:
            return
        now = self.clock()
        if pod.deletion_ts is not None:
            # A second delete may only shorten the grace period (as on Kubernetes).
            if grace is not None and pod.kill_at is not None and now + grace < pod.kill_at:
                pod.kill_at = now + grace
            return
        pod.deletion_ts = now
        if grace is not None:  # else the pod's own (terminationGracePeriodSeconds)
            pod.grace = grace
        pod.kill_at = now + pod.grace
        for c in pod.all_runs():
            c.next_start = None
            if c.running and c.pid is not None:
                self.host.signal_session(c.pid, c.ticks, signal.SIGTERM if pod.grace > 0 else signal.SIGKILL)
        self.changed = True

    def delete_all(self, grace: float | None = None) -> None:
        for name in list(self.pods):
            self.delete(name, grace)

    def update_configmap(self, cm: dict[str, Any]) -> None:
        """A ConfigMap changed (MPI's discover_hosts.sh): refresh the volumes of running pods, like the
        kubelet's periodic configMap sync."""
        for pod in self.pods.values():
            if pod.scheduled and pod.frozen_status is None:
                for vol in (pod.obj.get("spec") or {}).get("volumes") or []:
                    src = vol.get("configMap") if isinstance(vol, dict) else None
                    if isinstance(src, dict) and src.get("name") == cm["metadata"]["name"]:
                        self._write_configmap_volume(pod, vol, cm)

    # ---- process events ----
    def reap(self) -> None:
        """Collect every exited child (our replicas, and orphans re-parented to us as subreaper)."""
        while (exited := self.host.wait_any()) is not None:
            pid, code = exited
            entry = self.by_pid.pop(pid, None)
            if entry is None:
                continue
            if code < 0:
                code = 128 - code  # killed by signal n → 128 + n, as container runtimes report it
            pod, c = entry
            if c.proc is not None:
                c.proc.returncode = code  # reaped here; keep Popen from waiting on it again
            self._on_exit(pod, c, code)

    def _on_exit(self, pod: PodRun, c: ContainerRun, code: int) -> None:
        now = self.clock()
        # A container ends with its main process: whatever it left behind in its session goes too.
        if c.pid is not None:
            self.host.signal_session(c.pid, None, signal.SIGKILL)
        reason = "Completed" if code == 0 else "Error"
        term = {**_termination(code, reason, c.started_at or now, now), "containerID": f"local://{c.pid}"}
        ran = now - (c.started_at or now)
        c.running, c.proc = False, None
        self._terminated(pod, c, term, ran)
        self._save(
            partial(self.store.finish_process, self.job.uid, pod.name, c.spec.container, c.attempt, code, now)
        )

    # ---- the processes table: memory first, the store after ----
    def _save(self, write: Callable[[], None]) -> None:
        """Record a start or an exit. What runs is known in memory first (the exit was reaped, the pid
        is watched), so a store that refuses the write costs nothing but the record: it is kept, in
        order, and retried by ``flush``, which raises until the store takes it."""
        self.unsaved.append(write)
        with contextlib.suppress(Exception):  # flush() at the end of tick() raises it
            self.flush()

    def flush(self) -> None:
        while self.unsaved:
            self.unsaved[0]()  # idempotent: INSERT OR REPLACE, UPDATE … WHERE finished_at IS NULL
            del self.unsaved[0]

    def _terminated(self, pod: PodRun, c: ContainerRun, term: dict[str, Any], ran: float) -> None:
        now = self.clock()
        self.changed = True
        policy = pod.restart_policy
        code = int(term["exitCode"])
        restart = pod.deletion_ts is None and (
            (policy == "Always" and not c.spec.init) or (policy != "Never" and code != 0)
        )
        if not restart:
            c.terminated = term
            return
        # kubelet crash-loop back-off: 1 s, doubling to the cap; reset after a long enough good run.
        if ran >= 2 * self.backoff_max:
            c.backoff = BACKOFF_START
        delay = c.backoff
        c.backoff = min(c.backoff * 2, self.backoff_max)
        c.terminated = None
        c.last_terminated = term
        c.waiting_reason = "CrashLoopBackOff"
        c.waiting_message = (
            f"back-off {delay:g}s restarting failed container={c.spec.container} pod={pod.name}"
        )
        c.next_start = now + delay

    # ---- the periodic step ----
    def tick(self) -> None:
        """Progress every pod; raises (after progressing them all) while a record is still unsaved."""
        now = self.clock()
        if self.gate is not None:
            self.gate.begin_tick()
        for pod in list(self.pods.values()):
            if pod.frozen_status is not None:
                if pod.deletion_ts is not None:
                    self._finalize(pod)
                continue
            if pod.deletion_ts is not None:
                self._progress_deletion(pod, now)
                continue
            if not pod.scheduled and not self._schedule(pod, now):
                continue
            if pod.plan is None and not self._prepare(pod, now):
                continue
            self._progress(pod, now)
        self.flush()

    def _schedule(self, pod: PodRun, now: float) -> bool:
        refusal = self.gate.refusal(pod.obj) if self.gate is not None else None
        if refusal is not None:
            self._unschedulable(pod, refusal)
            return False
        wants = build_gpu_wants(pod.obj)
        if wants:
            total = sum(n for _, n in wants)
            got = self.store.allocate_gpus(self.job.uid, pod.name, wants, self.gpu_inventory)
            if got is None:
                used = self.store.gpus_in_use()
                free = len([g for g in self.gpu_inventory if g not in used])
                need = f"{REFUSAL_PREFIX}pod {pod.name} needs {total}"
                if not self.gpu_inventory:
                    msg = f"{need} and this machine has none ({NO_GPU_HINT})"
                else:
                    msg = (
                        f"{need}, {free} of {len(self.gpu_inventory)} are free ({len(used)} in use by "
                        "running jobs); it starts when enough are released"
                    )
                self._unschedulable(pod, msg)
                return False
            gpus = {k: tuple(v) for k, v in got.items()}
        else:
            gpus = {}
        pod.scheduled, pod.unschedulable, pod.start_time = True, "", now
        pod.obj.setdefault("spec", {})["nodeName"] = self.context.hostname
        pod.gpus = gpus
        self.changed = True
        return True

    def _unschedulable(self, pod: PodRun, msg: str) -> None:
        """``pod`` stays Pending, with ``msg`` as PodScheduled's message (and a FailedScheduling
        Warning when the message is new), like a scheduler that found no place for it."""
        if msg != pod.unschedulable:
            pod.unschedulable = msg
            self.events.append(("Warning", "FailedScheduling", msg))
            self.changed = True

    def _prepare(self, pod: PodRun, now: float) -> bool:
        """Materialise volumes and build the process specs; False while a ConfigMap is missing."""
        volume_dirs: dict[str, str] = {}
        for vol in (pod.obj.get("spec") or {}).get("volumes") or []:
            if isinstance(vol, dict):
                if (vdir := self._volume_dir(pod, vol)) is None:
                    return False
                volume_dirs[str(vol.get("name", ""))] = vdir
        ctx = dataclasses.replace(
            self.context, volume_dirs=volume_dirs, gpus=pod.gpus, machine_has_gpus=bool(self.gpu_inventory)
        )
        pod.plan = build_pod_processes(pod.obj, ctx, self.template_init_count(pod.obj))
        pod.grace = pod.plan.grace_seconds
        images = {
            str(c.get("name")): str(c.get("image", ""))
            for key in ("initContainers", "containers")
            for c in (pod.obj.get("spec") or {}).get(key) or []
            if isinstance(c, dict)
        }
        pod.inits, pod.mains = (
            [ContainerRun(s, images.get(s.container, ""), waiting_reason="PodInitializing") for s in specs]
            for specs in (pod.plan.init, pod.plan.main)
        )
        for c in pod.inits[:1] if pod.inits else pod.mains:
            c.waiting_reason = "ContainerCreating"
        pod.pending_message = ""
        self.changed = True
        return True

    def _volume_dir(self, pod: PodRun, vol: dict[str, Any]) -> str | None:
        """The directory that serves volume ``vol`` to ``pod``, made ready: the host's path, the job's
        directory of a claim, or the pod's own (a ConfigMap's files written in it); None while its
        ConfigMap is missing, which becomes the pod's pending message."""
        vname = str(vol.get("name", ""))
        target = self.paths.pod_volume(self.job.namespace, self.job.name, pod.name, vname)
        cm = vol.get("configMap")
        if isinstance(vol.get("hostPath"), dict):
            return str(vol["hostPath"].get("path", ""))
        if isinstance(vol.get("persistentVolumeClaim"), dict):
            # One directory per claim, shared by every replica of the job (train()'s storage).
            claim = str(vol["persistentVolumeClaim"].get("claimName", ""))
            target = self.paths.claim_dir(self.job.namespace, self.job.name, claim)
        elif isinstance(cm, dict):
            cm_name = str(cm.get("name", ""))
            cms = [
                o
                for o in self.store.list_objects(self.job.uid, "ConfigMap")
                if o["metadata"]["name"] == cm_name
            ]
            if cms:
                self._write_configmap_volume(pod, vol, cms[0])
            elif not cm.get("optional"):
                msg = f'MountVolume.SetUp failed for volume "{vname}": configmap "{cm_name}" not found'
                if pod.pending_message != msg:
                    pod.pending_message = msg
                    self.changed = True
                return None
        target.mkdir(parents=True, exist_ok=True)  # (and an emptyDir's: other sources were refused at submit)
        return str(target)

    def _write_configmap_volume(self, pod: PodRun, vol: dict[str, Any], cm: dict[str, Any]) -> None:
        target = self.paths.pod_volume(self.job.namespace, self.job.name, pod.name, str(vol.get("name", "")))
        target.mkdir(parents=True, exist_ok=True)
        exec_dir = self.paths.exec_dir(self.job.namespace, self.job.name)
        agents = build_agent_files(self.context.kind, str(exec_dir), self.job.name)
        files = build_configmap_files(cm, vol["configMap"], agents)
        for rel, (content, mode) in files.items():
            path = target / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(content)
            os.chmod(tmp, mode)
            os.replace(tmp, path)  # atomic, so a reader never sees half a hostfile

    def _progress(self, pod: PodRun, now: float) -> None:
        # Init containers: one at a time, in order; the app containers start once all succeeded.
        for c in pod.inits:
            if c.done_ok:
                continue
            if not c.running and c.terminated is None and _due(c, now):
                self._start(pod, c, now)
            if not c.done_ok:
                return  # running, backing off, or failed under restartPolicy Never
        for c in pod.mains:
            if not c.running and c.terminated is None and _due(c, now):
                self._start(pod, c, now)
        if pod.gpus and compute_phase(pod) in ("Succeeded", "Failed"):
            self.store.release_gpus(self.job.uid, pod.name)
            pod.gpus = {}

    def _start(self, pod: PodRun, c: ContainerRun, now: float) -> None:
        # What can fail comes before any change to ``c``: a start that raised is simply tried again.
        # The store's count of attempts, unless an earlier attempt's record is still unsaved.
        attempt = max(self.store.next_attempt(self.job.uid, pod.name, c.spec.container), c.attempt + 1)
        log_path = self.paths.container_log(
            self.job.namespace, self.job.name, pod.name, c.spec.container, attempt
        )
        self.changed = True
        c.next_start = None
        if c.attempt >= 0:
            c.restart_count += 1
        c.attempt = attempt
        c.started_at = now
        if c.spec.noop is not None:
            why = f"not run on the local backend: {c.spec.noop}"
            with contextlib.suppress(OSError), open_log(log_path) as noop_log:  # owner-only, like every log
                noop_log.write(f"[trainop] {c.spec.container}: {why}\n".encode())
            c.terminated = _termination(0, "Completed", now, now, message=why)
            self._record(pod, c, now, log_path, finished=0)
            return
        try:
            # Before the process: what the runtime needs for a container is a condition of starting it
            # (a disk that refuses its log is a failed start, as for containerd, not a crashed supervisor).
            if not c.spec.init and c.spec.container == self._exec_container(pod):
                self._write_exec_context(pod, c.spec)
            log = open_log(log_path)
        except OSError as exc:
            self._start_failed(
                pod, c, now, log_path, f"failed to start container {c.spec.container!r}: {exc}"
            )
            return
        with log:
            try:
                proc = self._spawn(c.spec, log)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                msg = start_error_message(c.spec, exc)
                with contextlib.suppress(OSError):
                    log.write(f"[trainop] {msg}\n".encode())
                self._start_failed(pod, c, now, log_path, msg)
                return
        c.proc, c.pid, c.running = proc, proc.pid, True
        c.ticks = self.host.start_ticks(proc.pid)
        self.by_pid[proc.pid] = (pod, c)
        self._record(pod, c, now, log_path)

    def _spawn(self, spec: ProcessSpec, log: BinaryIO) -> ProcessHandle:
        """Start one container's process, which can never outlive the supervisor unnoticed: from fork
        until its pid is in the store, a SIGKILL of the supervisor would leave it unknown to the
        recovery rule and to ``trainop delete``. So, before it can run any code of its own:

        - it is bound to the supervisor's life (the host's part: ``OsProcessHost.spawn``);
        - its environment carries ``TRAINOP_JOB_UID`` (it has it from exec on), which everything it
          forks inherits along with its session: the recovery rule and a delete without supervisor kill
          the sessions of every process so marked (procs.kill_marked), recorded or not.

        What escapes both is a descendant that left the replica's session and process group *and*
        cleared its environment; without cgroups nothing finds it.
        """
        return self.host.spawn(spec.argv, spec.cwd, {**spec.env, ENV_TRAINOP_JOB_UID: self.job.uid}, log)

    def _start_failed(self, pod: PodRun, c: ContainerRun, now: float, log_path: Path, msg: str) -> None:
        """A container that could not start: terminated with containerd's StartError (128) and the
        kubelet's Warning event; its restart policy then applies as to any exit."""
        self.events.append(("Warning", "Failed", f"Error: {msg}"))
        self._terminated(pod, c, _termination(EXIT_START_ERROR, "StartError", now, now, message=msg), 0.0)
        self._record(pod, c, now, log_path, finished=EXIT_START_ERROR)

    def _exec_container(self, pod: PodRun) -> str:
        """The container ``kubectl exec`` would pick: MPI's mainContainer if the pod has it, else
        the first."""
        names = [c.spec.container for c in pod.mains]
        if self.main_container in names:
            return str(self.main_container)
        return names[0] if names else ""

    def _write_exec_context(self, pod: PodRun, spec: ProcessSpec) -> None:
        path = self.paths.exec_context(self.job.namespace, self.job.name, pod.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(build_exec_context(spec))
        os.chmod(tmp, 0o700)
        os.replace(tmp, path)

    def _record(
        self, pod: PodRun, c: ContainerRun, now: float, log: Path, finished: int | None = None
    ) -> None:
        """Record the attempt ``c`` just started (``_save``); ``finished``: the code it ended with at once
        (a no-op helper, or a failed start)."""
        running = finished is None
        row = ProcessRow(
            job_uid=self.job.uid,
            pod=pod.name,
            container=c.spec.container,
            attempt=c.attempt,
            pod_uid=str(pod.obj["metadata"].get("uid", "")),
            init=c.spec.init,
            pid=c.pid if running else None,
            ticks=c.ticks if running else None,
            boot=procs.boot_id(),
            started_at=now,
            finished_at=None if running else now,
            exit_code=finished,
            log_path=str(log),
        )
        self._save(partial(self.store.add_process, row))

    def _progress_deletion(self, pod: PodRun, now: float) -> None:
        live = pod.live()
        if live and pod.kill_at is not None and now >= pod.kill_at:
            for c in live:
                if c.pid is not None:
                    self.host.signal_session(c.pid, c.ticks, signal.SIGKILL)
            pod.kill_at = now + 1.0  # keep insisting until the kernel reports them gone
        if live:
            return
        # The containers' main processes are gone; so must be anything left in their sessions (they
        # were sent SIGKILL when their leader exited) before the pod counts as deleted.
        leftovers = sum(
            [self.host.kill_leftovers(c.pid, c.ticks) for c in pod.all_runs() if c.pid is not None]
        )
        if leftovers:
            pod.kill_at = now + 0.05  # look again shortly
            return
        self._finalize(pod)

    def _finalize(self, pod: PodRun) -> None:
        # The store first: if it refuses, the pod stays (in memory too) and the next tick tries again.
        self.store.release_gpus(self.job.uid, pod.name)
        self.store.remove_pod(self.job.uid, pod.name)
        shutil.rmtree(self.paths.pod_dir(self.job.namespace, self.job.name, pod.name), ignore_errors=True)
        with contextlib.suppress(OSError):
            self.paths.exec_context(self.job.namespace, self.job.name, pod.name).unlink()
        del self.pods[pod.name]
        self.changed = True

    def abandon(self, timeout: float = 10.0) -> None:
        """The supervisor gives up: SIGKILL every replica session now, and every process marked as this
        job's (procs.kill_marked), then reap them, until none is left or ``timeout``. Their containers
        end terminated in memory; the records are only tried (the store may be why it gives up)."""
        now = self.clock()
        for pod in self.pods.values():
            if pod.deletion_ts is None:
                pod.deletion_ts = now  # so that no container is restarted
            pod.kill_at = now
            for c in pod.all_runs():
                c.next_start = None
        deadline = time.monotonic() + timeout
        while True:
            for _, c in list(self.by_pid.values()):
                if c.pid is not None:
                    self.host.signal_session(c.pid, c.ticks, signal.SIGKILL)
            marked = self.host.kill_marked(ENV_TRAINOP_JOB_UID, self.job.uid)
            self.reap()
            if (not self.by_pid and not marked) or time.monotonic() >= deadline:
                return
            time.sleep(0.01)  # SIGKILL is delivered, not instant: look again

    # ---- timers and observation ----
    def next_wakeup(self) -> float | None:
        times = [pod.kill_at if pod.deletion_ts is not None else None for pod in self.pods.values()]
        times += [c.next_start for pod in self.pods.values() for c in pod.all_runs()]
        return min((t for t in times if t is not None), default=None)

    def has_live_processes(self) -> bool:
        return bool(self.by_pid)

    def is_idle(self) -> bool:
        """Nothing left to supervise: no process running, no start or kill due, no pod being deleted,
        and no pod still to start (one waiting for GPUs starts even after its job has finished)."""
        return (
            not self.by_pid
            and self.next_wakeup() is None
            and all(
                p.deletion_ts is None
                and (p.frozen_status is not None or compute_phase(p) in ("Succeeded", "Failed"))
                for p in self.pods.values()
            )
        )

    def pod_dicts(self) -> list[dict[str, Any]]:
        return [self.pod_dict(p) for p in self.pods.values()]

    def pod_dict(self, pod: PodRun) -> dict[str, Any]:
        obj = dict(pod.obj)
        meta = dict(obj.get("metadata") or {})
        if pod.deletion_ts is not None:
            meta["deletionTimestamp"] = rfc3339(pod.deletion_ts)
            meta["deletionGracePeriodSeconds"] = int(pod.grace)
        obj["metadata"] = meta
        obj["status"] = pod.frozen_status if pod.frozen_status is not None else self._status(pod)
        return obj

    def _condition(
        self, pod: PodRun, ctype: str, status: str, reason: str = "", message: str = ""
    ) -> dict[str, Any]:
        prev = pod.transitions.get(ctype)
        if prev is None or prev[0] != status:
            pod.transitions[ctype] = (status, self.clock())
        cond: dict[str, Any] = {
            "type": ctype,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(pod.transitions[ctype][1]),
        }
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        return cond

    def _status(self, pod: PodRun) -> dict[str, Any]:
        phase = compute_phase(pod)
        if not pod.scheduled:
            # Just created: no condition yet. Refused for lack of GPUs: say so, as the scheduler does.
            unschedulable = ("PodScheduled", "False", "Unschedulable", pod.unschedulable)
            return {
                "phase": phase,
                "conditions": [self._condition(pod, *unschedulable)] if pod.unschedulable else [],
            }
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": self._conditions(pod, phase),
            "hostIP": POD_IP,
            "podIP": POD_IP,
            "podIPs": [{"ip": POD_IP}],
            "startTime": rfc3339(pod.start_time or pod.created_at),
        }
        if pod.pending_message:
            status["message"] = pod.pending_message
        if pod.inits:
            status["initContainerStatuses"] = [_container_status(c) for c in pod.inits]
        status["containerStatuses"] = [_container_status(c) for c in pod.mains]
        status["qosClass"] = "BestEffort"
        return status

    def _conditions(self, pod: PodRun, phase: str) -> list[dict[str, Any]]:
        """A scheduled pod's conditions: PodScheduled, Initialized, ContainersReady and Ready."""
        incomplete = " ".join(c.spec.container for c in pod.inits if not c.done_ok)
        unready = " ".join(c.spec.container for c in pod.mains if not c.running)
        initialized = (
            "False",
            "ContainersNotInitialized",
            f"containers with incomplete status: [{incomplete}]",
        )
        if unready:
            ready = ("False", "ContainersNotReady", f"containers with unready status: [{unready}]")
        else:
            ready = ("False" if not pod.mains else "True", "PodCompleted" if phase == "Succeeded" else "", "")
        return [
            self._condition(pod, "PodScheduled", "True"),
            self._condition(pod, "Initialized", *(initialized if incomplete else ("True", "", ""))),
            *(self._condition(pod, ctype, *ready) for ctype in ("ContainersReady", "Ready")),
        ]


def _termination(
    code: int, reason: str, started: float, finished: float, message: str = ""
) -> dict[str, Any]:
    """A container's ``terminated`` state, its keys in the Pod API's order."""
    return {
        "exitCode": code,
        "reason": reason,
        **({"message": message} if message else {}),
        "startedAt": rfc3339(started),
        "finishedAt": rfc3339(finished),
    }


def _container_status(c: ContainerRun) -> dict[str, Any]:
    if c.running:
        state: dict[str, Any] = {"running": {"startedAt": rfc3339(c.started_at or 0)}}
    elif c.terminated is not None:
        state = {"terminated": c.terminated}
    else:
        waiting: dict[str, Any] = {"reason": c.waiting_reason}
        if c.waiting_message:
            waiting["message"] = c.waiting_message
        state = {"waiting": waiting}
    out: dict[str, Any] = {
        "name": c.spec.container,
        "image": c.image,
        "imageID": "",
        "ready": c.running,
        "started": c.running,
        "restartCount": c.restart_count,
        "state": state,
        "lastState": {"terminated": c.last_terminated} if c.last_terminated else {},
    }
    if c.pid is not None:
        out["containerID"] = f"local://{c.pid}"
    return out


def compute_phase(pod: PodRun) -> str:
    """The kubelet's pod phase rule (pkg/kubelet/kubelet_pods.go getPhase), over our containers."""
    if pod.frozen_status is not None:
        return str(pod.frozen_status.get("phase", "Failed"))
    if not pod.scheduled or pod.plan is None:
        return "Pending"
    policy = pod.restart_policy
    for c in pod.inits:
        if c.terminated is not None and not c.done_ok and policy == "Never":
            return "Failed"
        if not c.done_ok:
            return "Pending"
    running = waiting = stopped = succeeded = 0
    for c in pod.mains:
        if c.running:
            running += 1
        elif c.terminated is not None:
            stopped += 1
            succeeded += c.done_ok
        elif c.last_terminated is not None:
            stopped += 1  # crash-looping: counts as stopped, like the kubelet
        else:
            waiting += 1
    if waiting > 0:
        return "Pending"
    if running > 0:
        return "Running"
    if stopped > 0:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def start_error_message(spec: ProcessSpec, exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename == spec.cwd:
        return f"failed to start container {spec.container!r}: working directory {spec.cwd!r} does not exist"
    if isinstance(exc, FileNotFoundError):
        return (
            f"failed to start container {spec.container!r}: exec: "
            f'"{spec.argv[0] if spec.argv else ""}": executable file not found in $PATH'
        )
    if isinstance(exc, NotADirectoryError):
        return (
            f"failed to start container {spec.container!r}: working directory {spec.cwd!r} is not a directory"
        )
    return f"failed to start container {spec.container!r}: {exc}"


def _due(c: ContainerRun, now: float) -> bool:
    """Never started yet, or its back-off has run out."""
    return c.attempt < 0 or (c.next_start is not None and c.next_start <= now)
