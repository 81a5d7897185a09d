"""Fine-tune a causal language model with LoRA through TrainingClient.train(), kubeflow-training's API.

Written for kubeflow-training 1.9.4 only. Against a cluster with upstream's images:
    python finetune_llm.py hf://<org>/<model>
With trainop, change the line `from kubeflow.training import TrainingClient` to
`from trainop.sdk import TrainingClient` (nothing else) and run it on this machine, offline, on CPU:
    TRAINOP_BACKEND=local python finetune_llm.py
Without an argument it first builds a tiny GPT-2-like model (a tokenizer trained on the spot and a
one-layer model: under a minute end to end) and a dataset of short sentences, in ./finetune-data.
"""

import json
import random
import sys
from pathlib import Path

import transformers
from kubeflow.storage_initializer.hugging_face import (
    HuggingFaceDatasetParams,
    HuggingFaceModelParams,
    HuggingFaceTrainerParams,
)
from kubeflow.training import TrainingClient
from peft import LoraConfig
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

JOB = "finetune-llm"
DATA = Path("finetune-data").absolute()
WORDS = {
    "subject": ["the cat", "a dog", "my bird", "the fox"],
    "verb": ["sees", "likes", "chases", "finds"],
    "object": ["the ball", "a stick", "the sun", "a tree"],
}


def sentences(n):
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS[k]) for k in ("subject", "verb", "object")) + " ." for _ in range(n)]


def build_tiny_model(target):
    """A word-level tokenizer and a one-layer GPT-2, saved as from_pretrained reads them."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(sentences(100), trainers.WordLevelTrainer(special_tokens=["<unk>", "<eos>"]))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", model_max_length=12
    )
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=16, n_embd=32, n_layer=1, n_head=2
    )
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return "file://" + str(target)


def write_dataset(target):
    """JSON lines with a `text` column: the column the trainer tokenizes."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "train.json", "w") as f:
        for line in sentences(32):
            f.write(json.dumps({"text": line}) + "\n")
    return str(target)


def main():
    model_uri = sys.argv[1] if len(sys.argv) > 1 else build_tiny_model(DATA / "tiny-gpt")
    client = TrainingClient()
    try:
        client.delete_job(JOB)  # an earlier run's (the adapter it saved goes with it)
    except RuntimeError:
        pass
    client.train(
        name=JOB,
        num_workers=1,
        num_procs_per_worker=1,
        model_provider_parameters=HuggingFaceModelParams(
            model_uri=model_uri, transformer_type=transformers.AutoModelForCausalLM
        ),
        dataset_provider_parameters=HuggingFaceDatasetParams(repo_id=write_dataset(DATA / "sentences")),
        trainer_parameters=HuggingFaceTrainerParams(
            training_parameters=transformers.TrainingArguments(
                output_dir="/workspace/adapter",  # in the job's volume
                num_train_epochs=2,
                per_device_train_batch_size=4,
                learning_rate=0.05,
                logging_steps=2,
                save_strategy="no",
                report_to="none",
                disable_tqdm=True,
            ),
            lora_config=LoraConfig(r=8, lora_alpha=16),
        ),
    )
    client.wait_for_job_conditions(JOB, timeout=900, polling_interval=1)
    logs, _ = client.get_job_logs(JOB)
    for pod, text in logs.items():
        for line in text.splitlines():
            if " loss " in line or "saved to" in line:
                print(f"{pod}: {line}")
    print("conditions:", [c.type for c in client.get_job_conditions(JOB)])


if __name__ == "__main__":
    main()
