"""The one Plan executor (backends/executor.py): the order of the writes and its one failure rule, on a
recording writer (no backend needed); both backends' writers are exercised by the integration tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from trainop.api.common import JobStatus
from trainop.backends.executor import ApplyError, execute_plan, run_sync
from trainop.core.plan import Action, CreateObject, DeleteJob, DeleteObject, Event, Plan


def create(kind: str, name: str) -> CreateObject:
    return CreateObject(
        {"kind": kind, "metadata": {"name": name}},
        done=Event("Normal", f"SuccessfulCreate{kind}", f"Created {kind.lower()}: {name}"),
        on_error=Event("Warning", f"FailedCreate{kind}", "Error creating: {error}"),
    )


class Recorder:
    """A synchronous writer that logs every write; ``fail`` maps an object name to its error."""

    def __init__(self, fail: dict[str, str] | None = None) -> None:
        self.fail = fail or {}
        self.log: list[str] = []

    async def apply_batch(self, batch: Sequence[Action]) -> list[str | None]:
        out: list[str | None] = []
        for a in batch:
            name = a.obj["metadata"]["name"] if isinstance(a, CreateObject) else getattr(a, "name", "job")
            self.log.append(f"apply {name}")
            out.append(self.fail.get(name))
        return out

    async def write_status(self, plan: Plan) -> None:
        self.log.append("status")

    def emit(self, event: Event) -> None:
        self.log.append(f"event {event.reason}: {event.message}")

    def count(self, metric: str) -> None:
        self.log.append(f"metric {metric}")


def plan(actions: list[Action], *, status_changed: bool = True, skipped: bool = False) -> Plan:
    return Plan(
        actions=actions,
        status=JobStatus(),
        status_changed=status_changed,
        events=[Event("Normal", "PyTorchJobRunning", "running")],
        metrics=["jobs_created"],
        skipped=skipped,
    )


@pytest.mark.parametrize(
    ("p", "fail", "want_log", "want_error"),
    [
        pytest.param(
            plan([create("Pod", "a"), create("Service", "a")]),
            {},
            [
                "apply a",
                "apply a",
                "event SuccessfulCreatePod: Created pod: a",
                "event SuccessfulCreateService: Created service: a",
                "status",
                "metric jobs_created",
                "event PyTorchJobRunning: running",
            ],
            None,
            id="actions with their outcome events, then the status, metrics and the plan's events",
        ),
        pytest.param(
            plan([create("ConfigMap", "c"), create("Pod", "a"), create("Pod", "b")]),
            {"c": "forbidden"},
            ["apply c", "event FailedCreateConfigMap: Error creating: forbidden"],
            ["create ConfigMap c: forbidden"],
            id="a failed batch stops the rest: no status, metric or plan event (upstream's rule)",
        ),
        pytest.param(
            plan([create("Pod", "a"), create("Pod", "b")]),
            {"a": "quota exceeded"},
            [
                "apply a",
                "apply b",
                "event FailedCreatePod: Error creating: quota exceeded",
                "event SuccessfulCreatePod: Created pod: b",
            ],
            ["create Pod a: quota exceeded"],
            id="the rest of a failed batch was attempted: its outcomes are emitted too",
        ),
        pytest.param(
            plan([DeleteObject("Pod", "a"), DeleteJob()], status_changed=False),
            {},
            ["apply a", "apply job", "metric jobs_created", "event PyTorchJobRunning: running"],
            None,
            id="status unchanged: not written",
        ),
        pytest.param(
            plan([create("Pod", "a")], skipped=True), {}, [], None, id="skipped (managedBy): nothing"
        ),
    ],
)
def test_execute_plan(
    p: Plan, fail: dict[str, str], want_log: list[str], want_error: list[str] | None
) -> None:
    writer = Recorder(fail)
    try:
        run_sync(execute_plan(p, writer))
        error = None
    except ApplyError as exc:
        error = exc.errors
    assert (writer.log, error) == (want_log, want_error)


def test_the_same_executor_runs_on_an_event_loop() -> None:
    writer = Recorder()
    asyncio.run(execute_plan(plan([create("Pod", "a")]), writer))
    assert writer.log[0] == "apply a" and writer.log[-1] == "event PyTorchJobRunning: running"


def test_run_sync_refuses_a_writer_that_suspends() -> None:
    class Suspending(Recorder):
        async def write_status(self, plan: Plan) -> None:
            await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="suspended"):
        run_sync(execute_plan(plan([]), Suspending()))
