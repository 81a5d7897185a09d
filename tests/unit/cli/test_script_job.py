"""A PyTorchJob from a command line (``trainop run [FLAGS] -- COMMAND``): torchrun's and TorchX's flags
in, the manifest out; each bad combination is one line."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cli.script_job import (
    ScriptJob,
    ScriptJobError,
    build_command,
    build_name_prefix,
    build_script_job,
    check_nproc,
    compute_nnodes,
)


def replica(command: list[str], policy: str = "Never", n: int = 1, **container: Any) -> dict[str, Any]:
    c = {"name": "pytorch", "image": "docker.io/pytorch/pytorch:latest", "command": command, **container}
    return {"replicas": n, "restartPolicy": policy, "template": {"spec": {"containers": [c]}}}


def job(spec: dict[str, Any], **meta: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train-abcde", **meta},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("s", "want"),
    [
        pytest.param(
            ScriptJob(("python", "train.py", "--lr", "0.1"), "train-abcde"),
            job({"pytorchReplicaSpecs": {"Master": replica(["python", "train.py", "--lr", "0.1"])}}),
            id="one node: a Master alone, restartPolicy Never (torchrun's max_restarts 0)",
        ),
        pytest.param(
            ScriptJob(("python", "train.py"), "train-abcde", nnodes=3, nproc_per_node="2"),
            job(
                {
                    "nprocPerNode": "2",
                    "pytorchReplicaSpecs": {
                        "Master": replica(["torchrun", "train.py"]),
                        "Worker": replica(["torchrun", "train.py"], n=2),
                    },
                }
            ),
            id="3 nodes of 2 processes: Master + 2 Workers under torchrun, nprocPerNode as a string",
        ),
        pytest.param(
            ScriptJob(
                ("train.py",),
                "train-abcde",
                env=(("EPOCHS", "3"),),
                gpus=1,
                max_restarts=2,
                namespace="team",
                image="example.com/train:1",
            ),
            job(
                {
                    "runPolicy": {"backoffLimit": 2},
                    "pytorchReplicaSpecs": {
                        "Master": replica(
                            ["python", "train.py"],
                            "OnFailure",
                            image="example.com/train:1",
                            env=[{"name": "EPOCHS", "value": "3"}],
                            resources={"limits": {"nvidia.com/gpu": 1}},
                        )
                    },
                },
                namespace="team",
            ),
            id="a bare script runs under python; env, GPUs, restarts, image, namespace",
        ),
    ],
)
def test_build_script_job(s: ScriptJob, want: dict[str, Any]) -> None:
    assert build_script_job(s) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param((None, None, None), (1, None), id="default: one node"),
        pytest.param((2, None, None), (2, None), id="--nnodes counts the Master (torchrun)"),
        pytest.param((None, 2, None), (3, None), id="--workers counts the Workers besides it (PyTorchJob)"),
        pytest.param((None, None, "2x4"), (2, "4"), id="-j NNODESxNPROC (TorchX)"),
        pytest.param((None, None, "3"), (3, "1"), id="-j NNODES"),
    ],
)
def test_compute_nnodes(args: tuple[Any, ...], want: tuple[int, str | None]) -> None:
    assert compute_nnodes(*args) == want


@pytest.mark.parametrize(
    ("call", "want"),
    [
        pytest.param(lambda: compute_nnodes(2, 1, None), "--nnodes and --workers both say", id="two counts"),
        pytest.param(lambda: compute_nnodes(None, None, "2y4"), '-j "2y4": use NNODES', id="bad -j"),
        pytest.param(lambda: compute_nnodes(0, None, None), "--nnodes must be at least 1", id="no node"),
        pytest.param(lambda: check_nproc("many"), '--nproc-per-node "many"', id="bad nproc"),
        pytest.param(lambda: build_command([], None), "no command to run", id="no command"),
        pytest.param(
            lambda: build_command(["./train.sh"], "2"), "give a Python command", id="torchrun needs Python"
        ),
    ],
)
def test_bad_combinations_are_one_line(call: Any, want: str) -> None:
    with pytest.raises(ScriptJobError) as err:
        call()
    assert want in str(err.value)


@pytest.mark.parametrize(
    ("argv", "nproc", "want"),
    [
        pytest.param(["python", "-m", "pkg.train"], "gpu", ["torchrun", "-m", "pkg.train"], id="python -m"),
        pytest.param(["torchrun", "t.py"], "2", ["torchrun", "t.py"], id="torchrun kept"),
        pytest.param(["python3.11", "t.py"], "2", ["torchrun", "t.py"], id="a versioned python"),
        pytest.param(["./train.sh", "x"], None, ["./train.sh", "x"], id="any command on one process"),
    ],
)
def test_build_command(argv: list[str], nproc: str | None, want: list[str]) -> None:
    assert build_command(argv, nproc) == want


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param(["python", "train.py"], "train-", id="the script's stem"),
        pytest.param(
            ["python", "-m", "models.MNIST_v2"], "mnist-v2-", id="a module's last part, a DNS label"
        ),
        pytest.param(["python", "2fast.py"], "fast-", id="starts with a letter"),
        pytest.param(["python", "_.py"], "job-", id="nothing usable in the name: job-"),
    ],
)
def test_name_prefix(argv: list[str], want: str) -> None:
    assert build_name_prefix(argv) == want
