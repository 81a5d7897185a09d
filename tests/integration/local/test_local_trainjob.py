"""Trainer v2 TrainJobs on one machine (``trainop run FILE``): real processes, steps in order.

The DDP demo's train.py under a TrainJob on the torch-distributed runtime, 2 nodes x 2 processes,
trains for real (4 ranks); initializer steps run before the trainer and hand it files through their
shared claim; a failing node fails the TrainJob and stops the others.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from local_harness import run_cli

pytestmark = pytest.mark.integration

DDP_DIR = Path(__file__).resolve().parents[3] / "examples" / "pytorch" / "ddp-digits"


def _write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def _runtime(name: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "initializer"}}]}],
                    "replicatedJobs": steps,
                }
            },
        },
    }


def _step(
    name: str, ancestor: str, container: str, command: list[str], depends: list[str] | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "name": name,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": container,
                                "image": "example",
                                "command": command,
                                "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}],
                            }
                        ]
                    }
                }
            },
        },
    }
    if depends:
        step["dependsOn"] = [{"name": d, "status": "Complete"} for d in depends]
    return step


def _trainjob(name: str, runtime: str, kind: str = "TrainingRuntime", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime, "kind": kind}, **spec},
    }


def test_ddp_demo_under_a_trainjob_trains_2_nodes_x_2_procs(home: Path) -> None:
    env_epochs = {**os.environ, "EPOCHS": "4"}
    result = _run_with_env(["run", str(DDP_DIR / "trainjob.yaml")], env_epochs, cwd=DDP_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ddp-digits-v2-node-0-0] world size 4:" in result.stdout
    accuracy = float(re.findall(r"final test accuracy: ([0-9.]+)", result.stdout)[-1])
    assert accuracy >= 0.85, result.stdout
    assert result.stdout.rstrip().endswith("TrainJob ddp-digits-v2 Complete")


def test_converted_ddp_demo_trains_to_the_same_accuracy(home: Path, tmp_path: Path) -> None:
    """trainop convert of the DDP demo's PyTorchJob (Master + 2 Workers) gives a TrainJob of 3 nodes
    that trains to the same accuracy: the same world size, seeds and data."""
    env = {**os.environ, "EPOCHS": "6"}
    converted = _run_with_env(["convert", str(DDP_DIR / "pytorchjob.yaml")], env, cwd=tmp_path)
    assert converted.returncode == 0, converted.stderr
    (tmp_path / "trainjob.yaml").write_text(converted.stdout)
    shutil.copy(DDP_DIR / "train.py", tmp_path / "train.py")
    v2 = _run_with_env(["run", str(tmp_path / "trainjob.yaml")], env, cwd=tmp_path)
    v1 = _run_with_env(["run", str(DDP_DIR / "pytorchjob.yaml")], env, cwd=DDP_DIR)
    assert (v1.returncode, v2.returncode) == (0, 0), v1.stdout + v1.stderr + v2.stdout + v2.stderr
    assert "[ddp-digits-node-0-0] world size 3:" in v2.stdout
    accuracy = [re.findall(r"final test accuracy: ([0-9.]+)", r.stdout)[-1] for r in (v1, v2)]
    assert accuracy[0] == accuracy[1], (v1.stdout, v2.stdout)


def test_initializers_run_first_and_share_the_claim(home: Path, tmp_path: Path) -> None:
    py = sys.executable
    steps = [
        _step(
            "dataset-initializer",
            "dataset-initializer",
            "dataset-initializer",
            [
                py,
                "-c",
                "import os; os.makedirs('/workspace/dataset'); "
                "open('/workspace/dataset/d', 'w').write(os.environ['STORAGE_URI'])",
            ],
        ),
        _step(
            "model-initializer",
            "model-initializer",
            "model-initializer",
            [
                py,
                "-c",
                "import os; os.makedirs('/workspace/model'); "
                "open('/workspace/model/m', 'w').write('weights')",
            ],
        ),
        _step(
            "node",
            "trainer",
            "node",
            [
                py,
                "-c",
                "print('got', open('/workspace/dataset/d').read(), open('/workspace/model/m').read())",
            ],
            depends=["dataset-initializer", "model-initializer"],
        ),
    ]
    path = _write(
        tmp_path / "job.yaml",
        _runtime("with-init", steps),
        _trainjob(
            "init-order",
            "with-init",
            initializer={"dataset": {"storageUri": "hf://org/tiny"}, "model": {"storageUri": "s3://b/m"}},
        ),
    )
    result = run_cli("run", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[init-order-node-0-0] got hf://org/tiny weights" in result.stdout
    assert result.stdout.rstrip().endswith("TrainJob init-order Complete")


def test_a_trainjob_with_initializers_fine_tunes_the_tiny_model(home: Path, tmp_path: Path) -> None:
    """The fine-tuning programs (trainop.programs) as a TrainJob's steps: the dataset and model
    initializers take STORAGE_URI from spec.initializer and fill the shared claim, then the node runs
    the LoRA trainer under torchrun on what they left there."""
    import transformers

    from trainop.testing import finetune

    lm = finetune.write_tiny_causal_lm(tmp_path / "tiny-gpt")
    data = finetune.write_json_dataset(tmp_path / "lm-data", {"text": finetune.build_corpus(16)})
    py = sys.executable
    init = [py, "-m", "trainop.programs.storage_initializer", "--workspace", "/workspace"]
    dataset_cmd = [
        *init,
        "--dataset_provider",
        "hf",
        "--dataset_provider_parameters",
        '{"repo_id": "$(STORAGE_URI)"}',
    ]
    model_params = '{"model_uri": "$(STORAGE_URI)", "transformer_type": "AutoModelForCausalLM"}'
    model_cmd = [*init, "--model_provider", "hf", "--model_provider_parameters", model_params]
    trainer_cmd = ["torchrun", "--no-python", py, "-m", "trainop.programs.hf_llm_training"]
    steps = [
        _step("dataset-initializer", "dataset-initializer", "dataset-initializer", dataset_cmd),
        _step("model-initializer", "model-initializer", "model-initializer", model_cmd),
        _step("node", "trainer", "node", trainer_cmd, depends=["dataset-initializer", "model-initializer"]),
    ]
    training = transformers.TrainingArguments(
        output_dir="/workspace/out",
        max_steps=2,
        logging_steps=1,
        per_device_train_batch_size=2,
        learning_rate=0.05,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    ).to_dict()
    args = [
        "--model_uri", f"file://{lm}",
        "--transformer_type", "AutoModelForCausalLM",
        "--model_dir", "/workspace/model",
        "--dataset_dir", "/workspace/dataset",
        "--lora_config", json.dumps({"r": 4}),
        "--training_parameters", json.dumps(training),
    ]  # fmt: skip
    path = _write(
        tmp_path / "job.yaml",
        _runtime("finetune", steps),
        _trainjob(
            "tune",
            "finetune",
            initializer={
                "dataset": {"storageUri": f"file://{data}"},
                "model": {"storageUri": f"file://{lm}"},
            },
            trainer={"numNodes": 1, "args": args},
        ),
    )
    result = run_cli("run", str(path), cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    out = result.stdout
    assert f"dataset {data}: saved to" in out.replace("file://", "")
    assert "[tune-node-0-0] trainer: step 2 loss" in out, out[-3000:]
    assert out.rstrip().endswith("TrainJob tune Complete")


def test_a_failing_node_fails_the_trainjob(home: Path, tmp_path: Path) -> None:
    py = sys.executable
    # Node 1 exits 3 at once; node 0 would wait for ever: the failure must stop it.
    script = "import os, sys, time\nif os.environ['PET_NODE_RANK'] == '1': sys.exit(3)\ntime.sleep(600)"
    path = _write(
        tmp_path / "job.yaml",
        _trainjob(
            "fails",
            "torch-distributed",
            kind="ClusterTrainingRuntime",
            trainer={"numNodes": 2, "command": [py, "-c", script]},
        ),
    )
    result = run_cli("run", str(path), cwd=tmp_path, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(
        "TrainJob fails Failed: pod fails-node-0-1 failed: container node exited with code 3"
    )


def test_a_node_whose_command_cannot_start_fails_the_trainjob_in_one_line(home: Path, tmp_path: Path) -> None:
    # As a v1 job's container that cannot start: containerd's StartError (128) and its message, the
    # other node stopped, and no traceback (the run raised FileNotFoundError out of trainop run).
    path = _write(
        tmp_path / "job.yaml",
        _trainjob(
            "nocmd",
            "torch-distributed",
            kind="ClusterTrainingRuntime",
            trainer={"numNodes": 2, "command": ["no-such-program-xyz", "train.py"]},
        ),
    )
    result = run_cli("run", str(path), cwd=tmp_path, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(
        "TrainJob nocmd Failed: pod nocmd-node-0-0 failed: failed to start container 'node': exec: "
        '"no-such-program-xyz": executable file not found in $PATH'
    ), result.stdout[-2000:]


def test_unknown_runtime_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "job.yaml", _trainjob("lost", "no-such-runtime", kind="ClusterTrainingRuntime"))
    result = run_cli("run", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert (
        'spec.RuntimeRef: Invalid value: {"name":"no-such-runtime","kind":"ClusterTrainingRuntime"}: '
        'clustertrainingruntimes.trainer.kubeflow.org "no-such-runtime" not found: specified '
        "clusterTrainingRuntime must be created before the TrainJob is created"
    ) in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr


def _run_with_env(args: list[str], env: dict[str, str], cwd: Path) -> Any:
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_an_upstream_style_trainjob_with_initializers_runs_without_commands(
    home: Path, tmp_path: Path
) -> None:
    """The shipped torch-distributed-with-initializers runtime names upstream's initializer images and
    no command: trainop's v2 initializers (STORAGE_URI) stand in for them and fill /workspace, which
    is the job's claim directory here; the trainer reads both from there."""
    dataset, model = tmp_path / "data", tmp_path / "weights"
    dataset.mkdir()
    model.mkdir()
    (dataset / "train.jsonl").write_text('{"text": "hello"}\n')
    (model / "config.json").write_text("{}")
    read = (
        "import os; print('dataset', sorted(os.listdir('/workspace/dataset')), "
        "'model', sorted(os.listdir('/workspace/model')))"
    )
    path = _write(
        tmp_path / "job.yaml",
        _trainjob(
            "upstream-init",
            "torch-distributed-with-initializers",
            kind="ClusterTrainingRuntime",
            initializer={
                "dataset": {"storageUri": f"file://{dataset}"},
                "model": {"storageUri": f"file://{model}"},
            },
            trainer={"command": [sys.executable, "-c", read]},
        ),
    )
    result = run_cli("run", str(path), cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"dataset file://{dataset}: ready in" in result.stdout
    assert "[upstream-init-node-0-0] dataset ['train.jsonl'] model ['config.json']" in result.stdout
    assert result.stdout.rstrip().endswith("TrainJob upstream-init Complete")


@pytest.mark.parametrize(
    ("extra", "env", "source"),
    [
        pytest.param([], {"TRAINOP_BACKEND": "kubernetes"}, "$TRAINOP_BACKEND", id="env"),
        pytest.param(["--backend", "kubernetes"], {}, "--backend", id="flag"),
    ],
)
def test_a_trainjob_for_the_kubernetes_backend_is_refused_not_run_here(
    home: Path, tmp_path: Path, extra: list[str], env: dict[str, str], source: str
) -> None:
    """As a v1 job goes to the cluster the backend names, a TrainJob never runs on this machine when
    the backend is kubernetes: one line says to apply it with kubectl (or pick the local backend)."""
    marker = tmp_path / "ran"
    path = _write(
        tmp_path / "job.yaml",
        _trainjob(
            "elsewhere",
            "torch-distributed",
            kind="ClusterTrainingRuntime",
            trainer={"command": [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]},
        ),
    )
    result = _run_with_env(["run", *extra, str(path)], {**os.environ, **env}, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join(result.stderr.split())
    assert f"the backend is kubernetes, from {source.split('/')[0]}" in said
    assert f"kubectl apply -f {path}" in said and "--backend local" in said
    assert "Traceback" not in result.stderr
    assert not marker.exists()
    dry = _run_with_env(["run", "--dry-run", *extra, str(path)], {**os.environ, **env}, cwd=tmp_path)
    assert dry.returncode == 0 and "elsewhere-node-0-0" in dry.stdout, dry.stderr


@pytest.mark.parametrize(
    ("fail_runs", "code", "ending"),
    [
        pytest.param(1, 0, "TrainJob retried Complete", id="the second attempt succeeds"),
        pytest.param(9, 1, "TrainJob retried Failed: pod retried-node-0-0 failed: container node exited "
                     "with code 4", id="every attempt fails"),
    ],
)  # fmt: skip
def test_max_restarts_restarts_every_pod(
    home: Path, tmp_path: Path, fail_runs: int, code: int, ending: str
) -> None:
    """JobSet's failurePolicy.maxRestarts: a failed pod restarts the whole TrainJob (the initializer
    step too), at most that many times; then it fails as without a policy."""
    py = sys.executable
    runs, inits = tmp_path / "runs", tmp_path / "inits"
    script = (
        f"f = open({str(runs)!r}, 'a'); f.write('run\\n'); f.close()\n"
        f"count = len(open({str(runs)!r}).read().splitlines())\n"
        f"raise SystemExit(4 if count <= {fail_runs} else 0)"
    )
    init = [py, "-c", f"open({str(inits)!r}, 'a').write('init\\n')"]
    steps = [
        _step("dataset-initializer", "dataset-initializer", "dataset-initializer", init),
        _step("node", "trainer", "node", [py, "-c", script], depends=["dataset-initializer"]),
    ]
    runtime = _runtime("retrying", steps)
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
    path = _write(tmp_path / "job.yaml", runtime, _trainjob("retried", "retrying"))
    result = run_cli("run", str(path), cwd=tmp_path, timeout=60)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(ending)
    attempts = 2 if fail_runs == 1 else 3
    assert runs.read_text() == "run\n" * attempts
    assert inits.read_text() == "init\n" * attempts
    assert "restarting every pod (1/2, the runtime's failurePolicy.maxRestarts)" in result.stdout
