"""The Hugging Face LLM trainer: kubeflow-training 1.9.4's ``hf_llm_training.py`` arguments and
behaviour (which its PyPI wheel does not ship), as a module.

``python -m trainop.programs.hf_llm_training --model_uri U --transformer_type T --num_labels N
--model_dir D --dataset_dir D --lora_config JSON --training_parameters JSON``

As upstream: TrainingArguments and LoraConfig are rebuilt from their JSON with each value coerced to
its field's type; the model is loaded offline (from ``model_dir``'s hub cache, or the directory a
``file://``/path URI names), frozen, and given LoRA adapters with peft; column ``text`` is tokenized
with ``padding="max_length"``; each rank trains on its shard (RANK/WORLD_SIZE) with the Hugging Face
Trainer. Beyond upstream: the adapter and tokenizer are saved to ``output_dir``; a ``step N loss X``
line per logging step; a shard of equal length on every rank (so no rank waits for a step the others
never take); files from an S3 prefix are read as json/csv/parquet/arrow; every refusal is one line.

Started without torchrun's environment (no LOCAL_RANK), it launches itself under torchrun with the
PET_* variables the operator sets (upstream's image entrypoint is ``torchrun hf_llm_training.py``); a
job of one process gets torchrun's variables set here instead, and trains in this process.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainop.programs.common import EXIT_USAGE, ProgramError, need, parse_json_object, run_main, version_of
from trainop.programs.sources import (
    DATA_SUFFIXES,
    build_model_source,
    build_repo_folder,
    find_data_files,
    is_saved_dataset,
)

PROG = "trainer"
MODULE = "trainop.programs.hf_llm_training"
TEXT_COLUMN = "text"  # upstream tokenizes this column, hard-coded
LABEL_COLUMNS = ("label", "labels")
# A tokenizer saved without model_max_length reports 1e30 (transformers' VERY_LARGE_INTEGER).
UNSET_MAX_LENGTH = 10**9
ROW_COLUMN = "__trainop_row"
BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
# The client's library versions, when the caller passed them (trainop's train() does: docs/finetune.md).
ENV_CLIENT_VERSIONS = "TRAINOP_CLIENT_VERSIONS"
SUPPORTED_TYPES = (
    "AutoModelForCausalLM",
    "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification",
    "AutoModelForQuestionAnswering",
    "AutoModelForMaskedLM",
)


def log(msg: str) -> None:
    print(f"{PROG}: {msg}", flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Fine-tune a model with LoRA (kubeflow-training's).")
    p.add_argument("--model_uri", required=True, help="hf://org/name, file:///dir or a directory")
    p.add_argument("--transformer_type", required=True, help="a transformers AutoModel* class name")
    p.add_argument("--num_labels", default="None", help="labels of a classifier, or None")
    p.add_argument("--model_dir", default="/workspace/model", help="the storage initializer's hub cache")
    p.add_argument("--dataset_dir", default="/workspace/dataset", help="the storage initializer's dataset")
    p.add_argument("--lora_config", default="{}", help="peft LoraConfig.to_dict() as JSON")
    p.add_argument("--training_parameters", default="{}", help="TrainingArguments.to_dict() as JSON")
    return p


# ---------------------------------------------------------------------------------------------------
# Arguments: JSON → the trainer's own classes, refusing keys its versions do not know.


def client_versions(env: dict[str, str] | None = None) -> dict[str, str]:
    """``TRAINOP_CLIENT_VERSIONS`` (``transformers=4.50.2 peft=0.15.1``) as a mapping."""
    text = (env if env is not None else dict(os.environ)).get(ENV_CLIENT_VERSIONS, "")
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def coerce_value(value: Any, default: Any) -> Any:
    """``value`` as the type of the field's default (upstream coerces each field the same way); values
    that are not text, or fields without a scalar default, are passed as they are."""
    if value is None or default is None or not isinstance(value, str):
        return value
    if isinstance(default, bool):
        return BOOL_WORDS.get(value.lower(), value)
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(value)
            except ValueError:
                return value
    return value


def build_kwargs(
    cls: Any,
    given: dict[str, Any],
    arg: str,
    dist: str,
    client: str | None,
    drop: Sequence[str] = (),
) -> dict[str, Any]:
    """``given`` as keyword arguments of the dataclass ``cls``: each key must be one of its init fields
    (the client's library may be another version than this trainer's: both are named)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(k for k in given if k not in fields and k not in drop)
    if unknown:
        theirs = f"the client's is {client}" if client else "the client's version is not known"
        verb = "is not an argument" if len(unknown) == 1 else "are not arguments"
        raise ProgramError(
            f"{arg}: {', '.join(repr(k) for k in unknown)} {verb} "
            f"of {cls.__name__} in {dist} {version_of(dist)} (this trainer's; {theirs}): build the "
            f"parameters with {dist} {version_of(dist)}, or leave the key(s) out"
        )
    defaults = {n: None if f.default is dataclasses.MISSING else f.default for n, f in fields.items()}
    return {name: coerce_value(value, defaults[name]) for name, value in given.items() if name in fields}


def build_training_arguments(text: str, env: dict[str, str] | None = None) -> Any:
    transformers = need("transformers", "transformers")
    given = parse_json_object(text, "--training_parameters")
    kwargs = build_kwargs(
        transformers.TrainingArguments,
        given,
        "--training_parameters",
        "transformers",
        client_versions(env).get("transformers"),
    )
    world = int((env if env is not None else os.environ).get("WORLD_SIZE", "1"))
    if world > 1 and not kwargs.get("use_cpu") and not need("torch", "torch").cuda.is_available():
        # Without it accelerate leaves each CPU rank training alone (its MULTI_CPU needs cpu=True).
        log("no GPU here: use_cpu=True, so the ranks train together over gloo")
        kwargs["use_cpu"] = True
    try:
        return transformers.TrainingArguments(**kwargs)
    except (ValueError, TypeError) as e:
        raise ProgramError(f"--training_parameters: {e}".replace("\n", " ")) from None


def build_lora_config(text: str, env: dict[str, str] | None = None) -> Any:
    peft = need("peft", "peft")
    given = parse_json_object(text, "--lora_config")
    client = client_versions(env).get("peft") or given.get("peft_version")
    # to_dict() adds bookkeeping keys that are not constructor arguments in some peft versions.
    kwargs = build_kwargs(peft.LoraConfig, given, "--lora_config", "peft", client, drop=("peft_version",))
    if isinstance(kwargs.get("target_modules"), list):
        kwargs["target_modules"] = set(kwargs["target_modules"])  # upstream's SetEncoder made it a list
    try:
        return peft.LoraConfig(**kwargs)
    except (ValueError, TypeError) as e:
        raise ProgramError(f"--lora_config: {e}".replace("\n", " ")) from None


def parse_num_labels(text: str) -> int | None:
    """``"None"`` (upstream's ``str(None)``) or a positive integer."""
    if text in ("", "None", "none"):
        return None
    try:
        n = int(text)
    except ValueError:
        raise ProgramError(f"--num_labels: {text!r} is not an integer or None") from None
    if n < 1:
        raise ProgramError(f"--num_labels: must be at least 1, got {n}")
    return n


# ---------------------------------------------------------------------------------------------------
# Model and tokenizer


def load_model_and_tokenizer(args: argparse.Namespace, num_labels: int | None) -> tuple[Any, Any]:
    transformers = need("transformers", "transformers")
    if args.transformer_type not in SUPPORTED_TYPES:
        raise ProgramError(
            f"--transformer_type: {args.transformer_type!r} is not supported by this trainer "
            f"(it tokenizes text; supported: {', '.join(SUPPORTED_TYPES)})"
        )
    cls = getattr(transformers, args.transformer_type)
    try:
        source = build_model_source(args.model_uri)
    except ValueError as e:
        raise ProgramError(f"--{e}") from None
    name = str(source.path) if source.path is not None else source.repo
    extra: dict[str, Any] = {"num_labels": num_labels} if num_labels else {}
    where = (
        str(source.path)
        if source.path is not None
        else f"{Path(args.model_dir) / build_repo_folder(source.repo)} (--model_dir)"
    )
    try:
        model = cls.from_pretrained(
            name, cache_dir=args.model_dir, local_files_only=True, trust_remote_code=True, **extra
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            name, cache_dir=args.model_dir, local_files_only=True
        )
    except OSError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ProgramError(
            f"model {args.model_uri!r} not found on this machine: looked in {where} ({first})"
        ) from None
    prepare_tokenizer(tokenizer, model)
    return model, tokenizer


def prepare_tokenizer(tokenizer: Any, model: Any) -> None:
    """A pad token (upstream: the eos token when there is none) and a finite ``model_max_length``
    (padding to ``max_length`` pads to it): the model's position limit when the tokenizer has none."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ProgramError(
                "the tokenizer has no pad token and no eos token to pad with (upstream pads with eos): "
                "save the tokenizer with a pad_token"
            )
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    if not tokenizer.model_max_length or tokenizer.model_max_length > UNSET_MAX_LENGTH:
        limit = next(
            (
                getattr(model.config, k)
                for k in ("max_position_embeddings", "n_positions")
                if isinstance(getattr(model.config, k, None), int)
            ),
            None,
        )
        if limit is None:
            raise ProgramError(
                "the tokenizer has no model_max_length and the model config no max_position_embeddings: "
                "padding='max_length' (upstream's) would have no length; save the tokenizer with "
                "model_max_length"
            )
        log(f"the tokenizer has no model_max_length: padding to the model's {limit} positions")
        tokenizer.model_max_length = limit


# ---------------------------------------------------------------------------------------------------
# Data


def load_dataset_dir(dataset_dir: str) -> Any:
    """The storage initializer's output: a ``save_to_disk`` tree, or the files an S3 prefix held."""
    datasets = need("datasets", "datasets")
    path = Path(dataset_dir)
    if not path.is_dir():
        raise ProgramError(
            f"--dataset_dir {dataset_dir}: no such directory (the storage initializer writes it: did it run?)"
        )
    if is_saved_dataset(path):
        return datasets.load_from_disk(dataset_dir, keep_in_memory=True)
    files = find_data_files(path)
    if not files:
        raise ProgramError(
            f"--dataset_dir {dataset_dir}: neither a save_to_disk directory nor json/csv/parquet/arrow files"
        )
    builders = {DATA_SUFFIXES[p.suffix] for p in files}
    if len(builders) > 1:
        raise ProgramError(
            f"--dataset_dir {dataset_dir}: files of several formats ({', '.join(sorted(builders))})"
        )
    split = {"train": [str(p) for p in files]}
    return datasets.load_dataset(builders.pop(), data_files=split, keep_in_memory=True)


def pick_splits(ds: Any) -> tuple[Any, Any]:
    """Upstream's choice: ``train`` if there is one, else everything; ``eval`` if there is one."""
    datasets = need("datasets", "datasets")
    if isinstance(ds, datasets.DatasetDict):
        if "train" in ds:
            return ds["train"], ds.get("eval")
        if len(ds) == 1:
            return next(iter(ds.values())), None
        raise ProgramError(
            f"the dataset has splits {', '.join(ds)} and none is named 'train' (the trainer trains on it)"
        )
    return ds, None


def check_columns(ds: Any) -> None:
    if TEXT_COLUMN not in ds.column_names:
        raise ProgramError(
            f"the dataset has no {TEXT_COLUMN!r} column (it has: {', '.join(ds.column_names) or 'none'}); "
            f"the trainer tokenizes column {TEXT_COLUMN!r}, as upstream's does: rename the column"
        )


def compute_ranges(rows: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` → ``0-2,5``: a shard's rows, short enough to log."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive rows
    for r in rows:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    return ",".join(f"{first}-{last}" if first != last else f"{first}" for first, last in runs)


def shard(ds: Any, rank: int, world: int, what: str) -> Any:
    """This rank's rows (upstream's ``split_dataset_by_node``), cut to the same length on every rank."""
    datasets_distributed = need("datasets.distributed", "datasets")
    ds = ds.add_column(ROW_COLUMN, list(range(len(ds))))
    part = datasets_distributed.split_dataset_by_node(ds, rank=rank, world_size=world)
    equal = len(ds) // world
    if equal == 0:
        raise ProgramError(f"the {what} split has {len(ds)} rows, fewer than the {world} ranks")
    part = part.select(range(equal))
    log(f"rank {rank}/{world} {what} shard: {equal} rows: {compute_ranges(part[ROW_COLUMN])}")
    return part.remove_columns(ROW_COLUMN)


def tokenize(ds: Any, tokenizer: Any) -> Any:
    keep = [c for c in ds.column_names if c in LABEL_COLUMNS]
    drop = [c for c in ds.column_names if c not in keep]
    return ds.map(
        lambda batch: tokenizer(batch[TEXT_COLUMN], padding="max_length", truncation=True),
        batched=True,
        remove_columns=drop,
        keep_in_memory=True,
    )


# ---------------------------------------------------------------------------------------------------
# Training


def build_loss_callback() -> Any:
    base: Any = need("transformers", "transformers").TrainerCallback

    class LossLine(base):  # type: ignore[misc]
        """One ``step N loss X`` line per logging step, from the first process only."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if state.is_world_process_zero and logs and "loss" in logs:
                log(f"step {state.global_step} loss {float(logs['loss']):.6f}")

    return LossLine()


def train(args: argparse.Namespace) -> int:
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    log(f"rank {rank}/{world} started at {time.time():.6f}")
    # Every argument is read before the (slow) model and data are.
    num_labels = parse_num_labels(args.num_labels)
    lora_config = build_lora_config(args.lora_config)
    raw = load_dataset_dir(args.dataset_dir)
    train_ds, eval_ds = pick_splits(raw)
    check_columns(train_ds)
    training_args = build_training_arguments(args.training_parameters)  # sets up torch.distributed
    model, tokenizer = load_model_and_tokenizer(args, num_labels)

    transformers = need("transformers", "transformers")
    peft = need("peft", "peft")
    for param in model.parameters():
        param.requires_grad = False
    train_ds = tokenize(shard(train_ds, rank, world, "train"), tokenizer)
    if eval_ds is not None:
        check_columns(eval_ds)
        eval_ds = tokenize(shard(eval_ds, rank, world, "eval"), tokenizer)
    model.enable_input_require_grads()
    try:
        model = peft.get_peft_model(model, lora_config)
    except ValueError as e:
        raise ProgramError(f"--lora_config: {e}".replace("\n", " ")) from None
    if args.transformer_type == "AutoModelForCausalLM":
        collator = transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False, pad_to_multiple_of=8)
    else:
        collator = transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    trainer = transformers.Trainer(
        model=model,
        args=training_args,
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        data_collator=collator,
        callbacks=[build_loss_callback()],
    )
    trainer.train()
    out = training_args.output_dir
    trainer.save_model(out)  # a PeftModel saves its adapter only
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(out)
        log(f"adapter and tokenizer saved to {Path(out).absolute()}")
    return 0


def launch(argv: Sequence[str]) -> int:
    """Run this module under torchrun (upstream's image entrypoint), configured by the PET_* variables;
    one line, not torchrun's traceback, when a rank fails (its own error is printed above)."""
    need("torch", "torch")
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    opts = [] if "PET_MASTER_ADDR" in os.environ or "PET_NNODES" in os.environ else ["--standalone"]
    parsed = torchrun.get_args_parser().parse_args([*opts, "--module", MODULE, *argv])
    runner: Any = torchrun.run
    try:
        runner(parsed)
    except ChildFailedError as e:
        # The first rank to fail is the cause; torchrun then stops the others (SIGTERM, -15).
        rank, first = e.get_first_failure()
        print(
            f"{PROG}: error: rank {rank} exited with {first.exitcode} (its own error is above); torchrun "
            f"stopped the job's other processes",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_USAGE if first.exitcode == EXIT_USAGE else 1
    return 0


def build_single_rank_env(env: Mapping[str, str]) -> dict[str, str] | None:
    """torchrun's variables for the one process of a one-node, one-process job (what torchrun would
    set), so it trains without torchrun's agent and a second interpreter; None for any larger job."""
    if env.get("PET_NNODES", "1") not in ("1", "1:1") or env.get("PET_NPROC_PER_NODE", "1") != "1":
        return None
    return {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "GROUP_RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": env.get("PET_MASTER_ADDR", "127.0.0.1"),
        "MASTER_PORT": env.get("PET_MASTER_PORT", "29500"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if "LOCAL_RANK" not in os.environ:
        single = build_single_rank_env(os.environ)
        if single is None:
            return launch(argv)
        os.environ.update(single)
    return train(args)


if __name__ == "__main__":
    raise SystemExit(run_main(PROG, main, None))
