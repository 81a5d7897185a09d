"""A job's own Python environment on this machine: a virtual environment under the job's state
directory, with the caller's packages visible and ``packages`` pip-installed into it, so the
``pip install`` a function-mode job's script runs never touches the caller's environment.

I/O adapter (venv, pip); knows nothing about jobs beyond the directory it is given.
"""

from __future__ import annotations

import os
import site
import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path

JOB_PYTHON_DIR = "python"  # under the job's state directory (removed with the job)
PIP_TIMEOUT = 900.0  # seconds for one pip install of the packages


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
    pip = [str(python), "-m", "pip", "install", "--quiet", "--no-warn-script-location", "--index-url"]
    argv = [*pip, index_url, *map(str, packages)]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=PIP_TIMEOUT)
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-8:])
        raise RuntimeError(
            f"pip install {' '.join(map(str, packages))} failed (exit {res.returncode}):\n{tail}"
        )
