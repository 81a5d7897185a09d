"""The local supervisor's writes through the shared executor (backends/executor.py), on a real store:
a pass whose action fails writes that action's outcome event and nothing of the plan's status or
events (upstream's rule, as on Kubernetes); a pass that succeeds writes them all."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from trainop.api.common import JobStatus
from trainop.backends.executor import ApplyError
from trainop.backends.local.paths import StatePaths
from trainop.backends.local.store import JobRow, Store
from trainop.backends.local.supervisor import Supervisor
from trainop.core.plan import CreateObject, Event, Plan
from trainop.core.status import build_condition, set_condition
from trainop.testing.builders import pytorch_job

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    home = tmp_path / "home"
    home.mkdir()
    paths = StatePaths(home)
    store = Store(paths)
    manifest = pytorch_job("a").master(1).command(["true"]).build_dict()
    manifest["metadata"].update(uid="uid-a", namespace="default")
    store.insert_job(
        JobRow(
            uid="uid-a",
            namespace="default",
            name="a",
            kind="PyTorchJob",
            manifest=manifest,
            status={},
            base_dir=str(tmp_path),
            host_env={"TRAINOP_GPUS": ""},
            generation=1,
            created_at=0.0,
        )
    )
    sup = Supervisor(store, paths, "uid-a")
    sup._runner = sup._setup()
    yield sup
    store.close()


def configmap(data: Any) -> CreateObject:
    return CreateObject(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-config"}, "data": data},
        done=Event("Normal", "SuccessfulCreateConfigMap", "Created configmap: a-config"),
        on_error=Event("Warning", "FailedCreateConfigMap", "Error creating: {error}"),
    )


def plan(action: CreateObject) -> Plan:
    status = JobStatus()
    set_condition(status, build_condition("Running", "True", "PyTorchJobRunning", "running", T0))
    return Plan(
        actions=[action],
        status=status,
        status_changed=True,
        events=[Event("Normal", "PyTorchJobRunning", "PyTorchJob a is running.")],
    )


def written(sup: Supervisor) -> dict[str, Any]:
    row = sup.store.get_job("uid-a")
    assert row is not None
    return {
        "conditions": [c["type"] for c in row.status.get("conditions", [])],
        "events": [(e.reason, e.message) for e in sup.store.list_events("uid-a")],
    }


def test_a_failed_action_writes_its_event_and_no_status(supervisor: Supervisor) -> None:
    with pytest.raises(ApplyError, match="create ConfigMap a-config: Object of type set"):
        supervisor._apply(plan(configmap({"x": {1}})))  # not JSON: the store refuses it
    assert written(supervisor) == {
        "conditions": [],
        "events": [
            ("FailedCreateConfigMap", "Error creating: Object of type set is not JSON serializable"),
        ],
    }


def test_a_pass_that_succeeds_writes_status_then_events(supervisor: Supervisor) -> None:
    supervisor._apply(plan(configmap({"x": "1"})))
    assert written(supervisor) == {
        "conditions": ["Running"],
        "events": [
            ("SuccessfulCreateConfigMap", "Created configmap: a-config"),
            ("PyTorchJobRunning", "PyTorchJob a is running."),
        ],
    }
