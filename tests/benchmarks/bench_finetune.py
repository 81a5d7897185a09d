"""Benchmark of train() on the local backend against its floor: the same trainer run directly.

One round times (a) ``TrainingClient(backend="local").train(...)`` until the job has Succeeded: the
storage initializer, then 1 worker x 2 processes of trainop's LoRA trainer on a tiny GPT-2-like model;
and (b) the floor: ``torchrun --standalone --nproc_per_node 2 -m trainop.programs.hf_llm_training``
with the same arguments on the dataset (b) reads already saved (what any launcher of this trainer
needs). The model and data are built first, outside the timings. Prints figures and the ratio a/b
(median over the rounds, initializer included on trainop's side); target at most 1.15. Asserts nothing.

    .venv/bin/python tests/benchmarks/bench_finetune.py [--rounds N] [--rows N] [--epochs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from trainop.testing import finetune

TARGET = 1.15


def trainer_parameters(epochs: int) -> dict[str, Any]:
    return {
        "logging_steps": 10,
        "per_device_train_batch_size": 4,
        "num_train_epochs": epochs,
        "learning_rate": 0.05,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
    }


def run_sdk(root: Path, model: Path, data: Path, epochs: int, name: str) -> float:
    import peft
    import transformers

    from trainop.sdk import TrainingClient
    from trainop.sdk.finetune import (
        HuggingFaceDatasetParams,
        HuggingFaceModelParams,
        HuggingFaceTrainerParams,
    )

    client = TrainingClient(backend="local", local_home=str(root / "home"))
    args = transformers.TrainingArguments(output_dir="/workspace/adapter", **trainer_parameters(epochs))
    start = time.perf_counter()
    client.train(
        name=name,
        num_workers=1,
        num_procs_per_worker=2,
        model_provider_parameters=HuggingFaceModelParams(
            model_uri=f"file://{model}", transformer_type=transformers.AutoModelForCausalLM
        ),
        dataset_provider_parameters=HuggingFaceDatasetParams(repo_id=str(data)),
        trainer_parameters=HuggingFaceTrainerParams(
            training_parameters=args, lora_config=peft.LoraConfig(r=8)
        ),
    )
    client.wait_for_job_conditions(name, timeout=3600, polling_interval=0.2)
    took = time.perf_counter() - start
    client.delete_job(name)
    client.backend.close()
    return took


def run_direct(root: Path, model: Path, saved: Path, epochs: int) -> float:
    training = {"output_dir": str(root / "direct-adapter"), **trainer_parameters(epochs)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "trainop.programs.hf_llm_training",
        "--model_uri",
        f"file://{model}",
        "--transformer_type",
        "AutoModelForCausalLM",
        "--num_labels",
        "None",
        "--model_dir",
        str(root / "unused-model-cache"),
        "--dataset_dir",
        str(saved),
        "--lora_config",
        json.dumps({"r": 8}),
        "--training_parameters",
        json.dumps(training),
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=3)
    opts = parser.parse_args()
    warnings.simplefilter("ignore")
    import datasets

    with tempfile.TemporaryDirectory(prefix="bench-finetune-") as tmp:
        root = Path(tmp)
        model = finetune.write_tiny_causal_lm(root / "tiny-gpt")
        data = finetune.write_json_dataset(root / "data", {"text": finetune.build_corpus(opts.rows)})
        saved = root / "saved"
        datasets.load_dataset(str(data)).save_to_disk(str(saved))
        ours: list[float] = []
        floor: list[float] = []
        for i in range(opts.rounds):
            # Alternate which goes first, so a change of load on the machine weighs on both.
            if i % 2:
                floor.append(run_direct(root, model, saved, opts.epochs))
                ours.append(run_sdk(root, model, data, opts.epochs, f"bench-{i}"))
            else:
                ours.append(run_sdk(root, model, data, opts.epochs, f"bench-{i}"))
                floor.append(run_direct(root, model, saved, opts.epochs))
            print(
                f"round {i + 1}: train() {ours[-1]:.1f} s, trainer under torchrun {floor[-1]:.1f} s",
                flush=True,
            )
        a, b = statistics.median(ours), statistics.median(floor)
        print(
            f"rows {opts.rows}, epochs {opts.epochs}, 1 worker x 2 processes, {opts.rounds} rounds (medians)"
        )
        print(f"local train() (initializer + trainer): {a:.1f} s")
        print(f"trainer directly under torchrun:       {b:.1f} s")
        print(f"ratio: {a / b:.2f} (target <= {TARGET})")


if __name__ == "__main__":
    main()
