"""What Kubeflow Trainer v2's dataset and model initializers do, on this machine: read
``STORAGE_URI`` from the environment and fill ``<workspace>/dataset`` or ``<workspace>/model`` (v2's
``/workspace/dataset`` and ``/workspace/model``; the local backend maps ``/workspace`` to the step's
volume directory). ``dataset_initializer`` and ``model_initializer`` are the two entrypoints.

URIs: ``hf://org/name`` (a Hub repository, fetched with huggingface_hub's ``snapshot_download``
into the directory, flat, as v2 lays it out; ``ACCESS_TOKEN`` is its token), ``s3://bucket/prefix``
(the storage initializer's S3 download: ``ENDPOINT``, ``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY``,
``REGION`` as v2 names them), and a directory on this machine (``file:///dir`` or a plain path),
copied in. Every failure is one line naming what to change (``run_main``).
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from urllib.parse import urlparse

from trainop.programs.common import ProgramError, need, run_main
from trainop.programs.storage_initializer import DEFAULT_WORKSPACE, log, write_s3_dataset

ENV_URI = "STORAGE_URI"
SCHEMES = ("hf://", "s3://", "file://")


def build_parser(what: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{what}-initializer", description=f"Fill <workspace>/{what} from $STORAGE_URI."
    )
    p.add_argument(
        "--workspace",
        default=DEFAULT_WORKSPACE,
        help=f"where {what}/ is written (default {DEFAULT_WORKSPACE}, Trainer v2's)",
    )
    return p


def initialize(what: str, workspace: Path, env: Mapping[str, str]) -> Path:
    """Fill ``workspace/what`` (``dataset`` or ``model``) from ``env[STORAGE_URI]``; the directory."""
    uri = env.get(ENV_URI, "").strip()
    if not uri:
        raise ProgramError(
            f"{ENV_URI} is not set: the TrainJob's spec.initializer.{what}.storageUri gives it "
            f"({', '.join(SCHEMES)} or a directory)"
        )
    dest = workspace / what
    parsed = urlparse(uri)
    if parsed.scheme == "hf":
        _from_hub(what, (parsed.netloc + parsed.path).strip("/"), dest, env.get("ACCESS_TOKEN"))
    elif parsed.scheme == "s3":
        if what != "dataset":
            raise ProgramError(
                f"{ENV_URI} {uri!r}: s3:// serves datasets here; give the model as hf:// or a directory"
            )
        _from_s3(parsed.netloc, parsed.path.lstrip("/"), workspace, env)
    elif parsed.scheme in ("file", ""):
        _from_directory(Path(parsed.netloc + parsed.path) if parsed.scheme else Path(uri), dest, uri)
    else:
        raise ProgramError(
            f"{ENV_URI} {uri!r}: scheme {parsed.scheme!r} is not one of {', '.join(SCHEMES)} or a path"
        )
    log(f"{what} {uri}: ready in {dest}")
    return dest


def _from_directory(source: Path, dest: Path, uri: str) -> None:
    if not source.is_dir():
        raise ProgramError(f"{ENV_URI} {uri!r}: {source} is not a directory on this machine")
    shutil.copytree(source, dest, dirs_exist_ok=True)


def _from_hub(what: str, repo: str, dest: Path, token: str | None) -> None:
    if not repo:
        raise ProgramError(f"{ENV_URI}: hf:// needs a repository id (hf://org/name)")
    hub = need("huggingface_hub", "huggingface_hub")
    try:
        hub.snapshot_download(
            repo_id=repo,
            repo_type="dataset" if what == "dataset" else "model",
            local_dir=str(dest),
            token=token or None,
        )
    except (OSError, ValueError) as e:
        raise ProgramError(f"{ENV_URI} hf://{repo}: {e}".replace("\n", " ")) from None


def _from_s3(bucket: str, prefix: str, workspace: Path, env: Mapping[str, str]) -> None:
    endpoint = env.get("ENDPOINT") or env.get("AWS_ENDPOINT_URL")
    if not endpoint or not bucket or not prefix:
        raise ProgramError(
            f"{ENV_URI}: s3:// needs s3://bucket/prefix and ENDPOINT (the S3 endpoint URL) in the "
            "initializer's env"
        )
    write_s3_dataset(
        {
            "endpoint_url": endpoint,
            "bucket_name": bucket,
            "file_key": prefix,
            "access_key": env.get("ACCESS_KEY_ID") or env.get("AWS_ACCESS_KEY_ID"),
            "secret_key": env.get("SECRET_ACCESS_KEY") or env.get("AWS_SECRET_ACCESS_KEY"),
            "region_name": env.get("REGION") or env.get("AWS_REGION"),
        },
        workspace,
    )


def main_for(what: str, argv: Sequence[str] | None = None) -> int:
    args = build_parser(what).parse_args(argv)
    initialize(what, Path(args.workspace), os.environ)
    return 0


def run(what: str) -> None:
    """The entrypoint ``python -m trainop.programs.<what>_initializer``: exit with main_for's status."""
    raise SystemExit(run_main(f"{what}-initializer", partial(main_for, what), None))
