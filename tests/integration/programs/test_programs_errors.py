"""Each refusal of issue 21's Build 5, from trainop.programs: one line that names what to change, exit 2,
no traceback. The libraries are real (transformers, peft, datasets); models and data are made here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from trainop.programs import hf_llm_training, storage_initializer
from trainop.programs.common import EXIT_USAGE, ProgramError, run_main, version_of
from trainop.testing import finetune

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    # transformers, peft and torch warn about their own deprecations while they load
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning"),
]


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("assets")
    return {
        "lm": finetune.write_tiny_causal_lm(root / "lm"),
        "data": finetune.write_json_dataset(root / "data", {"text": finetune.build_corpus(8)}),
        "no_text": finetune.write_json_dataset(root / "no-text", {"sentence": ["a b"] * 4, "label": [0] * 4}),
    }


def train(argv: Sequence[str] | None) -> int:
    """The trainer's work in this process, as one rank of one (main() would launch torchrun)."""
    return hf_llm_training.train(hf_llm_training.build_parser().parse_args(argv))


def trainer_args(model: str, dataset: Path, training: dict[str, Any], lora: dict[str, Any]) -> list[str]:
    return [
        "--model_uri",
        model,
        "--transformer_type",
        "AutoModelForCausalLM",
        "--num_labels",
        "None",
        "--model_dir",
        str(dataset.parent / "model-cache"),
        "--dataset_dir",
        str(dataset),
        "--lora_config",
        json.dumps(lora),
        "--training_parameters",
        json.dumps({"output_dir": str(dataset.parent / "out"), "report_to": "none", **training}),
    ]


def saved_dataset(src: Path, target: Path) -> Path:
    """What the storage initializer leaves: ``save_to_disk`` of the directory's files."""
    import datasets

    datasets.load_dataset(str(src)).save_to_disk(str(target))
    return target


def refusal(main: Any, prog: str, argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> str:
    rc = run_main(prog, main, list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE, err
    assert err and err[-1].startswith(f"{prog}: error: "), err
    return err[-1].removeprefix(f"{prog}: error: ")


@pytest.mark.parametrize(
    ("training", "lora", "env", "want"),
    [
        pytest.param(
            {"no_such_argument": 1},
            {},
            {"TRAINOP_CLIENT_VERSIONS": "transformers=4.50.2 peft=0.15.1"},
            f"--training_parameters: 'no_such_argument' is not an argument of TrainingArguments in "
            f"transformers {version_of('transformers')} (this trainer's; the client's is 4.50.2): build the "
            f"parameters with transformers {version_of('transformers')}, or leave the key(s) out",
            id="a TrainingArguments key this transformers does not know: the key and both versions",
        ),
        pytest.param(
            {},
            {"r": 4, "no_such_option": True, "peft_version": "0.15.1"},
            {},
            f"--lora_config: 'no_such_option' is not an argument of LoraConfig in peft {version_of('peft')} "
            f"(this trainer's; the client's is 0.15.1): build the parameters with peft "
            f"{version_of('peft')}, or leave the key(s) out",
            id="a LoraConfig key this peft does not know: the client's version from its peft_version",
        ),
    ],
)
def test_unknown_keys_name_the_key_and_both_versions(
    assets: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    training: dict[str, Any],
    lora: dict[str, Any],
    env: dict[str, str],
    want: str,
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    data = saved_dataset(assets["data"], tmp_path / "dataset")
    argv = trainer_args(f"file://{assets['lm']}", data, training, lora)
    assert refusal(train, "trainer", argv, capsys) == want


def test_a_dataset_without_text_names_its_columns(
    assets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = saved_dataset(assets["no_text"], tmp_path / "dataset")
    argv = trainer_args(f"file://{assets['lm']}", data, {}, {})
    assert refusal(train, "trainer", argv, capsys) == (
        "the dataset has no 'text' column (it has: sentence, label); the trainer tokenizes column 'text', "
        "as upstream's does: rename the column"
    )


def test_a_model_not_found_offline_says_where_the_trainer_looked(
    assets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = saved_dataset(assets["data"], tmp_path / "dataset")
    argv = trainer_args("hf://acme/missing", data, {}, {})
    got = refusal(train, "trainer", argv, capsys)
    assert got.startswith(
        f"model 'hf://acme/missing' not found on this machine: looked in "
        f"{tmp_path / 'model-cache' / 'models--acme--missing'} (--model_dir) ("
    ), got


def tokenizer_without(*, pad: bool, eos: bool, max_length: bool) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"<unk>": 0, "<eos>": 1, "<pad>": 2, "a": 3}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kwargs: dict[str, Any] = {"unk_token": "<unk>"}
    if pad:
        kwargs["pad_token"] = "<pad>"
    if eos:
        kwargs["eos_token"] = "<eos>"
    if max_length:
        kwargs["model_max_length"] = 8
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


class Config:
    def __init__(self, **kw: Any) -> None:
        self.pad_token_id = None
        self.__dict__.update(kw)


class Model:
    def __init__(self, **config: Any) -> None:
        self.config = Config(**config)


@pytest.mark.parametrize(
    ("tokenizer", "config", "want"),
    [
        pytest.param(
            dict(pad=False, eos=True, max_length=True), {}, ("<eos>", 8), id="no pad token: eos, as upstream"
        ),
        pytest.param(
            dict(pad=True, eos=False, max_length=False),
            {"n_positions": 32},
            ("<pad>", 32),
            id="no max length: the model's positions",
        ),
        pytest.param(
            dict(pad=False, eos=False, max_length=True),
            {},
            "the tokenizer has no pad token and no eos token to pad with (upstream pads with eos): save the "
            "tokenizer with a pad_token",
            id="no pad token and no eos: refused",
        ),
        pytest.param(
            dict(pad=True, eos=False, max_length=False),
            {},
            "the tokenizer has no model_max_length and the model config no max_position_embeddings: "
            "padding='max_length' (upstream's) would have no length; save the tokenizer with "
            "model_max_length",
            id="no max length anywhere: refused",
        ),
    ],
)
def test_tokenizer_without_pad_or_max_length(
    tokenizer: dict[str, bool], config: dict[str, Any], want: Any
) -> None:
    tok = tokenizer_without(**tokenizer)
    model = Model(**config)
    if isinstance(want, str):
        with pytest.raises(ProgramError) as e:
            hf_llm_training.prepare_tokenizer(tok, model)
        assert str(e.value) == want
        return
    hf_llm_training.prepare_tokenizer(tok, model)
    assert (tok.pad_token, tok.model_max_length) == want
    assert model.config.pad_token_id == tok.pad_token_id


def run_program(module: str, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE")}
    return subprocess.run(
        [sys.executable, "-m", module, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, **env},
        check=False,
    )


def test_initializer_model_not_found_offline_says_where_it_looked(tmp_path: Path) -> None:
    """A real process: exit 2, one line naming both places, and no traceback."""
    empty_cache = tmp_path / "hub"
    empty_cache.mkdir()
    res = run_program(
        "trainop.programs.storage_initializer",
        [
            "--model_provider",
            "hf",
            "--model_provider_parameters",
            json.dumps({"model_uri": "hf://acme/tiny", "transformer_type": "AutoModelForCausalLM"}),
            "--workspace",
            str(tmp_path / "ws"),
        ],
        {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(empty_cache)},
    )
    assert (res.returncode, res.stdout, res.stderr.splitlines()) == (
        EXIT_USAGE,
        "",
        [
            "storage-initializer: error: model_uri 'hf://acme/tiny' not found offline (HF_HUB_OFFLINE is "
            f"set): looked in {tmp_path / 'ws' / 'model' / 'models--acme--tiny'} and "
            f"{empty_cache / 'models--acme--tiny'}; fill the Hugging Face cache first (huggingface-cli "
            "download acme/tiny) or give a local directory as model_uri"
        ],
    )


def test_initializer_refuses_arguments_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--dataset_provider",
        "s3",
        "--dataset_provider_parameters",
        json.dumps({"bucket_name": "b", "file_key": "k"}),
        "--workspace",
        str(tmp_path / "ws"),
    ]
    assert refusal(storage_initializer.main, "storage-initializer", argv, capsys) == (
        "--dataset_provider_parameters: endpoint_url must be set and not empty"
    )
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    "env",
    [
        pytest.param({}, id="one process: trains without torchrun"),
        pytest.param({"PET_NPROC_PER_NODE": "2"}, id="two processes under torchrun"),
    ],
)
def test_a_failing_trainer_prints_no_traceback(
    assets: dict[str, Path], tmp_path: Path, env: dict[str, str]
) -> None:
    """Started as upstream's image starts it (under torchrun, here launched by the module itself):
    the rank's one-line error, then (under torchrun) one line naming the rank that failed first; the
    other rank may be stopped by torchrun before it says anything. No Python traceback anywhere."""
    argv = trainer_args(f"file://{assets['lm']}", tmp_path / "missing", {}, {})
    res = run_program("trainop.programs.hf_llm_training", argv, env)
    assert res.returncode == EXIT_USAGE, res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("trainer: error: ")]
    cause = (
        f"trainer: error: --dataset_dir {tmp_path / 'missing'}: no such directory (the storage "
        "initializer writes it: did it run?)"
    )
    if not env:
        assert errors == [cause]
        return
    *causes, summary = errors
    assert causes in ([cause], [cause, cause]), errors
    assert re.fullmatch(
        r"trainer: error: rank [01] exited with 2 \(its own error is above\); torchrun stopped the job's "
        r"other processes",
        summary,
    ), summary
