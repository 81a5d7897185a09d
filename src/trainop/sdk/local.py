"""The SDK's local adapter: ``ClientBackend`` over ``trainop.backends.local.api.LocalBackend``.

Jobs run as processes on this machine; objects cross as Kubernetes JSON, errors as the SDK's typed
ones. Function-mode jobs with ``packages_to_install`` get their own virtual environment under the
job's state directory (packages installed there before the job starts), so the pip install their
script runs never touches the caller's environment.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from trainop.api import errors as api_errors
from trainop.backends.base import BackendError, JobAlreadyExistsError, JobNotFoundError
from trainop.backends.local.api import LocalBackend
from trainop.backends.local.runner import rfc3339
from trainop.sdk import constants
from trainop.sdk.errors import (
    AlreadyExistsError,
    InvalidJobError,
    NotFoundError,
    SDKError,
    build_api_exception,
    build_invalid_job_error,
    build_log_error,
    build_status_body,
)

T = TypeVar("T")

# Under the job's state directory (removed with the job).
JOB_PYTHON_DIR = "python"
PIP_TIMEOUT = 900.0  # seconds for one pip install of packages_to_install
# Deletion: how long update/delete wait for replicas to stop (the local backend's own default applies).
DELETE_WAIT = True


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


def build_parent_pth(site_dirs: list[str]) -> str:
    """A ``.pth`` that makes the caller's packages visible in a job venv. ``addsitedir`` (not a bare
    path) so the caller's own ``.pth`` files (editable installs) are honoured too."""
    return "".join(f"import site; site.addsitedir({d!r})\n" for d in site_dirs)


def build_torchrun_wrapper(python: Path) -> str:
    """``torchrun`` for the job venv: torchrun starts workers with its own interpreter, which must be
    the venv's for the job's packages to be importable."""
    return f'#!/bin/sh\nexec "{python}" -m torch.distributed.run "$@"\n'


def write_job_python_env(target: Path) -> Path:
    """Create the job's virtual environment at ``target``: the base interpreter's packages (system
    site-packages) plus, through a ``.pth``, the caller's; no pip of its own (the caller's serves, and
    installs into this prefix). Returns its ``bin`` directory."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True, clear=True).create(target)
    bindir = target / "bin"
    pure = next((target / "lib").glob("python*/site-packages"))
    parents = [d for d in [*site.getsitepackages(), site.getusersitepackages()] if os.path.isdir(d)]
    (pure / "_trainop_caller_env.pth").write_text(build_parent_pth(parents))
    torchrun = bindir / "torchrun"
    torchrun.write_text(build_torchrun_wrapper(bindir / "python"))
    torchrun.chmod(0o755)
    return bindir


def install_packages(python: Path, packages: Sequence[str], index_url: str) -> None:
    """``pip install`` into the job venv (bootstrapping pip there if the caller's is not importable);
    RuntimeError with pip's own words when it fails."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PIP_USER", None)
    has_pip = subprocess.run([str(python), "-c", "import pip"], capture_output=True, env=env, check=False)
    if has_pip.returncode != 0:
        subprocess.run(
            [str(python), "-m", "ensurepip"], capture_output=True, env=env, check=True, timeout=PIP_TIMEOUT
        )
    cmd = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-warn-script-location",
        "--index-url",
        index_url,
    ]
    res = subprocess.run(
        [*cmd, *map(str, packages)], capture_output=True, text=True, env=env, check=False, timeout=PIP_TIMEOUT
    )
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-8:])
        raise RuntimeError(
            f"pip install {' '.join(map(str, packages))} failed (exit {res.returncode}):\n{tail}"
        )


def _raise(e: BaseException) -> Any:
    raise e


def _invalid(
    e: api_errors.InvalidJobError, verb: str, kind: str, namespace: str, name: str
) -> InvalidJobError:
    err = build_invalid_job_error(e, kind=kind, namespace=namespace, name=name)
    return err.with_message(f"Failed to {verb} {kind}: {namespace}/{name}. Error: {err.cause}")  # type: ignore[return-value]


class LocalJobBackend:
    """``ClientBackend`` on this machine. ``home``: the state directory (default ``$TRAINOP_HOME``)."""

    name = "local"

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = None if home is None else Path(home)
        self.local = LocalBackend(home=self.home)

    def close(self) -> None:
        self.local.close()

    def _exists(self, namespace: str, name: str) -> bool:
        """Whether a job of any kind has that name (names are unique across kinds locally)."""
        try:
            self.local.get(name, namespace)
        except JobNotFoundError:
            return False
        return True

    def _call(self, verb: str, kind: str, namespace: str, name: str, fn: Callable[[], T]) -> T:
        """Run ``fn``; failures become the SDK's typed errors chained to the ``ApiException`` the API
        server would have answered with (404, 409, 422, 500), so both backends read alike."""
        try:
            return fn()
        except api_errors.InvalidJobError as e:
            err = _invalid(e, verb, kind, namespace, name)
            raise err from err.cause
        except (BackendError, OSError) as e:
            plural = str(constants.JOB_PARAMETERS.get(kind, {}).get("plural") or f"{kind.lower()}s")
            resource = f"{plural}.{constants.GROUP}" if kind in constants.JOB_PARAMETERS else plural
            group = constants.GROUP if kind in constants.JOB_PARAMETERS else ""
            if isinstance(e, JobNotFoundError):
                code, text = 404, f'{resource} "{name}" not found'
            elif isinstance(e, JobAlreadyExistsError):
                code, text = 409, f'{resource} "{name}" already exists'
            else:
                code, text = 500, str(e)
            body = build_status_body(code, text, name=name, group=group, kind=plural)
            cause = build_api_exception(code, body)
            message = f"Failed to {verb} {kind}: {namespace}/{name}. Error: {cause}"
            if code == 404:
                raise NotFoundError(
                    message, kind=kind, namespace=namespace, name=name, detail=str(e), cause=cause
                ) from cause
            if code == 409:
                raise AlreadyExistsError(
                    message, kind=kind, namespace=namespace, name=name, detail=str(e), cause=cause
                ) from cause
            raise SDKError(message, detail=str(e), cause=cause) from cause

    # --- jobs ---
    def create_job(self, obj: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or constants.DEFAULT_NAMESPACE, str(meta.get("name", ""))
        job = self._call(
            "create", str(obj.get("kind")), ns, name, lambda: self.local.submit(obj, namespace=ns)
        )
        return job.to_dict()

    def create_function_job(
        self, obj: dict[str, Any], *, packages_to_install: Sequence[str] | None, pip_index_url: str
    ) -> dict[str, Any]:
        if not packages_to_install:
            # The replicas inherit this interpreter's PATH (the local backend puts its directory first),
            # so the script's `python` and `torchrun` are the caller's.
            return self.create_job(obj)
        meta = obj["metadata"]
        ns, name, kind = (
            meta.get("namespace") or constants.DEFAULT_NAMESPACE,
            str(meta["name"]),
            str(obj["kind"]),
        )
        # Checked first: a venv must never be made over the state of an existing job of that name.
        if self._exists(ns, name):
            self._call("create", kind, ns, name, lambda: _raise(JobAlreadyExistsError(name, ns, kind)))
        self._call("create", kind, ns, name, lambda: self.local.prepare(obj))
        target = self.local.paths.job_dir(ns, name) / JOB_PYTHON_DIR
        try:
            bindir = write_job_python_env(target)
            # Installed once here, so the replicas' own identical `pip install` (the script is the
            # same as on Kubernetes) finds everything in place instead of racing to write one prefix.
            install_packages(bindir / "python", packages_to_install, pip_index_url)
        except (OSError, StopIteration, subprocess.SubprocessError, RuntimeError) as e:
            shutil.rmtree(target, ignore_errors=True)
            detail = f"cannot prepare its Python environment: {e}"
            raise SDKError(f"Failed to create {kind}: {ns}/{name}. Error: {detail}", detail=detail) from None
        env = dict(self.local.env)
        env["PATH"] = os.pathsep.join(
            [str(bindir), str(Path(sys.executable).parent), env.get("PATH", os.defpath)]
        )
        env["VIRTUAL_ENV"] = str(target)
        env.pop("PYTHONHOME", None)
        submitter = LocalBackend(home=self.local.paths.home, env=env)
        try:
            job = self._call("create", kind, ns, name, lambda: submitter.submit(obj, namespace=ns))
        except BaseException:
            if not self._exists(ns, name):
                shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            submitter.close()
        return job.to_dict()

    def get_job(
        self, kind: str, namespace: str, name: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        return self._call(
            "get", kind, namespace, name, lambda: self.local.get(name, namespace, kind)
        ).to_dict()

    def list_jobs(self, kind: str, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        jobs = self._call("list", kind, namespace, "", lambda: self.local.list_jobs(namespace, kind))
        return [j.to_dict() for j in jobs]

    def patch_job(
        self, kind: str, namespace: str, name: str, patch: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            current = self.local.get(name, namespace, kind).to_dict()
            current.pop("status", None)
            # Name and kind come from the URL on the API server: a patch cannot move the job.
            merged = build_merge_patch(current, patch)
            merged["metadata"] = {**(merged.get("metadata") or {}), "name": name, "namespace": namespace}
            merged["kind"], merged["apiVersion"] = kind, current.get("apiVersion")
            return self.local.update(merged, namespace).to_dict()

        return self._call("update", kind, namespace, name, run)

    def delete_job(
        self,
        kind: str,
        namespace: str,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        grace = (options or {}).get("gracePeriodSeconds")

        def run() -> None:
            self.local.get(name, namespace, kind)  # the kind must match, as the URL of a DELETE does
            self.local.delete(
                name, namespace, wait=DELETE_WAIT, grace=None if grace is None else float(grace)
            )

        self._call("delete", kind, namespace, name, run)

    # --- pods, logs, events ---
    def list_pods(
        self, namespace: str, labels: Mapping[str, str], *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        job = labels.get(constants.JOB_NAME_LABEL)
        names = [job] if job else [j.name for j in self.local.list_jobs(namespace)]
        pods: list[dict[str, Any]] = []
        for n in names:
            with contextlib.suppress(JobNotFoundError):
                pods.extend(self.local.pods(n, namespace))
        return [
            p
            for p in pods
            if all(((p.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    def read_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> str:
        lines = self._call(
            "read logs of",
            "Pod",
            namespace,
            pod,
            lambda: list(self.local.logs(job, namespace, replica=pod, container=container)),
        )
        return "".join(f"{line.text}\n" for line in lines)

    def stream_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> Iterator[str]:
        # Follows the replica across restarts until the job has finished and the replica's processes ended.
        lines = self.local.logs(job, namespace, replica=pod, container=container, follow=True)
        try:
            for line in lines:
                yield line.text
        except (JobNotFoundError, BackendError, OSError) as e:
            raise build_log_error(namespace, pod, str(e)) from e

    def list_events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for job in self.local.list_jobs(namespace):
            try:
                events = self.local.describe(job.name, namespace).events
            except JobNotFoundError:  # deleted since it was listed
                continue
            for i, ev in enumerate(events):
                out.append(
                    {
                        "metadata": {
                            "name": f"{job.name}.{i}",
                            "namespace": namespace,
                            "creationTimestamp": rfc3339(ev.first_ts),
                        },
                        "involvedObject": {
                            "apiVersion": constants.API_VERSION,
                            "kind": job.kind,
                            "name": job.name,
                            "namespace": namespace,
                        },
                        "type": ev.type,
                        "reason": ev.reason,
                        "message": ev.message,
                        "count": ev.count,
                        "firstTimestamp": rfc3339(ev.first_ts),
                        "lastTimestamp": rfc3339(ev.last_ts),
                    }
                )
        return out

    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        # No Kueue here: the label is kept on the job (for when it moves to a cluster) and nothing
        # waits on it.
        return None
