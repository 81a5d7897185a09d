"""The machine's GPU inventory for the local backend: ``$TRAINOP_GPUS`` if set, else nvidia-smi.

I/O adapter (runs nvidia-smi once per process); allocation lives in the store, so that concurrent
jobs never share a GPU.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from functools import cache

from trainop.api.constants import ENV_TRAINOP_GPUS

_NVIDIA_SMI = ("nvidia-smi", "--query-gpu=index", "--format=csv,noheader")


def detect_gpu_inventory(env: Mapping[str, str]) -> tuple[str, ...]:
    """GPU ids as CUDA_VISIBLE_DEVICES names them. ``TRAINOP_GPUS=0,1`` overrides (``""``: none)."""
    override = env.get(ENV_TRAINOP_GPUS)
    if override is not None:
        return tuple(g.strip() for g in override.split(",") if g.strip())
    return _nvidia_smi_gpus()


@cache
def _nvidia_smi_gpus() -> tuple[str, ...]:
    try:  # (not installed: FileNotFoundError; failing: CalledProcessError)
        out = subprocess.run(_NVIDIA_SMI, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.stdout.splitlines() if line.strip())
