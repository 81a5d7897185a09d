"""Known images → local entrypoints: the one table that lets a container with no ``command`` run on
this machine, because trainop ships the program that image runs (trainop.programs).

An image is matched by its repository, any tag or digest ignored. The entrypoint's ``{python}`` is the
interpreter the supervisor runs under (its environment has trainop); the arguments of the container
follow the entrypoint, as they follow an image's ENTRYPOINT. ``/workspace`` in an entrypoint is a
mount path like any other: it becomes the volume's directory (render.rewrite_mount_paths). Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PYTHON = "{python}"

# kubeflow-training's storage initializer (model and dataset into /workspace): upstream's ENTRYPOINT
# is `python -m storage_initializer.storage`, writing to /workspace.
_INITIALIZER = (PYTHON, "-m", "trainop.programs.storage_initializer", "--workspace", "/workspace")
# Trainer v2's initializers read STORAGE_URI and write /workspace/dataset or /workspace/model.
_V2_DATASET = (PYTHON, "-m", "trainop.programs.dataset_initializer", "--workspace", "/workspace")
_V2_MODEL = (PYTHON, "-m", "trainop.programs.model_initializer", "--workspace", "/workspace")
# kubeflow-training's Hugging Face LLM trainer: upstream's ENTRYPOINT is `torchrun
# hf_llm_training.py`; ours launches itself under torchrun.
_TRAINER = (PYTHON, "-m", "trainop.programs.hf_llm_training")

# image repository → its entrypoint here
KNOWN_IMAGES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ghcr.io/kubeflow/training-v1/storage-initializer": _INITIALIZER,
        "ghcr.io/kubeflow/training-v1/trainer-huggingface": _TRAINER,
        "ghcr.io/kubeflow/trainer/dataset-initializer": _V2_DATASET,
        "ghcr.io/kubeflow/trainer/model-initializer": _V2_MODEL,
        "ghcr.io/trainop/storage-initializer": _INITIALIZER,
        "ghcr.io/trainop/trainer-huggingface": _TRAINER,
    }
)


def build_image_repository(image: str) -> str:
    """``host:5000/org/name:tag@sha256:…`` → ``host:5000/org/name`` (a registry port is not a tag)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def build_image_entrypoint(image: str, python: str) -> tuple[str, ...] | None:
    """The argv prefix that stands in for ``image``'s entrypoint here, or None for an unknown image."""
    known = KNOWN_IMAGES.get(build_image_repository(image.strip()))
    if known is None:
        return None
    return tuple(python if part == PYTHON else part for part in known)
