"""Where a ``model_uri`` points, read as upstream's programs read it (``urlparse``: netloc + path),
where the Hugging Face hub-cache layout keeps a repository, and which files of a directory are a
dataset. Pure: no import of the heavy libraries."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

OFFLINE_VALUES = frozenset({"1", "on", "yes", "true"})
DATA_SUFFIXES = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet", ".arrow": "arrow"}
SAVED_DATASET_FILES = ("dataset_dict.json", "state.json")  # what datasets' save_to_disk writes


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A model on this machine (``path``) or a hub repository id (``repo``), exactly one set."""

    uri: str
    repo: str = ""
    path: Path | None = None


def build_model_source(uri: str) -> ModelSource:
    """``hf://org/name`` → repo ``org/name``; ``file:///dir`` or an existing directory → that path; any
    other bare name → a repo id (upstream passes ``netloc + path`` to ``from_pretrained``)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return ModelSource(uri, path=Path(parsed.netloc + parsed.path))
    if parsed.scheme in ("", "hf"):
        name = (parsed.netloc + parsed.path) if parsed.scheme else uri
        if parsed.scheme == "" and (name.startswith(("/", "./", "../")) or Path(name).is_dir()):
            return ModelSource(uri, path=Path(name))
        return ModelSource(uri, repo=name.strip("/"))
    raise ValueError(f"model_uri {uri!r}: scheme {parsed.scheme!r} is not one of hf://, file:// or a path")


def build_repo_folder(repo: str, kind: str = "model") -> str:
    """The hub cache's folder for ``repo``: ``models--org--name`` (huggingface_hub's naming)."""
    return f"{kind}s--" + repo.replace("/", "--")


def detect_offline(env: dict[str, str] | None = None) -> bool:
    """``HF_HUB_OFFLINE`` set to a true value (huggingface_hub's own reading of it)."""
    value = (env if env is not None else dict(os.environ)).get("HF_HUB_OFFLINE", "")
    return value.strip().lower() in OFFLINE_VALUES


def is_saved_dataset(folder: Path) -> bool:
    """Whether ``folder`` is a directory datasets' ``save_to_disk`` wrote."""
    return any((folder / f).is_file() for f in SAVED_DATASET_FILES)


def find_data_files(folder: Path) -> list[Path]:
    """The json/csv/parquet/arrow files under ``folder``, sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES)
