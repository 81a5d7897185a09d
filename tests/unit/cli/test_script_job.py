"""A PyTorchJob from a command line (``trainop run [FLAGS] -- COMMAND``): torchrun's and TorchX's flags
in, the manifest out; each bad combination is one line."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cli.script_job import (
    _RANK_ENV_SCRIPT,
    REFUSED,
    TORCHRUN_FLAGS,
    RunArgv,
    ScriptJob,
    ScriptJobError,
    build_command,
    build_name_prefix,
    build_script_job,
    check_nproc,
    compute_nnodes,
    split_run_argv,
)


def replica(command: list[str], policy: str = "Never", n: int = 1, **container: Any) -> dict[str, Any]:
    c = {"name": "pytorch", "image": "docker.io/pytorch/pytorch:latest", "command": command, **container}
    return {"replicas": n, "restartPolicy": policy, "template": {"spec": {"containers": [c]}}}


def ranked(command: list[str]) -> list[str]:
    """One process per node: the command under sh, which adds torchrun's per-node variables."""
    return ["sh", "-c", _RANK_ENV_SCRIPT, command[0], *command]


def rank_env(name: str = "train-abcde", restarts: int = 0) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "LOCAL_RANK", "value": "0"},
        {"name": "LOCAL_WORLD_SIZE", "value": "1"},
        {"name": "ROLE_NAME", "value": "default"},
        {"name": "TORCHELASTIC_RUN_ID", "value": name},
        {"name": "TORCHELASTIC_MAX_RESTARTS", "value": str(restarts)},
        {"name": "TORCHELASTIC_USE_AGENT_STORE", "value": "False"},
    ]
    if restarts:
        ref = {"fieldPath": "metadata.labels['trainop.dev/restart-attempt']"}
        env.append({"name": "TORCHELASTIC_RESTART_COUNT", "valueFrom": {"fieldRef": ref}})
    return env


def job(spec: dict[str, Any], **meta: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train-abcde", "annotations": {"trainop.dev/max-restarts": "0"}, **meta},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("s", "want"),
    [
        pytest.param(
            ScriptJob(("python", "train.py", "--lr", "0.1"), "train-abcde"),
            job(
                {
                    "pytorchReplicaSpecs": {
                        "Master": replica(ranked(["python", "train.py", "--lr", "0.1"]), env=rank_env())
                    }
                }
            ),
            id="one node: a Master alone, restartPolicy Never, torchrun's max_restarts 0 (no restart; a "
            "failure stops every node), torchrun's env",
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
            {
                **job(
                    {
                        "pytorchReplicaSpecs": {
                            "Master": replica(
                                ranked(["python", "train.py"]),
                                image="example.com/train:1",
                                env=[*rank_env(restarts=2), {"name": "EPOCHS", "value": "3"}],
                                resources={"limits": {"nvidia.com/gpu": 1}},
                            )
                        },
                    },
                ),
                "metadata": {
                    "name": "train-abcde",
                    "namespace": "team",
                    "annotations": {"trainop.dev/max-restarts": "2"},
                },
            },
            id="a bare script runs under python; env, GPUs, whole-job restarts, image, namespace",
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
        pytest.param(("3:3", None, None), (3, None), id="--nnodes MIN:MAX with MIN = MAX (torchrun)"),
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
        pytest.param(
            lambda: compute_nnodes("1:4", None, None), "an elastic range needs a PyTorchJob", id="elastic"
        ),
        pytest.param(
            lambda: compute_nnodes("2", None, None, True), "--standalone is one node", id="standalone"
        ),
        pytest.param(
            lambda: build_command(["t.py"], None, agent_args=["--tee", "3"]),
            "--tee is an option of",
            id="agent",
        ),
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
    ("kwargs", "want"),
    [
        pytest.param({"module": True}, ["python", "-m", "pkg.t", "-x"], id="-m, one process"),
        pytest.param(
            {"module": True, "nproc": "2"}, ["torchrun", "-m", "pkg.t", "-x"], id="-m under torchrun"
        ),
        pytest.param({"no_python": True}, ["pkg.t", "-x"], id="--no-python: as it is"),
        pytest.param(
            {"no_python": True, "nproc": "2", "agent_args": ["--tee", "3"]},
            ["torchrun", "--tee", "3", "--no-python", "pkg.t", "-x"],
            id="--no-python and an agent option under torchrun",
        ),
        pytest.param({"agent_args": ["--run-path"]}, ["pkg.t", "-x"], id="--run-path alone: nothing to do"),
    ],
)
def test_build_command_torchrun_modes(kwargs: dict[str, Any], want: list[str]) -> None:
    nproc = kwargs.pop("nproc", None)
    assert build_command(["pkg.t", "-x"], nproc, **kwargs) == want


OPTIONS = {"--nnodes": True, "--nproc-per-node": True, "-n": True, "--dry-run": False, "--max-restarts": True}


def is_script(arg: str) -> bool:
    return arg.endswith(".py") or arg == "python"


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param(
            ["--nproc_per_node=2", "train.py", "--lr", "0.1", "-n", "3"],
            RunArgv(["--nproc-per-node=2", "--", "train.py", "--lr", "0.1", "-n", "3"]),
            id="torchrun's spelling; the script's options after its path are the script's",
        ),
        pytest.param(
            ["--nnodes", "2", "job.yaml", "-n", "team", "--dry-run"],
            RunArgv(["--nnodes", "2", "job.yaml", "-n", "team", "--dry-run"]),
            id="a manifest: options after it are run's",
        ),
        pytest.param(
            ["--standalone", "--max_restarts", "1", "python", "t.py", "--standalone"],
            RunArgv(["--max-restarts", "1", "--", "python", "t.py", "--standalone"], standalone=True),
            id="--standalone taken; after the command, nothing is run's",
        ),
        pytest.param(
            ["--monitor_interval=1", "-t", "3", "-m", "pkg.train", "--lr"],
            RunArgv(
                ["--", "pkg.train", "--lr"], module=True, agent_args=("--monitor-interval", "1", "--tee", "3")
            ),
            id="-m: the module comes next; the agent's options are kept for torchrun",
        ),
        pytest.param(
            ["--", "python", "t.py", "--nnodes", "3"],
            RunArgv(["--", "python", "t.py", "--nnodes", "3"]),
            id="--",
        ),
    ],
)
def test_split_run_argv(argv: list[str], want: RunArgv) -> None:
    assert split_run_argv(argv, OPTIONS, is_script) == want


@pytest.mark.parametrize(
    "flag", [f for f in TORCHRUN_FLAGS if f.verdict == REFUSED], ids=lambda f: f.names[0]
)
def test_refused_torchrun_flags_say_why(flag: Any) -> None:
    spelled = flag.names[0].replace("-", "_").replace("__", "--", 1) + "=x"
    with pytest.raises(ScriptJobError) as err:
        split_run_argv([spelled, "train.py"], OPTIONS, is_script)
    assert str(err.value).startswith(f"{flag.names[0]} (torchrun's) is not taken by trainop run: ")


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
