"""A pass core cannot compute becomes one Warning event on the job (issue 10, finding 7), naming the
template field when validation finds one; a job core can handle is untouched."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from trainop.api.load import parse_job
from trainop.core.observed import Observed
from trainop.core.plan import Event, Plan
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import build_registry
from trainop.operator.explain import build_explained_plan, reconcile_or_explain
from trainop.testing.builders import mpi_job, pytorch_job

NOW = datetime(2024, 1, 1, tzinfo=UTC)
TOPOLOGY = ServiceTopology("cluster.local")


def set_container(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0].update(fields)

    return op


def run(obj: dict[str, Any]) -> Plan:
    job = parse_job(obj)
    observed = Observed(job=job, pods=[], services=[], extras={})
    return reconcile_or_explain(job, observed, build_registry().get(job.kind), TOPOLOGY, NOW)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"env": "notalist"}, id="env not a list"),
        pytest.param({"env": [{"name": ["a"]}]}, id="env name a list"),
        pytest.param({"resources": "big"}, id="resources not an object"),
    ],
)
def test_an_mpijob_the_plugin_cannot_render_is_one_warning(fields: dict[str, Any]) -> None:
    obj = mpi_job("m").launcher(1).workers(1).template(set_container(**fields), "Launcher").build_dict()
    got = run(obj)
    assert (got.actions, got.status_changed, len(got.events)) == ([], False, 1)
    ev = got.events[0]
    # Which of the two depends on whether validation knows the field (the core/v1 schema check).
    if ev.reason == "FailedReconcile":
        assert ev.message.startswith("MPIJob default/m cannot be reconciled: "), ev
    else:
        want = "MPIJob failed validation because spec.mpiReplicaSpecs[Launcher].template.spec.containers[0]."
        assert (ev.reason, ev.message[: len(want)]) == ("MPIJobFailedValidation", want)
    assert (ev.type, ev.key) == ("Warning", ev.message)


def test_a_failure_nothing_explains_is_named_with_its_error() -> None:
    obj = mpi_job("m").launcher(1).workers(1).build_dict()
    got = build_explained_plan(parse_job(obj), AttributeError("'str' object has no attribute 'get'"))
    message = "MPIJob default/m cannot be reconciled: AttributeError: 'str' object has no attribute 'get'"
    assert (got.actions, got.status_changed, got.events) == (
        [],
        False,
        [Event("Warning", "FailedReconcile", message, key=message)],
    )


def test_a_failure_validation_explains_names_the_field() -> None:
    obj = pytorch_job("p").master(1).workers(1).template(set_container(ports="x"), "Worker").build_dict()
    got = build_explained_plan(parse_job(obj), RuntimeError("boom"))
    message = (
        "PyTorchJob failed validation because "
        'spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].ports: Invalid value: "x": must be '
        "a list of ports"
    )
    assert (got.actions, got.status_changed, got.events) == (
        [],
        False,
        [Event("Warning", "PyTorchJobFailedValidation", message, key=message)],
    )


def test_errors_outside_templates_do_not_explain_a_failure() -> None:
    # Master.replicas unset is a webhook rule (§2.3) the controller runs with anyway: not the cause.
    obj = pytorch_job("p").master(None).workers(1).build_dict()
    got = build_explained_plan(parse_job(obj), KeyError("x"))
    assert [(e.reason, e.message) for e in got.events] == [
        ("FailedReconcile", "PyTorchJob default/p cannot be reconciled: KeyError: 'x'")
    ]


def test_a_job_core_can_handle_gets_cores_plan() -> None:
    obj = pytorch_job("p").master(1).workers(1).build_dict()
    job = parse_job(obj)
    observed = Observed(job=job, pods=[], services=[], extras={})
    want = reconcile(job, observed, build_registry().get("PyTorchJob"), TOPOLOGY, NOW)
    assert run(obj) == want
