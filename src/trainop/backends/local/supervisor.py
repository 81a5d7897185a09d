"""The local backend's per-job supervisor: observe → ``core.reconcile`` → apply, until the job is done.

``trainop submit`` starts one per job, detached in its own session (backends/local/spawn.py: a fork
of the CLI, or ``python -m trainop.backends.local.supervisor --home H UID``), so the job outlives
the shell. It owns the
job's replica processes (a child subreaper, so nothing escapes it), wakes on SIGCHLD, on SIGUSR1
(a shell changed the job) and on timers (restart back-off, kill deadlines, the core's requeue),
and leaves once the job has finished, no process is left and no TTL is pending. It decides nothing
itself: conditions, restarts, back-off limits, deadlines, cleanup, TTL and suspend come from the core.
It cannot leave a job behind: an error anywhere is retried, and once errors have lasted too long it
stops the replicas and writes the job Failed naming the error (see ``Supervisor.run``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import select
import shutil
import signal
import socket
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainop.api.common import JobStatus, TrainingJob
from trainop.api.constants import (
    COND_FAILED,
    ENV_TRAINOP_JOB_UID,
    ENV_TRAINOP_RESTART_BACKOFF_MAX,
    ENV_TRAINOP_SUPERVISOR_GIVE_UP,
    LABEL_REPLICA_TYPE,
)
from trainop.api.defaults import apply_defaults
from trainop.api.load import parse_job
from trainop.backends.executor import execute_plan, run_sync
from trainop.backends.local import procs
from trainop.backends.local.attach import build_interrupted_manifest, detect_client_gone
from trainop.backends.local.gang import GangGate, build_local_gang_scheduler
from trainop.backends.local.gpus import detect_gpu_inventory
from trainop.backends.local.paths import StatePaths, remove_job_files
from trainop.backends.local.ports import probe_free_port
from trainop.backends.local.progress import ProgressSink
from trainop.backends.local.render import LocalContext
from trainop.backends.local.runner import DEFAULT_BACKOFF_MAX, JobIdentity, PodRunner, rfc3339
from trainop.backends.local.store import JobRow, Store
from trainop.core.admission import GangRequest, build_gang_request
from trainop.core.observed import Observed
from trainop.core.plan import Action, CreateObject, DeleteObject, Event, Plan, UpdateObject
from trainop.core.reconcile import reconcile
from trainop.core.status import build_condition, detect_finished, set_condition
from trainop.core.topology import LoopbackTopology
from trainop.frameworks.registry import REGISTRY

RETRY_FIRST = 0.5  # after an unexpected error, the first retry; doubling to RETRY_SECONDS
RETRY_SECONDS = 5.0
DEFAULT_GIVE_UP = 60.0  # seconds of errors without one good step, then the job is failed
REASON_SUPERVISOR_FAILED = "SupervisorFailed"
POLL_SECONDS = 1.0  # fallback re-read of the job row; shells also send SIGUSR1 on every change
_WAKE_SIGNALS = (signal.SIGCHLD, signal.SIGUSR1)
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def log(msg: str) -> None:
    # The log is on the same disk as the state: when that is full, losing a line must not add an error.
    with contextlib.suppress(OSError, ValueError):
        print(f"{datetime.now(UTC).strftime('%H:%M:%S.%f')[:-3]} {msg}", file=sys.stderr, flush=True)


def allocate_port(store: Store, uid: str, rtype: str, index: int) -> int:
    """A free loopback port for one replica: the kernel picks one (bind to 0), the store's registry
    makes sure no other job or replica was handed the same number."""
    for _ in range(64):
        port = probe_free_port()
        if store.reserve_port(uid, rtype, index, port):
            return port
    raise RuntimeError("could not find a free port on 127.0.0.1")


def build_topology(store: Store, uid: str, job: TrainingJob) -> LoopbackTopology:
    """127.0.0.1 and one registered port per (replica type, index) of the defaulted job."""
    ports = store.job_ports(uid)
    for rtype, spec in apply_defaults(job).replica_specs.items():
        for i in range(max(spec.replicas or 0, 0)):
            if (rtype, i) not in ports:
                ports[(rtype, i)] = allocate_port(store, uid, rtype, i)
    return LoopbackTopology(ports=ports)


def read_job(row: JobRow) -> TrainingJob:
    return parse_job({**row.manifest, "status": row.status})


def build_local_gang(row: JobRow, job: TrainingJob, status: JobStatus | None) -> GangRequest | None:
    """What the job's gang asks of the machine's GPUs (backends/local/gang.py), or None when nothing is
    to be admitted: its gang needs no GPU, or the job is suspended or finished (no pod of it is to
    start as a gang, and it must hold no place in the queue)."""
    if job.run_policy.suspend or detect_finished(status):
        return None
    request = build_gang_request(apply_defaults(job), row.uid, row.created_at, row.host_env)
    return request if request.gpus > 0 else None


def template_init_counter(job: TrainingJob) -> Callable[[dict[str, Any]], int]:
    """How many init containers the user's template of a pod's replica type has (the rest are the
    operator's), looked up by the pod's replica-type label."""
    counts = {
        rtype.lower(): len(spec.pod_spec.get("initContainers") or [])
        for rtype, spec in job.replica_specs.items()
    }
    return lambda pod: counts.get(
        (pod.get("metadata", {}).get("labels") or {}).get(LABEL_REPLICA_TYPE, ""), 0
    )


class Supervisor:
    def __init__(self, store: Store, paths: StatePaths, uid: str) -> None:
        self.store = store
        self.paths = paths
        self.uid = uid
        self.stop_signal: int | None = None
        self.sent_keys: set[str] = set()
        self.requeue_at: float | None = None
        self.last_generation = -1
        self._runner: PodRunner | None = None  # set up by the first step
        self.gang: GangGate | None = None  # the runner's scheduling gate (backends/local/gang.py)
        self.progress: ProgressSink | None = None  # the replicas' progress endpoint (issue 27)
        self.give_up_after = DEFAULT_GIVE_UP
        # Errors: since when steps fail (None: the last one succeeded), and when to try again.
        self.failing_since: float | None = None
        self.retry_at: float | None = None
        self.retry_delay = RETRY_FIRST

    @property
    def runner(self) -> PodRunner:
        if self._runner is None:
            raise RuntimeError("the supervisor has not set up its runner yet")
        return self._runner

    # ---- signals: handlers only set flags; the wakeup fd makes select() return ----
    def _install_signals(self) -> int:
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        for sig in _WAKE_SIGNALS:
            signal.signal(sig, lambda *_: None)
        for sig in _STOP_SIGNALS:
            signal.signal(sig, self._on_stop)
        return r

    def _on_stop(self, signum: int, _frame: Any) -> None:
        self.stop_signal = signum

    def run(self) -> int:
        """Supervise the job until its work is over. Every way out leaves the job in a state the rest
        of trainop acts on:

        - done (finished, or deleted): the supervisor is recorded ``exited``;
        - stopped by a signal: the replicas are stopped and the supervisor stays recorded ``running``,
          so the next command finds it dead and the recovery rule takes over;
        - an error in any step (a store write, a log that cannot be opened, a bug) is retried with
          back-off while the replicas stay supervised; once errors have lasted ``give_up_after``
          seconds without one good step, the replicas are killed and the job is written Failed
          (reason SupervisorFailed, the error in the message), or removed if its deletion was asked
          for; if the store refuses even that, the job is left to the recovery rule as above.
        """
        row = self.store.get_job(self.uid)
        if row is None:
            return 0
        pid = os.getpid()
        if not self.store.claim_supervisor(
            self.uid, pid, procs.start_ticks(pid), procs.boot_id(), time.time()
        ):
            log(f"job {row.namespace}/{row.name} already has a supervisor; leaving")
            return 0
        procs.set_child_subreaper()
        wake_fd = self._install_signals()
        self.give_up_after = _env_seconds(row.host_env, ENV_TRAINOP_SUPERVISOR_GIVE_UP, DEFAULT_GIVE_UP, 0.0)
        log(f"supervising {row.kind} {row.namespace}/{row.name} (pid {pid})")
        try:
            done = self._loop(wake_fd)
        except Exception as exc:
            done = self._give_up(exc)
        finally:
            if self.progress is not None:
                self.progress.close()
        if not done:
            return 1
        try:
            self.store.release_supervisor(self.uid, pid)
        except Exception:  # then it is found dead, and recovered, like any other
            log("could not record the supervisor's exit:\n" + traceback.format_exc())
            return 1
        return 0

    def _setup(self) -> PodRunner:
        row = self.store.get_job(self.uid)
        if row is None:
            raise LookupError(f"job {self.uid} is gone")
        job = read_job(row)
        self.plugin = REGISTRY.get(row.kind)
        main_container = job.spec.main_container_name()  # (MPI's mainContainer; the spec's hook)
        if self.progress is None:
            self.progress = ProgressSink(self.paths, row.uid, row.namespace, row.name)
        context = build_context(row)
        context = dataclasses.replace(context, host_env={**context.host_env, **self.progress.env()})
        inventory = detect_gpu_inventory(row.host_env)
        self.gang = GangGate(self.store, inventory)
        runner = PodRunner(
            self.store,
            self.paths,
            JobIdentity(row.uid, row.namespace, row.name),
            context,
            gpu_inventory=inventory,
            backoff_max=_env_seconds(row.host_env, ENV_TRAINOP_RESTART_BACKOFF_MAX, DEFAULT_BACKOFF_MAX, 1.0),
            template_init_count=template_init_counter(job),
            main_container=main_container,
            gate=self.gang,
        )
        for pod in self.store.list_pods(self.uid):
            runner.restore(pod)
        self.gang.request = build_local_gang(row, job, job.status)
        if self.gang.request is None:
            self.store.release_gang(self.uid)  # a place an earlier supervisor left in the queue
        return runner

    def _update_gang(self, row: JobRow, job: TrainingJob, status: JobStatus) -> None:
        """Keep the job's gang request current (minAvailable, replicas or limits may have changed), and
        leave the queue, giving back reserved GPUs, once the job is suspended or finished."""
        assert self.gang is not None
        request = build_local_gang(row, job, status)
        if request is None and self.gang.request is not None:
            self.store.release_gang(self.uid)
        self.gang.request = request

    def _loop(self, wake_fd: int) -> bool:
        """Steps until the job's work is over (True) or a stop signal left it to recovery (False).
        Raises the error that outlasted ``give_up_after``."""
        while True:
            now = time.time()
            if self.retry_at is None or now >= self.retry_at or self.stop_signal is not None:
                try:
                    outcome = self._step(now)
                except Exception as exc:
                    self._step_failed(exc, now)
                else:
                    self.failing_since = self.retry_at = None
                    self.retry_delay = RETRY_FIRST
                    if outcome is not None:
                        return outcome
            self._wait(wake_fd, now)

    def _step(self, now: float) -> bool | None:
        """Reap, then act on what changed; True/False ends the loop (see ``_loop``)."""
        if self._runner is None:
            self._runner = self._setup()
        runner = self._runner
        runner.reap()
        if self.stop_signal is not None:
            # Someone stopped the supervisor itself: stop the replicas with it. The next trainop
            # command sees the job unfinished without a supervisor and recovers it.
            runner.delete_all()
            runner.tick()
            self._write_pods()
            if runner.has_live_processes():
                return None
            msg = (
                f"the supervisor (pid {os.getpid()}) was stopped by signal {self.stop_signal} and "
                "stopped the job's replicas; the next trainop command starts a new supervisor"
            )
            self.store.add_events(self.uid, [("Warning", "SupervisorStopped", msg)], time.time())
            log(msg)
            return False
        self._stop_if_client_gone(now)
        gen = self.store.job_generation(self.uid)
        if gen is None:
            # The row vanished (a forced delete): nothing to report to, kill what is left.
            runner.delete_all(0)
            runner.tick()
            return None if runner.has_live_processes() else True
        if gen[1] is not None:
            return True if self._delete_job() else None
        runner.tick()
        due = self.requeue_at is not None and now >= self.requeue_at
        if runner.changed or gen[0] != self.last_generation or due or self.failing_since is not None:
            self.last_generation = gen[0]
            if self._pass():
                return True
        return None

    _client_checked_at = 0.0

    def _stop_if_client_gone(self, now: float) -> None:
        """The ``trainop run`` this job is attached to is gone (SIGKILL, a vanished terminal) while the
        job runs: stop it as run's Ctrl-C does (suspended and marked interrupted: the replicas get
        their grace periods, the record and logs stay for ``logs``, ``resume`` and ``delete``), so that
        the CLI's process is never the only thing that knows the job must stop
        (backends/local/attach.py). Looked at once per POLL_SECONDS at most."""
        if now - self._client_checked_at < POLL_SECONDS:
            return
        self._client_checked_at = now
        row = self.store.get_job(self.uid)
        if row is None or row.deletion_requested_at is not None:
            return
        why = detect_client_gone(row.manifest, row.status)
        if why is not None:
            self.store.add_events(self.uid, [("Warning", "AttachedClientGone", why)], now)
            self.store.write_manifest(
                self.uid, build_interrupted_manifest(row.manifest, row.generation, rfc3339(now))
            )
            log(why)

    def _step_failed(self, exc: Exception, now: float) -> None:
        """Log the error, report it once on the job (a Warning event, counted when it repeats), and
        try again after a back-off; raise it once errors have lasted ``give_up_after``."""
        if self.failing_since is None:
            self.failing_since = now
        if now - self.failing_since >= self.give_up_after:
            raise exc
        log(f"a step failed (retrying in {self.retry_delay:g}s):\n" + traceback.format_exc())
        if self._runner is not None:
            self._runner.changed = False
        self.retry_at = now + self.retry_delay
        self.retry_delay = min(self.retry_delay * 2, RETRY_SECONDS)
        with contextlib.suppress(Exception):
            message = (
                f"the local supervisor could not reconcile the job (retrying): {type(exc).__name__}: {exc}"
            )
            self.store.add_events(self.uid, [("Warning", "ReconcileError", message)], now)

    def _give_up(self, exc: Exception) -> bool:
        """Errors outlasted ``give_up_after`` (see ``run``). True when the job's end is written."""
        error = f"{type(exc).__name__}: {exc}"
        log(f"giving up on the job: {error}\n" + "".join(traceback.format_exception(exc)))
        with contextlib.suppress(Exception):
            if self._runner is not None:
                self._runner.abandon()
            else:
                procs.kill_marked(ENV_TRAINOP_JOB_UID, self.uid)
        if self._runner is not None:
            with contextlib.suppress(Exception):
                self._runner.flush()
            with contextlib.suppress(Exception):
                self._write_pods()
        try:
            row = self.store.get_job(self.uid)
            if row is None:
                return True
            if row.deletion_requested_at is not None:
                remove_job_files(self.paths, row.namespace, row.name)
                self.store.delete_job(self.uid)
                return True
            self._write_failed(row, error)
        except Exception:
            log(
                "could not record the job's failure; the next trainop command recovers it:\n"
                + traceback.format_exc()
            )
            return False
        return True

    def _write_failed(self, row: JobRow, error: str) -> None:
        """The job Failed, with the supervisor's error as the condition's message (and an event)."""
        job = read_job(row)
        status = job.status.model_copy(deep=True) if job.status is not None else JobStatus()
        now = datetime.now(UTC)
        message = (
            f"{row.kind} {row.name} is failed because its local supervisor gave up after "
            f"{self.give_up_after:g}s of errors and stopped its replicas: {error}"
        )
        set_condition(status, build_condition(COND_FAILED, "True", REASON_SUPERVISOR_FAILED, message, now))
        if status.completion_time is None:
            status.completion_time = now
        self.store.write_status(self.uid, status.to_dict())
        with contextlib.suppress(Exception):
            self.store.add_events(self.uid, [("Warning", REASON_SUPERVISOR_FAILED, message)], time.time())
        log(message)

    def _wait(self, wake_fd: int, now: float) -> None:
        runner = self._runner
        deadlines = (runner.next_wakeup() if runner else None, self.requeue_at, self.retry_at)
        timeout = min([POLL_SECONDS, *(max(0.0, t - now) for t in deadlines if t is not None)])
        if runner is not None and runner.changed and self.retry_at is None:
            timeout = 0.0
        with contextlib.suppress(InterruptedError):
            select.select([wake_fd], [], [], timeout)
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(wake_fd, 512):
                pass

    # ---- one reconcile pass ----
    def _pass(self) -> bool:
        """Observe, reconcile, apply. True when the supervisor's work is over."""
        row = self.store.get_job(self.uid)
        if row is None:
            return False
        job = read_job(row)
        topology = build_topology(self.store, self.uid, job)
        self.runner.changed = False
        observed = Observed(
            job=job,
            pods=self.runner.pod_dicts(),
            services=self.store.list_objects(self.uid, "Service"),
            extras=self._extras(),
        )
        gang = build_local_gang_scheduler(row.host_env)  # checked at submit
        plan = reconcile(job, observed, self.plugin, topology, datetime.now(UTC), gang=gang)
        self._apply(plan)
        self._update_gang(row, job, plan.status)
        if plan.deletes_job:
            self.store.request_deletion(self.uid, time.time(), None)
            return self._delete_job()
        finished = detect_finished(plan.status)
        return finished and plan.requeue_after is None and self.runner.is_idle() and not self.runner.changed

    def _extras(self) -> dict[str, list[dict[str, Any]]]:
        extras: dict[str, list[dict[str, Any]]] = {}
        for obj in self.store.list_objects(self.uid):
            if obj.get("kind") not in ("Service",):
                extras.setdefault(str(obj.get("kind")), []).append(obj)
        return extras

    def _apply(self, plan: Plan) -> None:
        """Through the shared executor (backends/executor.py): actions in order, each with its outcome
        event, the status once if it changed, then the plan's events. Its one failure rule (upstream's,
        as on Kubernetes): after a failed action neither the status nor the plan's events are written;
        ApplyError reaches ``_loop``, which retries the step with back-off (and, past
        ``give_up_after``, fails the job). The outcome events of what was attempted, and what the
        runner reports, are written either way."""
        if plan.skipped:
            return
        writer = _LocalWriter(self, time.time())
        try:
            run_sync(execute_plan(plan, writer))
        finally:
            if not writer.pods_written:
                self._write_pods()
            writer.events.extend(self.runner.events)
            self.runner.events.clear()
            self.store.add_events(self.uid, writer.events, writer.now)
        self.requeue_at = writer.now + plan.requeue_after if plan.requeue_after is not None else None

    def _apply_object(self, obj: dict[str, Any], *, create: bool, now: float) -> None:
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", rfc3339(now))
        if obj.get("kind") == "Pod":
            self.runner.add(obj)
            return
        if create and any(
            o["metadata"]["name"] == meta.get("name")
            for o in self.store.list_objects(self.uid, str(obj["kind"]))
        ):
            return  # AlreadyExists is success
        self.store.write_object(self.uid, obj)
        if obj.get("kind") == "ConfigMap" and not create:
            self.runner.update_configmap(obj)

    def _write_pods(self) -> None:
        pods = self.runner.pod_dicts()
        if pods:
            self.store.write_pods(self.uid, pods)

    def _delete_job(self) -> bool:
        """Deletion was requested (trainop delete, or TTL): stop every replica (SIGTERM, then SIGKILL
        after the grace period), then remove the job, its state and its logs. True once done."""
        row = self.store.get_job(self.uid)
        grace = row.deletion_grace if row is not None else 0.0
        self.runner.delete_all(grace)
        self.runner.tick()
        self._write_pods()
        if self.runner.pods:
            return False
        if row is not None:
            # Files first: once the row is gone, a new job of the same name may start writing there.
            remove_job_files(self.paths, row.namespace, row.name)
            self.store.delete_job(self.uid)
            log(f"deleted {row.kind} {row.namespace}/{row.name}")
        return True


class _LocalWriter:
    """The local backend's writes for one Plan (backends/executor.py PlanWriter): pods go to the
    runner, other objects to the store; events are collected and written once by ``_apply``."""

    def __init__(self, supervisor: Supervisor, now: float) -> None:
        self.sup = supervisor
        self.now = now
        self.events: list[tuple[str, str, str]] = []
        self.pods_written = False

    async def apply_batch(self, batch: Sequence[Action]) -> list[str | None]:
        return [self._one(action) for action in batch]

    def _one(self, action: Action) -> str | None:
        """Apply ``action``; what went wrong, or None."""
        try:
            if isinstance(action, CreateObject | UpdateObject):
                self.sup._apply_object(action.obj, create=isinstance(action, CreateObject), now=self.now)
            elif isinstance(action, DeleteObject) and action.kind == "Pod":
                self.sup.runner.delete(action.name)
            elif isinstance(action, DeleteObject):
                self.sup.store.remove_object(self.sup.uid, action.kind, action.name)
            # DeleteJob: ``_pass`` deletes the job once its replicas are stopped (``_delete_job``).
        except Exception as exc:
            return str(exc) or type(exc).__name__
        return None

    async def write_status(self, plan: Plan) -> None:
        # The pods first, so that a reader who sees the new status also sees the pods behind it.
        self.sup._write_pods()
        self.pods_written = True
        self.sup.store.write_status(self.sup.uid, plan.status.to_dict())

    def emit(self, event: Event) -> None:
        if event.key is not None:
            if event.key in self.sup.sent_keys:
                return
            self.sup.sent_keys.add(event.key)
        self.events.append((event.type, event.reason, event.message))

    def count(self, metric: str) -> None:
        pass  # the local backend exports no metrics


def build_context(row: JobRow) -> LocalContext:
    memory = disk = 0
    with contextlib.suppress(ValueError, OSError):
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with contextlib.suppress(OSError):
        disk = shutil.disk_usage(row.base_dir).total
    return LocalContext(
        host_env=row.host_env,
        base_dir=row.base_dir,
        hostname=socket.gethostname(),
        cpu_count=os.cpu_count() or 1,
        memory_bytes=memory,
        ephemeral_bytes=disk,
        kind=row.kind,
        python=sys.executable,
    )


def _env_seconds(env: dict[str, str], name: str, default: float, floor: float) -> float:
    """``$name`` in seconds, at least ``floor``; ``default`` when unset or not a number
    (TRAINOP_RESTART_BACKOFF_MAX, TRAINOP_SUPERVISOR_GIVE_UP)."""
    try:
        return max(floor, float(env.get(name, default)))
    except ValueError:
        return default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainop-local-supervisor")
    parser.add_argument("--home", required=True)
    parser.add_argument("uid")
    args = parser.parse_args(argv)
    paths = StatePaths(Path(args.home))
    store = Store(paths)
    try:
        return Supervisor(store, paths, args.uid).run()
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
