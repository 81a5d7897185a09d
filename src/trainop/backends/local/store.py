"""The local backend's state: one SQLite database (WAL) under ``$TRAINOP_HOME``, shared by every shell.

Holds jobs (manifest, status, supervisor identity), their pods as Kubernetes JSON, other owned
objects (Services, ConfigMaps …), events, the replica processes and their log files, and the port
and GPU registries that keep concurrent jobs apart, and the queue of jobs waiting for GPUs. Every write
is a short transaction, so another process sees live state and a crash loses nothing committed. A fault
of the disk under the home (full, read-only, no permission) is raised as one StateDirError line; the
failed transaction is rolled back. I/O adapter: it decides nothing itself (gang admission is
core/admission.py's; the store only reads its inputs and applies its answer in one transaction).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop.backends.base import AlreadyExistsError, JobEvent
from trainop.backends.local.paths import (
    FILE_MODE,
    StateDirError,
    StatePaths,
    is_state_dir_fault,
    state_dir_error,
)
from trainop.core.admission import Admission, GangRequest, compute_admission

# 2: the gangs table (issue 11); 3: the progress table (issue 27). Every statement is CREATE ... IF
# NOT EXISTS, so an older database gains the new tables and keeps everything else.
SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    uid TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    manifest TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT '{}',
    base_dir TEXT NOT NULL,
    host_env TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL,
    deletion_requested_at REAL,
    deletion_grace REAL,
    supervisor_state TEXT NOT NULL DEFAULT 'starting',
    supervisor_pid INTEGER,
    supervisor_ticks INTEGER,
    supervisor_boot TEXT,
    supervisor_since REAL,
    UNIQUE (namespace, name)
);
CREATE TABLE IF NOT EXISTS pods (
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    name TEXT NOT NULL,
    obj TEXT NOT NULL,
    PRIMARY KEY (job_uid, name)
);
CREATE TABLE IF NOT EXISTS objects (
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    obj TEXT NOT NULL,
    PRIMARY KEY (job_uid, kind, name)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    type TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    first_ts REAL NOT NULL,
    last_ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_uid, type, reason, message);
CREATE TABLE IF NOT EXISTS processes (
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    pod TEXT NOT NULL,
    container TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    pod_uid TEXT NOT NULL,
    init INTEGER NOT NULL,
    pid INTEGER,
    ticks INTEGER,
    boot TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    exit_code INTEGER,
    log_path TEXT NOT NULL,
    PRIMARY KEY (job_uid, pod, container, attempt)
);
CREATE TABLE IF NOT EXISTS ports (
    port INTEGER PRIMARY KEY,
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    replica_type TEXT NOT NULL,
    replica_index INTEGER NOT NULL,
    UNIQUE (job_uid, replica_type, replica_index)
);
CREATE TABLE IF NOT EXISTS gpus (
    gpu TEXT PRIMARY KEY,
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    pod TEXT NOT NULL,  -- '' (with container ''): reserved for the job's admitted gang, no pod yet
    container TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gangs (
    job_uid TEXT PRIMARY KEY REFERENCES jobs(uid) ON DELETE CASCADE,
    job TEXT NOT NULL,
    pods INTEGER NOT NULL,
    gpus INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    priority_class TEXT NOT NULL,
    queue TEXT NOT NULL,
    created_at REAL NOT NULL,
    error TEXT NOT NULL,
    admitted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS progress (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_uid TEXT NOT NULL REFERENCES jobs(uid) ON DELETE CASCADE,
    replica TEXT NOT NULL,
    ts REAL NOT NULL,
    status TEXT NOT NULL  -- one posted trainerStatus (Trainer v2's progress contract), as JSON
);
CREATE INDEX IF NOT EXISTS progress_by_job ON progress (job_uid, id);
"""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=False)


@dataclass(slots=True)
class JobRow:
    uid: str
    namespace: str
    name: str
    kind: str
    manifest: dict[str, Any]
    status: dict[str, Any]
    base_dir: str
    host_env: dict[str, str]
    generation: int
    created_at: float
    deletion_requested_at: float | None = None
    deletion_grace: float | None = None
    supervisor_state: str = "starting"  # starting | running | exited
    supervisor_pid: int | None = None
    supervisor_ticks: int | None = None
    supervisor_boot: str | None = None
    supervisor_since: float | None = None


@dataclass(slots=True)
class ProcessRow:
    job_uid: str
    pod: str
    container: str
    attempt: int
    pod_uid: str
    init: bool
    pid: int | None
    ticks: int | None
    boot: str | None
    started_at: float
    finished_at: float | None
    exit_code: int | None
    log_path: str


# The tables' columns are the rows' fields, in order; these of the jobs table hold JSON.
_JOB_FIELDS = [f.name for f in dataclasses.fields(JobRow)]
_JOB_COLUMNS = ", ".join(_JOB_FIELDS)
_JSON_FIELDS = frozenset({"manifest", "status", "host_env"})
_PROCESS_COLUMNS = ", ".join(f.name for f in dataclasses.fields(ProcessRow))


def _job_from_row(r: Sequence[Any]) -> JobRow:
    return JobRow(*(json.loads(v) if k in _JSON_FIELDS else v for k, v in zip(_JOB_FIELDS, r, strict=True)))


class _Connection(sqlite3.Connection):
    """A connection whose statements report a fault of the disk under the home as StateDirError
    (one line: what is wrong and what to do) instead of a raw sqlite3.OperationalError."""

    home: Path = Path()

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self._reporting(super().execute, sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return self._reporting(super().executemany, sql, parameters)

    def _reporting(
        self, run: Callable[[str, Any], sqlite3.Cursor], sql: str, parameters: Any
    ) -> sqlite3.Cursor:
        try:
            return run(sql, parameters)
        except sqlite3.Error as exc:
            if is_state_dir_fault(exc):
                raise state_dir_error(self.home, exc) from None
            raise


def _create_private(db: Path) -> None:
    """Create ``db`` owner-only before SQLite opens it (its -wal and -shm files take the same mode),
    and make an existing one owner-only. An existing database on a read-only disk stays readable."""
    try:
        fd = os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        st = db.stat()
        if st.st_mode & 0o777 != FILE_MODE and st.st_uid == os.geteuid():
            with contextlib.suppress(OSError):  # read-only disk: it is read as it is
                os.chmod(db, FILE_MODE)
        return
    os.close(fd)


class Store:
    """One connection to the state database; cheap to open, safe to use from several processes.
    Raises StateDirError when the home's disk cannot hold it (full, read-only, no permission)."""

    def __init__(self, paths: StatePaths) -> None:
        self.paths = paths
        db = paths.db
        try:
            _create_private(db)
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so a writer waits for the lock
            # up front (busy_timeout) instead of failing half-way through a read-then-write.
            conn = sqlite3.connect(
                db, timeout=30.0, isolation_level=None, check_same_thread=False, factory=_Connection
            )
        except (OSError, sqlite3.Error) as exc:
            if not is_state_dir_fault(exc):
                raise
            raise state_dir_error(paths.home, exc) from None
        assert isinstance(conn, _Connection)
        conn.home = paths.home
        self.conn: _Connection = conn
        try:
            self._init_schema()
        except BaseException:
            self.conn.close()
            raise

    def _init_schema(self) -> None:
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA busy_timeout=30000")
        if self.conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            with self.tx():
                # one statement at a time: executescript() would COMMIT our transaction
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self.conn.execute(stmt)
                self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.conn.close()

    def _commit(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        """One statement in a transaction of its own (``tx``)."""
        with self.tx() as c:
            return c.execute(sql, args)

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the database lock at once (BEGIN IMMEDIATE). On any error,
        the COMMIT's included, it is rolled back and the first error is raised."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            # SQLite may already have rolled back (a full disk, an I/O error); then ROLLBACK fails
            # harmlessly, and must not hide the error that says why.
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error, StateDirError):
                    self.conn.execute("ROLLBACK")
            raise

    # ---- jobs ----
    def insert_job(self, row: JobRow) -> None:
        try:
            values = [_dumps(getattr(row, k)) if k in _JSON_FIELDS else getattr(row, k) for k in _JOB_FIELDS]
            self._commit(f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values)
        except sqlite3.IntegrityError:
            existing = self.find_job(row.namespace, row.name)
            kind = existing.kind if existing else row.kind
            raise AlreadyExistsError(kind=kind, namespace=row.namespace, name=row.name) from None

    def get_job(self, uid: str) -> JobRow | None:
        r = self.conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE uid = ?", (uid,)).fetchone()
        return _job_from_row(r) if r else None

    def find_job(self, namespace: str, name: str) -> JobRow | None:
        r = self.conn.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE namespace = ? AND name = ?", (namespace, name)
        ).fetchone()
        return _job_from_row(r) if r else None

    def list_jobs(self, namespace: str | None = None, kind: str | None = None) -> list[JobRow]:
        rows = self.conn.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE (? IS NULL OR namespace = ?) AND (? IS NULL OR kind = ?) "
            "ORDER BY created_at, name",
            (namespace, namespace, kind, kind),
        )
        return [_job_from_row(r) for r in rows]

    def job_generation(self, uid: str) -> tuple[int, float | None] | None:
        """(generation, deletion_requested_at): the cheap poll a supervisor runs between passes."""
        r = self.conn.execute(
            "SELECT generation, deletion_requested_at FROM jobs WHERE uid = ?", (uid,)
        ).fetchone()
        return (r[0], r[1]) if r else None

    def write_status(self, uid: str, status: dict[str, Any]) -> None:
        self._commit("UPDATE jobs SET status = ? WHERE uid = ?", (_dumps(status), uid))

    def write_manifest(self, uid: str, manifest: dict[str, Any]) -> int:
        """Replace the job's manifest (a user update such as suspend); returns the new generation."""
        with self.tx() as c:
            c.execute(
                "UPDATE jobs SET manifest = ?, generation = generation + 1 WHERE uid = ?",
                (_dumps(manifest), uid),
            )
            r = c.execute("SELECT generation FROM jobs WHERE uid = ?", (uid,)).fetchone()
        return int(r[0]) if r else 0

    def request_deletion(self, uid: str, now: float, grace: float | None) -> None:
        self._commit(
            "UPDATE jobs SET deletion_requested_at = COALESCE(deletion_requested_at, ?), "
            "deletion_grace = ?, generation = generation + 1 WHERE uid = ?",
            (now, grace, uid),
        )

    def delete_job(self, uid: str) -> None:
        """Remove the job and, by cascade, its pods, objects, events, processes, ports and GPUs."""
        self._commit("DELETE FROM jobs WHERE uid = ?", (uid,))

    # ---- supervisor identity ----
    def claim_supervisor(self, uid: str, pid: int, ticks: int | None, boot: str, now: float) -> bool:
        """A starting supervisor takes the job; False when another one already holds it."""
        cur = self._commit(
            "UPDATE jobs SET supervisor_state = 'running', supervisor_pid = ?, supervisor_ticks = ?, "
            "supervisor_boot = ?, supervisor_since = ? WHERE uid = ? AND supervisor_state = 'starting'",
            (pid, ticks, boot, now, uid),
        )
        return cur.rowcount == 1

    def release_supervisor(self, uid: str, pid: int) -> None:
        self._commit(
            "UPDATE jobs SET supervisor_state = 'exited', supervisor_pid = NULL, supervisor_since = NULL "
            "WHERE uid = ? AND supervisor_pid = ?",
            (uid, pid),
        )

    def mark_supervisor_starting(self, row: JobRow, now: float) -> bool:
        """Compare-and-swap from the state ``row`` shows to 'starting'; True for the one caller that wins
        (so two shells that notice a lost supervisor at once start only one replacement)."""
        cur = self._commit(
            "UPDATE jobs SET supervisor_state = 'starting', supervisor_pid = NULL, supervisor_ticks "
            "= NULL, supervisor_boot = NULL, supervisor_since = ? WHERE uid = ? AND supervisor_state = ? "
            "AND supervisor_pid IS ? AND supervisor_since IS ?",
            (now, row.uid, row.supervisor_state, row.supervisor_pid, row.supervisor_since),
        )
        return cur.rowcount == 1

    # ---- pods and other owned objects ----
    def write_pods(self, uid: str, pods: Sequence[dict[str, Any]]) -> None:
        with self.tx() as c:
            c.executemany(
                "INSERT INTO pods (job_uid, name, obj) VALUES (?, ?, ?) "
                "ON CONFLICT (job_uid, name) DO UPDATE SET obj = excluded.obj",
                [(uid, p["metadata"]["name"], _dumps(p)) for p in pods],
            )

    def remove_pod(self, uid: str, name: str) -> None:
        self._commit("DELETE FROM pods WHERE job_uid = ? AND name = ?", (uid, name))

    def list_pods(self, uid: str) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT obj FROM pods WHERE job_uid = ? ORDER BY name", (uid,))
        return [json.loads(r[0]) for r in rows]

    def write_object(self, uid: str, obj: dict[str, Any]) -> None:
        self._commit(
            "INSERT INTO objects (job_uid, kind, name, obj) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (job_uid, kind, name) DO UPDATE SET obj = excluded.obj",
            (uid, obj["kind"], obj["metadata"]["name"], _dumps(obj)),
        )

    def remove_object(self, uid: str, kind: str, name: str) -> None:
        self._commit("DELETE FROM objects WHERE job_uid = ? AND kind = ? AND name = ?", (uid, kind, name))

    def list_objects(self, uid: str, kind: str | None = None) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT obj FROM objects WHERE job_uid = ? AND (? IS NULL OR kind = ?) ORDER BY kind, name",
            (uid, kind, kind),
        )
        return [json.loads(r[0]) for r in rows]

    # ---- events (aggregated like the API server: same type, reason, message → count + 1) ----
    def add_events(self, uid: str, events: Sequence[tuple[str, str, str]], now: float) -> None:
        if not events:
            return
        with self.tx() as c:
            for etype, reason, message in events:
                cur = c.execute(
                    "UPDATE events SET count = count + 1, last_ts = ? WHERE id = ("
                    "SELECT id FROM events WHERE job_uid = ? AND type = ? AND reason = ? AND message = ? "
                    "ORDER BY id DESC LIMIT 1)",
                    (now, uid, etype, reason, message),
                )
                if cur.rowcount == 0:
                    c.execute(
                        "INSERT INTO events (job_uid, type, reason, message, first_ts, last_ts) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (uid, etype, reason, message, now, now),
                    )

    def list_events(self, uid: str) -> list[JobEvent]:
        rows = self.conn.execute(
            "SELECT type, reason, message, count, first_ts, last_ts FROM events WHERE job_uid = ? ORDER "
            "BY last_ts, id",
            (uid,),
        )
        return [JobEvent(*r) for r in rows]

    # ---- progress posted by the replicas (Trainer v2's trainerStatus), kept as a history ----
    def add_progress(self, uid: str, replica: str, status: dict[str, Any], now: float) -> None:
        self._commit(
            "INSERT INTO progress (job_uid, replica, ts, status) VALUES (?, ?, ?, ?)",
            (uid, replica, now, _dumps(status)),
        )

    def list_progress(self, uid: str, limit: int = 10_000) -> list[tuple[str, float, dict[str, Any]]]:
        """(replica, time, trainerStatus), oldest first: the newest ``limit`` posts."""
        rows = self.conn.execute(
            "SELECT replica, ts, status FROM (SELECT id, replica, ts, status FROM progress "
            "WHERE job_uid = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
            (uid, limit),
        )
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    # ---- replica processes ----
    def next_attempt(self, uid: str, pod: str, container: str) -> int:
        r = self.conn.execute(
            "SELECT MAX(attempt) FROM processes WHERE job_uid = ? AND pod = ? AND container = ?",
            (uid, pod, container),
        ).fetchone()
        return 0 if r[0] is None else int(r[0]) + 1

    def add_process(self, p: ProcessRow) -> None:
        values = dataclasses.astuple(p)
        marks = ", ".join("?" * len(values))
        self._commit(f"INSERT OR REPLACE INTO processes ({_PROCESS_COLUMNS}) VALUES ({marks})", values)

    def finish_process(
        self, uid: str, pod: str, container: str, attempt: int, exit_code: int, now: float
    ) -> None:
        self._commit(
            "UPDATE processes SET finished_at = ?, exit_code = ? "
            "WHERE job_uid = ? AND pod = ? AND container = ? AND attempt = ? AND finished_at IS NULL",
            (now, exit_code, uid, pod, container, attempt),
        )

    def list_processes(self, uid: str, *, unfinished: bool = False) -> list[ProcessRow]:
        sql = f"SELECT {_PROCESS_COLUMNS} FROM processes WHERE job_uid = ?"
        if unfinished:
            sql += " AND finished_at IS NULL"
        rows = self.conn.execute(sql + " ORDER BY pod, container, attempt", (uid,))
        return [ProcessRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), *r[6:]) for r in rows]

    # ---- ports ----
    def job_ports(self, uid: str) -> dict[tuple[str, int], int]:
        rows = self.conn.execute(
            "SELECT replica_type, replica_index, port FROM ports WHERE job_uid = ?", (uid,)
        )
        return {(r[0], int(r[1])): int(r[2]) for r in rows}

    def reserve_port(self, uid: str, rtype: str, index: int, port: int) -> bool:
        """Record ``port`` for the replica unless another job (or replica) holds it."""
        try:
            self._commit(
                "INSERT INTO ports (port, job_uid, replica_type, replica_index) VALUES (?, ?, ?, ?)",
                (port, uid, rtype, index),
            )
        except sqlite3.IntegrityError:
            return False
        return True

    # ---- GPUs ----
    def gpus_in_use(self) -> dict[str, tuple[str, str, str]]:
        rows = self.conn.execute("SELECT gpu, job_uid, pod, container FROM gpus")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def allocate_gpus(
        self, uid: str, pod: str, wants: Sequence[tuple[str, int]], inventory: Sequence[str]
    ) -> dict[str, list[str]] | None:
        """Atomically give each (container, count) in ``wants`` distinct GPUs of ``inventory``: first the
        ones reserved for the job's admitted gang (``admit_gang``), then free ones; None (and nothing
        taken) when they do not all fit. A pod that already holds GPUs keeps them."""
        with self.tx() as c:
            held: dict[str, list[str]] = {}
            for gpu, cont in c.execute(
                "SELECT gpu, container FROM gpus WHERE job_uid = ? AND pod = ?", (uid, pod)
            ):
                held.setdefault(cont, []).append(gpu)
            if held:
                return held
            reserved = [
                r[0] for r in c.execute("SELECT gpu FROM gpus WHERE job_uid = ? AND pod = ''", (uid,))
            ]
            used = {r[0] for r in c.execute("SELECT gpu FROM gpus")}
            free = [g for g in inventory if g in reserved] + [g for g in inventory if g not in used]
            if sum(n for _, n in wants) > len(free):
                return None
            out: dict[str, list[str]] = {}
            for container, n in wants:
                out[container], free = free[:n], free[n:]
                c.executemany(  # (a GPU reserved for the job's gang: its row, handed to the pod)
                    "INSERT OR REPLACE INTO gpus (gpu, job_uid, pod, container) VALUES (?, ?, ?, ?)",
                    [(g, uid, pod, container) for g in out[container]],
                )
        return out

    def release_gpus(self, uid: str, pod: str) -> None:
        self._commit("DELETE FROM gpus WHERE job_uid = ? AND pod = ?", (uid, pod))

    # ---- gang admission (issue 11; core/admission.py decides) ----
    def admit_gang(self, request: GangRequest, inventory: Sequence[str]) -> Admission:
        """Queue ``request`` (or refresh it: the job may have changed) and decide, in one transaction
        against every other waiting job and every GPU held, whether its gang starts now; if so, reserve
        its GPUs (rows with no pod, handed to its pods by ``allocate_gpus``) and mark it admitted, so
        that no other job can take them between the decision and its pods' start. A job stays
        admitted while it holds GPUs (reserved, or its pods'); once it holds none (its pods ended or
        were deleted, e.g. a whole-job restart) its next pods queue again as a new gang. Waiting jobs
        whose deletion was asked for are ignored."""
        with self.tx() as c:
            rows = c.execute(
                "SELECT g.gpu, g.job_uid, j.namespace || '/' || j.name FROM gpus g JOIN jobs j "
                "ON j.uid = g.job_uid"
            ).fetchall()
            own = sum(1 for _, owner, _ in rows if owner == request.uid)
            row = c.execute("SELECT admitted FROM gangs WHERE job_uid = ?", (request.uid,)).fetchone()
            if row is not None and row[0] and own:
                return Admission(True)
            c.execute(
                "INSERT OR REPLACE INTO gangs (job_uid, job, pods, gpus, priority, priority_class, queue, "
                "created_at, error, admitted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                dataclasses.astuple(request),
            )
            waiting = [
                GangRequest(*r)
                for r in c.execute(
                    "SELECT g.job_uid, g.job, g.pods, g.gpus, g.priority, g.priority_class, g.queue, "
                    "g.created_at, g.error FROM gangs g JOIN jobs j ON j.uid = g.job_uid "
                    "WHERE g.admitted = 0 AND g.job_uid != ? AND j.deletion_requested_at IS NULL",
                    (request.uid,),
                )
            ]
            held = {gpu: job for gpu, owner, job in rows if owner != request.uid}
            admission = compute_admission(request, waiting, inventory, held)
            if admission.admit:
                taken = {r[0] for r in rows}
                reserve = [g for g in inventory if g not in taken][: max(request.gpus - own, 0)]
                c.executemany(
                    "INSERT INTO gpus (gpu, job_uid, pod, container) VALUES (?, ?, '', '')",
                    [(g, request.uid) for g in reserve],
                )
                c.execute("UPDATE gangs SET admitted = 1 WHERE job_uid = ?", (request.uid,))
        return admission

    def release_gang(self, uid: str) -> None:
        """The job no longer waits nor holds a place (suspended, finished): leave the queue and give
        back the GPUs reserved for pods it has not started. Its pods' own GPUs go with the pods."""
        with self.tx() as c:
            c.execute("DELETE FROM gangs WHERE job_uid = ?", (uid,))
            c.execute("DELETE FROM gpus WHERE job_uid = ? AND pod = ''", (uid,))
