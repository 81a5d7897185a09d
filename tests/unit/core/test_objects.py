"""What core puts on the pods and Services it creates (contract §3.1, §3.2, §6.2) and the events it
attaches to them (§6.3). The env vars and files the plugins add are tested with the plugins."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.core.observed import detect_drift
from trainop.core.plan import CreateObject, Event, outcome_event
from trainop.testing.builders import JobBuilder, jax_job, mpi_job, pod, pytorch_job, tf_job, written

from .harness import T0, at, created, run, service, ts, with_status

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "a",
    "uid": "a-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def _template_metadata(template: dict[str, Any]) -> None:
    template["metadata"] = {
        "name": "ignored",
        "labels": {"team": "ml", "training.kubeflow.org/job-name": "spoofed"},
        "annotations": {"sidecar.istio.io/inject": "false"},
        "finalizers": ["example.com/keep"],
    }


def _created_pods(b: JobBuilder) -> dict[str, CreateObject]:
    plan = run(b.build())
    return {
        a.obj["metadata"]["name"]: a
        for a in plan.actions
        if isinstance(a, CreateObject) and a.obj["kind"] == "Pod"
    }


def labels(
    kind_ctrl: str, rtype: str, index: int, *, master: bool = False, extra: dict[str, str] | None = None
) -> dict[str, str]:
    out = {
        **(extra or {}),
        "training.kubeflow.org/operator-name": kind_ctrl,
        "training.kubeflow.org/job-name": "a",
        "training.kubeflow.org/replica-type": rtype,
        "training.kubeflow.org/replica-index": str(index),
    }
    if master:
        out["training.kubeflow.org/job-role"] = "master"
    return out


@pytest.mark.parametrize(
    ("builder", "name", "want_meta"),
    [
        pytest.param(
            lambda: pytorch_job("a").master(1).workers(1).template(_template_metadata),
            "a-master-0",
            {
                "name": "a-master-0",
                "namespace": "default",
                "labels": labels("pytorchjob-controller", "master", 0, master=True, extra={"team": "ml"}),
                "annotations": {"sidecar.istio.io/inject": "false"},
                "finalizers": ["example.com/keep"],
                "ownerReferences": [OWNER],
            },
            id="template labels, then the operator's (which win); annotations and finalizers copied; "
            "master role",
        ),
        pytest.param(
            lambda: pytorch_job("a").master(1).workers(1).template(_template_metadata),
            "a-worker-0",
            {
                "name": "a-worker-0",
                "namespace": "default",
                "labels": labels("pytorchjob-controller", "worker", 0, extra={"team": "ml"}),
                "annotations": {"sidecar.istio.io/inject": "false"},
                "finalizers": ["example.com/keep"],
                "ownerReferences": [OWNER],
            },
            id="workers carry no job-role",
        ),
        pytest.param(
            lambda: pytorch_job("a").workers(2),
            "a-worker-0",
            {
                "name": "a-worker-0",
                "namespace": "default",
                "labels": labels("pytorchjob-controller", "worker", 0, master=True),
                "ownerReferences": [OWNER],
            },
            id="PyTorch without a Master: Worker-0 is the master role",
        ),
        pytest.param(
            lambda: jax_job("a").workers(2).namespace("team-a"),
            "a-worker-1",
            {
                "name": "a-worker-1",
                "namespace": "team-a",
                "labels": labels("jaxjob-controller", "worker", 1),
                "ownerReferences": [{**OWNER, "kind": "JAXJob"}],
            },
            id="the job's namespace and kind",
        ),
    ],
)
def test_pod_metadata(builder: Any, name: str, want_meta: dict[str, Any]) -> None:
    assert _created_pods(builder())[name].obj["metadata"] == want_meta


@pytest.mark.parametrize(
    ("replica_policy", "template_policy", "want_policy", "want_warning"),
    [
        pytest.param(None, None, "OnFailure", False, id="the kind's default (PyTorch: OnFailure)"),
        pytest.param("ExitCode", None, "Never", False, id="ExitCode becomes Never: core decides restarts"),
        pytest.param(
            "Always", "Never", "Always", True, id="the replica spec wins over the template, with a warning"
        ),
    ],
)
def test_pod_restart_policy(
    replica_policy: str | None, template_policy: str | None, want_policy: str, want_warning: bool
) -> None:
    b = pytorch_job("a").workers(1)
    if replica_policy is not None:
        b = b.restart_policy(replica_policy)
    if template_policy is not None:
        b = b.template(lambda t: t["spec"].__setitem__("restartPolicy", template_policy))
    plan = run(b.build())
    (pod_action,) = [a for a in plan.actions if isinstance(a, CreateObject) and a.obj["kind"] == "Pod"]
    warning = Event(
        "Warning",
        "SetPodTemplateRestartPolicy",
        "Restart policy in pod template will be overwritten by restart policy in replica spec",
    )
    assert (pod_action.obj["spec"]["restartPolicy"], plan.events) == (
        want_policy,
        [warning] if want_warning else [],
    )


def test_service_is_headless_with_the_default_container_ports() -> None:
    b = (
        pytorch_job("a")
        .workers(1)
        .port(29500, name="extra")
        .container("Worker", name="sidecar", image="busybox", ports=[{"name": "side", "containerPort": 80}])
    )
    services = [
        a.obj for a in run(b.build()).actions if isinstance(a, CreateObject) and a.obj["kind"] == "Service"
    ]
    sel = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "a",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0",
    }
    assert services == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "a-worker-0",
                "namespace": "default",
                "labels": sel,
                "ownerReferences": [OWNER],
            },
            "spec": {
                "clusterIP": "None",
                "selector": sel,
                "ports": [{"name": "extra", "port": 29500}, {"name": "pytorchjob-port", "port": 23456}],
            },
        }
    ]


def test_mpi_creates_no_services() -> None:
    b = mpi_job("a").launcher(1).workers(2)
    kinds = sorted({a.obj["kind"] for a in run(b.build()).actions if isinstance(a, CreateObject)})
    assert kinds == ["ConfigMap", "Pod", "Role", "RoleBinding", "ServiceAccount"]


@pytest.mark.parametrize(
    ("name", "error", "want"),
    [
        pytest.param(
            "a-worker-0",
            None,
            Event("Normal", "SuccessfulCreatePod", "Created pod: a-worker-0"),
            id="pod created",
        ),
        pytest.param(
            "a-worker-0",
            "quota exceeded",
            Event("Warning", "FailedCreatePod", "Error creating: quota exceeded"),
            id="pod creation failed",
        ),
        pytest.param(
            "a-worker-0-svc",
            None,
            Event("Normal", "SuccessfulCreateService", "Created service: a-worker-0"),
            id="service created",
        ),
    ],
)
def test_create_outcome_events(name: str, error: str | None, want: Event) -> None:
    actions = run(pytorch_job("a").workers(1).build()).actions
    by_key = {
        (a.obj["metadata"]["name"] + ("-svc" if a.obj["kind"] == "Service" else "")): a
        for a in actions
        if isinstance(a, CreateObject)
    }
    assert outcome_event(by_key[name], error) == want


def test_mpi_launcher_and_worker_creation_events() -> None:
    actions = [
        a for a in run(mpi_job("a").launcher(1).workers(1).build()).actions if isinstance(a, CreateObject)
    ]
    pods = {a.obj["metadata"]["name"]: a for a in actions if a.obj["kind"] == "Pod"}
    assert {n: (outcome_event(a), outcome_event(a, "boom")) for n, a in pods.items()} == {
        "a-launcher": (
            Event("Normal", "MPIJobRunning", "launcher pod created success: a-launcher"),
            Event("Warning", "MPIJobFailed", "launcher pod created failed: boom"),
        ),
        "a-worker-0": (
            Event("Normal", "SuccessfulCreatePod", "Created worker pod: a-worker-0"),
            Event("Warning", "FailedCreatePod", "Error creating: boom"),
        ),
    }


# --- events re-emitted upstream on every pass carry a key (§9.9) --------------------------------------


def test_exited_with_code_is_keyed_by_pod_and_restart() -> None:
    job = with_status(tf_job("a").workers(2).build(), {"conditions": [created("TFJob")], "startTime": ts(0)})
    pods = [pod(job, "Worker", 0).succeeded(0).build(), pod(job, "Worker", 1).running().build()]
    svcs = [service(job, "Worker", 0), service(job, "Worker", 1)]
    plan = run(job, pods, svcs, now=at(5))
    exited = [e for e in plan.events if e.reason == "ExitedWithCode"]
    assert exited == [
        Event(
            "Normal",
            "ExitedWithCode",
            "Pod: default.a-worker-0 exited with code 0",
            key="ExitedWithCode/a-worker-0-uid/0",
        )
    ]


@pytest.mark.parametrize(
    ("make_pod", "want"),
    [
        pytest.param(
            lambda b: b.running().waiting("CrashLoopBackOff", "back-off 10s restarting failed container"),
            [
                Event(
                    "Warning",
                    "CrashLoopBackOff",
                    "Error pod a-worker-0 container pytorch waiting message: back-off 10s restarting "
                    "failed container",
                )
            ],
            id="a container waiting with a message",
        ),
        pytest.param(
            lambda b: b.running().terminated(2, "Error", "bad flag"),
            [
                Event(
                    "Warning",
                    "Error",
                    "Error pod a-worker-0 container pytorch exitCode: 2 terminated message: bad flag",
                )
            ],
            id="a container terminated with a non-zero code while the pod is still active",
        ),
        pytest.param(
            lambda b: (
                b.pending()
                .no_container_statuses()
                .condition("PodScheduled", "False", "Unschedulable", "0/1 nodes are available")
            ),
            [
                Event(
                    "Warning",
                    "Unschedulable",
                    "Error pod a-worker-0 condition message: 0/1 nodes are available",
                )
            ],
            id="no container statuses: the newest condition that is not True",
        ),
        pytest.param(lambda b: b.running(), [], id="a healthy pod: nothing"),
        pytest.param(lambda b: b.failed(1), [], id="a finished pod is not active: nothing"),
    ],
)
def test_abnormal_pod_events(make_pod: Any, want: list[Event]) -> None:
    job = with_status(
        pytorch_job("a").workers(1).build(), {"conditions": [created("PyTorchJob")], "startTime": ts(0)}
    )
    observed = make_pod(pod(job, "Worker", 0)).build()
    plan = run(job, [observed], [service(job, "Worker", 0)], now=T0)
    got = [
        Event(e.type, e.reason, e.message)
        for e in plan.events
        if e.type == "Warning" and "Error pod" in e.message
    ]
    keys = [e.key for e in plan.events if e.type == "Warning" and "Error pod" in e.message]
    assert (got, all(keys)) == (want, True)


# --- owned extra objects: created when missing, replaced when their content drifted ------------------


@pytest.mark.parametrize(
    ("desired", "current", "want"),
    [
        pytest.param(
            {"data": {"k": "v"}},
            {"data": {"k": "v"}, "metadata": {"resourceVersion": "9"}},
            False,
            id="same data",
        ),
        pytest.param({"data": {"k": "v"}}, {"data": {"k": "w"}}, True, id="data differs"),
        pytest.param(
            {"rules": [{"verbs": ["get"]}]}, {"rules": [{"verbs": ["get", "list"]}]}, True, id="rules differ"
        ),
        pytest.param(
            {"spec": {"maxReplicas": 3}},
            {"spec": {"maxReplicas": 3, "behavior": {"scaleUp": {}}}},
            False,
            id="spec fields the server defaults are not compared",
        ),
        pytest.param(
            {"spec": {"maxReplicas": 3}}, {"spec": {"maxReplicas": 4}}, True, id="a spec field we set differs"
        ),
        pytest.param(
            {"metadata": {"labels": {"a": "b"}}},
            {"metadata": {}},
            False,
            id="objects without content: never updated",
        ),
    ],
)
def test_detect_drift(desired: dict[str, Any], current: dict[str, Any], want: bool) -> None:
    assert detect_drift(desired, current) == want


def test_mpi_config_map_is_updated_when_workers_start_running() -> None:
    job = with_status(
        mpi_job("a").launcher(1).workers(2).build(), {"conditions": [created("MPIJob")], "startTime": ts(0)}
    )
    first = run(job)
    extras: dict[str, list[dict[str, Any]]] = {}
    for a in first.actions:
        if isinstance(a, CreateObject) and a.obj["kind"] != "Pod":
            extras.setdefault(a.obj["kind"], []).append(a.obj)
    pods = [pod(job, "Launcher", 0).running().build()] + [
        pod(job, "Worker", i).running().build() for i in range(2)
    ]
    plan = run(job, pods, [], now=at(5), extras=extras)
    assert [
        (type(a).__name__, written(a)["kind"]) for a in plan.actions if not isinstance(a, CreateObject)
    ] == [("UpdateObject", "ConfigMap")]
