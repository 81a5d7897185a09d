"""train() on the local backend (issue 21): the storage initializer, then the LoRA trainer's ranks, as
real processes on tiny models made here, offline. What each run proves is read from the programs'
own log lines (``done at``, ``started at``, ``shard``, ``step N loss X``) and from the saved adapter.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_harness import run_cli, wait_for

from trainop.backends.local.api import LocalBackend
from trainop.sdk import TrainingClient
from trainop.sdk.finetune import (
    HuggingFaceDatasetParams,
    HuggingFaceModelParams,
    HuggingFaceTrainerParams,
    S3DatasetParams,
)
from trainop.testing import finetune

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(900),
    # transformers, peft and torch warn about their own deprecations while they load
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning"),
]

ROWS = 48
# Not anchored at a line's start: the ranks of one pod share its log, and another rank's progress bar
# (a tqdm frame ending in no newline) may stand just before a line (seen: "Map:   0%| ... trainer: rank
# 1/2 train shard: ...", which an anchored pattern missed).
INIT_DONE = re.compile(r"storage-initializer: done at ([0-9.]+)$", re.M)
STARTED = re.compile(r"trainer: rank (\d+)/(\d+) started at ([0-9.]+)$", re.M)
SHARD = re.compile(r"trainer: rank (\d+)/\d+ train shard: \d+ rows: ([0-9,\-]+)$", re.M)
LOSS = re.compile(r"trainer: step (\d+) loss ([0-9.]+)$", re.M)


@dataclass(frozen=True)
class Assets:
    lm: Path
    classifier: Path
    lm_data: Path
    cls_data: Path


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Assets:
    root = tmp_path_factory.mktemp("finetune-assets")
    return Assets(
        lm=finetune.write_tiny_causal_lm(root / "tiny-gpt"),
        classifier=finetune.write_tiny_classifier(root / "tiny-bert", num_labels=3),
        lm_data=finetune.write_json_dataset(root / "lm-data", {"text": finetune.build_corpus(ROWS)}),
        cls_data=finetune.write_json_dataset(root / "cls-data", finetune.build_labelled(ROWS, 3)),
    )


def training_arguments(**kw: Any) -> Any:
    import transformers

    base: dict[str, Any] = {
        "output_dir": "/workspace/lora",  # inside the claim: the path is mapped like the model's
        "logging_steps": 1,
        "per_device_train_batch_size": 2,
        "num_train_epochs": 2,
        "learning_rate": 0.05,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
    }
    return transformers.TrainingArguments(**{**base, **kw})


def lora(**kw: Any) -> Any:
    import peft

    return peft.LoraConfig(r=8, lora_alpha=16, **kw)


def logs_of(home: Path, job: str) -> dict[str, str]:
    """``<pod>/<container>`` → the text of its first run's log."""
    root = home / "logs" / "default" / job
    return {f"{p.parent.name}/{p.name.split('.')[0]}": p.read_text() for p in sorted(root.glob("*/*.0.log"))}


def run_train(client: TrainingClient, name: str, **kw: Any) -> None:
    client.train(name=name, **kw)
    try:
        client.wait_for_job_conditions(name, timeout=800, polling_interval=1)
    except Exception as e:
        logs = logs_of(Path(str(getattr(client.backend, "home", ""))), name)
        pytest.fail(
            f"{name} did not succeed: {e}\n" + "\n".join(f"== {k}\n{v[-3000:]}" for k, v in logs.items())
        )


def check_run(logs: dict[str, str], ranks: int) -> list[float]:
    """The initializer finished before any rank started; each rank saw its own rows, together all of
    them; the losses the first rank logged, in order."""
    (init_done,) = (
        float(m) for m in INIT_DONE.findall("".join(v for k, v in logs.items() if "storage-initializer" in k))
    )
    trainer_text = "".join(v for k, v in logs.items() if k.endswith("/pytorch"))
    starts = {int(r): float(t) for r, w, t in STARTED.findall(trainer_text)}
    assert sorted(starts) == list(range(ranks)), trainer_text[-2000:]
    assert all(t > init_done for t in starts.values()), (init_done, starts)
    shards: dict[int, set[int]] = {}
    for rank, ranges in SHARD.findall(trainer_text):
        rows: set[int] = set()
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            rows |= set(range(int(lo), int(hi or lo) + 1))
        shards[int(rank)] = rows
    assert sorted(shards) == list(range(ranks))
    assert sum(len(s) for s in shards.values()) == len(set().union(*shards.values())) == ROWS
    return [float(x) for _, x in LOSS.findall(trainer_text)]


def adapter_changes_output(base_dir: Path, adapter: Path, model_class: str) -> tuple[int, ...]:
    """The adapter loads with peft onto the base model and moves its output; the output's shape."""
    import peft
    import torch
    import transformers

    cls = getattr(transformers, model_class)
    tokenizer = transformers.AutoTokenizer.from_pretrained(adapter)
    inputs = tokenizer(["the cat sees a stick ."], return_tensors="pt")
    base = cls.from_pretrained(base_dir).eval()
    with torch.no_grad():
        before = base(**inputs).logits
        tuned = peft.PeftModel.from_pretrained(base, adapter).eval()
        after = tuned(**inputs).logits
    assert not torch.allclose(before, after), "the adapter does not change the model's output"
    return tuple(after.shape)


@pytest.fixture
def client(home: Path) -> Iterator[TrainingClient]:
    c = TrainingClient(backend="local", local_home=str(home))
    yield c
    c.backend.close()  # the state database's connection


def test_causal_lm_with_lora_on_two_workers(home: Path, assets: Assets, client: TrainingClient) -> None:
    import transformers

    run_train(
        client,
        "lm",
        num_workers=2,
        num_procs_per_worker=1,
        model_provider_parameters=HuggingFaceModelParams(
            model_uri=f"file://{assets.lm}", transformer_type=transformers.AutoModelForCausalLM
        ),
        dataset_provider_parameters=HuggingFaceDatasetParams(repo_id=str(assets.lm_data)),
        trainer_parameters=HuggingFaceTrainerParams(
            training_parameters=training_arguments(num_train_epochs=3, learning_rate=0.1), lora_config=lora()
        ),
    )
    logs = logs_of(home, "lm")
    assert sorted(logs) == [
        "lm-master-0/pytorch",
        "lm-master-0/storage-initializer",
        "lm-worker-0/init-pytorch",
        "lm-worker-0/pytorch",
    ]
    losses = check_run(logs, ranks=2)
    assert len(losses) >= 10 and losses[-1] < losses[0], losses
    # transformers' own KubeflowCallback posted the run's progress to the job's endpoint (issue 27)
    reader = LocalBackend(home)
    try:
        posts = [status for _, _, status in reader.progress(reader.get("lm"))]
    finally:
        reader.close()
    last = {m["name"] for m in posts[-1].get("metrics", [])} if posts else set()
    assert [p.get("progressPercentage") for p in posts[:1] + posts[-1:]] == [0, 100] and "loss" in last, posts
    claim = home / "jobs" / "default" / "lm" / "claims" / "lm"
    assert sorted(p.name for p in (claim / "dataset").iterdir()) == ["dataset_dict.json", "train"]
    shape = adapter_changes_output(assets.lm, claim / "lora", "AutoModelForCausalLM")
    assert shape[0] == 1 and len(shape) == 3  # (batch, tokens, vocabulary)


@pytest.fixture
def s3_server(tmp_path: Path) -> Iterator[str]:
    """moto's S3 in server mode on 127.0.0.1 (a real HTTP server), its endpoint URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "moto.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )

    def up() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            assert proc.poll() is None, (tmp_path / "moto.log").read_text()
            return False

    try:
        wait_for(up, "moto's S3 server", timeout=120, interval=0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_classifier_from_a_cached_hub_model_and_an_s3_dataset(
    home: Path, assets: Assets, tmp_path: Path, s3_server: str, client: TrainingClient
) -> None:
    """num_labels=3 on 1 worker x 2 processes; the model is hf:// from a pre-filled hub cache with
    HF_HUB_OFFLINE=1; the dataset comes from S3 with an endpoint and keys as a user passes them."""
    import boto3
    import transformers

    keys = {"access_key": "AKIDTRAINOP", "secret_key": "trainop-secret", "region_name": "us-east-1"}
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_server,
        aws_access_key_id=keys["access_key"],
        aws_secret_access_key=keys["secret_key"],
        region_name=keys["region_name"],
    )
    s3.create_bucket(Bucket="corpora")
    s3.upload_file(str(assets.cls_data / "train.json"), "corpora", "reviews/train.json")
    cache = tmp_path / "hub"
    finetune.fill_hub_cache(cache, "acme/tiny-bert", assets.classifier)
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}

    run_train(
        client,
        "cls",
        num_workers=1,
        num_procs_per_worker=2,
        model_provider_parameters=HuggingFaceModelParams(
            model_uri="hf://acme/tiny-bert",
            transformer_type=transformers.AutoModelForSequenceClassification,
            num_labels=3,
        ),
        dataset_provider_parameters=S3DatasetParams(
            endpoint_url=s3_server, bucket_name="corpora", file_key="reviews", **keys
        ),
        trainer_parameters=HuggingFaceTrainerParams(
            training_parameters=training_arguments(num_train_epochs=3, learning_rate=0.1), lora_config=lora()
        ),
        init_env_vars=offline,
        env_vars={"HF_HUB_OFFLINE": "1"},
    )
    logs = logs_of(home, "cls")
    init = logs["cls-master-0/storage-initializer"]
    assert (
        f"model acme/tiny-bert: copied from the Hugging Face cache {cache / 'models--acme--tiny-bert'}"
        in init
    )
    assert f"dataset s3://corpora/reviews at {s3_server}: 1 file(s) downloaded" in init
    claim = home / "jobs" / "default" / "cls" / "claims" / "cls"
    assert (claim / "dataset" / "train.json").is_file()  # the key's first component dropped, as upstream
    assert list((claim / "model" / "models--acme--tiny-bert" / "snapshots").glob("*/config.json"))
    losses = check_run(logs, ranks=2)
    assert losses, logs["cls-master-0/pytorch"][-2000:]
    assert adapter_changes_output(
        assets.classifier, claim / "lora", "AutoModelForSequenceClassification"
    ) == (1, 3)


def test_a_hand_written_pytorchjob_naming_the_images_runs_with_trainop_run(
    home: Path, assets: Assets, tmp_path: Path
) -> None:
    """The YAML a user writes for upstream's images, with no command: `trainop run` runs trainop's
    programs, and /workspace (the claim's mountPath) is the job's claim directory."""
    mount = [{"name": "store", "mountPath": "/workspace"}]
    volumes = [{"name": "store", "persistentVolumeClaim": {"claimName": "store"}}]
    training = training_arguments(output_dir="/workspace/out", max_steps=2).to_dict()
    import json

    args = [
        "--model_uri",
        f"file://{assets.lm}",
        "--transformer_type",
        "AutoModelForCausalLM",
        "--num_labels",
        "None",
        "--model_dir",
        "/workspace/model",
        "--dataset_dir",
        "/workspace/dataset",
        "--lora_config",
        json.dumps({"r": 4}),
        "--training_parameters",
        json.dumps(training),
    ]
    init_args = [
        "--model_provider",
        "hf",
        "--model_provider_parameters",
        json.dumps({"model_uri": f"file://{assets.lm}", "transformer_type": "AutoModelForCausalLM"}),
        "--dataset_provider",
        "hf",
        "--dataset_provider_parameters",
        json.dumps({"repo_id": str(assets.lm_data)}),
    ]
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "byhand"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "initContainers": [
                                {
                                    "name": "storage-initializer",
                                    "image": "ghcr.io/kubeflow/training-v1/storage-initializer:latest",
                                    "args": init_args,
                                    "volumeMounts": mount,
                                }
                            ],
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "ghcr.io/kubeflow/training-v1/trainer-huggingface",
                                    "args": args,
                                    "volumeMounts": mount,
                                }
                            ],
                            "volumes": volumes,
                        }
                    },
                }
            }
        },
    }
    path = tmp_path / "finetune.yaml"
    path.write_text(yaml.safe_dump(job))
    res = run_cli("run", str(path), cwd=tmp_path, timeout=800)
    assert res.returncode == 0, f"stdout:\n{res.stdout[-4000:]}\nstderr:\n{res.stderr[-4000:]}"
    claim = home / "jobs" / "default" / "byhand" / "claims" / "store"
    out = res.stdout + res.stderr
    assert f"storage-initializer: dataset {assets.lm_data}: saved to {claim / 'dataset'}" in out, out[-3000:]
    assert f"trainer: adapter and tokenizer saved to {claim / 'out'}" in out, out[-3000:]
