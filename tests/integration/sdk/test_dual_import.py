"""One scenario file, run with ``from kubeflow.training import ...`` and with ``from trainop.sdk import ...``.

Each scenario is notebook code written against kubeflow-training 1.9.4's API only (its client, models,
``kubernetes.client`` objects through ``<sdk>.models``, its errors). It runs three ways: upstream's
unmodified client and ours against trainop's operator on the test control plane, and ours on the local
backend. Every run is held to the same literal expectations; where the backends honestly differ (kwok
serves no logs, and runs no Python) the scenario names the docs/sdk.md row it follows.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sdk_harness import wait_until

from trainop.testing.testenv import SIM_EXIT_CODE, SIM_OUTCOME, SIM_RUN_DURATION

WAIT = dict(wait_timeout=90, polling_interval=0.3)
IMAGE = "docker.io/library/python:3.11"


@dataclass
class Run:
    """One way of running the scenarios: which package was imported, the client it built, the backend."""

    sdk: ModuleType
    client: Any
    namespace: str
    backend: str
    k8s: Any = None

    def drive_pods(self, name: str, count: int) -> None:
        """Kubernetes only: function-mode pods carry no kwok annotations, so give them a fate here."""
        if self.backend != "kubernetes":
            return
        from lightkube.resources.core_v1 import Pod

        pods = wait_until(
            lambda: len(names := self.client.get_job_pod_names(name)) >= count and names,
            what=f"{count} pods of {name}",
        )
        with contextlib.closing(self.k8s.client()) as c:
            for pod in pods:
                patch = {"metadata": {"annotations": {SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}}}
                c.patch(Pod, pod, patch, namespace=self.namespace)


@pytest.fixture(
    params=[
        pytest.param(
            ("kubeflow.training", "kubernetes"), id="kubeflow.training-kubernetes", marks=pytest.mark.k8s
        ),
        pytest.param(("trainop.sdk", "kubernetes"), id="trainop.sdk-kubernetes", marks=pytest.mark.k8s),
        pytest.param(("trainop.sdk", "local"), id="trainop.sdk-local"),
    ]
)
def run(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    package, backend = request.param
    if package == "kubeflow.training":
        pytest.importorskip(
            package, reason="kubeflow-training==1.9.4 (the pinned test dependency) is not installed"
        )
    sdk = importlib.import_module(package)
    if backend == "local":
        # Unchanged notebook code reaches the local backend through the environment (docs/sdk.md).
        monkeypatch.setenv("TRAINOP_BACKEND", "local")
        monkeypatch.setenv("TRAINOP_HOME", str(tmp_path / "home"))
        client = sdk.TrainingClient()
        r = Run(sdk, client, client.namespace, backend)
    else:
        k8s_env = request.getfixturevalue("k8s_env")
        request.getfixturevalue("k8s_operator")
        namespace = request.getfixturevalue("k8s_namespace")
        client = sdk.TrainingClient(config_file=str(k8s_env.kubeconfig), namespace=namespace)
        r = Run(sdk, client, namespace, backend, k8s=k8s_env)
    try:
        yield r
    finally:
        for kind in KINDS:
            for job in client.list_jobs(job_kind=kind):
                with contextlib.suppress(RuntimeError):
                    client.delete_job(job.metadata.name, job_kind=kind)
        if hasattr(client, "backend"):  # trainop's: its HTTP connections (unclosed sockets otherwise)
            client.backend.close()


# --- jobs built the way upstream's users build them ---

# kind → (model, spec model, replica-map attribute, container, {replica type: replicas})
KINDS: dict[str, tuple[str, str, str, str, dict[str, int]]] = {
    "PyTorchJob": (
        "KubeflowOrgV1PyTorchJob",
        "KubeflowOrgV1PyTorchJobSpec",
        "pytorch_replica_specs",
        "pytorch",
        {"Master": 1, "Worker": 1},
    ),
    "TFJob": (
        "KubeflowOrgV1TFJob",
        "KubeflowOrgV1TFJobSpec",
        "tf_replica_specs",
        "tensorflow",
        {"Worker": 2},
    ),
    "XGBoostJob": (
        "KubeflowOrgV1XGBoostJob",
        "KubeflowOrgV1XGBoostJobSpec",
        "xgb_replica_specs",
        "xgboost",
        {"Master": 1, "Worker": 1},
    ),
    "MPIJob": (
        "KubeflowOrgV1MPIJob",
        "KubeflowOrgV1MPIJobSpec",
        "mpi_replica_specs",
        "mpi",
        {"Launcher": 1, "Worker": 1},
    ),
    "PaddleJob": (
        "KubeflowOrgV1PaddleJob",
        "KubeflowOrgV1PaddleJobSpec",
        "paddle_replica_specs",
        "paddle",
        {"Master": 1, "Worker": 1},
    ),
    "JAXJob": ("KubeflowOrgV1JAXJob", "KubeflowOrgV1JAXJobSpec", "jax_replica_specs", "jax", {"Worker": 2}),
}


def build_job(
    r: Run,
    kind: str,
    name: str,
    *,
    exit_code: int = 0,
    forever: bool = False,
    replicas: dict[str, int] | None = None,
) -> Any:
    """A job of ``kind`` from upstream's models and ``kubernetes.client`` objects; each replica prints one
    line and exits ``exit_code`` (locally a real process, on kwok the annotations say so)."""
    m = r.sdk.models
    model, spec_model, attr, container, default_replicas = KINDS[kind]
    code = f"print('hello from {kind}', flush=True)\nimport sys\nsys.exit({exit_code})\n"
    annotations = {SIM_OUTCOME: "succeed" if exit_code == 0 else "fail", SIM_RUN_DURATION: "1s"}
    annotations[SIM_EXIT_CODE] = str(exit_code)
    if forever:
        code, annotations = "import time\nprint('running', flush=True)\ntime.sleep(600)\n", {}
    template = m.V1PodTemplateSpec(
        metadata=m.V1ObjectMeta(annotations=annotations),
        spec=m.V1PodSpec(
            containers=[m.V1Container(name=container, image=IMAGE, command=["python", "-u", "-c", code])]
        ),
    )
    specs = {
        rt: r.sdk.KubeflowOrgV1ReplicaSpec(replicas=n, restart_policy="Never", template=template)
        for rt, n in (replicas or default_replicas).items()
    }
    spec = getattr(r.sdk, spec_model)(run_policy=r.sdk.KubeflowOrgV1RunPolicy(), **{attr: specs})
    return getattr(r.sdk, model)(
        api_version="kubeflow.org/v1",
        kind=kind,
        metadata=r.sdk.models.V1ObjectMeta(name=name, namespace=r.namespace),
        spec=spec,
    )


def true_conditions(job: Any) -> list[str]:
    return [c.type for c in job.status.conditions if c.status == "True"]


def update_retrying(r: Run, name: str, change: Callable[[Any], None]) -> None:
    """get → change → update_job, again on a 409: upstream's update_job sends the resourceVersion it
    read, so a status write in between makes the API server refuse it (what its users must do too)."""
    for _ in range(20):
        job = r.client.get_job(name)
        change(job)
        try:
            r.client.update_job(job, name)
            return
        except RuntimeError as e:
            if getattr(e.__cause__, "status", None) != 409:
                raise
    pytest.fail(f"update_job of {name} conflicted 20 times in a row")


# --- scenarios ---


def train_hello(parameters):  # type: ignore[no-untyped-def]
    import os

    print(f"fn lr={parameters['lr']} rank={os.environ.get('RANK')}")


# --- the scenarios: each runs the three ways ---

WANT_PODS = {
    "PyTorchJob": ["{n}-master-0", "{n}-worker-0"],
    "TFJob": ["{n}-worker-0", "{n}-worker-1"],
    "XGBoostJob": ["{n}-master-0", "{n}-worker-0"],
    "MPIJob": ["{n}-launcher", "{n}-worker-0"],
    "PaddleJob": ["{n}-master-0", "{n}-worker-0"],
    "JAXJob": ["{n}-worker-0", "{n}-worker-1"],
}


@pytest.mark.integration
@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind", list(KINDS))
def test_create_from_objects_and_read_back(run: Run, kind: str) -> None:
    r, name = run, f"obj-{kind.lower()}"
    r.client.create_job(build_job(r, kind, name), namespace=r.namespace)
    job = r.client.wait_for_job_conditions(name, job_kind=kind, **WAIT)
    model, _, attr, container, replicas = KINDS[kind]
    first = next(iter(replicas))
    spec = getattr(job.spec, attr)[first]

    def finished_pods() -> list[Any] | None:
        # Success is decided by one replica (Master, Launcher, worker 0): the others may still be
        # exiting when the job is Succeeded. MPIJob: the launcher decides, its workers are stopped.
        pods = r.client.get_job_pods(name)
        pods = pods[:1] if kind == "MPIJob" else pods
        return pods if all(p.status.phase in ("Succeeded", "Failed") for p in pods) else None

    pods = wait_until(finished_pods, what=f"the pods of {name} to finish")
    got = {
        "type": type(job).__name__,
        "module of metadata": type(job.metadata).__module__,
        "name": job._metadata.name,
        "template": type(spec.template).__name__,
        "image": spec.template.spec.containers[0].image,
        "container": spec.template.spec.containers[0].name,
        "to_dict keys": sorted(job.to_dict()),
        "spec keys": sorted(job.to_dict()["spec"]),
        "true conditions": true_conditions(job),
        "succeeded": r.client.is_job_succeeded(name, job_kind=kind),
        "failed": r.client.is_job_failed(name, job_kind=kind),
        "created (from the object)": r.client.is_job_created(job=job, job_kind=kind),
        "pod names": r.client.get_job_pod_names(name),
        "pods": [
            (type(p).__name__, p.metadata.labels["training.kubeflow.org/job-name"], p.status.phase)
            for p in pods
        ],
        "listed": [j.metadata.name for j in r.client.list_jobs(job_kind=kind)],
        "list type": {type(j).__name__ for j in r.client.list_jobs(job_kind=kind)},
    }
    want_spec_keys = {
        "PyTorchJob": ["elastic_policy", "nproc_per_node", "pytorch_replica_specs", "run_policy"],
        "TFJob": ["enable_dynamic_worker", "run_policy", "success_policy", "tf_replica_specs"],
        "XGBoostJob": ["run_policy", "xgb_replica_specs"],
        "MPIJob": [
            "clean_pod_policy",
            "main_container",
            "mpi_replica_specs",
            "run_policy",
            "slots_per_worker",
        ],
        "PaddleJob": ["elastic_policy", "paddle_replica_specs", "run_policy"],
        "JAXJob": ["jax_replica_specs", "run_policy"],
    }
    pod_names = [p.format(n=name) for p in WANT_PODS[kind]]
    phases = ["Succeeded"] * (1 if kind == "MPIJob" else len(pod_names))
    want = {
        "type": model,
        "module of metadata": "kubernetes.client.models.v1_object_meta",
        "name": name,
        "template": "V1PodTemplateSpec",
        "image": IMAGE,
        "container": container,
        "to_dict keys": ["api_version", "kind", "metadata", "spec", "status"],
        "spec keys": want_spec_keys[kind],
        "true conditions": ["Created", "Succeeded"],
        "succeeded": True,
        "failed": False,
        "created (from the object)": True,
        "pod names": pod_names,
        "pods": [("V1Pod", name, phase) for phase in phases],
        "listed": [name],
        "list type": {model},
    }
    assert got == want


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_create_from_function(run: Run) -> None:
    r = run
    r.client.create_job(name="fn", train_func=train_hello, parameters={"lr": 0.5}, num_workers=1)
    r.drive_pods("fn", 1)
    job = r.client.wait_for_job_conditions("fn", **WAIT)
    container = job.spec.pytorch_replica_specs["Master"].template.spec.containers[0]
    got = (
        container.name,
        container.image,
        container.command,
        container.args[0].rstrip().endswith('python -u "$program_path/ephemeral_script.py"'),
        "train_hello({'lr': 0.5})" in container.args[0],
        sorted(job.spec.pytorch_replica_specs),
        true_conditions(job),
    )
    want = (
        "pytorch",
        "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime",
        ["bash", "-c"],
        True,
        True,
        ["Master"],
        ["Created", "Succeeded"],
    )
    assert got == want
    if r.backend == "local":
        logs, events = r.client.get_job_logs("fn")
        assert (logs, events) == ({"fn-master-0": "fn lr=0.5 rank=0\n"}, {})
    else:
        # docs/sdk.md "Logs on Kubernetes": kwok serves no logs, with either import.
        with pytest.raises(RuntimeError) as err:
            r.client.get_job_logs("fn")
        assert str(err.value).startswith(f"Failed to read logs for pod {r.namespace}/fn-master-0")


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_failed_job_and_wait_timeout(run: Run) -> None:
    r = run
    r.client.create_job(build_job(r, "PyTorchJob", "bad", exit_code=3, replicas={"Master": 1}))
    with pytest.raises(RuntimeError) as failed:
        r.client.wait_for_job_conditions("bad", **WAIT)
    job = r.client.wait_for_job_conditions("bad", expected_conditions={"Failed"}, **WAIT)
    r.client.create_job(build_job(r, "PyTorchJob", "long", forever=True, replicas={"Master": 1}))
    r.client.wait_for_job_conditions("long", expected_conditions={"Running"}, **WAIT)
    with pytest.raises(TimeoutError) as timed_out:
        r.client.wait_for_job_conditions("long", wait_timeout=1, polling_interval=0.5)
    conditions = str(failed.value).split(" conditions: ", 1)[1]
    got = (
        str(failed.value).split(" conditions: ", 1)[0],
        conditions.startswith("[{'last_transition_time': datetime.datetime("),
        "'type': 'Failed'" in conditions,
        true_conditions(job)[-1],
        r.client.is_job_failed("bad"),
        isinstance(timed_out.value, TimeoutError),
        str(timed_out.value),
    )
    want = (
        f"PyTorchJob {r.namespace}/bad is Failed. PyTorchJob",
        True,
        True,
        "Failed",
        True,
        True,
        f"Timeout waiting for PyTorchJob: {r.namespace}/long to reach expected conditions: "
        "                {'Succeeded'}",
    )
    assert got == want


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_update_suspend_min_available_resume_delete(run: Run) -> None:
    r = run
    r.client.create_job(build_job(r, "PyTorchJob", "keep", forever=True))
    r.client.wait_for_job_conditions("keep", expected_conditions={"Running"}, **WAIT)

    def suspend(job: Any) -> None:
        job.spec.run_policy.suspend = True

    update_retrying(r, "keep", suspend)
    wait_until(lambda: "Suspended" in true_conditions(r.client.get_job("keep")), what="keep to be Suspended")
    wait_until(lambda: r.client.get_job_pods("keep") == [], what="the suspended job's pods to go")

    def gang(job: Any) -> None:  # upstream's gang e2e changes minAvailable of an existing job
        job.spec.run_policy.scheduling_policy = r.sdk.KubeflowOrgV1SchedulingPolicy(min_available=2)

    update_retrying(r, "keep", gang)
    got_policy = r.client.get_job("keep").spec.run_policy.scheduling_policy

    def resume(job: Any) -> None:
        job.spec.run_policy.suspend = False

    update_retrying(r, "keep", resume)
    r.client.wait_for_job_conditions("keep", expected_conditions={"Running"}, **WAIT)
    resumed = r.client.get_job("keep")
    r.client.delete_job("keep")
    wait_until(lambda: r.client.list_jobs() == [], what="keep to be deleted")
    got = (
        type(got_policy).__name__,
        got_policy.min_available,
        resumed.spec.run_policy.suspend,
        r.client.is_job_running(job=resumed),
    )
    assert got == ("KubeflowOrgV1SchedulingPolicy", 2, False, True)


def cause_of(err: BaseException) -> tuple[Any, ...]:
    """What upstream's callers read off ``e.__cause__``: the status, reason and the Status body's fields."""
    cause = err.__cause__
    body = json.loads(cause.body)  # type: ignore[union-attr]
    details = body.get("details") or {}
    return (cause.status, cause.reason, body["reason"], details.get("name"), details.get("group"))  # type: ignore[union-attr]


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_errors(run: Run) -> None:
    r, ns = run, run.namespace
    r.client.create_job(build_job(r, "PyTorchJob", "dup", forever=True, replicas={"Master": 1}))
    bad = build_job(r, "PyTorchJob", "bad", replicas={"Master": 1})
    bad.spec.pytorch_replica_specs["Master"].replicas = "two"
    calls: dict[str, Callable[[], Any]] = {
        "get missing": lambda: r.client.get_job("missing"),
        "delete missing": lambda: r.client.delete_job("missing"),
        "update missing": lambda: r.client.update_job(build_job(r, "PyTorchJob", "missing"), "missing"),
        "create existing": lambda: r.client.create_job(build_job(r, "PyTorchJob", "dup")),
        "create invalid": lambda: r.client.create_job(bad),
    }
    got: dict[str, Any] = {}
    for what, call in calls.items():
        with pytest.raises(Exception) as err:
            call()
        head = str(err.value).split("\nHTTP response", 1)[0]
        got[what] = (isinstance(err.value, RuntimeError), head, *cause_of(err.value)[:3])
    want = {
        "get missing": (
            True,
            f"Failed to get PyTorchJob: {ns}/missing. Error: (404)\nReason: Not Found",
            404,
            "Not Found",
            "NotFound",
        ),
        "delete missing": (
            True,
            f"Failed to delete PyTorchJob: {ns}/missing. Error: (404)\nReason: Not Found",
            404,
            "Not Found",
            "NotFound",
        ),
        "update missing": (
            True,
            f"Failed to update PyTorchJob: {ns}/missing. Error: (404)\nReason: Not Found",
            404,
            "Not Found",
            "NotFound",
        ),
        "create existing": (
            True,
            f"Failed to create PyTorchJob: {ns}/dup. Error: (409)\nReason: Conflict",
            409,
            "Conflict",
            "AlreadyExists",
        ),
        "create invalid": (
            True,
            f"Failed to create PyTorchJob: {ns}/bad. Error: (422)\nReason: Unprocessable Entity",
            422,
            "Unprocessable Entity",
            "Invalid",
        ),
    }
    assert got == want
    with pytest.raises(ValueError) as kind_err:
        r.client.get_job("x", job_kind="MXJob")
    with pytest.raises(ValueError) as cond_err:
        r.client.wait_for_job_conditions("x", expected_conditions={"Suspended"})
    with pytest.raises(ValueError) as job_and_func:
        r.client.create_job(build_job(r, "PyTorchJob", "y"), train_func=train_hello)
    assert (str(kind_err.value), str(cond_err.value).split(" must ")[0], str(job_and_func.value)) == (
        "Job kind must be one of these: dict_keys(['TFJob', 'PyTorchJob', 'XGBoostJob', 'MPIJob', "
        "'PaddleJob', 'JAXJob'])",
        "Expected conditions: {'Suspended'}",
        "If `job` is set only `namespace`, `labels`, and `annotations` arguments are allowed. "
        "Argument `train_func` must be None.",
    )


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_train_without_hugging_face(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's train() first checks for peft and transformers: the same ImportError both ways (the
    two are made unimportable here: the finetune extra installs them)."""
    for name in ("peft", "transformers"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError) as err:
        run.client.train(name="llm")
    assert str(err.value) == (
        "Train API dependencies not installed. Run: pip install -U 'kubeflow-training[huggingface]' "
    )
