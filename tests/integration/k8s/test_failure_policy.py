"""trainop's failure policy on the real API server, kwok playing kubelet (docs/failure-policy.md):
whole-job restart (Recreate and BlockingRecreate), a FailJob rule, the restart limit, the start-error
deadline; and the same manifests accepted unchanged by upstream's v1.9.4 CRDs (server-side dry run).
Every wait is on observable state."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_harness import REPO, Cluster, OperatorProcess, annotate
from lightkube.core.client import LabelSelector
from lightkube.types import OnErrorAction, OnErrorResult, PatchType

from trainop.backends.kubernetes import resources as r
from trainop.testing.builders import job_builder, pytorch_job
from trainop.testing.testenv import SIM_EXIT_CODE, SIM_OUTCOME, SIM_REASON, SIM_RUN_DURATION, K8sEnv, wait_for

PT = "PyTorchJob"
SIM_DELETE_DELAY = "sim.trainop.dev/delete-delay"
SIM_WAITING_REASON = "sim.trainop.dev/waiting-reason"
SIM_WAITING_MESSAGE = "sim.trainop.dev/waiting-message"
UPSTREAM_MODULE = "github.com/kubeflow/training-operator@v1.9.4"

OOM_RESTARTS = json.dumps(
    [{"name": "oom", "action": "RestartJob", "onExitCodes": {"operator": "In", "values": [137]}}]
)


def uid(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["uid"])


def attempt(pod: dict[str, Any]) -> str | None:
    return (pod["metadata"].get("labels") or {}).get("trainop.dev/restart-attempt")


def running(cluster: Cluster, job: str, n: int) -> list[dict[str, Any]] | None:
    pods = cluster.live_pods(job)
    return (
        pods
        if len(pods) == n and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        else None
    )


class PodTimeline:
    """Every pod event of one job, in the order the API server sent them (a watch in a thread)."""

    def __init__(self, env: K8sEnv, namespace: str, job: str) -> None:
        self.events: list[tuple[str, str, str]] = []  # (type, name, uid)
        self.error: BaseException | None = None  # what ended the stream before stop(), if anything
        self._stopping = threading.Event()
        self._client = env.client(namespace=namespace)
        self._thread = threading.Thread(target=self._run, args=(namespace, job), daemon=True)
        self._thread.start()

    def _run(self, namespace: str, job: str) -> None:
        labels: LabelSelector = {"training.kubeflow.org/job-name": job}
        # The stream ends with an error when stop() closes the client under it: that is its end. A
        # failure lightkube does not pass to on_error (reconnecting: seen under load, an SSL EOF while
        # connecting) starts the watch again from the last resourceVersion seen: no event is lost.
        version: str | None = None
        failures = 0
        while not self._stopping.is_set():
            try:
                for typ, obj in self._client.watch(
                    r.Pod,
                    namespace=namespace,
                    labels=labels,
                    resource_version=version,
                    on_error=self._on_error,
                ):
                    meta = obj.metadata
                    version = meta.resourceVersion
                    self.events.append((str(typ), str(meta.name), str(meta.uid)))
                return
            except Exception as exc:  # kept for the assertion message
                failures += 1
                if self._stopping.is_set():
                    return
                if failures > 20 or version is None:
                    self.error = exc
                    return

    def _on_error(self, exc: Exception, count: int) -> OnErrorResult:
        # A stream the API server or the TLS layer cuts under load (seen: an SSL read error) goes on
        # from the last resourceVersion seen, so no event is lost; stop() ends it for good.
        if self._stopping.is_set():
            return OnErrorResult(OnErrorAction.STOP)
        return OnErrorResult(OnErrorAction.RETRY if count <= 20 else OnErrorAction.RAISE)

    def stop(self) -> list[tuple[str, str, str]]:
        self._stopping.set()
        self._client.close()
        self._thread.join(timeout=30)
        assert self.error is None, f"the pod watch ended early: {self.error!r}; events so far: {self.events}"
        return list(self.events)


@pytest.mark.parametrize("strategy", ["Recreate", "BlockingRecreate"])
def test_worker_exits_137_once_every_replica_restarts_then_the_job_succeeds(
    operator: OperatorProcess, cluster: Cluster, strategy: str
) -> None:
    name = f"wj-{strategy.lower()}"
    # The old master lingers 5s in Terminating (the workers go at once); BlockingRecreate must wait for
    # it. (Recreate may too: the operator's next pass waits to see its own deletions, §6.1.)
    job = (
        pytorch_job(name).master(1).workers(3)
        .annotations({
            "trainop.dev/failure-policy": OOM_RESTARTS,
            "trainop.dev/max-restarts": "2",
            "trainop.dev/restart-strategy": strategy,
        })
        .template(annotate({SIM_DELETE_DELAY: "5s"}), "Master")
    )  # fmt: skip
    timeline = PodTimeline(cluster.env, cluster.namespace, name)
    cluster.create(job.build_dict())
    first = wait_for(lambda: running(cluster, name, 4), 90, "4 pods running")
    old_uids = {uid(p) for p in first}
    # worker-2 crashes once with 137 (OOMKilled); the kubelet (kwok) restarts it in place (OnFailure).
    cluster.client.patch(
        r.Pod,
        f"{name}-worker-2",
        {"metadata": {"annotations": {SIM_OUTCOME: "fail", SIM_EXIT_CODE: "137", SIM_REASON: "OOMKilled",
                                      SIM_RUN_DURATION: "1s"}}},
        namespace=cluster.namespace,
        patch_type=PatchType.MERGE,
    )  # fmt: skip
    second = wait_for(
        lambda: (
            ((pods := running(cluster, name, 4)) and not ({uid(p) for p in pods} & old_uids) and pods) or None
        ),
        120,
        "4 new pods running",
    )
    # The recreated worker-2 has no fail annotation; let the new master finish.
    cluster.client.patch(
        r.Pod, f"{name}-master-0", {"metadata": {"annotations": {SIM_OUTCOME: "succeed",
                                                                 SIM_RUN_DURATION: "1s"}}},
        namespace=cluster.namespace, patch_type=PatchType.MERGE,
    )  # fmt: skip
    cluster.wait_condition(PT, name, "Succeeded", timeout=90)
    restarts = cluster.condition(PT, name, "JobRestarts") or {}
    restarting = [e["message"] for e in cluster.events(name) if e.get("reason") == "PyTorchJobRestarting"]
    new_uids = {uid(p) for p in second}
    events = timeline.stop()
    added_new = [i for i, (t, _, u) in enumerate(events) if t == "ADDED" and u in new_uids]
    deleted_old = [i for i, (t, _, u) in enumerate(events) if t == "DELETED" and u in old_uids]
    want_summary = (
        f"pod {name}-worker-2 (Worker) exited with code 137 and was restarted in place (reason OOMKilled)"
    )
    assert (
        sorted(p["metadata"]["name"] for p in second),
        {attempt(p) for p in second},
        restarts.get("message"),
        restarting,
        len(deleted_old),
    ) == (
        [f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1", f"{name}-worker-2"],
        {"1"},
        f"1 whole-job restart(s), 1 counted toward maxRestarts 2; the last because {want_summary}",
        [
            f'PyTorchJob {name} is restarting every replica because {want_summary} (rule 0 "oom"; restart '
            "1 of at most 2)."
        ],
        4,
    )
    if strategy == "BlockingRecreate":
        # No new pod existed while an old one was still there.
        assert added_new and deleted_old and min(added_new) > max(deleted_old), events


def test_exit_code_matching_a_failjob_rule_fails_at_once(operator: OperatorProcess, cluster: Cluster) -> None:
    rules = json.dumps(
        [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "RestartJob"},
        ]
    )
    job = (
        pytorch_job("fj").master(1).workers(2).restart_policy("Never")
        .annotations({"trainop.dev/failure-policy": rules, "trainop.dev/max-restarts": "5"})
        .template(annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: "3", SIM_RUN_DURATION: "1s"}), "Worker")
    )  # fmt: skip
    cluster.create(job.build_dict())
    failed = cluster.wait_condition(PT, "fj", "Failed", timeout=90)
    # Either worker may fail first; the message names the one that did.
    worker = failed["message"].removeprefix("Job fj has failed because pod ")[:11]
    assert (failed["reason"], failed["message"], cluster.condition(PT, "fj", "JobRestarts")) == (
        "PyTorchJobFailedByRule",
        f"Job fj has failed because pod {worker} (Worker) exited with code 3 (reason Error), which rule "
        "0 fails the job (FailJob)",
        None,
    )
    assert worker in ("fj-worker-0", "fj-worker-1")


def test_past_its_restart_limit_the_job_fails_with_the_reason(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    job = (
        pytorch_job("ml").master(1).workers(1).restart_policy("Never")
        .annotations({"trainop.dev/failure-policy": OOM_RESTARTS, "trainop.dev/max-restarts": "1"})
        .template(annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: "137", SIM_RUN_DURATION: "1s"}), "Worker")
    )  # fmt: skip
    cluster.create(job.build_dict())
    failed = cluster.wait_condition(PT, "ml", "Failed", timeout=120)
    assert (failed["reason"], failed["message"]) == (
        "PyTorchJobMaxRestartsExceeded",
        "Job ml has failed because it has reached the maximum of 1 whole-job restart(s) "
        "(trainop.dev/max-restarts) and pod ml-worker-0 (Worker) exited with code 137 (reason Error)",
    )
    assert (
        (cluster.condition(PT, "ml", "JobRestarts") or {})
        .get("message", "")
        .startswith("1 whole-job restart(s), 1 counted toward maxRestarts 1")
    )


def test_a_pod_in_image_pull_back_off_fails_the_job_after_the_deadline(
    operator: OperatorProcess, cluster: Cluster
) -> None:
    pull = 'Back-off pulling image "registry.invalid/nope:1"'
    job = (
        pytorch_job("ip").master(1).workers(1)
        .annotations({"trainop.dev/start-error-deadline-seconds": "3"})
        .template(annotate({SIM_WAITING_REASON: "ImagePullBackOff", SIM_WAITING_MESSAGE: pull}), "Worker")
    )  # fmt: skip
    cluster.create(job.build_dict())
    wait_for(
        lambda: (
            any(
                ((cs.get("state") or {}).get("waiting") or {}).get("reason") == "ImagePullBackOff"
                for p in cluster.live_pods("ip")
                for cs in (p.get("status") or {}).get("containerStatuses") or []
            )
            or None
        ),
        60,
        "kwok plays ImagePullBackOff",
    )
    # Nothing else happens to the job from here: the operator's own requeue brings the deadline.
    failed = cluster.wait_condition(PT, "ip", "Failed", timeout=60)
    assert (failed["reason"], failed["message"]) == (
        "PyTorchJobStartErrorDeadlineExceeded",
        "Job ip has failed because pod ip-worker-0 container pytorch has been in ImagePullBackOff for 3s "
        f"(trainop.dev/start-error-deadline-seconds): {pull}",
    )


# --- upstream's CRDs accept the same manifests unchanged ---------------------------------------------


def _upstream_crd_dir() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is needed to fetch upstream's CRDs: install Go (https://go.dev/dl/)", pytrace=False)
    out = subprocess.run(
        [go, "mod", "download", "-json", UPSTREAM_MODULE],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        pytest.fail(f"go mod download {UPSTREAM_MODULE} failed: {out.stdout}{out.stderr}", pytrace=False)
    return Path(json.loads(out.stdout)["Dir"]) / "manifests" / "base" / "crds"


def _replace_crds(env: K8sEnv, docs: list[dict[str, Any]]) -> None:
    """Put exactly these CRDs in place (replace with the live resourceVersion; create if absent)."""
    for doc in docs:
        name = doc["metadata"]["name"]
        live = env.kubectl("get", "crd", name, "-o", "json", check=False)
        body = json.loads(json.dumps(doc))
        if live.returncode == 0:
            body["metadata"]["resourceVersion"] = json.loads(live.stdout)["metadata"]["resourceVersion"]
            env.kubectl("replace", "-f", "-", input=json.dumps(body))
        else:
            env.kubectl("create", "-f", "-", input=json.dumps(body))
    names = [f"crd/{d['metadata']['name']}" for d in docs]
    env.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)


def _crd_docs(directory: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(directory.glob("kubeflow.org_*.yaml")):
        docs.extend(
            d
            for d in yaml.safe_load_all(path.read_text())
            if d and d.get("kind") == "CustomResourceDefinition"
        )
    return docs


@pytest.fixture
def upstream_crds(k8s_env: K8sEnv, crds: None) -> Iterator[list[dict[str, Any]]]:
    """Upstream v1.9.4's CRDs for one test; ours are put back after it (and checked to be)."""
    upstream = _crd_docs(_upstream_crd_dir())
    ours = _crd_docs(REPO / "manifests" / "crds")
    _replace_crds(k8s_env, upstream)
    try:
        yield upstream
    finally:
        _replace_crds(k8s_env, ours)
        for doc in ours:
            live = k8s_env.kubectl_json("get", "crd", doc["metadata"]["name"])
            assert live["spec"]["versions"][0]["schema"] == doc["spec"]["versions"][0]["schema"]


ANNOTATIONS = {
    "trainop.dev/failure-policy": "- {action: FailJob, onExitCodes: {operator: In, values: [1]}}\n"
    "- {action: RestartJob, onReasons: [OOMKilled, Evicted]}\n",
    "trainop.dev/max-restarts": "3",
    "trainop.dev/restart-strategy": "BlockingRecreate",
    "trainop.dev/startup-deadline-seconds": "600",
    "trainop.dev/start-error-deadline-seconds": "120",
}


def _manifest(kind: str) -> dict[str, Any]:
    b = job_builder(kind, f"up-{kind.lower()}").annotations(ANNOTATIONS)
    if kind == "MPIJob":
        b = b.launcher(1).workers(1)
    elif kind == "JAXJob":
        b = b.workers(2)
    elif kind == "TFJob":
        b = b.chief(1).workers(1)
    else:
        b = b.master(1).workers(1)
    return b.build_dict()


KINDS = ("PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob")


def test_upstream_v1_9_crds_accept_the_manifests_unchanged(
    k8s_env: K8sEnv, upstream_crds: list[dict[str, Any]], k8s_namespace: str
) -> None:
    got: dict[str, Any] = {}
    want: dict[str, Any] = {}
    for kind in KINDS:
        manifest = _manifest(kind)
        manifest["metadata"]["namespace"] = k8s_namespace
        manifest["metadata"].pop("uid", None)
        out = k8s_env.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(manifest),
            namespace=k8s_namespace
        )  # fmt: skip
        obj = json.loads(out.stdout)
        got[kind] = (obj["metadata"].get("annotations"), obj["spec"])
        want[kind] = (manifest["metadata"]["annotations"], _with_defaults(manifest["spec"]))
    assert got == want


def _with_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """What the API server returns for ``spec`` under upstream's CRD: the one schema default (§1.1:
    runPolicy.suspend false, when runPolicy is there) and nothing pruned."""
    out = json.loads(json.dumps(spec))
    if "runPolicy" in out:  # the default lives inside runPolicy's schema
        out["runPolicy"].setdefault("suspend", False)
    return out
