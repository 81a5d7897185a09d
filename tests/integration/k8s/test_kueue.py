"""Kueue v0.17 drives trainop's jobs: the real Kueue manager on the test control plane (issue 25).

Kueue runs out of cluster with its own webhooks registered (trainop.testing.kueue), trainop's operator
runs as in production, kwok plays the pods. What Kueue writes is Kueue's: the suspend its webhook
sets at create, the Workload, admission (suspend=false and the flavor's nodeSelector, tolerations and
podset label merged into the templates), eviction on preemption (suspend and the templates restored,
in one merge patch), Finished from the job's conditions. Nothing here writes in Kueue's place.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from k8s_harness import Cluster, OperatorProcess, annotate
from lightkube.resources.core_v1 import Pod
from lightkube.types import PatchType

from trainop.sdk import TrainingClient
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)
from trainop.testing.kueue import (
    KUEUE_NAMESPACE_LABEL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    KueueManager,
    cluster_queue,
    local_queue,
    resource_flavor,
    start_kueue,
    workload_priority_class,
)
from trainop.testing.testenv import SIM_OUTCOME, SIM_RUN_DURATION, K8sEnv, wait_for

SPOT = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
FLAVOR_LABELS = {"type": "kwok"}  # every kwok node carries it, so flavored pods still schedule
QUEUE = "user-queue"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


@pytest.fixture(scope="module")
def kueue(
    k8s_env: K8sEnv, crds: None, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KueueManager]:
    manager = start_kueue(k8s_env, tmp_path_factory.mktemp("kueue"))
    line = f"[kueue] Kueue {manager.version} manager up in {manager.started_s:.1f}s (log {manager.log})"
    reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    capman = pytestconfig.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capman is not None:
        with capman.global_and_fixture_disabled():
            reporter.write_line("\n" + line)
    try:
        yield manager
    finally:
        manager.stop()


@pytest.fixture(scope="module")
def flavor(kueue: KueueManager, k8s_env: K8sEnv) -> Iterator[str]:
    """One ResourceFlavor with node labels and a toleration, which Kueue injects into admitted pods."""
    k8s_env.apply_yaml(_yaml(resource_flavor("kwok-spot", FLAVOR_LABELS, [SPOT])))
    yield "kwok-spot"
    k8s_env.kubectl("delete", "resourceflavor.kueue.x-k8s.io/kwok-spot", "--wait=false", check=False)


@pytest.fixture
def queued(kueue: KueueManager, k8s_env: K8sEnv, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A namespace Kueue's job webhooks apply to; deleted (and its Workloads released) while Kueue runs."""
    base = request.node.name.split("[")[0].removeprefix("test_kueue_").removeprefix("test_")
    ns = f"t-kueue-{base[:28].replace('_', '-').rstrip('-')}-{secrets.token_hex(3)}"
    k8s_env.create_namespace(ns, labels={KUEUE_NAMESPACE_LABEL[0]: KUEUE_NAMESPACE_LABEL[1]})
    cluster = Cluster(k8s_env, ns)
    try:
        yield cluster
    finally:
        cluster.close()
        with contextlib.suppress(Exception):
            k8s_env.delete_namespace(ns, wait=True, timeout=90)


def _yaml(*objs: dict[str, Any]) -> str:
    import json

    return "\n---\n".join(json.dumps(o) for o in objs)


def make_queue(env: K8sEnv, cluster: Cluster, flavor: str, quota: dict[str, str], **kw: Any) -> str:
    """A ClusterQueue of its own for this test and the LocalQueue ``user-queue`` pointing at it."""
    cq = f"cq-{cluster.namespace}"
    env.apply_yaml(_yaml(cluster_queue(cq, flavor, quota, **kw), local_queue(cluster.namespace, QUEUE, cq)))
    return cq


def requests(cpu: str) -> Callable[[dict[str, Any]], None]:
    def op(template: dict[str, Any]) -> None:
        for c in template["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}

    return op


def queued_job(
    job: JobBuilder, *, cpu: str = "1", outcome: str | None = "succeed", run: str = "2s"
) -> dict[str, Any]:
    """The job with the queue label, not suspended (Kueue's webhook suspends it), pods that request
    ``cpu`` and (with ``outcome``) end after ``run``."""
    job = job.labels(**{QUEUE_LABEL: QUEUE}).template(requests(cpu))
    if outcome is not None:
        job = job.template(annotate({SIM_OUTCOME: outcome, SIM_RUN_DURATION: run}))
    return job.build_dict()


def specs(obj: dict[str, Any]) -> dict[str, Any]:
    key = next(k for k in obj["spec"] if k.endswith("ReplicaSpecs"))
    return dict(obj["spec"][key])


def workload(env: K8sEnv, cluster: Cluster, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload Kueue made for ``job`` (its controller ownerReference is the job)."""
    items = env.kubectl_json("get", "workloads.kueue.x-k8s.io", namespace=cluster.namespace)["items"]
    uid = job["metadata"]["uid"]
    return next(
        (w for w in items if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])),
        None,
    )


def wl_condition(wl: dict[str, Any] | None, ctype: str) -> str | None:
    for c in ((wl or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return str(c["status"])
    return None


def wait_wl(
    env: K8sEnv, cluster: Cluster, job: dict[str, Any], ctype: str, timeout: float = 90
) -> dict[str, Any]:
    return wait_for(
        lambda: wl if wl_condition(wl := workload(env, cluster, job), ctype) == "True" else None,
        timeout,
        f"Workload of {job['kind']} {job['metadata']['name']}: {ctype}=True",
    )


def replica_count(obj: dict[str, Any]) -> int:
    return sum(int(s.get("replicas", 1)) for s in specs(obj).values())


@pytest.mark.parametrize(
    "job",
    [
        pytest.param(pytorch_job("kq").master(1).workers(1), id="PyTorchJob"),
        pytest.param(tf_job("kq").chief(1).workers(1), id="TFJob"),
        pytest.param(xgboost_job("kq").master(1).workers(1), id="XGBoostJob"),
        pytest.param(paddle_job("kq").master(1).workers(1), id="PaddleJob"),
        pytest.param(jax_job("kq").workers(2), id="JAXJob"),
    ],
)
def test_kueue_suspends_admits_and_finishes_each_kind(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess, job: JobBuilder
) -> None:
    env, cluster, kind = kueue.env, queued, job.kind
    make_queue(env, cluster, flavor, {"cpu": "8", "memory": "32Gi"})
    created = cluster.create(queued_job(job))
    # Kueue's mutating webhook suspended it on the way in.
    assert created["spec"]["runPolicy"]["suspend"] is True

    wl = wait_wl(env, cluster, created, "Admitted")
    want_sets = {t.lower(): int(s.get("replicas", 1)) for t, s in specs(created).items()}
    assert {p["name"]: p["count"] for p in wl["spec"]["podSets"]} == want_sets

    def all_pods() -> list[dict[str, Any]] | None:
        pods = cluster.live_pods("kq")
        return pods if len(pods) == replica_count(created) else None

    pods = wait_for(all_pods, 90, f"{kind} pods after admission")
    for pod in pods:
        rtype = pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == rtype
        assert pod["spec"]["nodeSelector"] == FLAVOR_LABELS
        assert SPOT in pod["spec"]["tolerations"]
    cluster.wait_condition(kind, "kq", "Succeeded", timeout=120)
    wait_wl(env, cluster, created, "Finished")


def finish(cluster: Cluster, job_name: str) -> None:
    """Let the job's running pods succeed now (kwok re-reads a live pod's annotations on every update)."""
    for pod in cluster.live_pods(job_name):
        cluster.client.patch(
            Pod,
            pod["metadata"]["name"],
            {"metadata": {"annotations": {SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}}},
            namespace=cluster.namespace,
            patch_type=PatchType.MERGE,
        )


def test_kueue_quota_second_job_waits_then_runs(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    env, cluster = kueue.env, queued
    make_queue(env, cluster, flavor, {"cpu": "2", "memory": "8Gi"})
    first = cluster.create(queued_job(pytorch_job("first").master(1).workers(1), outcome=None))
    wait_wl(env, cluster, first, "Admitted")
    wait_for(lambda: len(cluster.live_pods("first")) == 2 or None, 90, "the first job's pods")
    second = cluster.create(queued_job(pytorch_job("second").master(1).workers(1)))

    # The second waits for quota: its Workload is pending, the job suspended, no pod of it exists.
    wl = wait_for(
        lambda: w if wl_condition(w := workload(env, cluster, second), "QuotaReserved") == "False" else None,
        60,
        "the second Workload pending for quota",
    )
    assert wl_condition(wl, "Admitted") != "True"
    cluster.settled(operator, "PyTorchJob", "second")
    assert cluster.pods("second") == []
    assert (cluster.job("PyTorchJob", "second") or {})["spec"]["runPolicy"]["suspend"] is True

    finish(cluster, "first")
    cluster.wait_condition("PyTorchJob", "first", "Succeeded", timeout=120)
    wait_wl(env, cluster, second, "Admitted")
    cluster.wait_condition("PyTorchJob", "second", "Succeeded", timeout=120)


def test_kueue_preemption_by_a_higher_priority_class(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    env, cluster = kueue.env, queued
    low_pc, high_pc = f"low-{cluster.namespace}", f"high-{cluster.namespace}"
    env.apply_yaml(_yaml(workload_priority_class(low_pc, 100), workload_priority_class(high_pc, 1000)))
    make_queue(
        env,
        cluster,
        flavor,
        {"cpu": "2", "memory": "8Gi"},
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    low = cluster.create(
        queued_job(pytorch_job("low").master(1).workers(1).labels(**{PRIORITY_LABEL: low_pc}), outcome=None)
    )
    original = copy.deepcopy(specs(low))  # as the webhook left it: no flavor in the templates yet
    wait_for(lambda: len(cluster.live_pods("low")) == 2 or None, 90, "the low-priority job's pods")
    cluster.wait_condition("PyTorchJob", "low", "Running")
    admitted = specs(cluster.job("PyTorchJob", "low") or {})
    assert admitted["Master"]["template"]["spec"]["nodeSelector"] == FLAVOR_LABELS

    high = cluster.create(
        queued_job(pytorch_job("high").master(1).workers(1).labels(**{PRIORITY_LABEL: high_pc}), outcome=None)
    )
    # The victim: evicted, suspended, its pods deleted and its templates restored as they were.
    wait_wl(env, cluster, low, "Evicted")
    cluster.wait_condition("PyTorchJob", "low", "Suspended")
    wait_for(lambda: cluster.live_pods("low") == [] or None, 90, "the victim's pods deleted")
    wait_for(
        lambda: specs(cluster.job("PyTorchJob", "low") or {}) == original or None,
        60,
        "the victim's templates restored",
    )
    wait_wl(env, cluster, high, "Admitted")
    wait_for(lambda: len(cluster.live_pods("high")) == 2 or None, 90, "the preemptor's pods")

    # Once the preemptor is gone the victim is admitted again and runs again.
    cluster.delete_job("PyTorchJob", "high")
    wait_for(lambda: len(cluster.live_pods("low")) == 2 or None, 120, "the victim's pods again")
    cluster.wait_condition("PyTorchJob", "low", "Running")


def test_kueue_multikueue_managed_by_is_left_alone(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    """A ClusterQueue with a MultiKueue admission check: Kueue's webhook sets runPolicy.managedBy to
    MultiKueue, and this cluster's operator must not touch the job (its worker-cluster copy runs)."""
    env, cluster = kueue.env, queued
    suffix = cluster.namespace
    env.apply_yaml(
        _yaml(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueConfig",
                "metadata": {"name": f"mk-{suffix}"},
                "spec": {"clusters": [f"worker-{suffix}"]},
            },
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "AdmissionCheck",
                "metadata": {"name": f"mk-{suffix}"},
                "spec": {
                    "controllerName": MULTIKUEUE,
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": f"mk-{suffix}",
                    },
                },
            },
        )
    )
    make_queue(env, cluster, flavor, {"cpu": "8", "memory": "32Gi"}, admission_checks=[f"mk-{suffix}"])
    created = wait_for(
        lambda: _create_until_defaulted(cluster),
        60,
        "Kueue's webhook to default managedBy (its cache sees the check)",
    )
    assert created["spec"]["runPolicy"]["managedBy"] == MULTIKUEUE
    wait_for(lambda: workload(env, cluster, created), 60, "its Workload")
    cluster.settled(operator, "PyTorchJob", "mk")
    job = cluster.job("PyTorchJob", "mk") or {}
    assert cluster.pods("mk") == [] and cluster.services("mk") == []
    assert not (job.get("status") or {}).get("conditions")
    env.kubectl(
        "delete",
        f"admissioncheck.kueue.x-k8s.io/mk-{suffix}",
        f"multikueueconfig.kueue.x-k8s.io/mk-{suffix}",
        "--wait=false",
        check=False,
    )


def _create_until_defaulted(cluster: Cluster) -> dict[str, Any] | None:
    """Create the job; if Kueue's cache did not know the admission check yet (managedBy not set),
    delete it and let the caller try again."""
    created = cluster.create(queued_job(pytorch_job("mk").master(1).workers(1)))
    if created["spec"]["runPolicy"].get("managedBy") == MULTIKUEUE:
        return created
    cluster.delete_job("PyTorchJob", "mk")
    wait_for(lambda: cluster.job("PyTorchJob", "mk") is None or None, 30, "the job deleted")
    return None


def test_sdk_create_job_with_queue_name_lands_in_the_queue(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    env, cluster = kueue.env, queued
    make_queue(env, cluster, flavor, {"cpu": "8", "memory": "32Gi"})
    job = pytorch_job("sdk").namespace(cluster.namespace).master(1).workers(1).template(requests("1"))
    job = job.template(annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}))
    client = TrainingClient(config_file=str(env.kubeconfig), namespace=cluster.namespace)
    try:
        client.create_job(job=job.build_dict(), queue_name=QUEUE)
        created = cluster.job("PyTorchJob", "sdk") or {}
        assert created["metadata"]["labels"][QUEUE_LABEL] == QUEUE
        wl = wait_wl(env, cluster, created, "Admitted")
        assert wl["spec"]["queueName"] == QUEUE
        client.wait_for_job_conditions("sdk", job_kind="PyTorchJob", wait_timeout=120, polling_interval=1)
        assert client.is_job_succeeded("sdk", job_kind="PyTorchJob")
    finally:
        client.backend.close()  # its HTTP connections (unclosed sockets otherwise)


def test_v1_mpijob_with_a_queue_label_is_not_queued_and_says_so(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    """Kueue v0.17 manages mpi-operator's v2beta1 MPIJob, not kubeflow.org/v1's: the job runs at once,
    outside the queue, and the operator says so in a Warning event (and `trainop describe`)."""
    env, cluster = kueue.env, queued
    make_queue(env, cluster, flavor, {"cpu": "8", "memory": "32Gi"})
    job = mpi_job("mq").launcher(1).workers(1).labels(**{QUEUE_LABEL: QUEUE}).template(requests("1"))
    created = cluster.create(
        job.template(annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "1s"}), "Launcher").build_dict()
    )
    assert not created["spec"].get("runPolicy", {}).get("suspend")  # Kueue's webhooks left it alone
    wait_for(lambda: len(cluster.live_pods("mq")) == 2 or None, 90, "the MPIJob's pods, unqueued")
    events = wait_for(
        lambda: [e for e in cluster.events("mq") if e.get("reason") == "QueueNotManaged"] or None,
        60,
        "the QueueNotManaged Warning",
    )
    assert events[0]["type"] == "Warning"
    assert "Kueue does not manage kubeflow.org/v1 MPIJob" in events[0]["message"]
    assert workload(env, cluster, created) is None


@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning", "ignore::UserWarning")
def test_sdk_train_with_queue_name_lands_in_the_queue(
    kueue: KueueManager, flavor: str, queued: Cluster, operator: OperatorProcess
) -> None:
    """train() (issue 21) makes its claim and a PyTorchJob with the queue label; Kueue suspends the job,
    makes its Workload in that queue and admits it (its pods wait for the claim: nothing provisions
    volumes on the test control plane, and that is not Kueue's part)."""
    import transformers
    from peft import LoraConfig

    from trainop.sdk.finetune import (
        HuggingFaceDatasetParams,
        HuggingFaceModelParams,
        HuggingFaceTrainerParams,
    )

    env, cluster = kueue.env, queued
    make_queue(env, cluster, flavor, {"cpu": "8", "memory": "32Gi"})
    args = transformers.TrainingArguments(output_dir="out", save_strategy="no", eval_strategy="no")
    client = TrainingClient(config_file=str(env.kubeconfig), namespace=cluster.namespace)
    try:
        client.train(
            name="llm",
            num_workers=2,
            resources_per_worker={"cpu": "1", "memory": "1Gi"},
            model_provider_parameters=HuggingFaceModelParams(
                model_uri="hf://org/tiny", transformer_type=transformers.AutoModelForCausalLM
            ),
            dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="org/data"),
            trainer_parameters=HuggingFaceTrainerParams(training_parameters=args, lora_config=LoraConfig()),
            queue_name=QUEUE,
        )
    finally:
        client.backend.close()
    created = cluster.job("PyTorchJob", "llm") or {}
    assert created["metadata"]["labels"][QUEUE_LABEL] == QUEUE
    wl = wait_wl(env, cluster, created, "Admitted")
    assert wl["spec"]["queueName"] == QUEUE
    assert [p["name"] for p in wl["spec"]["podSets"]] == ["master", "worker"]
    wait_for(lambda: not (cluster.job("PyTorchJob", "llm") or {})["spec"]["runPolicy"]["suspend"] or None, 60,
             "the job unsuspended on admission")  # fmt: skip
    # The claim keeps kubernetes.io/pvc-protection until a controller this control plane does not run
    # drops it; without this the namespace (and the fixture waiting for it) would hang.
    env.kubectl(
        "patch", "persistentvolumeclaim", "llm", "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
        namespace=cluster.namespace,
    )  # fmt: skip
