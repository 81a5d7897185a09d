"""The storage initializer: kubeflow-training 1.9.4's ``storage_initializer.storage`` arguments and
layouts. It puts the model in Hugging Face hub-cache layout under ``<workspace>/model`` and the dataset
as ``save_to_disk`` under ``<workspace>/dataset``, for the trainer to read.

``python -m trainop.programs.storage_initializer --model_provider hf --model_provider_parameters JSON
--dataset_provider hf|s3 --dataset_provider_parameters JSON [--workspace DIR]``

Beyond upstream: ``--workspace`` (upstream writes to ``/workspace`` only); offline sources (a model in
a local directory or ``file://`` is used in place; ``hf://org/name`` is copied from a pre-filled hub
cache before any download is tried; a dataset from a local directory of json/csv/parquet/arrow files
or a ``save_to_disk`` directory); every failure is one line naming what to change. Heavy libraries
are imported only by the step that needs them.
"""

from __future__ import annotations

import argparse
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainop.programs.common import ProgramError, need, parse_json_object, run_main
from trainop.programs.sources import (
    DATA_SUFFIXES,
    ModelSource,
    build_model_source,
    build_repo_folder,
    detect_offline,
    find_data_files,
    is_saved_dataset,
)

PROG = "storage-initializer"
DEFAULT_WORKSPACE = "/workspace"  # upstream's INIT_CONTAINER_MOUNT_PATH
MODEL_PARAMS = ("model_uri", "transformer_type", "access_token", "num_labels")
# --dataset_provider → (the keys its parameters may have, the ones they must have): upstream's dataclasses
DATASET_PARAMS = {
    "hf": (("repo_id", "access_token", "split"), ("repo_id",)),
    "s3": (
        ("endpoint_url", "bucket_name", "file_key", "region_name", "access_key", "secret_key"),
        ("endpoint_url", "bucket_name", "file_key"),
    ),
}
# upstream's HuggingFaceModelParams names Auto* classes; any transformers AutoModel* name is accepted.
TRANSFORMER_TYPE = re.compile(r"^AutoModel[A-Za-z]*$")


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", flush=True)


def build_params(text: str, arg: str, allowed: Sequence[str], required: Sequence[str]) -> dict[str, Any]:
    """The JSON of ``arg`` as upstream's dataclass would take it: unknown or missing keys are refused."""
    params = parse_json_object(text, arg)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ProgramError(f"{arg}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(allowed)})")
    missing = [k for k in required if not params.get(k)]
    if missing:
        raise ProgramError(f"{arg}: {', '.join(missing)} must be set and not empty")
    return params


# ---------------------------------------------------------------------------------------------------
# model


def write_model(params: dict[str, Any], workspace: Path) -> None:
    ttype = str(params.get("transformer_type") or "")
    if not TRANSFORMER_TYPE.match(ttype):
        raise ProgramError(
            f"--model_provider_parameters.transformer_type: {ttype!r} is not a transformers AutoModel* "
            "class name (e.g. AutoModelForCausalLM, AutoModelForSequenceClassification)"
        )
    try:
        source = build_model_source(str(params["model_uri"]))
    except ValueError as e:
        raise ProgramError(f"--model_provider_parameters.{e}") from None
    if source.path is not None:
        if not (source.path / "config.json").is_file():
            raise ProgramError(
                f"model_uri {source.uri!r}: {source.path} has no config.json (a directory written by "
                "save_pretrained is expected)"
            )
        log(f"model {source.uri}: a directory on this machine, used in place (nothing copied)")
        return
    dest = workspace / "model"
    if _copy_from_hub_cache(source, dest):
        return
    looked = [str(dest / build_repo_folder(source.repo)), str(_hub_cache() / build_repo_folder(source.repo))]
    if detect_offline():
        raise ProgramError(
            f"model_uri {source.uri!r} not found offline (HF_HUB_OFFLINE is set): looked in "
            f"{' and '.join(looked)}; fill the Hugging Face cache first (huggingface-cli download "
            f"{source.repo}) or give a local directory as model_uri"
        )
    transformers = need("transformers", "transformers")
    cls = getattr(transformers, ttype, None)
    if cls is None:
        raise ProgramError(f"transformer_type {ttype!r} is not in transformers {transformers.__version__}")
    log(f"downloading {source.repo} into {dest}")
    token = params.get("access_token")
    try:
        cls.from_pretrained(source.repo, token=token, cache_dir=str(dest), trust_remote_code=True)
        transformers.AutoTokenizer.from_pretrained(source.repo, token=token, cache_dir=str(dest))
    except OSError as e:
        raise ProgramError(f"model_uri {source.uri!r}: {e}".replace("\n", " ")) from None


def _hub_cache() -> Path:
    constants = need("huggingface_hub.constants", "huggingface_hub")
    return Path(constants.HF_HUB_CACHE)


def _copy_from_hub_cache(source: ModelSource, dest: Path) -> bool:
    """Copy the repository's hub-cache folder (blobs, snapshots, refs: the layout ``from_pretrained``
    with ``cache_dir`` reads) from this machine's cache into ``dest``; False when it is not there."""
    folder = build_repo_folder(source.repo)
    if _has_snapshot(dest / folder):
        log(f"model {source.repo}: already in {dest}")
        return True
    cached = _hub_cache() / folder
    if not _has_snapshot(cached):
        return False
    dest.mkdir(parents=True, exist_ok=True)
    # Snapshots are relative symlinks into blobs/, so the copy keeps links and stays self-contained.
    shutil.copytree(cached, dest / folder, symlinks=True, dirs_exist_ok=True)
    log(f"model {source.repo}: copied from the Hugging Face cache {cached} into {dest}")
    return True


def _has_snapshot(folder: Path) -> bool:
    return any((folder / "snapshots").glob("*/config.json"))


# ---------------------------------------------------------------------------------------------------
# dataset


def write_hf_dataset(params: dict[str, Any], workspace: Path) -> None:
    datasets = need("datasets", "datasets")
    repo_id = str(params["repo_id"])
    split = params.get("split")
    local = Path(repo_id.removeprefix("file://"))
    dest = workspace / "dataset"
    try:
        if local.is_dir() and is_saved_dataset(local):
            ds = datasets.load_from_disk(str(local))
            if split is not None:
                if not isinstance(ds, datasets.DatasetDict) or split not in ds:
                    raise ProgramError(
                        f"repo_id {repo_id!r}: split {split!r} is not a split of this saved dataset"
                    )
                ds = ds[split]
        elif local.is_dir():
            if not find_data_files(local):
                raise ProgramError(
                    f"repo_id {repo_id!r}: the directory has no {'/'.join(sorted(set(DATA_SUFFIXES)))} "
                    "data files and is not a save_to_disk directory"
                )
            ds = datasets.load_dataset(repo_id.removeprefix("file://"), split=split)
        else:
            token = params.get("access_token")
            if token:
                need("huggingface_hub", "huggingface_hub").login(token)
            ds = datasets.load_dataset(repo_id, split=split)
    except ProgramError:
        raise
    except (OSError, ValueError, ConnectionError) as e:
        offline = " (offline: HF_DATASETS_OFFLINE/HF_HUB_OFFLINE is set)" if detect_offline() else ""
        raise ProgramError(f"dataset repo_id {repo_id!r}{offline}: {e}".replace("\n", " ")) from None
    ds.save_to_disk(str(dest))
    log(f"dataset {repo_id}: saved to {dest}")


def write_s3_dataset(params: dict[str, Any], workspace: Path) -> None:
    """Every object under ``file_key`` into ``<workspace>/dataset``, its key's first component dropped
    (upstream's layout); the trainer reads the files, or a save_to_disk tree, from there."""
    boto3 = need("boto3", "boto3")
    botocore = need("botocore.exceptions", "boto3")
    dest = workspace / "dataset"
    where = f"s3://{params['bucket_name']}/{params['file_key']} at {params['endpoint_url']}"
    session = boto3.Session(
        aws_access_key_id=params.get("access_key"),
        aws_secret_access_key=params.get("secret_key"),
        region_name=params.get("region_name"),
    )
    count = 0
    try:
        bucket = session.resource("s3", endpoint_url=params["endpoint_url"]).Bucket(params["bucket_name"])
        for obj in bucket.objects.filter(Prefix=params["file_key"]):
            parts = obj.key.split("/")
            rel = "/".join(parts[1:]) or parts[-1]
            if not rel or rel.endswith("/"):
                continue  # a "directory" marker object
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            bucket.download_file(obj.key, str(target))
            count += 1
    except (botocore.BotoCoreError, botocore.ClientError) as e:
        raise ProgramError(f"dataset {where}: {e}") from None
    if count == 0:
        raise ProgramError(f"dataset {where}: no object has this prefix (check bucket_name and file_key)")
    log(f"dataset {where}: {count} file(s) downloaded into {dest}")


# ---------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Download a model and a dataset for the trainer.")
    p.add_argument("--model_provider", choices=["hf"], help="name of the model provider")
    p.add_argument("--model_provider_parameters", help="model provider parameters (JSON)")
    p.add_argument("--dataset_provider", choices=["hf", "s3"], help="name of the dataset provider")
    p.add_argument("--dataset_provider_parameters", help="dataset provider parameters (JSON)")
    p.add_argument(
        "--workspace",
        default=DEFAULT_WORKSPACE,
        help=f"where model/ and dataset/ are written (default {DEFAULT_WORKSPACE}, upstream's)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    workspace = Path(args.workspace)
    if args.model_provider and args.model_provider_parameters is None:
        raise ProgramError("--model_provider_parameters is required with --model_provider")
    if args.dataset_provider and args.dataset_provider_parameters is None:
        raise ProgramError("--dataset_provider_parameters is required with --dataset_provider")
    # Every argument is checked before anything is written or downloaded.
    model = (
        build_params(
            args.model_provider_parameters, "--model_provider_parameters", MODEL_PARAMS, MODEL_PARAMS[:2]
        )
        if args.model_provider
        else None
    )
    dataset = (
        build_params(
            args.dataset_provider_parameters,
            "--dataset_provider_parameters",
            *DATASET_PARAMS[args.dataset_provider],
        )
        if args.dataset_provider
        else None
    )
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ProgramError(f"--workspace {workspace}: cannot create it ({e.strerror})") from None
    if model is not None:
        write_model(model, workspace)
    if dataset is not None:
        (write_s3_dataset if args.dataset_provider == "s3" else write_hf_dataset)(dataset, workspace)
    log(f"done at {time.time():.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(PROG, main, None))
