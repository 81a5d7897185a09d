"""The SDK's scenario list (issue 6), each run on the local backend and on Kubernetes (kwok).

Locally the replicas are real processes; on Kubernetes the operator creates the pods and kwok plays
them from annotations. Where the backends honestly differ (kwok pods have no logs, no Python runs
on kwok) the scenario says so and asserts what each backend does.
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from sdk_harness import TORCH_INSTALL, SDKEnv, wait_until

from trainop.api.constants import LABEL_JOB_NAME
from trainop.sdk import (
    AlreadyExistsError,
    InvalidJobError,
    JobFailedError,
    KubeflowOrgV1PyTorchJob,
    NotFoundError,
    WaitTimeoutError,
)
from trainop.sdk.models import build_job_model

WAIT = dict(wait_timeout=90, polling_interval=0.3)

# --- functions the function-mode scenarios send (module level: their source is read by the SDK) ---


def train_hello(parameters):  # type: ignore[no-untyped-def]
    import os

    print(f"fn lr={parameters['lr']} rank={os.environ.get('RANK')} world={os.environ.get('WORLD_SIZE')}")


def train_torchrun():  # type: ignore[no-untyped-def]
    import os

    import torch.distributed as dist

    dist.init_process_group("gloo")
    t = __import__("torch").tensor([dist.get_rank() + 1])
    dist.all_reduce(t)
    print(
        f"torchrun rank={dist.get_rank()} world={dist.get_world_size()} sum={int(t.item())} "
        f"node={os.environ['GROUP_RANK']}"
    )
    dist.destroy_process_group()


def train_with_package():  # type: ignore[no-untyped-def]
    import sys

    import trainop_sdk_tinypkg

    print(
        "tinypkg says",
        trainop_sdk_tinypkg.GREETING,
        "from",
        trainop_sdk_tinypkg.__file__,
        "prefix",
        sys.prefix,
    )


def build_tiny_wheel(directory: Path) -> Path:
    """A pure-Python wheel made on the spot, so installing it needs no index."""
    name, version = "trainop_sdk_tinypkg", "0.1"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": 'GREETING = "hi from the job venv"\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: trainop-tests\nRoot-Is-Purelib: true\nTag: "
        "py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


# --- scenarios ---


def create_from_object_and_wait(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job built as KubeflowOrgV1PyTorchJob; wait_for_job_conditions returns it Succeeded."""
    job = build_job_model(env.job("obj", workers=1))
    env.client.create_job(job)
    seen: list[str] = []

    def record(j: KubeflowOrgV1PyTorchJob) -> None:
        conditions = (j.status.conditions if j.status else None) or []
        seen.append(conditions[-1].type if conditions else "-")

    got = env.client.wait_for_job_conditions("obj", callback=record, **WAIT)  # type: ignore[arg-type]
    assert isinstance(got, KubeflowOrgV1PyTorchJob)
    assert got.metadata.name == "obj"
    assert env.client.is_job_succeeded("obj")
    assert not env.client.is_job_failed("obj")
    assert env.client.is_job_created(job=got)
    types = [c.type for c in env.client.get_job_conditions("obj") if c.status == "True"]
    assert types[0] == "Created" and types[-1] == "Succeeded", types
    assert seen and seen[-1] == "Succeeded"
    assert env.client.get_job_pod_names("obj") == ["obj-master-0", "obj-worker-0"]
    assert env.client.get_job_pod_names("obj", is_master=True) == ["obj-master-0"]
    assert env.client.get_job_pod_names("obj", replica_type="Worker") == ["obj-worker-0"]
    # The Master decides a PyTorchJob's success: the Worker may still be exiting when it is Succeeded.
    pod = wait_until(
        lambda: next(
            (
                p
                for p in env.client.get_job_pods("obj", replica_type="worker", replica_index=0)
                if p.status.phase == "Succeeded"
            ),
            None,
        ),
        what="obj-worker-0 to be Succeeded",
    )
    assert pod.metadata.labels[LABEL_JOB_NAME] == "obj"


def create_from_yaml_and_wait_timeout(
    env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job as YAML text that keeps running: waiting for Succeeded times out (TimeoutError)."""
    import yaml

    env.client.create_job(yaml.safe_dump(env.job("yml", forever=True)))
    env.client.wait_for_job_conditions("yml", expected_conditions={"Running"}, **WAIT)  # type: ignore[arg-type]
    with pytest.raises(TimeoutError) as err:
        env.client.wait_for_job_conditions("yml", wait_timeout=1.5, polling_interval=0.5)
    assert isinstance(err.value, WaitTimeoutError)
    assert (
        str(err.value)
        == f"Timeout waiting for PyTorchJob: {env.namespace}/yml to reach expected conditions: "
        "                {'Succeeded'}"  # upstream's words, its line continuation's spaces included
    )


def create_from_function(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Function mode, one worker: python -u runs the function with its parameters in the replica."""
    env.client.create_job(name="fn", train_func=train_hello, parameters={"lr": 0.5}, num_workers=1)
    env.drive_pods("fn", 1)
    job = env.client.wait_for_job_conditions("fn", **WAIT)  # type: ignore[arg-type]
    container = job.spec.pytorch_replica_specs["Master"].template.spec.containers[0]
    # The script both backends run: upstream's heredoc (with the quoted delimiter of docs/sdk.md),
    # written out here so a change to the builder cannot pass unnoticed.
    want = (
        "program_path=$(mktemp -d)\n"
        "read -r -d '' SCRIPT << 'EOM'\n"
        "def train_hello(parameters):  # type: ignore[no-untyped-def]\n"
        "    import os\n"
        "\n"
        "    print(f\"fn lr={parameters['lr']} rank={os.environ.get('RANK')} "
        "world={os.environ.get('WORLD_SIZE')}\")\n"
        "\n"
        "train_hello({'lr': 0.5})\n"
        "EOM\n"
        'printf "%s" "$SCRIPT" > "$program_path/ephemeral_script.py"\n'
        'python -u "$program_path/ephemeral_script.py"\n'
    )
    assert (container.command, container.args) == (["bash", "-c"], [want])
    if env.backend == "local":
        logs, _ = env.client.get_job_logs("fn")
        assert logs == {"fn-master-0": "fn lr=0.5 rank=0 world=1\n"}


def create_from_function_torchrun(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Function mode, two workers: torchrun in every replica, which rendezvous and all-reduce."""
    if env.backend == "local" and importlib.util.find_spec("torch") is None:
        pytest.fail(
            f"torch is not installed in {sys.prefix}; install it with: {TORCH_INSTALL}", pytrace=False
        )
    # One process per replica: nprocPerNode would default to "auto" (one per CPU), as upstream.
    env.client.create_job(name="tr", train_func=train_torchrun, num_workers=2, num_procs_per_worker=1)
    env.drive_pods("tr", 2)
    job = env.client.wait_for_job_conditions("tr", **WAIT)  # type: ignore[arg-type]
    args = job.spec.pytorch_replica_specs["Worker"].template.spec.containers[0].args[0]
    assert args.endswith('torchrun "$program_path/ephemeral_script.py"\n')
    if env.backend == "local":
        master, _ = env.client.get_job_logs("tr")
        worker, _ = env.client.get_job_logs("tr", is_master=False, replica_type="Worker", replica_index=0)
        # torchrun's own warnings share the log (stdout and stderr, as kubectl shows them).
        said = {
            pod: [x for x in text.splitlines() if x.startswith("torchrun rank=")]
            for pod, text in {**master, **worker}.items()
        }
        assert said == {
            "tr-master-0": ["torchrun rank=0 world=2 sum=3 node=0"],
            "tr-worker-0": ["torchrun rank=1 world=2 sum=3 node=1"],
        }


def create_from_function_with_packages(
    env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """packages_to_install goes into the job's own environment, never into the caller's."""
    wheel = build_tiny_wheel(tmp_path)
    env.client.create_job(name="pk", train_func=train_with_package, packages_to_install=[str(wheel)])
    env.drive_pods("pk", 1)
    job = env.client.wait_for_job_conditions("pk", **WAIT)  # type: ignore[arg-type]
    script = job.spec.pytorch_replica_specs["Master"].template.spec.containers[0].args[0]
    assert (
        "python -m pip install --quiet --no-warn-script-location --index-url https://pypi.org/simple "
        f"{wheel}\n" in script
    )
    assert importlib.util.find_spec("trainop_sdk_tinypkg") is None, "installed into the caller's environment"
    if env.backend == "local":
        logs, _ = env.client.get_job_logs("pk")
        text = logs["pk-master-0"]
        assert text.startswith("tinypkg says hi from the job venv from "), text
        # Locally the packages are installed before the job starts: a pip failure fails create_job.
        missing = tmp_path / "missing-0.1-py3-none-any.whl"
        with pytest.raises(
            RuntimeError, match=r"cannot prepare its Python environment: pip install .*missing"
        ):
            env.client.create_job(
                name="pk-bad", train_func=train_with_package, packages_to_install=[str(missing)]
            )
        with pytest.raises(NotFoundError):
            env.client.get_job("pk-bad")
        job_env = text.rsplit(" prefix ", 1)[1].strip()
        assert Path(job_env) != Path(sys.prefix)
        assert f"{Path(job_env)}/" in text.split(" from ", 2)[2]


def failing_job_raises(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A replica exits 3: wait_for_job_conditions raises a RuntimeError holding the conditions."""
    env.client.create_job(env.job("bad", exit_code=3))
    with pytest.raises(RuntimeError) as err:
        env.client.wait_for_job_conditions("bad", **WAIT)  # type: ignore[arg-type]
    assert isinstance(err.value, JobFailedError)
    msg = str(err.value)
    assert msg.startswith(f"PyTorchJob {env.namespace}/bad is Failed. PyTorchJob conditions: [")
    # The conditions as upstream's models print them (their to_dict(), snake_case keys).
    assert "'type': 'Failed'" in msg and "'status': 'True'" in msg
    assert [c.type for c in err.value.conditions][-1] == "Failed"
    assert env.client.is_job_failed("bad")
    # Expecting Failed makes the same wait return the job instead.
    job = env.client.wait_for_job_conditions("bad", expected_conditions={"Failed"}, **WAIT)  # type: ignore[arg-type]
    assert job.metadata.name == "bad"


def logs_master_and_worker_follow(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Logs of the master (default) and of a chosen worker; follow streams until the replicas end."""
    lines = ("one", "two", "three", "four")
    env.client.create_job(env.job("lg", workers=2, lines=lines, pause_s=0.5))
    env.client.wait_for_job_conditions("lg", expected_conditions={"Running", "Succeeded"}, **WAIT)  # type: ignore[arg-type]
    if env.backend == "kubernetes":
        # kwok runs no containers and serves no logs: the documented error, not an empty result.
        with pytest.raises(RuntimeError, match=f"Failed to read logs for pod {env.namespace}/lg-master-0"):
            env.client.get_job_logs("lg", follow=True, timeout=20)
        with pytest.raises(RuntimeError, match=f"Failed to read logs for pod {env.namespace}/lg-worker-1"):
            env.client.get_job_logs("lg", is_master=False, replica_type="Worker", replica_index=1, timeout=20)
        return
    capsys.readouterr()
    followed, events = env.client.get_job_logs("lg", follow=True)
    want_master = "".join(f"{line} rank=0\n" for line in lines)
    assert (followed, events) == ({"lg-master-0": want_master}, {})
    printed = capsys.readouterr().out
    assert printed == "".join(f"[Pod lg-master-0]: {line} rank=0\n" for line in lines)
    # Following returns only once the stream ends: the master has finished by then.
    assert env.client.get_job_pods("lg", is_master=True)[0].status.phase in ("Succeeded", "Failed")
    worker, _ = env.client.get_job_logs(
        "lg", is_master=False, replica_type="Worker", replica_index=1, follow=True
    )
    assert worker == {"lg-worker-1": "".join(f"{line} rank=2\n" for line in lines)}
    everyone, events = env.client.get_job_logs("lg", is_master=False, verbose=True)
    assert sorted(everyone) == ["lg-master-0", "lg-worker-0", "lg-worker-1"]
    assert "pytorchjob/lg" in events, events


def list_get_update_suspend_delete(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """list and get; update_job suspends (pods go) and resumes; delete_job removes the job."""
    env.client.create_job(env.job("keep", forever=True))
    env.client.create_job(env.job("other", forever=True))
    assert sorted(j.metadata.name for j in env.client.list_jobs()) == ["keep", "other"]
    assert env.client.list_jobs(job_kind="TFJob") == []
    with pytest.raises(AlreadyExistsError):
        env.client.create_job(env.job("keep"))
    env.client.wait_for_job_conditions("keep", expected_conditions={"Running"}, **WAIT)  # type: ignore[arg-type]

    job = env.client.get_job("keep")
    job.spec.run_policy.suspend = True
    env.client.update_job(job, "keep")
    env.wait_condition("keep", "Suspended")
    wait_until(lambda: env.client.get_job_pods("keep") == [], what="the suspended job's pods to go")
    assert not env.client.is_job_running("keep")

    env.client.update_job({"spec": {"runPolicy": {"suspend": False}}}, "keep")
    env.client.wait_for_job_conditions("keep", expected_conditions={"Running"}, **WAIT)  # type: ignore[arg-type]
    assert env.client.get_job("keep").spec.run_policy.suspend is False

    env.client.delete_job("keep")
    wait_until(
        lambda: [j.metadata.name for j in env.client.list_jobs()] == ["other"], what="keep to be deleted"
    )
    with pytest.raises(RuntimeError) as err:
        env.client.get_job("keep")
    assert isinstance(err.value, NotFoundError)
    with pytest.raises(NotFoundError):
        env.client.delete_job("keep")


def invalid_input_is_a_value_error(env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad input fails before reaching the backend, as a ValueError naming the field."""
    bad = env.job("bad-input")
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "two"
    with pytest.raises(ValueError) as err:
        env.client.create_job(bad)
    assert isinstance(err.value, InvalidJobError)
    assert [e.path for e in err.value.errors] == ["spec.pytorchReplicaSpecs[Master].replicas"]
    with pytest.raises(ValueError, match=r"replica_type 'Launcherz' is not a replica type of any kind"):
        env.client.get_job_pods("x", replica_type="Launcherz")
    with pytest.raises(ValueError, match="Expected conditions"):
        env.client.wait_for_job_conditions("x", expected_conditions={"Suspended"})
    assert env.client.list_jobs() == []


Scenario = Callable[[SDKEnv, Path, pytest.CaptureFixture[str]], None]

SCENARIOS = [
    pytest.param(create_from_object_and_wait, id="create from a model object, wait for Succeeded"),
    pytest.param(
        create_from_yaml_and_wait_timeout,
        id="create from YAML, waiting past wait_timeout raises TimeoutError",
    ),
    pytest.param(create_from_function, id="create from a function (python -u)"),
    pytest.param(create_from_function_torchrun, id="create from a function with two workers (torchrun)"),
    pytest.param(
        create_from_function_with_packages, id="function with packages_to_install in an isolated env"
    ),
    pytest.param(
        failing_job_raises, id="a failing job makes wait_for_job_conditions raise with the conditions"
    ),
    pytest.param(
        logs_master_and_worker_follow, id="logs of the master and a chosen worker, follow to the end"
    ),
    pytest.param(list_get_update_suspend_delete, id="list, get, update (suspend and resume), delete"),
    pytest.param(invalid_input_is_a_value_error, id="invalid input is a ValueError with the field path"),
]


@pytest.mark.integration
@pytest.mark.timeout(240)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(
    scenario: Scenario, sdk_env: SDKEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario(sdk_env, tmp_path, capsys)
