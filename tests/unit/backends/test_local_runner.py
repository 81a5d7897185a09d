"""The local kubelet (backends/local/runner.py's PodRunner) driven through its seams: a fake ProcessHost
(no process is started; exits and signals are the test's) and a fake clock, on a real store. The rules
it mirrors from the kubelet: restart policies (the core maps ExitCode to Never, contract §3.1), the
crash-loop back-off (1 s, doubling to the cap, reset after a run of twice the cap), restart counts and
lastState, a container that cannot start (containerd's StartError, 128), deletion with SIGTERM and
SIGKILL once the grace period is over."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from trainop.api.constants import ENV_TRAINOP_JOB_UID
from trainop.backends.local.paths import StatePaths
from trainop.backends.local.render import LocalContext
from trainop.backends.local.runner import (
    JobIdentity,
    PodRunner,
    rfc3339,
)
from trainop.backends.local.store import JobRow, Store
from trainop.core.observed import Observed
from trainop.core.plan import CreateObject
from trainop.core.reconcile import reconcile
from trainop.core.topology import LoopbackTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder, pytorch_job

UID = "uid-a"
POD = "a-master-0"
T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
TERM, KILL = int(signal.SIGTERM), int(signal.SIGKILL)
# The kubelet's numbers, written here rather than imported, so that a change to them fails a test.
FIRST_DELAY = 1.0  # the first crash-loop back-off
DEFAULT_CAP = 10.0  # the local default cap (TRAINOP_RESTART_BACKOFF_MAX; the kubelet's is 300 s)
START_ERROR_CODE = 128  # containerd's exit code for a container that could not start


@dataclass
class FakeProcess:
    pid: int
    argv: tuple[str, ...]
    env: dict[str, str]
    returncode: int | None = None


@dataclass
class FakeHost:
    """The operating system as the runner sees it. A process runs until the test ends it (``exit``)
    or a signal does: SIGKILL always, SIGTERM unless ``ignore_term``. ``signals`` records every
    (session, leader ticks, signal) the runner sent, dead sessions included."""

    missing: set[str] = field(default_factory=set)  # commands that are not on $PATH
    ignore_term: bool = False
    leftovers: dict[int, int] = field(default_factory=dict)  # session → processes left after its leader
    started: list[FakeProcess] = field(default_factory=list)
    live: dict[int, FakeProcess] = field(default_factory=dict)
    exits: list[tuple[int, int]] = field(default_factory=list)
    signals: list[tuple[int, int | None, int]] = field(default_factory=list)
    marked_kills: list[tuple[str, str]] = field(default_factory=list)

    def spawn(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], log: BinaryIO) -> FakeProcess:
        if argv[0] in self.missing:  # what Popen raises for a command it cannot find
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        proc = FakeProcess(1000 + len(self.started), tuple(argv), dict(env))
        self.started.append(proc)
        self.live[proc.pid] = proc
        return proc

    def start_ticks(self, pid: int) -> int | None:
        return pid * 7 if pid in self.live else None

    def wait_any(self) -> tuple[int, int] | None:
        return self.exits.pop(0) if self.exits else None

    def signal_session(self, sid: int, leader_ticks: int | None, sig: int) -> None:
        self.signals.append((sid, leader_ticks, sig))
        if sid in self.live and (sig == KILL or (sig == TERM and not self.ignore_term)):
            self.exit(sid, -sig)

    def kill_leftovers(self, sid: int, leader_ticks: int | None) -> int:
        return self.leftovers.pop(sid, 0)

    def kill_marked(self, name: str, value: str) -> int:
        self.marked_kills.append((name, value))
        return 0

    # ---- the test's side ----
    def exit(self, pid: int, code: int) -> None:
        """The process ends with ``code`` (-n: killed by signal n); the runner learns it by reaping."""
        del self.live[pid]
        self.exits.append((pid, code))

    def last_pid(self) -> int:
        return self.started[-1].pid


@dataclass
class FakeClock:
    t: float = T0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Rig:
    runner: PodRunner
    host: FakeHost
    clock: FakeClock
    store: Store
    paths: StatePaths

    def start(self, job: JobBuilder) -> None:
        """Add the pods the core creates first for ``job`` and start them (one tick)."""
        built = job.uid(UID).namespace("default").build()
        topology = LoopbackTopology(ports={("Master", 0): 29500})
        plan = reconcile(built, Observed(job=built), REGISTRY.get(built.kind), topology, datetime.now(UTC))
        for action in plan.actions:
            if isinstance(action, CreateObject) and action.obj["kind"] == "Pod":
                self.runner.add(action.obj)
        self.runner.tick()

    def crash(self, code: int) -> None:
        """The running container exits with ``code`` and the runner reaps it."""
        self.host.exit(self.host.last_pid(), code)
        self.runner.reap()

    def status(self, pod: str = POD) -> dict[str, Any]:
        return dict(self.runner.pod_dict(self.runner.pods[pod])["status"])

    def brief(self, pod: str = POD, key: str = "containerStatuses") -> dict[str, Any]:
        """The pod's phase and its first container's state, restart count and last exit code."""
        status = self.status(pod)
        cs = status[key][0]
        [(state, detail)] = cs["state"].items()
        return {
            "phase": status["phase"],
            "state": state,
            "reason": detail.get("reason"),
            "exitCode": detail.get("exitCode"),
            "restartCount": cs["restartCount"],
            "lastExitCode": cs["lastState"].get("terminated", {}).get("exitCode"),
        }

    def wakeup_in(self) -> float | None:
        """How long until the runner wants its next tick (None: nothing is due)."""
        at = self.runner.next_wakeup()
        return None if at is None else at - self.clock()


def make_rig(tmp_path: Path, backoff_max: float | None = None) -> Rig:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    paths = StatePaths(home)
    store = Store(paths)
    if store.get_job(UID) is None:
        store.insert_job(
            JobRow(
                uid=UID,
                namespace="default",
                name="a",
                kind="PyTorchJob",
                manifest={},
                status={},
                base_dir=str(tmp_path),
                host_env={},
                generation=1,
                created_at=T0,
            )
        )
    host, clock = FakeHost(), FakeClock()
    context = LocalContext(host_env={"PATH": "/usr/bin"}, base_dir=str(tmp_path), hostname="box")
    runner = PodRunner(store, paths, JobIdentity(UID, "default", "a"), context, clock=clock, host=host)
    if backoff_max is not None:  # None: the runner's default
        runner = PodRunner(store, paths, runner.job, context, backoff_max=backoff_max, clock=clock, host=host)
    return Rig(runner, host, clock, store, paths)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    r = make_rig(tmp_path)
    yield r
    r.store.close()


def job(policy: str, command: str = "train") -> JobBuilder:
    return pytorch_job("a").master(1).command([command]).restart_policy(policy)


RUNNING = {"phase": "Running", "state": "running", "reason": None, "exitCode": None}


def backing_off(last: int, restarts: int = 0) -> dict[str, Any]:
    return {
        "phase": "Running",
        "state": "waiting",
        "reason": "CrashLoopBackOff",
        "exitCode": None,
        "restartCount": restarts,
        "lastExitCode": last,
    }


def ended(phase: str, code: int) -> dict[str, Any]:
    reason = "Completed" if code == 0 else "Error"
    return {
        "phase": phase,
        "state": "terminated",
        "reason": reason,
        "exitCode": code,
        "restartCount": 0,
        "lastExitCode": None,
    }


# ---- restart policies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "code", "want"),
    [
        pytest.param("Always", 0, backing_off(0), id="Always restarts a container that succeeded"),
        pytest.param("Always", 1, backing_off(1), id="Always restarts a container that failed"),
        pytest.param("OnFailure", 0, ended("Succeeded", 0), id="OnFailure leaves a success terminated"),
        pytest.param("OnFailure", 3, backing_off(3), id="OnFailure restarts a failure"),
        pytest.param("OnFailure", -15, backing_off(143), id="killed by SIGTERM reports 143, restarts"),
        pytest.param("Never", 0, ended("Succeeded", 0), id="Never: success, pod Succeeded"),
        pytest.param("Never", 1, ended("Failed", 1), id="Never: failure, pod Failed"),
        pytest.param("ExitCode", 1, ended("Failed", 1), id="ExitCode runs as Never (the core retries)"),
        pytest.param("ExitCode", -9, ended("Failed", 137), id="ExitCode, SIGKILL reports 137"),
    ],
)
def test_restart_policy(rig: Rig, policy: str, code: int, want: dict[str, Any]) -> None:
    rig.start(job(policy))
    assert rig.brief() == {**RUNNING, "restartCount": 0, "lastExitCode": None}

    rig.crash(code)

    assert rig.brief() == want
    restarts = want["state"] == "waiting"
    assert rig.wakeup_in() == (FIRST_DELAY if restarts else None)
    rig.clock.advance(FIRST_DELAY)
    rig.runner.tick()
    # Restarted in place: a second process, the same container, one restart, the exit kept as lastState.
    assert len(rig.host.started) == (2 if restarts else 1)
    if restarts:
        assert rig.brief() == {**RUNNING, "restartCount": 1, "lastExitCode": want["lastExitCode"]}
    else:
        assert rig.brief() == want


def test_process_runs_the_container_marked_as_the_jobs(rig: Rig) -> None:
    """The command in its own process, its environment marked with the job's uid (so a delete without
    supervisor finds what it forked), and the pod running on this host."""
    rig.start(job("Never", "train"))
    [proc] = rig.host.started
    assert proc.argv == ("train",)
    assert proc.env[ENV_TRAINOP_JOB_UID] == UID
    assert proc.env["RANK"] == "0"
    status = rig.status()
    assert status["containerStatuses"][0]["containerID"] == f"local://{proc.pid}"
    assert status["startTime"] == rfc3339(T0)


def test_exit_ends_the_whole_session(rig: Rig) -> None:
    """A container ends with its main process: whatever it left in its session is sent SIGKILL."""
    rig.start(job("Never"))
    pid = rig.host.last_pid()
    rig.crash(0)
    assert rig.host.signals == [(pid, None, KILL)]


# ---- crash-loop back-off -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cap", "want"),
    [
        pytest.param(None, [1, 2, 4, 8, 10, 10], id="1 s doubling to the default cap of 10 s"),
        pytest.param(3.0, [1, 2, 3, 3], id="a lower cap (TRAINOP_RESTART_BACKOFF_MAX)"),
    ],
)
def test_crash_loop_backoff(tmp_path: Path, cap: float | None, want: list[float]) -> None:
    rig = make_rig(tmp_path, backoff_max=cap)
    try:
        rig.start(job("OnFailure"))
        got = []
        for restarts, code in enumerate(range(1, len(want) + 1)):
            rig.crash(code)  # at once: no run long enough to reset the back-off
            delay = rig.wakeup_in()
            assert delay is not None
            got.append(delay)
            assert rig.brief() == backing_off(code, restarts)
            [waiting] = [cs["state"]["waiting"] for cs in rig.status()["containerStatuses"]]
            assert waiting["message"] == f"back-off {delay:g}s restarting failed container=pytorch pod={POD}"
            # Not before its time: a tick half-way through the delay starts nothing.
            rig.clock.advance(delay / 2)
            rig.runner.tick()
            assert (len(rig.host.started), rig.brief()["state"]) == (restarts + 1, "waiting")
            rig.clock.advance(delay / 2)
            rig.runner.tick()
            assert rig.brief() == {**RUNNING, "restartCount": restarts + 1, "lastExitCode": code}
        assert got == want
    finally:
        rig.store.close()


@pytest.mark.parametrize(
    ("ran", "want"),
    [
        pytest.param(2 * DEFAULT_CAP, FIRST_DELAY, id="a run of twice the cap resets it to 1 s"),
        pytest.param(2 * DEFAULT_CAP - 0.5, 8.0, id="a shorter run keeps doubling"),
    ],
)
def test_backoff_resets_after_a_long_run(rig: Rig, ran: float, want: float) -> None:
    rig.start(job("OnFailure"))
    for _ in range(3):  # 1, 2, 4: the next delay would be 8
        rig.crash(1)
        delay = rig.wakeup_in()
        assert delay is not None
        rig.clock.advance(delay)
        rig.runner.tick()
    rig.clock.advance(ran)
    rig.crash(1)
    assert rig.wakeup_in() == want
    assert rig.brief() == backing_off(1, restarts=3)


# ---- init containers ---------------------------------------------------------------------------


def test_init_containers_run_first_and_a_success_is_never_rerun(rig: Rig) -> None:
    """Under Always: a failed init container restarts with back-off before any app container starts;
    once it succeeded it is done (never restarted), and only the app container is restarted."""
    rig.start(job("Always").init_container("Master", name="setup", image="busybox", command=["prep"]))
    assert [p.argv for p in rig.host.started] == [("prep",)]
    assert rig.status()["phase"] == "Pending"

    rig.crash(2)
    assert rig.brief(key="initContainerStatuses") == {**backing_off(2), "phase": "Pending"}
    rig.clock.advance(FIRST_DELAY)
    rig.runner.tick()
    assert [p.argv for p in rig.host.started] == [("prep",), ("prep",)]

    rig.crash(0)
    rig.runner.tick()
    assert [p.argv for p in rig.host.started] == [("prep",), ("prep",), ("train",)]
    assert rig.brief(key="initContainerStatuses") == {
        **ended("Running", 0),
        "restartCount": 1,
        "lastExitCode": 2,
    }
    assert rig.brief() == {**RUNNING, "restartCount": 0, "lastExitCode": None}

    rig.crash(0)
    assert rig.wakeup_in() == FIRST_DELAY
    rig.clock.advance(FIRST_DELAY)
    rig.runner.tick()
    assert [p.argv for p in rig.host.started][3:] == [("train",)]


# ---- a container that cannot start -------------------------------------------------------------

START_ERROR = (
    "failed to start container 'pytorch': exec: \"no-such-tool\": executable file not found in $PATH"
)


def test_start_failure_under_never(rig: Rig) -> None:
    """containerd's StartError: exit code 128, the reason in the message, the kubelet's Warning event,
    and the line in the attempt's log; under Never the pod has failed."""
    rig.host.missing.add("no-such-tool")
    rig.start(job("Never", "no-such-tool"))

    [cs] = rig.status()["containerStatuses"]
    assert rig.status()["phase"] == "Failed"
    assert cs["state"] == {
        "terminated": {
            "exitCode": START_ERROR_CODE,
            "reason": "StartError",
            "message": START_ERROR,
            "startedAt": rfc3339(T0),
            "finishedAt": rfc3339(T0),
        }
    }
    assert rig.runner.events == [("Warning", "Failed", f"Error: {START_ERROR}")]
    assert rig.host.started == []
    [row] = rig.store.list_processes(UID)
    assert (row.pid, row.exit_code) == (None, START_ERROR_CODE)
    assert Path(row.log_path).read_text() == f"[trainop] {START_ERROR}\n"
    assert rig.wakeup_in() is None


def test_start_failure_under_on_failure_is_retried_with_backoff(rig: Rig) -> None:
    rig.host.missing.add("no-such-tool")
    rig.start(job("OnFailure", "no-such-tool"))
    assert rig.brief() == backing_off(START_ERROR_CODE)
    [cs] = rig.status()["containerStatuses"]
    assert cs["lastState"]["terminated"]["reason"] == "StartError"
    assert rig.wakeup_in() == FIRST_DELAY

    rig.host.missing.clear()  # installed meanwhile
    rig.clock.advance(FIRST_DELAY)
    rig.runner.tick()
    assert rig.brief() == {**RUNNING, "restartCount": 1, "lastExitCode": START_ERROR_CODE}
    assert [p.argv for p in rig.host.started] == [("no-such-tool",)]


# ---- deletion ----------------------------------------------------------------------------------


def with_grace(seconds: int) -> JobBuilder:
    return job("Always").template(lambda t: t["spec"].update(terminationGracePeriodSeconds=seconds))


def test_delete_sends_sigterm_then_sigkill_after_the_grace_period(rig: Rig) -> None:
    rig.host.ignore_term = True
    rig.start(with_grace(5))
    pid, ticks = rig.host.last_pid(), rig.host.last_pid() * 7

    rig.runner.delete(POD)
    assert rig.host.signals == [(pid, ticks, TERM)]
    meta = rig.runner.pod_dict(rig.runner.pods[POD])["metadata"]
    assert (meta["deletionTimestamp"], meta["deletionGracePeriodSeconds"]) == (rfc3339(T0), 5)
    assert rig.wakeup_in() == 5

    rig.clock.advance(4.5)
    rig.runner.tick()
    assert rig.host.signals == [(pid, ticks, TERM)]  # still in its grace period
    assert rig.status()["containerStatuses"][0]["state"].keys() == {"running"}

    rig.clock.advance(0.5)
    rig.runner.tick()
    assert rig.host.signals == [(pid, ticks, TERM), (pid, ticks, KILL)]
    rig.runner.reap()
    # Terminated by the kill (137), and not restarted although its policy is Always.
    assert rig.brief() == ended("Running", 137)
    assert POD in rig.runner.pods  # the next tick finalises it
    rig.runner.tick()
    assert rig.runner.pods == {}
    assert rig.store.list_pods(UID) == []
    assert len(rig.host.started) == 1
    assert rig.runner.is_idle()


def test_a_container_that_stops_on_sigterm_is_not_killed(rig: Rig) -> None:
    rig.start(with_grace(30))
    pid = rig.host.last_pid()
    rig.runner.delete(POD)
    rig.runner.reap()
    rig.runner.tick()
    assert rig.runner.pods == {}
    # SIGTERM, then the session's SIGKILL that follows any exit; no kill of the live process.
    assert rig.host.signals == [(pid, pid * 7, TERM), (pid, None, KILL)]


def test_delete_with_grace_zero_kills_at_once(rig: Rig) -> None:
    rig.host.ignore_term = True
    rig.start(with_grace(30))
    pid = rig.host.last_pid()
    rig.runner.delete(POD, grace=0)
    assert rig.host.signals == [(pid, pid * 7, KILL)]


@pytest.mark.parametrize(
    ("second", "want"),
    [
        pytest.param(2.0, 2.0, id="a second delete may shorten the grace period"),
        pytest.param(60.0, 30.0, id="but never lengthen it"),
    ],
)
def test_second_delete(rig: Rig, second: float, want: float) -> None:
    rig.host.ignore_term = True
    rig.start(with_grace(30))
    rig.runner.delete(POD)
    rig.runner.delete(POD, grace=second)
    assert rig.wakeup_in() == want


def test_deleted_pod_waits_for_its_session_leftovers(rig: Rig) -> None:
    """The leader exited on SIGTERM but its session still has processes: they are killed, and the pod
    stays (deleting) until none is left."""
    rig.start(with_grace(30))
    pid = rig.host.last_pid()
    rig.host.leftovers[pid] = 2
    rig.runner.delete(POD)
    rig.runner.reap()
    rig.runner.tick()
    assert POD in rig.runner.pods
    assert rig.wakeup_in() == pytest.approx(0.05)
    rig.clock.advance(0.05)
    rig.runner.tick()
    assert rig.runner.pods == {}


def test_abandon_kills_everything_and_restarts_nothing(rig: Rig) -> None:
    rig.host.ignore_term = True
    rig.start(job("Always"))
    pid = rig.host.last_pid()
    rig.runner.abandon()
    assert (pid, pid * 7, KILL) in rig.host.signals
    assert rig.host.marked_kills[0] == (ENV_TRAINOP_JOB_UID, UID)
    assert rig.brief() == ended("Running", 137)
    assert not rig.runner.has_live_processes()
    rig.runner.tick()  # the pod was being deleted: it completes, nothing is restarted
    assert rig.runner.pods == {}
    assert len(rig.host.started) == 1


# ---- the scheduling gate -------------------------------------------------------------------------


@dataclass
class FakeGate:
    """A job-level admission (SchedulingGate): refuses with ``answer`` while it is set, and records
    what the runner asked."""

    answer: str | None
    asked: list[str] = field(default_factory=list)

    def begin_tick(self) -> None:
        self.asked.append("begin")

    def refusal(self, pod: Mapping[str, Any]) -> str | None:
        self.asked.append(str(pod["metadata"]["name"]))
        return self.answer


def scheduled(rig: Rig, pod: str) -> dict[str, Any]:
    [cond] = [c for c in rig.status(pod)["conditions"] if c["type"] == "PodScheduled"]
    return {k: cond.get(k) for k in ("status", "reason", "message")}


def test_a_gate_keeps_pods_pending_until_it_admits_them(rig: Rig) -> None:
    gate = FakeGate("0/1 nodes are available: the gang waits")
    rig.runner.gate = gate
    rig.start(pytorch_job("a").master(1).workers(1).command(["train"]))
    rig.runner.tick()  # the same refusal again: no second event
    refused = {"status": "False", "reason": "Unschedulable", "message": gate.answer}
    got = {
        "asked": gate.asked,
        "events": rig.runner.events,
        "started": len(rig.host.started),
        "master": scheduled(rig, POD),
        "worker": scheduled(rig, "a-worker-0"),
    }
    want = {
        "asked": ["begin", POD, "a-worker-0"] * 2,
        "events": [("Warning", "FailedScheduling", gate.answer)] * 2,
        "started": 0,
        "master": refused,
        "worker": refused,
    }
    assert got == want
    gate.answer = None
    rig.runner.tick()
    admitted = {"status": "True", "reason": None, "message": None}
    got = {
        "started": len(rig.host.started),
        "master": scheduled(rig, POD),
        "worker": scheduled(rig, "a-worker-0"),
    }
    assert got == {"started": 2, "master": admitted, "worker": admitted}


# ---- volumes and conditions --------------------------------------------------------------------


def conditions(rig: Rig) -> dict[str, tuple[str, str | None, str | None]]:
    return {c["type"]: (c["status"], c.get("reason"), c.get("message")) for c in rig.status()["conditions"]}


def test_conditions_follow_the_init_then_the_app_containers(rig: Rig) -> None:
    rig.start(job("Never").init_container("Master", name="setup", image="busybox", command=["prep"]))
    unready = ("False", "ContainersNotReady", "containers with unready status: [pytorch]")
    assert conditions(rig) == {
        "PodScheduled": ("True", None, None),
        "Initialized": ("False", "ContainersNotInitialized", "containers with incomplete status: [setup]"),
        "ContainersReady": unready,
        "Ready": unready,
    }
    rig.crash(0)
    rig.runner.tick()
    ready = ("True", None, None)
    assert conditions(rig) == {
        "PodScheduled": ready,
        "Initialized": ready,
        "ContainersReady": ready,
        "Ready": ready,
    }
    rig.crash(0)
    assert (rig.status()["phase"], conditions(rig)["Ready"]) == ("Succeeded", unready)


def test_volumes_get_their_directories_and_a_missing_configmap_keeps_the_pod_pending(rig: Rig) -> None:
    volumes = [
        {"name": "scratch", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "store"}},
        {"name": "maybe", "configMap": {"name": "absent", "optional": True}},
        {"name": "host", "hostPath": {"path": str(rig.paths.home / "elsewhere")}},
        {"name": "cfg", "configMap": {"name": "absent"}},
    ]
    rig.start(job("Never").template(lambda t: t.setdefault("spec", {}).update(volumes=volumes)))
    status = rig.status()
    assert (status["phase"], status.get("message"), rig.host.started) == (
        "Pending",
        'MountVolume.SetUp failed for volume "cfg": configmap "absent" not found',
        [],
    )
    made = [rig.paths.pod_volume("default", "a", POD, v).is_dir() for v in ("scratch", "maybe", "host")]
    assert (made, rig.paths.claim_dir("default", "a", "store").is_dir()) == ([True, True, False], True)
