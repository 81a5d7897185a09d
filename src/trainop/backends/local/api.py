"""``LocalBackend``: the job operations of the local backend (submit, get, list, describe, logs, wait,
delete, suspend/resume, render), returning models. The CLI and the SDK both sit on it.

It validates and stores jobs, starts each job's detached supervisor, reads live state from the
store, and applies the recovery rule when a supervisor died: the job's leftover processes are
killed, its unfinished pods are reported Failed (reason SupervisorLost, exit code 137, like a lost
node) and a new supervisor takes over, so the core restarts or fails the job by its own rules.
Every namespace that enters here is checked (a DNS-1123 label) before any path is built, and the
store is opened on first use, so a dry run (render) needs no state. Reconcile decisions are never
made here.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ANNOTATION_ATTACHED_CLIENT,
    ANNOTATION_INTERRUPTED,
    ENV_TRAINOP_JOB_UID,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from trainop.api.errors import FieldError, InvalidJobError
from trainop.api.kinds import KIND_INFO
from trainop.api.load import parse_job
from trainop.api.names import validate_dns1123_label
from trainop.backends.base import (
    AlreadyExistsError,
    BackendError,
    ContainerRun,
    JobClient,
    JobDetails,
    JobEvent,
    JobFeed,
    LogLine,
    NotFoundError,
    PollingWait,
    ReplicaNotFoundError,
    check_replica,
    is_finished,
    list_images,
    replica_label,
)
from trainop.backends.local import procs, pyenv, trainjob_state
from trainop.backends.local.attach import Client, build_interrupted_manifest, drop_dead_client, format_client
from trainop.backends.local.gang import build_local_gang_scheduler
from trainop.backends.local.paths import (
    StatePaths,
    is_state_dir_fault,
    open_log,
    prepare_home,
    remove_job_files,
    resolve_home,
    state_dir_error,
)
from trainop.backends.local.ports import probe_free_port
from trainop.backends.local.render import DEFAULT_GRACE_SECONDS, build_rendered_pod, detect_pod_errors
from trainop.backends.local.runner import rfc3339
from trainop.backends.local.spawn import Spawner, spawn_supervisor_process
from trainop.backends.local.store import JobRow, ProcessRow, Store
from trainop.backends.waiting import SYSTEM_CLOCK, Clock

SUPERVISOR_START_TIMEOUT = 30.0  # a supervisor that has not claimed its job by then is treated as lost
EXIT_SUPERVISOR_LOST = 137  # what a replica killed with its supervisor reports (SIGKILL)
POLL = 0.2
GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
GENERATED_PREFIX_MAX, GENERATED_SUFFIX_LEN = 58, 5  # apiserver: 63-character names
GENERATE_NAME_TRIES = 8  # apiserver: maxNameGenerationCreateAttempts (RetryGenerateName)
_NAME_RANDOM = random.SystemRandom()


@dataclass(frozen=True, slots=True)
class SupervisorInfo:
    state: str  # starting | running | exited
    pid: int | None
    alive: bool


def build_generated_name(prefix: str) -> str:
    """The API server's generated name (apiserver names.SimpleNameGenerator): the prefix cut to 58
    characters, then 5 random characters from apimachinery's rand alphabet (no vowels, no 0/1/3, so
    no words and no look-alikes)."""
    return prefix[:GENERATED_PREFIX_MAX] + "".join(
        _NAME_RANDOM.choice(GENERATED_NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LEN)
    )


def build_host_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment replicas inherit (the submitting shell's), with the Python environment trainop
    runs in first on PATH, so that ``python`` in a command means that interpreter (as an image's
    PATH would), even when the virtualenv is not activated."""
    out = dict(env)
    bindir = str(Path(sys.executable).parent)
    path = out.get("PATH", os.defpath)
    if bindir not in path.split(os.pathsep):
        out["PATH"] = bindir + os.pathsep + path if path else bindir
    return out


def render_objects(
    manifest: Mapping[str, Any],
    backend: str = "local",
    namespace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """``trainop render``: what the core would create first for the job on ``backend`` ("local", with
    this machine's checks and ``env``, or "kubernetes"). A dry run: nothing is read or written, and no
    backend is talked to (``LocalBackend.render``)."""
    return LocalBackend(env=env).render(manifest, backend, namespace)


class LocalBackend(PollingWait):
    """Job operations on this machine; ``home`` defaults to ``$TRAINOP_HOME`` (or the XDG data dir).

    ``spawner`` starts supervisors (default: a fresh ``python -m`` process; the CLI passes one that
    forks itself, which skips an interpreter start and the imports it has already paid for)."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        spawner: Spawner | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.clock = clock  # what wait() reads and sleeps on
        self.spawner: Spawner = spawner or spawn_supervisor_process
        self.paths = StatePaths(Path(home).absolute() if home is not None else resolve_home(self.env))
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        """The state database, opened (and the home created, owner-only) on first use. Raises
        StateDirError when the home cannot be used."""
        if self._store is None:
            prepare_home(self.paths.home)
            self._store = Store(self.paths)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # ------------------------------------------------------------------------------------------
    # submit / render

    def prepare(self, manifest: Mapping[str, Any]) -> TrainingJob:
        """Parse and validate a manifest for this backend; raises InvalidJobError with every error."""
        from trainop.api.validation import validate_job

        job = parse_job(dict(manifest))
        # In depth: the namespace becomes a directory here, whatever the API validation checked.
        errors = (
            validate_job(job)
            or validate_dns1123_label(job.namespace, "metadata.namespace")
            or self.detect_local_errors(job)
        )
        if errors:
            raise InvalidJobError(errors, kind=job.kind, name=job.name)
        return job

    def detect_local_errors(self, job: TrainingJob) -> list[FieldError]:
        """What this backend cannot run, found on the pods the core would create (so commands the
        operator adds, such as MPI workers' ``sleep``, count), reported at the manifest's paths.
        First the replica count, before any pod is built: each replica is host processes here, so a job
        may ask for at most 16 per CPU (at least 64) and, under a process limit, a quarter of it."""
        import resource  # POSIX only, as this backend

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        cap, why = max(64, 16 * cpus), f"16 per CPU, {cpus} CPU{'s' if cpus > 1 else ''} here"
        nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        if nproc != resource.RLIM_INFINITY and nproc // 4 < cap:
            cap, why = max(1, nproc // 4), f"a quarter of this user's process limit, ulimit -u {nproc}"
        errors = _too_many_replicas(
            job,
            cap,
            lambda total, types: (
                "the local backend runs each replica as processes on this machine, which "
                f"can run at most {cap} replicas per job ({why})"
                + (f" ({total} in all)" if types > 1 else "")
                + "; lower it, or run the job on Kubernetes (--backend kubernetes)"
            ),
        )
        if errors:
            return errors
        unsuspended = job.model_copy(deep=True)
        if unsuspended.spec.run_policy is not None:
            unsuspended.spec.run_policy.suspend = False
        objects = build_objects(unsuspended, "local")
        info = KIND_INFO[job.kind]
        keys = {k.lower(): k for k in job.replica_specs}
        configmaps = [o["metadata"]["name"] for o in objects if o.get("kind") == "ConfigMap"]
        first: dict[str, dict[str, Any]] = {}  # replica type → its first pod
        for pod in (o for o in objects if o.get("kind") == "Pod"):
            key = keys.get((pod["metadata"].get("labels") or {}).get(LABEL_REPLICA_TYPE, ""))
            if key is not None:
                first.setdefault(key, pod)
        for key, pod in first.items():
            path = f"spec.{info.replica_map}[{key}]"
            errors.extend(detect_pod_errors(pod, job.replica_specs[key].template, path, configmaps))
        return errors

    def submit(
        self,
        manifest: Mapping[str, Any],
        *,
        base_dir: str | Path | None = None,
        namespace: str | None = None,
        attached_client: Client | None = None,
    ) -> TrainingJob:
        """Validate, store and start a job; returns at once (the job runs under its own supervisor).
        ``base_dir``: where relative workingDirs resolve (the manifest's directory; default: cwd).
        ``attached_client``: the ``trainop run`` whose end stops the job (backends/local/attach.py)."""
        check_namespace(namespace)
        doc = copy.deepcopy(dict(manifest))
        # Before validation: the generated name is the one validated, stored and printed.
        self._generate_name(doc, namespace)
        job = self.prepare(doc)
        build_local_gang_scheduler(self.env)  # refuses a value the local backend cannot honour
        now = time.time()
        meta = doc.setdefault("metadata", {})
        meta["namespace"] = namespace or meta.get("namespace") or "default"
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(now)
        meta["generation"] = 1
        meta.pop("resourceVersion", None)
        _attach(doc, attached_client)  # (validated: metadata is a mapping, its annotations too)
        doc.pop("status", None)
        row = JobRow(
            uid=meta["uid"],
            namespace=meta["namespace"],
            name=job.name,
            kind=job.kind,
            manifest=doc,
            status={},
            base_dir=str(Path(base_dir).absolute() if base_dir is not None else Path.cwd()),
            host_env=build_host_env(self.env),
            generation=1,
            created_at=now,
            supervisor_since=now,
        )
        # The supervisor's log is created first: a home that cannot take a file stores no job.
        store = self.store  # (creates the home first)
        log_path = self.paths.supervisor_log(row.namespace, row.name)
        try:
            open_log(log_path).close()
        except OSError as exc:
            raise self._fault(exc) from None
        store.insert_job(row)
        try:
            self._spawn_supervisor(row)
        except OSError as exc:
            # Nothing runs it: a job left behind would wait for a supervisor that never comes.
            self.store.delete_job(row.uid)
            raise self._fault(exc) from None
        return parse_job(doc)

    def submit_isolated(
        self, manifest: Mapping[str, Any], *, packages: Sequence[str], index_url: str
    ) -> TrainingJob:
        """Submit a job whose replicas get a virtual environment of their own (backends/local/pyenv.py)
        with ``packages`` installed first; the replicas' own identical ``pip install`` (the script is
        the one a pod runs) then finds them in place instead of racing to write one prefix."""
        if not packages:
            return self.submit(manifest)
        job = self.prepare(manifest)
        # Checked first: a venv must never be made over the state of an existing job of that name.
        if self.store.find_job(job.namespace, job.name) is not None:
            raise AlreadyExistsError(kind=job.kind, namespace=job.namespace, name=job.name)
        target = self.paths.job_dir(job.namespace, job.name) / pyenv.JOB_PYTHON_DIR
        try:
            bindir = pyenv.write_job_python_env(target)
            pyenv.install_packages(bindir / "python", packages, index_url)
        except (OSError, StopIteration, subprocess.SubprocessError, RuntimeError) as e:
            shutil.rmtree(target, ignore_errors=True)
            raise BackendError(
                f"cannot prepare its Python environment: {e}",
                kind=job.kind,
                namespace=job.namespace,
                name=job.name,
            ) from None
        env = dict(self.env)
        env["PATH"] = os.pathsep.join(
            [str(bindir), str(Path(sys.executable).parent), env.get("PATH", os.defpath)]
        )
        env["VIRTUAL_ENV"] = str(target)
        env.pop("PYTHONHOME", None)
        submitter = LocalBackend(home=self.paths.home, env=env, spawner=self.spawner, clock=self.clock)
        try:
            return submitter.submit(manifest, namespace=job.namespace)
        except BaseException:
            if self.store.find_job(job.namespace, job.name) is None:
                shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            submitter.close()

    def _generate_name(self, doc: dict[str, Any], namespace: str | None) -> None:
        """``metadata.generateName`` without a name: the API server's generated name, retried past a
        name this namespace already has (as apiserver's RetryGenerateName does)."""
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or meta.get("name") or not isinstance(meta.get("generateName"), str):
            return
        ns = namespace or meta.get("namespace") or "default"
        for _ in range(GENERATE_NAME_TRIES):
            meta["name"] = build_generated_name(meta["generateName"])
            if not isinstance(ns, str) or self.store.find_job(ns, meta["name"]) is None:
                return

    def _fault(self, exc: OSError) -> Exception:
        """A fault of the home's disk as one StateDirError line; any other OSError as it is."""
        return state_dir_error(self.paths.home, exc) if is_state_dir_fault(exc) else exc

    def render(
        self, manifest: Mapping[str, Any], backend: str = "local", namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """A dry run: the objects (pods with their env, Services, ConfigMaps …) the core would create
        first for this job on ``backend`` ("local" or "kubernetes"). Raises InvalidJobError."""
        check_namespace(namespace)
        doc = copy.deepcopy(dict(manifest))
        meta = doc.get("metadata")
        if meta is None:
            meta = doc["metadata"] = {}
        if not isinstance(meta, dict):
            raise InvalidJobError([FieldError("metadata", _not_an_object(meta))])
        meta["namespace"] = namespace or meta.get("namespace") or "default"
        meta.setdefault("uid", "00000000-0000-0000-0000-000000000000")
        if not meta.get("name") and isinstance(meta.get("generateName"), str):
            meta["name"] = build_generated_name(meta["generateName"])  # as a server-side dry run does
        if backend == "local":
            # The pods with the env their processes get here (the loopback defaults included).
            job = self.prepare(doc)
            host_env = build_host_env(self.env)
            return [
                build_rendered_pod(o, job.kind, host_env) if o.get("kind") == "Pod" else o
                for o in build_objects(job, backend)
            ]
        from trainop.api.validation import validate_job

        job = parse_job(doc)
        errors = validate_job(job) or _too_many_replicas(
            job,
            RENDER_MAX_PODS,
            lambda total, _: (
                f"render prints every pod, at most {RENDER_MAX_PODS} per job ({total} asked); "
                "render a smaller copy, the cluster itself takes the job as it is"
            ),
        )
        if errors:
            raise InvalidJobError(errors, kind=job.kind, name=job.name)
        return build_objects(job, backend)

    def _spawn_supervisor(self, row: JobRow) -> None:
        log_path = self.paths.supervisor_log(row.namespace, row.name)
        open_log(log_path).close()  # owner-only before any process writes to it
        # No SQLite connection may be open across a fork (SQLite's per-process lock bookkeeping would
        # be copied into the child while the locks themselves are not): close ours, reopen after.
        self.store.close()
        try:
            self.spawner(self.paths, row.uid, self.env, log_path)
        finally:
            self._store = Store(self.paths)

    # ------------------------------------------------------------------------------------------
    # reading state

    def _row(self, name: str, namespace: str, kind: str | None = None) -> JobRow:
        check_namespace(namespace)
        row = self.store.find_job(namespace, name)
        if row is None or (kind is not None and row.kind != kind):
            raise NotFoundError(kind=kind, namespace=namespace, name=name)
        return self.check_supervisor(row)

    def _rows(self, namespace: str | None, kind: str | None = None) -> list[JobRow]:
        check_namespace(namespace)
        return [self.check_supervisor(r) for r in self.store.list_jobs(namespace, kind)]

    def get(
        self, name: str, namespace: str = "default", kind: str | None = None, *, timeout: float | None = None
    ) -> TrainingJob:
        return _parse_row(self._row(name, namespace, kind))

    def list_jobs(
        self, namespace: str | None = None, kind: str | None = None, *, timeout: float | None = None
    ) -> list[TrainingJob]:
        return [_parse_row(r) for r in self._rows(namespace, kind)]

    def describe(self, name: str, namespace: str = "default") -> JobDetails:
        row = self._row(name, namespace)
        job = _parse_row(row)
        return JobDetails(
            job=job,
            base_dir=row.base_dir,
            pods=self.store.list_pods(row.uid),
            objects=self.store.list_objects(row.uid),
            events=self.store.list_events(row.uid),
            processes=self.store.list_processes(row.uid),
            ports=self.store.job_ports(row.uid),
            supervisor=self._supervisor_info(row),
            deleting=row.deletion_requested_at is not None,
            images=list_images(job),
        )

    def pods(
        self, name: str, namespace: str = "default", *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        return self.store.list_pods(self._row(name, namespace).uid)

    def events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        return [
            build_event_dict(_parse_row(row), i, ev)
            for row in self._rows(namespace)
            for i, ev in enumerate(self.store.list_events(row.uid))
        ]

    def create_volume_claim(self, claim: Mapping[str, Any]) -> str:
        """Nothing to create: a claim is a directory of each job that mounts it
        (StatePaths.claim_dir, made when its first pod starts); size and access modes are not enforced."""
        spec = claim.get("spec") or {}
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        modes = ", ".join(spec.get("accessModes") or [])
        return f"a directory of each job that mounts it (size {size}, access modes {modes}: not enforced)"

    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        """No Kueue here: the queue label stays on the job (for when it moves to a cluster)."""
        return None

    def replica_pods(self, namespace: str | None) -> list[tuple[TrainingJob, dict[str, Any], int | None]]:
        out: list[tuple[TrainingJob, dict[str, Any], int | None]] = []
        for row in self._rows(namespace):
            job = _parse_row(row)
            ports = {(t.lower(), str(i)): p for (t, i), p in self.store.job_ports(row.uid).items()}
            for pod in self.store.list_pods(row.uid):
                labels = (pod.get("metadata") or {}).get("labels") or {}
                key = (str(labels.get(LABEL_REPLICA_TYPE, "")), str(labels.get(LABEL_REPLICA_INDEX, "")))
                out.append((job, pod, ports.get(key)))
        return out

    def runs(self, name: str, namespace: str = "default") -> list[ContainerRun]:
        """Every run of every container of the job (``logs --since`` picks the attempts alive since)."""
        return list(self.store.list_processes(self._row(name, namespace).uid))

    def progress(self, job: TrainingJob) -> list[tuple[str, float, dict[str, Any]]]:
        return self.store.list_progress(self._row(job.name, job.namespace).uid)

    def change_token(self) -> object | None:
        version: int = self.store.conn.execute("PRAGMA data_version").fetchone()[0]
        return version  # moves when another process committed

    @contextlib.contextmanager
    def reader(self) -> Iterator[LocalBackend]:
        own = LocalBackend(self.paths.home, self.env, spawner=self.spawner)
        try:
            yield own
        finally:
            own.close()

    def feed(self, job: TrainingJob) -> JobFeed:
        from trainop.backends.local.feed import LocalFeed

        return LocalFeed(self, self._row(job.name, job.namespace))

    def kill_replicas(self, name: str, namespace: str = "default") -> None:
        """SIGKILL every replica session of the job that still runs: ``trainop run``'s second Ctrl-C.
        The supervisor's record follows."""
        self._stop_replicas(self._row(name, namespace), 0.0)

    def _stop_replicas(self, row: JobRow, grace: float) -> None:
        """``stop_sessions`` for every replica session of the job that still runs, recorded or only
        marked (started, not yet recorded: runner.PodRunner._spawn)."""
        sessions = [
            (p.pid, p.ticks)
            for p in self.store.list_processes(row.uid, unfinished=True)
            if p.pid is not None and p.boot == procs.boot_id()
        ]
        stop_sessions(sessions, grace)
        procs.kill_marked(ENV_TRAINOP_JOB_UID, row.uid)

    def may(self, verb: str, kind: str, namespace: str) -> bool:
        return True  # one user, who owns the state directory

    name = "local"
    replicas_here = True
    wait_poll = POLL

    def where(self) -> str:
        return f"{self.paths.home} (TRAINOP_HOME)"

    def known_names(self, namespace: str) -> list[str]:
        """Job names for shell completion: never an error, never a home created for it."""
        if not self.paths.home.is_dir():
            return []
        return [r.name for r in self.store.list_jobs(namespace)]

    def _supervisor_info(self, row: JobRow) -> SupervisorInfo:
        alive = row.supervisor_pid is not None and procs.is_alive(
            row.supervisor_pid, row.supervisor_ticks, row.supervisor_boot
        )
        return SupervisorInfo(row.supervisor_state, row.supervisor_pid, alive)

    # ------------------------------------------------------------------------------------------
    # the recovery rule

    def check_supervisor(self, row: JobRow) -> JobRow:
        """Notice a dead supervisor and recover its job (see the module docstring). Returns the row
        as it is afterwards."""
        now = time.time()
        if row.supervisor_state == "running":
            assert row.supervisor_pid is not None
            if procs.is_alive(row.supervisor_pid, row.supervisor_ticks, row.supervisor_boot):
                return row
            reason = f"the supervisor (pid {row.supervisor_pid}) of {row.kind} {row.name} died"
        elif row.supervisor_state == "starting":
            if now - (row.supervisor_since or now) < SUPERVISOR_START_TIMEOUT:
                return row
            reason = (
                f"the supervisor of {row.kind} {row.name} did not start within {SUPERVISOR_START_TIMEOUT:g}s"
            )
        else:  # exited: it left because the job was done; only a deletion still needs doing
            if row.deletion_requested_at is None:
                return row  # nothing to do, so nothing to read again (a list of 1,000 jobs: 1,000 reads)
            self._delete_without_supervisor(row)
            return self.store.get_job(row.uid) or row
        if not self.store.mark_supervisor_starting(row, now):
            return self.store.get_job(row.uid) or row  # another shell is recovering it
        killed = self._kill_leftovers(row, reason)
        if row.deletion_requested_at is not None:
            self._delete_without_supervisor(row)
            return row
        message = (
            f"{reason}; {killed} replica process(es) it ran were stopped and their pods are reported "
            f"Failed (exit code {EXIT_SUPERVISOR_LOST}); a new supervisor took over"
        )
        self.store.add_events(row.uid, [("Warning", "SupervisorLost", message)], now)
        fresh = self.store.get_job(row.uid)
        if fresh is None:
            return row
        self._spawn_supervisor(fresh)
        return self.store.get_job(row.uid) or fresh

    def _kill_leftovers(self, row: JobRow, reason: str) -> int:
        """SIGKILL every process session the dead supervisor left, and report its unfinished pods as a
        kubelet reports pods of a lost node: Failed, containers terminated with 137."""
        now = time.time()
        killed = 0
        for p in self.store.list_processes(row.uid, unfinished=True):
            if p.pid is not None and p.boot == procs.boot_id():
                if procs.is_alive(p.pid, p.ticks) or procs.session_members(p.pid):
                    killed += 1
                procs.kill_session(p.pid, p.ticks)
            self.store.finish_process(row.uid, p.pod, p.container, p.attempt, EXIT_SUPERVISOR_LOST, now)
        # And those it had started but not yet recorded (runner.PodRunner._spawn).
        procs.kill_marked(ENV_TRAINOP_JOB_UID, row.uid)
        pods = self.store.list_pods(row.uid)
        for pod in pods:
            mark_pod_lost(pod, reason, now)
            self.store.release_gpus(row.uid, pod["metadata"]["name"])
        self.store.write_pods(row.uid, pods)
        return killed

    def _delete_without_supervisor(self, row: JobRow) -> None:
        """Finish a deletion nobody supervises: stop what is left (SIGTERM, grace, SIGKILL), then
        remove the job, its state and its logs."""
        self._stop_replicas(row, DEFAULT_GRACE_SECONDS if row.deletion_grace is None else row.deletion_grace)
        remove_job_files(self.paths, row.namespace, row.name)
        self.store.delete_job(row.uid)

    # ------------------------------------------------------------------------------------------
    # changes

    def _wake(self, row: JobRow) -> None:
        if row.supervisor_pid is not None and procs.is_alive(row.supervisor_pid, row.supervisor_ticks):
            with contextlib.suppress(ProcessLookupError):
                os.kill(row.supervisor_pid, signal.SIGUSR1)

    def set_suspend(
        self, name: str, suspend: bool, namespace: str = "default", *, interrupted: bool = False
    ) -> TrainingJob:
        """runPolicy.suspend := ``suspend``: a merge patch, as ``kubectl patch`` makes (``update``'s
        rules: a resume removes the interrupted mark).

        ``interrupted`` (``trainop run``'s Ctrl-C): the job is also annotated with the time
        (trainop.dev/interrupted), so that it reads as interrupted rather than suspended by a user;
        its replicas stop as a suspend stops them (SIGTERM, their grace period, SIGKILL) while its
        record, state and logs stay."""
        row = self._row(name, namespace)
        if not interrupted:
            return self.patch(name, namespace, row.kind, {"spec": {"runPolicy": {"suspend": suspend}}})
        at = rfc3339(time.time())
        self.store.write_manifest(row.uid, build_interrupted_manifest(row.manifest, row.generation, at))
        self._wake(row)
        return self.get(name, namespace)

    def update(self, manifest: Mapping[str, Any], namespace: str = "default") -> TrainingJob:
        """Replace the job's spec, labels and annotations with ``manifest``'s: what an update through the
        API server and the validating webhook accepts (``validate_job`` with the stored job as ``old``,
        e.g. managedBy and the queue stay; replicas, suspend, minAvailable … change), plus this
        backend's own checks. The supervisor reconciles the change; server-owned metadata is kept."""
        from trainop.api.validation import validate_job

        doc = copy.deepcopy(dict(manifest))
        given = doc.get("metadata")
        meta: dict[str, Any] = given if isinstance(given, dict) else {}
        row = self._row(str(meta.get("name", "")), namespace, doc.get("kind"))
        job, old = parse_job({**doc, "metadata": {**meta, "namespace": namespace}}), parse_job(row.manifest)
        errors = validate_job(job, old) or self.detect_local_errors(job)
        if errors:
            raise InvalidJobError(errors, kind=job.kind, name=job.name)
        stored = row.manifest.get("metadata") or {}
        new_meta = {k: v for k, v in stored.items() if k not in ("labels", "annotations")}
        for key in ("labels", "annotations"):
            if isinstance(meta.get(key), dict) and meta[key]:
                new_meta[key] = dict(meta[key])
        # The attached client is the backend's record (see _attach), never the caller's.
        annotations = new_meta.get("annotations") or {}
        annotations.pop(ANNOTATION_ATTACHED_CLIENT, None)
        old_client = (stored.get("annotations") or {}).get(ANNOTATION_ATTACHED_CLIENT)
        if old_client is not None:
            annotations[ANNOTATION_ATTACHED_CLIENT] = old_client
        if job.run_policy.suspend is not True and old.run_policy.suspend is True:
            annotations.pop(ANNOTATION_INTERRUPTED, None)  # resumed: no longer interrupted
            drop_dead_client(annotations)
        if annotations:
            new_meta["annotations"] = annotations
        else:
            new_meta.pop("annotations", None)
        updated = {**{k: v for k, v in doc.items() if k != "status"}, "metadata": new_meta}
        if updated.get("spec") != row.manifest.get("spec"):
            new_meta["generation"] = row.generation + 1  # a spec change, as on the API server
        if updated != row.manifest:
            self.store.write_manifest(row.uid, updated)
            self._wake(row)
        return self.get(row.name, namespace)

    def patch(self, name: str, namespace: str, kind: str, patch: Mapping[str, Any]) -> TrainingJob:
        """A JSON merge patch (RFC 7386) applied to the stored job, then ``update``. Name and kind are
        the request's, as a URL's are on the API server: a patch cannot move the job."""
        current = self._row(name, namespace, kind).manifest
        merged = build_merge_patch(current, patch)
        merged["metadata"] = {**(merged.get("metadata") or {}), "name": name, "namespace": namespace}
        merged["kind"], merged["apiVersion"] = kind, current.get("apiVersion")
        return self.update(merged, namespace)

    def delete(
        self,
        name: str,
        namespace: str = "default",
        *,
        kind: str | None = None,
        wait: bool = True,
        grace: float | None = None,
        propagation: str | None = None,
    ) -> None:
        """Delete the job: every replica gets SIGTERM, then SIGKILL after its terminationGracePeriodSeconds
        (or ``grace``); then the job, its state and its logs are removed. ``wait``: return only then.
        ``propagation`` changes nothing here: a job's processes always go with it."""
        row = self._row(name, namespace, kind)
        self.store.request_deletion(row.uid, time.time(), grace)
        row = self.store.get_job(row.uid) or row
        self._wake(row)
        if row.supervisor_state != "running" or not self._supervisor_info(row).alive:
            self.check_supervisor(row)
        if not wait:
            return
        longest = grace if grace is not None else self._longest_grace(row)
        deadline = time.time() + longest + 15.0
        supervisor = (row.supervisor_pid, row.supervisor_ticks)
        while time.time() < deadline:
            current = self.store.get_job(row.uid)
            if current is None:
                _await_exit(*supervisor)
                return
            current = self.check_supervisor(current)
            if current.supervisor_pid is not None:
                supervisor = (current.supervisor_pid, current.supervisor_ticks)
            time.sleep(POLL)
        # The supervisor did not finish in time: do it ourselves, forcefully.
        current = self.store.get_job(row.uid)
        if current is not None:
            if current.supervisor_pid is not None:
                procs.kill_session(current.supervisor_pid, current.supervisor_ticks)
            current.deletion_grace = 0.0
            self._delete_without_supervisor(current)

    def _longest_grace(self, row: JobRow) -> float:
        graces = [DEFAULT_GRACE_SECONDS]
        for rs in parse_job(row.manifest).replica_specs.values():
            g = rs.pod_spec.get("terminationGracePeriodSeconds")
            if isinstance(g, int | float) and not isinstance(g, bool):
                graces.append(float(g))
        return max(graces)

    # ------------------------------------------------------------------------------------------
    # waiting and logs

    def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        replica: str | None = None,
        container: str | None = None,
        follow: bool = False,
        previous: bool = False,
        stop: Callable[[], bool] | None = None,
        partials: Callable[[list[LogLine]], None] | None = None,
    ) -> Iterator[LogLine]:
        """The newest attempt's lines, or the one before with ``previous``; followed across restarts."""
        row = self._row(name, namespace)  # raises now, not at the first line
        self._check_log_selection(row, replica, container)
        follower = LogFollower(self, row, replica=replica, container=container, previous=previous)
        return follower.follow(stop, partials) if follow else follower.read_all()

    # --- TrainJobs: what trainop run FILE records (backends/local/trainjob_state.py) ---------------

    def list_trainjobs(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return trainjob_state.list_trainjobs(self.paths, namespace)

    def get_trainjob(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return trainjob_state.read_trainjob(self.paths, namespace, name)

    def trainjob_pods(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        pods: list[dict[str, Any]] = trainjob_state.read_record(self.paths, namespace, name)["pods"]
        return pods

    def trainjob_logs(
        self, name: str, namespace: str = "default", *, replica: str | None = None, follow: bool = False
    ) -> Iterator[LogLine]:
        pods = [p["metadata"]["name"] for p in self.trainjob_pods(name, namespace)]  # NotFoundError now
        check_replica(name, replica, pods)
        return trainjob_state.read_logs(self.paths, namespace, name, pod=replica, follow=follow)

    def delete_trainjob(self, name: str, namespace: str = "default", *, grace: float | None = None) -> None:
        trainjob_state.delete_trainjob(
            self.paths, namespace, name, grace=trainjob_state.STOP_GRACE if grace is None else grace
        )

    def _check_log_selection(self, row: JobRow, replica: str | None, container: str | None) -> None:
        """A replica or container the job has never had is an error that lists the ones it has (rather
        than no output). Known: its pods, and the processes of pods since deleted (their logs stay).
        Before its first pod exists there is nothing to check against."""
        containers: dict[str, set[str]] = {}  # pod name → container names
        for p in self.store.list_pods(row.uid):
            spec = p.get("spec") or {}
            containers[p["metadata"]["name"]] = {
                str(c.get("name"))
                for key in ("initContainers", "containers")
                for c in spec.get(key) or []
                if isinstance(c, dict)
            }
        for proc in self.store.list_processes(row.uid):
            containers.setdefault(proc.pod, set()).add(proc.container)
        if not containers:
            return
        if replica is not None:
            check_replica(row.name, replica, sorted(containers))
            containers = {p: c for p, c in containers.items() if replica in (p, replica_label(row.name, p))}
        known = sorted(set().union(*containers.values()))
        if container is not None and container not in known:
            raise ReplicaNotFoundError("container", container, row.name, known)


def build_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge key by key, ``None`` deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = build_merge_patch(out.get(key), value)
    return out


def build_event_dict(job: TrainingJob, index: int, ev: JobEvent) -> dict[str, Any]:
    """A stored event as the core/v1 Event a cluster would list for the job."""
    return {
        "metadata": {
            "name": f"{job.name}.{index}",
            "namespace": job.namespace,
            "creationTimestamp": rfc3339(ev.first_ts),
        },
        "involvedObject": {
            "apiVersion": job.api_version,
            "kind": job.kind,
            "name": job.name,
            "namespace": job.namespace,
        },
        "type": ev.type,
        "reason": ev.reason,
        "message": ev.message,
        "count": ev.count,
        "firstTimestamp": rfc3339(ev.first_ts),
        "lastTimestamp": rfc3339(ev.last_ts),
    }


def _attach(doc: dict[str, Any], client: Client | None) -> None:
    """Record the attached client; one the manifest brings (a job exported with get -o yaml) is not
    ours to honour."""
    meta = doc.setdefault("metadata", {})
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    if client is None:
        annotations.pop(ANNOTATION_ATTACHED_CLIENT, None)
        return
    meta["annotations"] = {**annotations, ANNOTATION_ATTACHED_CLIENT: format_client(client)}


def check_namespace(namespace: str | None) -> None:
    """A namespace from ``-n`` or the SDK is a DNS-1123 label (as on Kubernetes), checked before it
    becomes a directory under the home. Raises InvalidJobError (``metadata.namespace``)."""
    if namespace is None:
        return
    errors = validate_dns1123_label(namespace, "metadata.namespace")
    if errors:
        raise InvalidJobError(errors)


def _await_exit(pid: int | None, ticks: int | None, timeout: float = 5.0) -> None:
    """Wait for a supervisor that has removed its job to exit (it has nothing left to do); kill it if
    it lingers, so that a finished delete leaves no process at all."""
    if pid is None:
        return
    deadline = time.monotonic() + timeout
    while procs.is_alive(pid, ticks):
        if time.monotonic() >= deadline:
            procs.kill_session(pid, ticks)
            return
        time.sleep(0.02)


def mark_pod_lost(pod: dict[str, Any], reason: str, now: float) -> None:
    """A pod whose supervisor died, reported as a kubelet reports the pods of a lost node."""
    status = pod.setdefault("status", {})
    if status.get("phase") in ("Succeeded", "Failed"):
        return
    message = f"{reason}; the replica was stopped"
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            state = cs.get("state") or {}
            if "terminated" in state:
                continue
            started = (state.get("running") or {}).get("startedAt", rfc3339(now))
            cs["state"] = {
                "terminated": {
                    "exitCode": EXIT_SUPERVISOR_LOST,
                    "reason": "SupervisorLost",
                    "message": message,
                    "startedAt": started,
                    "finishedAt": rfc3339(now),
                }
            }
            cs["ready"] = False
            cs["started"] = False
    status["phase"] = "Failed"
    status["reason"] = "SupervisorLost"
    status["message"] = message


def stop_sessions(sessions: Sequence[tuple[int, int | None]], grace: float) -> None:
    """SIGTERM each replica's main process (as a kubelet: runner.OsProcessHost.signal_session), wait up
    to ``grace`` seconds for them to end, then SIGKILL whatever is left of their sessions."""
    if grace > 0:
        for pid, ticks in sessions:
            procs.signal_main(pid, ticks, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(procs.is_alive(pid, ticks) for pid, ticks in sessions):
            time.sleep(0.05)
    for pid, ticks in sessions:
        procs.kill_session(pid, ticks)


def build_objects(job: TrainingJob, backend: str) -> list[dict[str, Any]]:
    """The objects the core creates in its first pass for ``job`` (nothing observed yet)."""
    from trainop.core.observed import Observed
    from trainop.core.plan import CreateObject
    from trainop.core.reconcile import reconcile
    from trainop.core.topology import LoopbackTopology, ServiceTopology, Topology
    from trainop.frameworks.registry import REGISTRY

    topology: Topology = (
        ServiceTopology() if backend == "kubernetes" else LoopbackTopology(ports=_preview_ports(job))
    )
    plan = reconcile(job, Observed(job=job), REGISTRY.get(job.kind), topology, datetime.now(UTC))
    return [a.obj for a in plan.actions if isinstance(a, CreateObject)]


def _preview_ports(job: TrainingJob) -> dict[tuple[str, int], int]:
    """Free ports for a dry run (a real submit registers its own; these only show the shape)."""
    from trainop.api.defaults import apply_defaults

    specs = apply_defaults(job).replica_specs
    return {
        (rtype, i): probe_free_port()
        for rtype, spec in specs.items()
        for i in range(max(spec.replicas or 0, 0))
    }


READ_CHUNK = 1 << 20  # bytes a follower reads from a log file at a time


class LogFollower:
    """Reads the log files of a job's replicas (one per container per attempt), in order, following
    new attempts as containers restart."""

    def __init__(
        self,
        backend: LocalBackend,
        row: JobRow,
        *,
        replica: str | None = None,
        container: str | None = None,
        previous: bool = False,
        every_attempt: bool = False,
    ) -> None:
        self.backend = backend
        self.row = row
        self.replica = replica
        self.container = container
        self.previous = previous
        # ``run``'s view: every attempt's lines, also of attempts that began and ended between two
        # polls (a whole-job restart recreates a pod at once, with no back-off to catch it in).
        self.every_attempt = every_attempt
        # (pod, container) → (attempt, open file, partial line)
        self.open: dict[tuple[str, str], tuple[int, Any, bytes]] = {}
        self.read_up_to: dict[tuple[str, str], int] = {}  # the last attempt read to its end

    def _selected(self, p: ProcessRow) -> bool:
        if p.pid is None and p.exit_code == 0 and self.container != p.container:
            return False  # an operator helper the local backend did not need to run
        label = replica_label(self.row.name, p.pod)
        if self.replica is not None and self.replica not in (label, p.pod):
            return False
        return self.container is None or self.container == p.container

    def _by_key(self) -> dict[tuple[str, str], list[ProcessRow]]:
        by_key: dict[tuple[str, str], list[ProcessRow]] = {}
        for p in self.backend.store.list_processes(self.row.uid):
            if self._selected(p):
                by_key.setdefault((p.pod, p.container), []).append(p)
        for rows in by_key.values():
            rows.sort(key=lambda r: r.attempt)
        return by_key

    def _latest(
        self, by_key: dict[tuple[str, str], list[ProcessRow]] | None = None
    ) -> dict[tuple[str, str], ProcessRow]:
        back = 2 if self.previous else 1  # the newest attempt, or the one before
        return {
            k: rows[-back]
            for k, rows in (self._by_key() if by_key is None else by_key).items()
            if len(rows) >= back
        }

    def read_all(self) -> Iterator[LogLine]:
        latest = self._latest()
        for (pod, cont), p in sorted(latest.items(), key=lambda kv: (kv[1].started_at, kv[0])):
            for line in _read_lines(p.log_path):
                yield LogLine(replica_label(self.row.name, pod), cont, p.attempt, line)

    def _drain(self, key: tuple[str, str], final: bool) -> Iterator[LogLine]:
        attempt, fh, rest = self.open[key]
        label = replica_label(self.row.name, key[0])
        while True:
            # A bounded read at a time, so a follower's memory does not grow with the log (issue 27).
            chunk = fh.read(READ_CHUNK)
            if not chunk:
                break
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            self.open[key] = (attempt, fh, rest)
            for line in lines:
                yield LogLine(label, key[1], attempt, line.decode(errors="replace"))
        if final and rest:
            self.open[key] = (attempt, fh, b"")
            yield LogLine(label, key[1], attempt, rest.decode(errors="replace"))

    def poll(self) -> Iterator[LogLine]:
        """New lines since the last call (switching to newer attempts as they appear)."""
        by_key = self._by_key()
        for key, p in sorted(self._latest(by_key).items(), key=lambda kv: (kv[1].started_at, kv[0])):
            current = self.open.get(key)
            if current is not None and current[0] != p.attempt:
                yield from self._drain(key, final=True)
                current[1].close()
                del self.open[key]
                self.read_up_to[key] = current[0]
                current = None
            if current is None and self.every_attempt:
                yield from self._skipped(key, by_key[key], p.attempt)
            if current is None:
                try:
                    fh = open(p.log_path, "rb")  # noqa: SIM115  (kept open across polls)
                except OSError:
                    continue
                self.open[key] = (p.attempt, fh, b"")
            yield from self._drain(key, final=p.finished_at is not None)

    def _skipped(self, key: tuple[str, str], rows: list[ProcessRow], latest: int) -> Iterator[LogLine]:
        """The attempts before ``latest`` that no poll read yet, each whole."""
        done = self.read_up_to.get(key, -1)
        for r in rows:
            if done < r.attempt < latest:
                for line in _read_lines(r.log_path):
                    yield LogLine(replica_label(self.row.name, key[0]), key[1], r.attempt, line)
        self.read_up_to[key] = max(done, latest - 1)

    def partial_lines(self) -> list[LogLine]:
        """Each followed container's unfinished last line (a progress bar between two ``\\r``)."""
        return [
            LogLine(replica_label(self.row.name, pod), container, attempt, rest.decode(errors="replace"))
            for (pod, container), (attempt, _, rest) in sorted(self.open.items())
            if rest
        ]

    def follow(
        self, stop: Any = None, partials: Callable[[list[LogLine]], None] | None = None
    ) -> Iterator[LogLine]:
        """Poll until the job is finished (or gone) and every selected process has ended; after each
        poll, ``partials`` gets the unfinished last lines."""
        try:
            while True:
                yield from self.poll()
                if partials is not None:
                    partials(self.partial_lines())
                row = self.backend.store.get_job(self.row.uid)
                if row is None:
                    return
                job = _parse_row(self.backend.check_supervisor(row))
                running = self.backend.store.list_processes(row.uid, unfinished=True)
                if is_finished(job) and not any(self._selected(p) for p in running):
                    yield from self.poll()
                    return
                if stop is not None and stop():
                    return
                time.sleep(POLL)
        finally:
            for _, fh, _ in self.open.values():
                fh.close()
            self.open.clear()


# A dry run prints every object the job's first pass creates; past this many pods it would print
# (and build) for minutes or forever (replicas: 2147483647 is a valid int32), so it says so instead.
RENDER_MAX_PODS = 10_000


def _too_many_replicas(job: TrainingJob, cap: int, why: Callable[[int, int], str]) -> list[FieldError]:
    """An error at the largest replica type's count when the job asks for more than ``cap`` replicas in
    all; ``why(total, number of types)`` says why."""
    counts = {k: (1 if rs.replicas is None else rs.replicas) for k, rs in job.replica_specs.items()}
    total = sum(counts.values())
    if total <= cap:
        return []
    rtype = max(counts, key=lambda k: counts[k])
    path = f"spec.{KIND_INFO[job.kind].replica_map}[{rtype}].replicas"
    return [FieldError(path, f"Invalid value: {counts[rtype]}: {why(total, len(counts))}")]


def _read_lines(path: str) -> Iterator[str]:
    """A log file's lines, one at a time (a log of gigabytes is never held whole); nothing when it
    cannot be read. Lines end at \\n only: a \\r (a progress bar's frame) stays in its line."""
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed below; lines are read lazily)
    except OSError:
        return
    with fh:
        for raw in fh:
            yield raw.decode(errors="replace").removesuffix("\n")


def _parse_row(row: JobRow) -> TrainingJob:
    return parse_job({**row.manifest, "status": row.status})


def _not_an_object(value: Any) -> str:
    return f"Invalid value: {value!r:.60}: must be an object (an ObjectMeta: name, namespace, labels ...)"


if TYPE_CHECKING:  # mypy checks that the class is a JobClient (backends/base.py)

    def _conforms(client: LocalBackend) -> JobClient:
        return client
