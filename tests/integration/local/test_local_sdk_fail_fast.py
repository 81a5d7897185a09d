"""The SDK fails fast (issue 24 item 6): a ``train_func`` that raises ends its job Failed at once on
the local backend (the Trainer v2 SDK's local backend's default), where upstream's OnFailure restarted
it until ``wait_for_job_conditions`` timed out; ``fail_fast`` chooses either way on any job."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainop.sdk import TrainingClient
from trainop.sdk.errors import JobFailedError


def raises(parameters: dict[str, object]) -> None:
    raise ValueError(f"bad lr {parameters['lr']}")


def test_a_function_that_raises_fails_its_job_at_once_on_the_local_backend(home: Path) -> None:
    client = TrainingClient(backend="local", local_home=home)
    client.create_job(name="boom", train_func=raises, parameters={"lr": 1}, num_workers=1)
    with pytest.raises(JobFailedError):
        client.wait_for_job_conditions("boom", wait_timeout=60, polling_interval=1)
    job = client.get_job("boom")
    logs, _ = client.get_job_logs("boom")
    assert {
        "restart policy": job.spec.pytorch_replica_specs["Master"].restart_policy,
        "raised": "ValueError: bad lr 1" in logs["boom-master-0"],
    } == {"restart policy": "Never", "raised": True}


@pytest.mark.parametrize(
    ("fail_fast", "want"),
    [
        pytest.param(
            False, (None, None), id="fail_fast=False: as upstream (no policy: OnFailure by default)"
        ),
        pytest.param(True, ("Never", '[{"name": "fail-fast", "action": "FailJob"}]'), id="fail_fast=True"),
    ],
)
def test_fail_fast_chooses(home: Path, fail_fast: bool, want: tuple[str, str | None]) -> None:
    client = TrainingClient(backend="local", local_home=home)
    client.create_job(name="ff", train_func=raises, parameters={"lr": 1}, num_workers=1, fail_fast=fail_fast)
    job = client.get_job("ff")
    client.delete_job("ff")
    got = (
        job.spec.pytorch_replica_specs["Master"].restart_policy,
        (job.metadata.annotations or {}).get("trainop.dev/failure-policy"),
    )
    assert got == want


def test_run_fail_fast_fails_an_on_failure_job_at_its_first_error(home: Path, tmp_path: Path) -> None:
    """Without --fail-fast this job (restartPolicy OnFailure, no backoffLimit) restarts for ever."""
    from local_harness import run_cli, write_manifest

    from trainop.testing.builders import pytorch_job

    job = pytorch_job("ff").master(1).restart_policy("OnFailure").command(["sh", "-c", "exit 4"]).build_dict()
    result = run_cli("run", "--fail-fast", str(write_manifest(tmp_path / "ff.yaml", job)), timeout=120)
    assert (result.returncode, "PyTorchJobFailedByRule" in result.stdout) == (1, True), result.stdout
