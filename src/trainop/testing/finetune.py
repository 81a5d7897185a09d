"""Fine-tuning fixtures made on the spot, never downloaded: a tokenizer trained with ``tokenizers`` on
a small corpus, a tiny GPT-2-like causal LM and a tiny BERT-like classifier (a few thousand
parameters: seconds on one busy core), text datasets written as files or ``save_to_disk``, and a
Hugging Face hub cache filled with a model, as ``huggingface-cli download`` would leave it.

The heavy libraries are imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAX_LENGTH = 16
SUBJECTS = ("the cat", "a dog", "my bird", "the fox", "a horse", "the cow")
VERBS = ("sees", "likes", "finds", "chases", "hears", "follows")
OBJECTS = ("the ball", "a stick", "the sun", "a tree", "the river", "a rock")
PLACES = ("at home", "in the park", "by the sea", "near the barn")


def _transformers() -> Any:
    import transformers

    return transformers


def build_corpus(n: int, seed: int = 0) -> list[str]:
    """``n`` short sentences from a tiny grammar: an LM's loss on them falls within a few steps."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)} ."
        for _ in range(n)
    ]


def build_labelled(n: int, num_labels: int = 3, seed: int = 0) -> dict[str, list[Any]]:
    """Sentences whose label is the index of their subject modulo ``num_labels``."""
    rng = random.Random(seed)
    text: list[str] = []
    label: list[int] = []
    for _ in range(n):
        i = rng.randrange(len(SUBJECTS))
        text.append(f"{SUBJECTS[i]} {rng.choice(VERBS)} {rng.choice(OBJECTS)} .")
        label.append(i % num_labels)
    return {"text": text, "label": label}


def build_tokenizer(kind: str, corpus: Sequence[str]) -> Any:
    """A word-level tokenizer trained on ``corpus``, wrapped as a PreTrainedTokenizerFast with a
    ``model_max_length`` (padding="max_length" pads to it). ``kind``: ``gpt2`` (eos doubles as pad,
    as upstream's trainer sets it) or ``bert`` ([CLS] … [SEP], a pad token of its own)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    fast: Any = _transformers().PreTrainedTokenizerFast

    if kind == "gpt2":
        roles = {"unk_token": "<unk>", "eos_token": "<eos>", "bos_token": "<eos>"}
    else:
        roles = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
    specials = list(dict.fromkeys(roles.values()))  # the unknown token first
    tok = Tokenizer(models.WordLevel(unk_token=specials[0]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(list(corpus), trainers.WordLevelTrainer(special_tokens=specials))
    if kind != "gpt2":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
        )
    return fast(tokenizer_object=tok, model_max_length=MAX_LENGTH, **roles)


def write_tiny_causal_lm(target: Path, seed: int = 0) -> Path:
    """A GPT-2-like model (1 layer, width 32) and its tokenizer, saved with save_pretrained."""
    import torch

    tf = _transformers()

    tokenizer = build_tokenizer("gpt2", build_corpus(200, seed))
    config = tf.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=MAX_LENGTH * 2,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    tf.AutoModelForCausalLM.from_config(config).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def write_tiny_classifier(target: Path, num_labels: int = 3, seed: int = 0) -> Path:
    """A BERT-like sequence classifier (1 layer, width 32, ``num_labels`` outputs) and its tokenizer."""
    import torch

    tf = _transformers()

    data = build_labelled(200, num_labels, seed)
    tokenizer = build_tokenizer("bert", data["text"])
    config = tf.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=MAX_LENGTH * 2,
        num_labels=num_labels,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    tf.AutoModelForSequenceClassification.from_config(config).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def write_json_dataset(target: Path, rows: dict[str, list[Any]], name: str = "train.json") -> Path:
    """``rows`` (column → values) as JSON lines in ``target/name`` (load_dataset reads the directory)."""
    target.mkdir(parents=True, exist_ok=True)
    columns = list(rows)
    with (target / name).open("w") as f:
        for values in zip(*(rows[c] for c in columns), strict=True):
            f.write(json.dumps(dict(zip(columns, values, strict=True))) + "\n")
    return target


def fill_hub_cache(cache: Path, repo: str, model_dir: Path, revision: str = "main") -> Path:
    """``model_dir``'s files in hub-cache layout under ``cache`` (``models--org--name/blobs``,
    ``snapshots/<commit>`` links, ``refs/main``), as a download would leave them."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    commit = hashlib.sha1(repo.encode()).hexdigest()
    snapshot = folder / "snapshots" / commit
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for f in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        data = f.read_bytes()
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / f.relative_to(model_dir)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        depth = len(link.relative_to(folder).parts) - 1
        link.symlink_to(Path(*([".."] * depth)) / "blobs" / blob.name)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / revision).write_text(commit)
    return folder
