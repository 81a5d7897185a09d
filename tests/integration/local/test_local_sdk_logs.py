"""SDK ``get_job_logs`` for a replica that does not exist: upstream's return value (empty dicts, so
the SDK stays a drop-in), and a warning that names the replicas and containers the job has."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from local_harness import wait_for

from trainop.sdk import TrainingClient
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("selection", "want_logs", "want_warning"),
    [
        pytest.param(
            {"is_master": False, "replica_type": "worker", "replica_index": 5},
            {},
            "get_job_logs('sl'): no running or finished pod of default matches (worker index 5); its pods: "
            "sl-master-0 (Succeeded; containers: pytorch); sl-worker-0 (Succeeded; containers: pytorch)",
            id="a replica index the job does not have",
        ),
        pytest.param({}, {"sl-master-0": "hi\n"}, None, id="the master: its log, no warning"),
    ],
)
def test_get_job_logs_of_a_missing_replica_warns(
    home: Path,
    caplog: pytest.LogCaptureFixture,
    selection: dict[str, object],
    want_logs: object,
    want_warning: str | None,
) -> None:
    client = TrainingClient(backend="local", local_home=home)
    client.create_job(pytorch_job("sl").master(1).workers(1).command(["sh", "-c", "echo hi"]).build_dict())
    wait_for(lambda: client.is_job_succeeded("sl"), "sl succeeded")
    with caplog.at_level(logging.WARNING, logger="trainop.sdk.client"):
        logs, events = client.get_job_logs("sl", **selection)  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (logs, events, warnings) == (want_logs, {}, [want_warning] if want_warning else [])
