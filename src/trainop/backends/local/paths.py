"""Where the local backend keeps its state: ``$TRAINOP_HOME`` and the layout beneath it.

``resolve_home`` is pure (it reads only the mapping it is given); ``ensure_home`` creates the
directory with mode 0700, because the state holds the submitting shell's environment, and
``remove_job_files`` deletes a deleted job's files.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trainop.api.constants import ENV_TRAINOP_HOME


def resolve_home(env: Mapping[str, str]) -> Path:
    """``$TRAINOP_HOME``, else ``${XDG_DATA_HOME:-~/.local/share}/trainop`` (XDG base-directory spec)."""
    explicit = env.get(ENV_TRAINOP_HOME)
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", "~")).expanduser() / ".local" / "share"
    return (base / "trainop").absolute()


@dataclass(frozen=True, slots=True)
class StatePaths:
    """The layout under the home: one SQLite database, logs and per-job working state."""

    home: Path

    @property
    def db(self) -> Path:
        return self.home / "state.db"

    def job_logs(self, namespace: str, job: str) -> Path:
        return self.home / "logs" / namespace / job

    def container_log(self, namespace: str, job: str, pod: str, container: str, attempt: int) -> Path:
        """One file per replica container per attempt: ``logs/<ns>/<job>/<pod>/<container>.<attempt>.log``."""
        return self.job_logs(namespace, job) / pod / f"{container}.{attempt}.log"

    def supervisor_log(self, namespace: str, job: str) -> Path:
        return self.job_logs(namespace, job) / "supervisor.log"

    def job_dir(self, namespace: str, job: str) -> Path:
        """Materialised volumes (emptyDir, configMap) and the MPI exec contexts of one job."""
        return self.home / "jobs" / namespace / job

    def pod_volume(self, namespace: str, job: str, pod: str, volume: str) -> Path:
        return self.job_dir(namespace, job) / "pods" / pod / "volumes" / volume

    def exec_context(self, namespace: str, job: str, pod: str) -> Path:
        """The shell script the local rsh agent sources to run a command in ``pod``'s context."""
        return self.job_dir(namespace, job) / "exec" / f"{pod}.sh"


def ensure_home(env: Mapping[str, str] | None = None) -> StatePaths:
    """The state paths, creating the home (mode 0700) on first use."""
    home = resolve_home(os.environ if env is None else env)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return StatePaths(home)


def remove_job_files(paths: StatePaths, namespace: str, job: str) -> None:
    """Delete a job's materialised volumes, exec contexts and logs (the job itself is gone)."""
    shutil.rmtree(paths.job_dir(namespace, job), ignore_errors=True)
    shutil.rmtree(paths.job_logs(namespace, job), ignore_errors=True)
