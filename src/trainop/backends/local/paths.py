"""Where the local backend keeps its state: ``$TRAINOP_HOME`` and the layout beneath it.

Every path the backend creates, writes or deletes is built by ``StatePaths``, which refuses a name
that is not one plain path segment or a path that resolves (symlinks too) outside the home. The home
is owner-only (0700, also when it existed before): the state holds the submitting shell's
environment. ``state_dir_error`` turns an OS or SQLite fault on the home into one line that says
what is wrong and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trainop.api.constants import ENV_TRAINOP_HOME
from trainop.backends.base import BackendError

HOME_MODE = 0o700
FILE_MODE = 0o600  # state.db and every log: they hold replicas' output and the job's environment


class UnsafePathError(BackendError):
    """A name would put a state path outside the home. Names are validated where they enter
    (DNS-1123 labels); this is the defence in depth, so it names the offending part plainly."""


class StateDirError(BackendError):
    """The home cannot be used: not a directory, read-only, full, or not ours. The message is one
    line: what is wrong and what to do (the CLI exits with 2, a bad TRAINOP_HOME setting)."""


def resolve_home(env: Mapping[str, str]) -> Path:
    """``$TRAINOP_HOME``, else ``${XDG_DATA_HOME:-~/.local/share}/trainop`` (XDG base-directory spec)."""
    explicit = env.get(ENV_TRAINOP_HOME)
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", "~")).expanduser() / ".local" / "share"
    return (base / "trainop").absolute()


def _check_segment(home: Path, part: str) -> None:
    # One segment: "a/b" or ".." would walk the tree, "" or "." would name a parent (so deleting a
    # job's directory would delete every job's), and NUL truncates the path in the kernel.
    if not part or part in (".", "..") or "/" in part or "\0" in part:
        raise UnsafePathError(
            f"refusing the name {part!r} in a path under the trainop home {home}: a name used in a path "
            "must be one plain path segment (no '/', '.', '..' or NUL)"
        )


@dataclass(frozen=True, slots=True)
class StatePaths:
    """The layout under the home: one SQLite database, logs and per-job working state. Every method
    returns a path checked by ``inside``."""

    home: Path

    def inside(self, *parts: str) -> Path:
        """``home/part/…`` after checking each part is one plain segment and that the result, with
        every symlink resolved, is inside the home. Raises UnsafePathError."""
        for part in parts:
            _check_segment(self.home, part)
        path = self.home.joinpath(*parts)
        real_home = self.home.resolve()
        real = path.resolve()
        if real != real_home and not real.is_relative_to(real_home):
            raise UnsafePathError(
                f"refusing {str(path)!r}: it resolves to {str(real)!r}, outside the trainop home {real_home} "
                "(a symlink under the home points out of it)"
            )
        return path

    @property
    def db(self) -> Path:
        return self.inside("state.db")

    def job_logs(self, namespace: str, job: str) -> Path:
        return self.inside("logs", namespace, job)

    def container_log(self, namespace: str, job: str, pod: str, container: str, attempt: int) -> Path:
        """One file per replica container per attempt: ``logs/<ns>/<job>/<pod>/<container>.<attempt>.log``."""
        _check_segment(self.home, container)
        return self.inside("logs", namespace, job, pod, f"{container}.{attempt}.log")

    def supervisor_log(self, namespace: str, job: str) -> Path:
        return self.inside("logs", namespace, job, "supervisor.log")

    def job_dir(self, namespace: str, job: str) -> Path:
        """Materialised volumes (emptyDir, configMap) and the MPI exec contexts of one job."""
        return self.inside("jobs", namespace, job)

    def pod_dir(self, namespace: str, job: str, pod: str) -> Path:
        """One replica's materialised volumes."""
        return self.inside("jobs", namespace, job, "pods", pod)

    def pod_volume(self, namespace: str, job: str, pod: str, volume: str) -> Path:
        return self.inside("jobs", namespace, job, "pods", pod, "volumes", volume)

    def claim_dir(self, namespace: str, job: str, claim: str) -> Path:
        """A PersistentVolumeClaim the job mounts: one directory its replicas share (removed with it)."""
        _check_segment(self.home, claim)
        return self.inside("jobs", namespace, job, "claims", claim)

    def exec_dir(self, namespace: str, job: str) -> Path:
        """The job's exec contexts: the rsh agent reaches only files in here (build_rsh_agent)."""
        return self.inside("jobs", namespace, job, "exec")

    def exec_context(self, namespace: str, job: str, pod: str) -> Path:
        """The shell script the local rsh agent sources to run a command in ``pod``'s context."""
        _check_segment(self.home, pod)
        return self.inside("jobs", namespace, job, "exec", f"{pod}.sh")


def open_log(path: Path) -> BinaryIO:
    """``path`` opened to append, unbuffered, created owner-only (0600) with its directory: a
    replica's output is the user's alone, whatever the umask."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
    return os.fdopen(fd, "ab", buffering=0)


def ensure_home(env: Mapping[str, str] | None = None) -> StatePaths:
    """The state paths, creating the home (mode 0700) on first use and making an existing one
    owner-only. Raises StateDirError when it cannot be used."""
    home = resolve_home(os.environ if env is None else env)
    prepare_home(home)
    return StatePaths(home)


def prepare_home(home: Path) -> None:
    """Create ``home`` (0700) or make the existing directory owner-only; StateDirError if neither."""
    try:
        home.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise state_dir_error(home, exc, creating=True) from None
    try:
        st = home.stat()
    except OSError as exc:
        raise state_dir_error(home, exc) from None
    if st.st_mode & stat.S_ISVTX:
        # /tmp and its like are shared by design: taking them over (0700) would lock everyone else out.
        raise StateDirError(
            f"TRAINOP_HOME={home} is a shared directory (sticky bit, like /tmp): point TRAINOP_HOME at a "
            "directory of its own, e.g. TRAINOP_HOME=" + str(home / "trainop")
        )
    if stat.S_IMODE(st.st_mode) != HOME_MODE and st.st_uid == os.geteuid():
        try:
            os.chmod(home, HOME_MODE)
        except OSError as exc:
            raise state_dir_error(home, exc) from None


def _nearest_non_directory(path: Path) -> tuple[Path, str] | None:
    """The first of ``path`` and its parents that exists but is not a directory, with what it is."""
    for p in [path, *path.parents]:
        try:
            mode = p.stat().st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return None
        what = {
            stat.S_IFREG: "a file",
            stat.S_IFCHR: "a character device",
            stat.S_IFBLK: "a block device",
            stat.S_IFIFO: "a named pipe",
            stat.S_IFSOCK: "a socket",
        }.get(stat.S_IFMT(mode), "not a directory")
        return p, what
    return None


# SQLite result codes (sqlite3.Error.sqlite_errorcode & 0xff) that mean the disk, not the data.
_SQLITE_ERRNO = {
    13: errno.ENOSPC,  # SQLITE_FULL
    8: errno.EROFS,  # SQLITE_READONLY
    14: errno.EACCES,  # SQLITE_CANTOPEN
    10: errno.EIO,  # SQLITE_IOERR
}


def is_state_dir_fault(exc: BaseException) -> bool:
    """Whether ``exc`` (an OSError or sqlite3.Error) is about the disk under the home."""
    if isinstance(exc, OSError):
        return exc.errno in (
            errno.ENOSPC,
            errno.EDQUOT,
            errno.EROFS,
            errno.EACCES,
            errno.EPERM,
            errno.ENOTDIR,
            errno.EEXIST,
            errno.EIO,
            errno.ENOENT,
        )
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in _SQLITE_ERRNO


def state_dir_error(home: Path, exc: BaseException, *, creating: bool = False) -> StateDirError:
    """One line for a fault on the home (``exc``: an OSError or a sqlite3.Error): what, and what to do."""
    code = getattr(exc, "errno", None)
    sqlite_code = getattr(exc, "sqlite_errorcode", None)
    if code is None and isinstance(sqlite_code, int):
        code = _SQLITE_ERRNO.get(sqlite_code & 0xFF)
    where = f"the trainop home {home} (TRAINOP_HOME)"
    head = f"cannot create {where}" if creating else f"cannot use {where}"
    st = _statvfs(home)
    if code == errno.EIO and st is not None and st.f_bavail == 0:
        code = errno.ENOSPC  # SQLite reports some writes to a full disk as an I/O error
    bad = _nearest_non_directory(home)
    if bad is not None:
        path, what = bad
        if path == home:
            return StateDirError(
                f"TRAINOP_HOME={home} is {what}, not a directory: point TRAINOP_HOME at a directory "
                "(or remove that file)"
            )
        return StateDirError(f"{head}: {path} is {what}, not a directory: point TRAINOP_HOME elsewhere")
    if code in (errno.ENOSPC, errno.EDQUOT):
        why = (
            f"no space left on its device ({_format_free(st)} free): free some space, or point TRAINOP_HOME "
            "at another disk"
        )
    elif code == errno.EROFS or (st is not None and st.f_flag & os.ST_RDONLY):
        why = (
            "it is on a read-only file system: remount it read-write, or point TRAINOP_HOME at a "
            "writable directory"
        )
    elif code in (errno.EACCES, errno.EPERM):
        why = (
            f"permission denied for user id {os.geteuid()}: make it writable by you (it must be your own "
            "directory), or point TRAINOP_HOME at one that is"
        )
    elif code == errno.EIO:
        why = f"an I/O error ({exc}): check the disk (dmesg), or point TRAINOP_HOME at another directory"
    else:
        why = f"{getattr(exc, 'strerror', None) or exc}: check the directory, or point TRAINOP_HOME elsewhere"
    return StateDirError(f"{head}: {why}")


def _statvfs(home: Path) -> os.statvfs_result | None:
    """The file system of ``home``, or of its nearest parent that exists."""
    for p in [home, *home.parents]:
        with contextlib.suppress(OSError):
            return os.statvfs(p)
    return None


def _format_free(st: os.statvfs_result | None) -> str:
    if st is None:
        return "unknown"
    free = float(st.f_bavail * st.f_frsize)
    for unit in ("bytes", "KiB", "MiB"):
        if free < 1024:
            return f"{free:.0f} {unit}" if unit == "bytes" else f"{free:.1f} {unit}"
        free /= 1024
    return f"{free:.1f} GiB"


def remove_job_files(paths: StatePaths, namespace: str, job: str) -> None:
    """Delete a job's materialised volumes, exec contexts and logs (the job itself is gone). Both
    directories are checked by StatePaths first, so nothing outside the home is ever removed."""
    targets = [paths.job_dir(namespace, job), paths.job_logs(namespace, job)]
    for target in targets:
        if target.is_symlink():  # rmtree refuses a symlink; it is not ours to follow or remove
            target.unlink()
            continue
        shutil.rmtree(target, ignore_errors=True)
