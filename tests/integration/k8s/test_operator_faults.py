"""Jobs the operator cannot run, stored past admission (before the webhook existed, or with it off):
each says why on the job, as a Warning event, instead of failing every reconcile in the log only.

The module's operator runs without the webhook, as a cluster where it was bypassed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import Cluster, OperatorProcess, StartOperator

from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job
from trainop.testing.testenv import free_port, wait_for


def set_container(**fields: Any) -> Any:
    def op(template: dict[str, Any]) -> None:
        template["spec"]["containers"][0].update(fields)

    return op


def warning(cluster: Cluster, name: str, reasons: tuple[str, ...]) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        return next(
            (e for e in cluster.events(name) if e.get("type") == "Warning" and e.get("reason") in reasons),
            None,
        )

    return wait_for(found, 60, f"a Warning event {reasons} on {name}")


@pytest.mark.parametrize(
    ("name", "fields", "why"),
    [
        pytest.param("f1", {"env": "notalist"}, "AttributeError", id="env not a list (issue 10, finding 7)"),
        pytest.param("f2", {"env": [{"name": ["a"]}]}, "TypeError", id="an env name that is a list"),
        pytest.param("f3", {"resources": "big"}, "AttributeError", id="resources not an object"),
    ],
)
def test_an_mpijob_template_the_operator_cannot_render_gets_a_warning(
    operator: OperatorProcess, cluster: Cluster, name: str, fields: dict[str, Any], why: str
) -> None:
    job = mpi_job(name).launcher(1).workers(1).template(set_container(**fields), "Launcher")
    cluster.create(job.build_dict())
    ev = warning(cluster, name, ("MPIJobFailedValidation", "FailedReconcile"))
    if ev["reason"] == "FailedReconcile":  # no validation rule explains it: the error itself, named
        assert ev["message"].startswith(f"MPIJob {cluster.namespace}/{name} cannot be reconciled: {why}: ")
    else:
        assert ev["message"].startswith("MPIJob failed validation because spec.mpiReplicaSpecs[Launcher]")
    assert ev["source"]["component"] == "mpijob-controller"
    assert cluster.pods(name) == []
    operator.check_alive()


def test_the_warning_names_the_field_that_validation_finds(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    cluster.create(
        mpi_job("f4").launcher(1).workers(1).template(set_container(env="notalist"), "Launcher").build_dict()
    )
    ev = warning(cluster, "f4", ("MPIJobFailedValidation", "FailedReconcile"))
    assert ev["reason"] == "MPIJobFailedValidation", ev
    assert ev["message"].startswith(
        "MPIJob failed validation because spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].env: "
    ), ev["message"]


@pytest.mark.parametrize(
    ("job", "field"),
    [
        pytest.param(
            pytorch_job("a1").master(1).workers(1).template(set_container(env=[{"name": ""}]), "Master"),
            "spec.containers[0].env[0].name: Required value",
            id="422 Invalid: an empty env name",
        ),
        pytest.param(
            pytorch_job("a2").master(1).workers(1).template(set_container(resources="big"), "Master"),
            "spec.containers.resources",
            id="400 BadRequest: resources not an object",
        ),
    ],
)
def test_a_pod_the_api_server_rejects_gets_a_warning_naming_the_field(
    operator: OperatorProcess, cluster: Cluster, job: JobBuilder, field: str
) -> None:
    obj = job.build_dict()
    name = obj["metadata"]["name"]
    cluster.create(obj)
    ev = warning(cluster, name, ("FailedCreatePod",))
    assert ev["message"].startswith("Error creating: "), ev["message"]
    assert field in ev["message"], ev["message"]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("trainop operator starting", id="while checking the CRDs"),
        pytest.param("caches synced", id="while starting the workers"),
        pytest.param("webhook: serving on", id="just after the webhook server started"),
    ],
)
def test_sigterm_at_startup_exits_0_without_a_traceback(
    start_operator: StartOperator, cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest, line: str
) -> None:
    # Only the test's namespace: jobs other tests leave behind would log their own (debug) tracebacks.
    flags = [f"--namespace={cluster.namespace}", "--enable-webhook=false"]
    if "webhook" in line:
        flags = [
            f"--namespace={cluster.namespace}",
            "--webhook-host=127.0.0.1",
            f"--webhook-server-port={free_port()}",
            f"--cert-dir={tmp_path / 'certs'}",
            f"--webhook-configuration-name={cluster.namespace}",
        ]
        # An empty configuration of its own: the operator serves once the (no-op) caBundle injection is done.
        cluster.env.apply_yaml(
            yaml.safe_dump(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": "ValidatingWebhookConfiguration",
                    "metadata": {"name": cluster.namespace},
                    "webhooks": [],
                }
            )
        )
        request.addfinalizer(
            lambda: cluster.env.kubectl(
                "delete",
                "validatingwebhookconfiguration",
                cluster.namespace,
                "--ignore-not-found",
                check=False,
            )
        )
    # The certificate Secret goes to the operator's namespace: the test's own.
    op = start_operator(*flags, wait=False, extra_env={"MY_POD_NAMESPACE": cluster.namespace})

    def reached() -> bool | None:
        op.check_alive()
        return line in op.log_path.read_text(errors="replace") or None

    wait_for(reached, 60, f"operator log line {line!r}")
    rc = op.stop()
    log = op.log_path.read_text(errors="replace")
    assert rc == 0, log
    assert "Traceback" not in log, log
