"""Every path the local backend builds stays inside the home, whatever a name holds (issue 10, finding 1),
and the home is owner-only with clear errors when it cannot be used (finding 6)."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from trainop.api.errors import FieldError
from trainop.backends.local.paths import (
    StateDirError,
    StatePaths,
    UnsafePathError,
    ensure_home,
    open_log,
    remove_job_files,
)
from trainop.backends.local.render import build_configmap_files, build_rsh_agent, detect_pod_errors
from trainop.core.plugin import ExecAgent, capabilities
from trainop.frameworks.registry import REGISTRY

Build = Callable[[StatePaths], Path]


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda p: p.job_logs("../../victim", "t-flag"), id="namespace ../../victim (logs)"),
        pytest.param(lambda p: p.job_dir("../../victim", "t-flag"), id="namespace ../../victim (job dir)"),
        pytest.param(lambda p: p.job_dir("/tmp/abs", "t"), id="absolute namespace"),
        pytest.param(lambda p: p.job_dir("..", "jobs"), id="namespace .. (the home's own jobs dir)"),
        pytest.param(lambda p: p.job_dir(".", "j"), id="namespace ."),
        pytest.param(lambda p: p.job_dir("", "j"), id="empty namespace"),
        pytest.param(lambda p: p.job_dir("default", "a/b"), id="job name with a slash"),
        pytest.param(lambda p: p.job_dir("default", "a\0b"), id="job name with a NUL"),
        pytest.param(
            lambda p: p.container_log("default", "j", "j-worker-0", "../../../../escape-c", 0),
            id="container ../../../../escape-c",
        ),
        pytest.param(
            lambda p: p.pod_volume("default", "j", "j-worker-0", "../../../x"), id="volume ../../../x"
        ),
        pytest.param(lambda p: p.pod_volume("default", "j", "..", "v"), id="pod .."),
        pytest.param(lambda p: p.exec_context("default", "j", "../../other/exec/o-worker-0"), id="exec ../"),
        pytest.param(lambda p: p.supervisor_log("../x", "j"), id="supervisor log"),
        pytest.param(lambda p: p.pod_dir("default", "j", "../../k"), id="pod dir"),
    ],
)
def test_a_name_that_leaves_the_home_is_refused(tmp_path: Path, build: Build) -> None:
    paths = StatePaths(tmp_path / "home")
    with pytest.raises(UnsafePathError, match=r"outside the trainop home|one plain path segment"):
        build(paths)


def test_a_symlink_inside_the_home_that_points_outside_is_refused(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / "logs").mkdir(parents=True)
    outside.mkdir()
    (home / "logs" / "default").symlink_to(outside)
    paths = StatePaths(home)
    with pytest.raises(UnsafePathError, match="outside the trainop home"):
        paths.container_log("default", "j", "j-worker-0", "c", 0)


def test_good_names_stay_inside_the_home(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "home")
    got = [
        paths.container_log("default", "j", "j-worker-0", "c", 3),
        paths.pod_volume("ns-1", "j", "j-worker-0", "data"),
        paths.exec_context("ns-1", "j", "j-worker-0"),
        paths.supervisor_log("ns-1", "j.v2"),
    ]
    home = tmp_path / "home"
    assert got == [
        home / "logs/default/j/j-worker-0/c.3.log",
        home / "jobs/ns-1/j/pods/j-worker-0/volumes/data",
        home / "jobs/ns-1/j/exec/j-worker-0.sh",
        home / "logs/ns-1/j.v2/supervisor.log",
    ]


def test_remove_job_files_never_deletes_outside_the_home(tmp_path: Path) -> None:
    """The reported loss: ``delete t-flag -n ../../victim`` removed ``<home>/../../victim/t-flag``."""
    home = tmp_path / "a" / "b" / "home"
    home.mkdir(parents=True)
    victim = tmp_path / "a" / "victim" / "t-flag"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    with pytest.raises(UnsafePathError):
        remove_job_files(StatePaths(home), "../../victim", "t-flag")
    assert (victim / "precious.txt").read_text() == "keep me"


def test_remove_job_files_does_not_follow_a_job_dir_symlinked_outside(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / "jobs" / "default").mkdir(parents=True)
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (home / "jobs" / "default" / "j").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        remove_job_files(StatePaths(home), "default", "j")
    assert (outside / "precious.txt").read_text() == "keep me"


def test_logs_are_created_owner_only(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / "home")
    log = paths.container_log("default", "j", "j-worker-0", "c", 0)
    old = os.umask(0o022)  # a umask that would leave a plain open() world-readable
    try:
        with open_log(log) as fh:
            fh.write(b"x\n")
        with open_log(log) as fh:  # appends
            fh.write(b"y\n")
    finally:
        os.umask(old)
    assert (stat.S_IMODE(log.stat().st_mode), log.read_bytes()) == (0o600, b"x\ny\n")


# --- the home ----------------------------------------------------------------------------------------


def test_an_existing_home_becomes_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    ensure_home({"TRAINOP_HOME": str(home)})
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("make", "want"),
    [
        pytest.param(
            lambda t: (t / "f").write_text("x") and t / "f",
            r"TRAINOP_HOME=.*/f is a file, not a directory: point TRAINOP_HOME at a directory",
            id="a file",
        ),
        pytest.param(
            lambda t: (t / "f").write_text("x") and t / "f" / "home",
            r"cannot create the trainop home .*/f/home \(TRAINOP_HOME\): .*/f is a file, not a directory",
            id="under a file",
        ),
        pytest.param(
            lambda t: Path("/proc/self/trainop-home"),
            r"cannot create the trainop home /proc/self/trainop-home \(TRAINOP_HOME\): ",
            id="where nobody may create it (/proc, even for root)",
        ),
        pytest.param(
            lambda t: Path("/dev/full"),
            r"TRAINOP_HOME=/dev/full is a character device, not a directory",
            id="a device",
        ),
    ],
)
def test_an_unusable_home_is_one_clear_error(tmp_path: Path, make: Callable[[Path], Path], want: str) -> None:
    home = make(tmp_path)
    with pytest.raises(StateDirError, match=want) as info:
        ensure_home({"TRAINOP_HOME": str(home)})
    assert "\n" not in str(info.value)


def test_a_shared_sticky_directory_is_not_taken_over(tmp_path: Path) -> None:
    """TRAINOP_HOME=/tmp must not make /tmp owner-only: a sticky directory is shared by design."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(StateDirError, match="shared directory"):
        ensure_home({"TRAINOP_HOME": str(shared)})
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777


# --- volumes and the rsh agent -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("../../../../x", id="parent"),
        pytest.param("/etc/x", id="absolute"),
        pytest.param("a/../../x", id="parent inside"),
        pytest.param("..", id="dotdot"),
    ],
)
def test_configmap_items_cannot_write_outside_the_volume(path: str) -> None:
    cm = {"data": {"hostfile": "w-0 slots=1\n"}}
    source = {"name": "cfg", "items": [{"key": "hostfile", "path": path}, {"key": "hostfile", "path": "ok"}]}
    assert build_configmap_files(cm, source) == {"ok": (b"w-0 slots=1\n", 0o644)}


LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
T = "spec.x[W].template.spec"


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"containers": [{"name": "../../../../escape-c", "command": ["x"]}]},
            [FieldError(f"{T}.containers[0].name", f'Invalid value: "../../../../escape-c": {LABEL_MSG}')],
            id="container name",
        ),
        pytest.param(
            {
                "initContainers": [{"name": "a/b", "command": ["x"]}],
                "containers": [{"name": "c", "command": ["x"]}],
            },
            [FieldError(f"{T}.initContainers[0].name", f'Invalid value: "a/b": {LABEL_MSG}')],
            id="init container name",
        ),
        pytest.param(
            {
                "containers": [{"name": "c", "command": ["x"]}],
                "volumes": [{"name": "../../../x", "emptyDir": {}}],
            },
            [FieldError(f"{T}.volumes[0].name", f'Invalid value: "../../../x": {LABEL_MSG}')],
            id="volume name",
        ),
        pytest.param(
            {
                "containers": [
                    {"name": "c", "command": ["x"], "volumeMounts": [{"name": "v", "subPath": "../up"}]}
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
            },
            [
                FieldError(
                    f"{T}.containers[0].volumeMounts[0].subPath",
                    "Invalid value: \"../up\": must not contain '..'",
                )
            ],
            id="subPath above the volume",
        ),
        pytest.param(
            {
                "containers": [{"name": "c", "command": ["x"]}],
                "volumes": [
                    {
                        "name": "v",
                        "configMap": {"name": "j-config", "items": [{"key": "k", "path": "/etc/x"}]},
                    }
                ],
            },
            [
                FieldError(
                    f"{T}.volumes[0].configMap.items[0].path",
                    'Invalid value: "/etc/x": must be a relative path',
                )
            ],
            id="configMap item path",
        ),
    ],
)
def test_names_that_become_paths_are_checked_at_submit(
    spec: dict[str, object], want: list[FieldError]
) -> None:
    pod = {"metadata": {"name": "j-w-0"}, "spec": spec}
    assert detect_pod_errors(pod, {"spec": spec}, "spec.x[W]", configmaps=["j-config"]) == want


def _mpi_agent() -> ExecAgent:
    remote = capabilities(REGISTRY.get("MPIJob")).remote_exec
    assert remote is not None
    return remote.exec_agent


def _agent_tree(
    tmp_path: Path,
    pods: tuple[str, ...] = ("worker-0", "launcher"),
    kind: str = "MPIJob",
    spec: ExecAgent | None = None,
) -> tuple[Path, Path]:
    """Two jobs' exec dirs, as StatePaths lays them out, with a context for each of ``pods`` (after
    ``<job>-``); each context script records what it ran. The agent is ``spec``'s (MPI's by default)."""
    jobs = tmp_path / "home" / "jobs" / "default"
    for job in ("mine", "other"):
        exec_dir = jobs / job / "exec"
        exec_dir.mkdir(parents=True)
        for pod in (f"{job}-{p}" for p in pods):
            ctx = exec_dir / f"{pod}.sh"
            ctx.write_text(f'#!/bin/sh\necho "{job}:{pod} ran: $*" >> {tmp_path}/ran\n')
    agent = tmp_path / "kubexec.sh"
    agent.write_text(build_rsh_agent(str(jobs / "mine" / "exec"), kind, spec or _mpi_agent()))
    agent.chmod(0o755)
    return agent, tmp_path / "ran"


@pytest.mark.parametrize(
    ("pod", "want_rc", "want_ran"),
    [
        pytest.param("mine-worker-0", 0, "mine:mine-worker-0 ran: /bin/sh -c true", id="its own worker"),
        pytest.param("mine-worker-1", 255, "", id="its own worker that is not running"),
        pytest.param("../../other/exec/other-worker-0", 255, "", id="../ into another job"),
        pytest.param("other-worker-0", 255, "", id="another job's worker by name"),
        pytest.param("mine-worker-0/../../../other/exec/other-worker-0", 255, "", id="own prefix, then ../"),
        pytest.param("/tmp/x", 255, "", id="absolute"),
        pytest.param("mine-worker-x", 255, "", id="not a replica index"),
        pytest.param("", 255, "", id="empty"),
    ],
)
def test_rsh_agent_reaches_only_running_replicas_of_its_own_job(
    tmp_path: Path, pod: str, want_rc: int, want_ran: str
) -> None:
    agent, ran = _agent_tree(tmp_path)
    res = subprocess.run([str(agent), pod, "true"], capture_output=True, text=True, timeout=30)
    got_ran = ran.read_text().strip() if ran.exists() else ""
    assert (res.returncode, got_ran) == (want_rc, want_ran), res.stderr
    if want_rc:
        assert "trainop rsh agent:" in res.stderr


# A seventh kind's agent: other names, and a refusal whose prose the shell must print literally.
LIGHT = ExecAgent(key="rsh", names=("-head",), indexed=("-node-",), reachable='its "head" and $NODES')


@pytest.mark.parametrize(
    ("pod", "want_rc", "want_ran"),
    [
        pytest.param("mine-head", 0, "mine:mine-head ran: /bin/sh -c true", id="its head"),
        pytest.param("mine-node-0", 0, "mine:mine-node-0 ran: /bin/sh -c true", id="its node"),
        pytest.param("mine-launcher", 255, "", id="a name only MPI's agent reaches"),
        pytest.param("other-node-0", 255, "", id="another job's node"),
        pytest.param("mine-node-", 255, "", id="no replica index"),
    ],
)
def test_rsh_agent_reaches_what_the_kind_declares(
    tmp_path: Path, pod: str, want_rc: int, want_ran: str
) -> None:
    agent, ran = _agent_tree(tmp_path, ("head", "node-0", "launcher"), "LightJob", LIGHT)
    res = subprocess.run([str(agent), pod, "true"], capture_output=True, text=True, timeout=30)
    got_ran = ran.read_text().strip() if ran.exists() else ""
    assert (res.returncode, got_ran) == (want_rc, want_ran), res.stderr
    if want_rc:
        assert 'not a replica of LightJob mine (only its "head" and $NODES)' in res.stderr
