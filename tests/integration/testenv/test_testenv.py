"""The test control plane is real: schema validation, watches, scheduling onto kwok nodes, pod fates
chosen by annotations, garbage collection and RBAC, all enforced by the real kube-apiserver,
controller-manager, scheduler and kwok started by the ``k8s_env`` fixture (hack/testenv).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import ConfigMap, Node, Pod
from lightkube.types import PatchType

from trainop.testing.testenv import K8sEnv, wait_for

pytestmark = [pytest.mark.k8s, pytest.mark.integration]

SIM = "sim.trainop.dev/"
MERGE = PatchType.MERGE

WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.testenv.trainop.dev
spec:
  group: testenv.trainop.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            properties:
              replicas: {type: integer, minimum: 1}
              mode: {type: string, enum: [fast, slow]}
          status:
            type: object
            properties:
              phase: {type: string}
"""

Widget = create_namespaced_resource("testenv.trainop.dev", "v1", "Widget", "widgets")


@pytest.fixture
def client(k8s_env: K8sEnv, k8s_namespace: str) -> Iterator[Client]:
    with contextlib.closing(k8s_env.client(namespace=k8s_namespace)) as c:
        yield c


@pytest.fixture(scope="module")
def widget_crd(k8s_env: K8sEnv) -> None:
    k8s_env.apply_yaml(WIDGET_CRD)
    k8s_env.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/widgets.testenv.trainop.dev")


def list_rv(client: Client, res: Any) -> str:
    """The resourceVersion to start a watch from so that it misses nothing created afterwards."""
    it = client.list(res)
    list(it)  # lightkube knows the collection's resourceVersion once iterated
    return it.resourceVersion


def sim_pod(name: str, restart_policy: str = "Never", **annotations: str) -> Pod:
    """A pod whose fate kwok plays out from its sim.trainop.dev/* annotations.

    The stages are hack/testenv/kwok-stages.yaml.
    """
    return Pod(
        metadata=ObjectMeta(
            name=name, annotations={SIM + k.replace("_", "-"): v for k, v in annotations.items()}
        ),
        spec=PodSpec(restartPolicy=restart_policy, containers=[Container(name="main", image="trainop/sim")]),
    )


def pod_phase_history(
    client: Client, pod: Pod, until: set[str], timeout: float = 60.0
) -> tuple[list[str], Pod]:
    """Create `pod`, then record every phase the watch shows until one in `until` (the last object)."""
    rv = list_rv(client, Pod)
    client.create(pod)
    phases: list[str] = []
    last: list[Pod] = []
    assert pod.metadata is not None and pod.metadata.name is not None
    name: str = pod.metadata.name

    def follow() -> None:
        for _, obj in client.watch(Pod, resource_version=rv, fields={"metadata.name": name}):
            phase = obj.status.phase if obj.status else None
            if phase and (not phases or phases[-1] != phase):
                phases.append(phase)
            if phase in until:
                last.append(obj)
                return

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    t.join(timeout)
    assert last, f"pod {name} never reached {until}; phases seen: {phases}"
    return phases, last[0]


# ---------------------------------------------------------------------------------------------
# apiserver: schema, watch, status subresource


def test_crd_structural_schema_rejects_invalid_objects(
    k8s_env: K8sEnv, widget_crd: None, client: Client
) -> None:
    good = Widget(metadata=ObjectMeta(name="good"), spec={"replicas": 2, "mode": "fast", "unknownField": 1})
    client.create(good)
    got = client.get(Widget, "good")
    assert got.spec == {"replicas": 2, "mode": "fast"}, "unknown fields are pruned by the structural schema"

    for bad_spec, message in [
        ({"replicas": 0}, "spec.replicas"),
        ({"replicas": "three"}, "spec.replicas"),
        ({"mode": "fast"}, "spec.replicas"),
        ({"replicas": 1, "mode": "warp"}, "spec.mode"),
    ]:
        with pytest.raises(ApiError) as err:
            client.create(Widget(metadata=ObjectMeta(name="bad"), spec=bad_spec))
        assert err.value.status.code == 422, bad_spec
        assert message in str(err.value.status.message), (bad_spec, err.value.status.message)

    # kubectl sees the same rejection (server-side apply goes through the same validation)
    with pytest.raises(subprocess.CalledProcessError) as kerr:
        k8s_env.apply_yaml(
            "apiVersion: testenv.trainop.dev/v1\nkind: Widget\nmetadata: {name: bad2}\nspec: "
            "{replicas: -5}\n",
            namespace=client.namespace,
        )
    assert "spec.replicas" in kerr.value.stderr


def test_status_subresource_is_separate_from_spec(widget_crd: None, client: Client) -> None:
    client.create(Widget(metadata=ObjectMeta(name="w"), spec={"replicas": 1}))
    # custom resources take JSON merge patches (no strategic merge)
    client.patch(
        Widget.Status, "w", {"status": {"phase": "Running"}, "spec": {"replicas": 9}}, patch_type=MERGE
    )
    # a write to the main resource ignores status; a write to /status ignores spec
    client.patch(Widget, "w", {"spec": {"replicas": 3}, "status": {"phase": "Ignored"}}, patch_type=MERGE)
    got = client.get(Widget, "w").to_dict()  # type: ignore[no-untyped-call]
    assert (got["spec"]["replicas"], got["status"]["phase"]) == (3, "Running")


def test_watch_delivers_added_modified_deleted_in_order(client: Client) -> None:
    rv = list_rv(client, ConfigMap)
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow() -> None:
        for event, obj in client.watch(ConfigMap, resource_version=rv, labels={"watch-test": "yes"}):
            assert obj.metadata is not None
            seen.append((event, (obj.data or {}).get("v", "")))
            if event == "DELETED":
                done.set()
                return

    threading.Thread(target=follow, daemon=True).start()
    client.create(ConfigMap(metadata=ObjectMeta(name="cm", labels={"watch-test": "yes"}), data={"v": "1"}))
    client.patch(ConfigMap, "cm", {"data": {"v": "2"}})
    client.delete(ConfigMap, "cm")
    assert done.wait(30), f"watch events so far: {seen}"
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


# ---------------------------------------------------------------------------------------------
# scheduler + kwok: pods land on fake nodes and live the life their annotations ask for


@pytest.mark.parametrize(
    ("annotations", "want_phase", "want_exit", "want_reason"),
    [
        pytest.param({"outcome": "succeed", "run_duration": "1s"}, "Succeeded", 0, "Completed", id="succeed"),
        pytest.param({"outcome": "fail", "exit_code": "3"}, "Failed", 3, "Error", id="fail with exit code 3"),
        pytest.param(
            {"outcome": "fail", "exit_code": "137", "reason": "OOMKilled", "run_duration": "500ms"},
            "Failed",
            137,
            "OOMKilled",
            id="fail with 137 OOMKilled",
        ),
    ],
)
def test_pod_is_scheduled_runs_and_ends_as_annotated(
    k8s_env: K8sEnv,
    client: Client,
    annotations: dict[str, str],
    want_phase: str,
    want_exit: int,
    want_reason: str,
) -> None:
    phases, pod = pod_phase_history(client, sim_pod("p", **annotations), until={"Succeeded", "Failed"})

    assert phases == ["Pending", "Running", want_phase]
    assert pod.spec is not None and pod.spec.nodeName in k8s_env.nodes
    assert pod.status is not None and pod.status.containerStatuses is not None
    term = pod.status.containerStatuses[0].state.terminated  # type: ignore[union-attr]
    assert term is not None
    assert (term.exitCode, term.reason) == (want_exit, want_reason)
    assert pod.status.podIP and pod.status.hostIP


def test_every_container_gets_the_exit_code_and_init_containers_complete(client: Client) -> None:
    pod = sim_pod("multi", outcome="fail", exit_code="5", run_duration="200ms")
    assert pod.spec is not None
    pod.spec.initContainers = [Container(name="init", image="trainop/sim")]
    pod.spec.containers.append(Container(name="sidecar", image="trainop/sim"))
    phases, got = pod_phase_history(client, pod, until={"Failed"})

    assert phases == ["Pending", "Running", "Failed"]
    assert got.status is not None
    inits = got.status.initContainerStatuses or []
    assert [(s.name, s.state.terminated.reason) for s in inits] == [("init", "Completed")]  # type: ignore[union-attr]
    codes = {s.name: s.state.terminated.exitCode for s in got.status.containerStatuses or []}  # type: ignore[union-attr]
    assert codes == {"main": 5, "sidecar": 5}


def test_delete_delay_keeps_pod_terminating(client: Client) -> None:
    client.create(sim_pod("slow-exit", delete_delay="3s"))
    wait_for(lambda: client.get(Pod, "slow-exit").status.phase == "Running", timeout=60, what="Running")  # type: ignore[union-attr]
    client.delete(Pod, "slow-exit")
    terminating = client.get(Pod, "slow-exit")  # still there right after the delete call
    assert terminating.metadata is not None and terminating.metadata.deletionTimestamp is not None
    wait_for(lambda: _absent(client, Pod, "slow-exit"), timeout=30, what="pod removed after delete-delay")


def test_on_failure_pod_restarts_in_place_with_exit_code(client: Client) -> None:
    client.create(sim_pod("crashy", "OnFailure", outcome="fail", exit_code="2", run_duration="300ms"))

    def restarted_twice() -> Pod | None:
        p = client.get(Pod, "crashy")
        cs = (p.status.containerStatuses or []) if p.status else []
        return p if cs and cs[0].restartCount >= 2 else None

    pod = wait_for(restarted_twice, timeout=60, what="restartCount >= 2")
    assert pod.status is not None and pod.status.containerStatuses is not None
    status = pod.status.containerStatuses[0]
    assert pod.status.phase == "Running"
    assert status.lastState is not None and status.lastState.terminated is not None
    assert status.lastState.terminated.exitCode == 2
    assert status.state is not None and status.state.running is not None


def test_fail_times_crashes_then_succeeds(client: Client) -> None:
    phases, pod = pod_phase_history(
        client,
        sim_pod("flaky", "OnFailure", outcome="fail", fail_times="2", run_duration="300ms"),
        until={"Succeeded", "Failed"},
    )
    assert phases == ["Pending", "Running", "Succeeded"]
    assert pod.status is not None and pod.status.containerStatuses is not None
    assert pod.status.containerStatuses[0].restartCount == 2


def test_start_never_stays_pending_while_others_run(client: Client) -> None:
    client.create(sim_pod("never", start="never"))
    # A pod created after it reaching Running shows kwok has already processed the first one.
    client.create(sim_pod("witness"))
    wait_for(lambda: client.get(Pod, "witness").status.phase == "Running", timeout=60, what="witness Running")  # type: ignore[union-attr]
    never = client.get(Pod, "never")
    assert never.spec is not None and never.spec.nodeName, "it is scheduled, just never started"
    assert never.status is not None and never.status.phase == "Pending"

    # re-annotating a live pod is a new event: the start stage plays now
    client.patch(Pod, "never", {"metadata": {"annotations": {SIM + "start": "now"}}})
    wait_for(lambda: client.get(Pod, "never").status.phase == "Running", timeout=60, what="never Running")  # type: ignore[union-attr]


def test_start_delay_holds_pod_pending(client: Client) -> None:
    phases, _ = pod_phase_history(
        client, sim_pod("late", start_delay="1s", outcome="succeed", run_duration="0s"), until={"Succeeded"}
    )
    assert phases == ["Pending", "Running", "Succeeded"]


def test_deleting_a_running_pod_completes(client: Client) -> None:
    client.create(sim_pod("doomed"))  # no outcome: runs until deleted
    wait_for(lambda: client.get(Pod, "doomed").status.phase == "Running", timeout=60, what="Running")  # type: ignore[union-attr]
    client.delete(Pod, "doomed")  # default 30 s grace period; kwok completes it without waiting

    def gone() -> bool:
        try:
            client.get(Pod, "doomed")
            return False
        except ApiError as e:
            return e.status.code == 404

    wait_for(gone, timeout=30, what="pod removed")


def test_async_client_sees_the_nodes(k8s_env: K8sEnv) -> None:
    async def names() -> list[str]:
        client = k8s_env.async_client()
        try:
            return sorted(
                [n.metadata.name async for n in client.list(Node) if n.metadata and n.metadata.name]
            )
        finally:
            await client.close()

    assert asyncio.run(names()) == sorted(k8s_env.nodes)


def test_fake_nodes_offer_gpus(k8s_env: K8sEnv) -> None:
    nodes: list[dict[str, Any]] = k8s_env.kubectl_json("get", "nodes", "-l", "type=kwok")["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(k8s_env.nodes)
    for n in nodes:
        assert n["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"


# ---------------------------------------------------------------------------------------------
# controller-manager: garbage collection


def _absent(client: Client, res: Any, name: str) -> bool:
    try:
        client.get(res, name)
        return False
    except ApiError as e:
        return e.status.code == 404


def test_deleting_owner_garbage_collects_dependents(client: Client) -> None:
    owner = client.create(ConfigMap(metadata=ObjectMeta(name="owner")))
    assert owner.metadata is not None and owner.metadata.uid is not None
    ref = OwnerReference(apiVersion="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    client.create(ConfigMap(metadata=ObjectMeta(name="dependent", ownerReferences=[ref])))
    pod = sim_pod("dependent-pod")
    pod.metadata.ownerReferences = [ref]  # type: ignore[union-attr]
    client.create(pod)

    client.delete(ConfigMap, "owner")
    wait_for(
        lambda: _absent(client, ConfigMap, "dependent"), timeout=60, what="dependent ConfigMap collected"
    )
    wait_for(lambda: _absent(client, Pod, "dependent-pod"), timeout=60, what="dependent Pod collected")


def test_deleting_a_custom_resource_collects_its_pods(widget_crd: None, client: Client) -> None:
    owner = client.create(Widget(metadata=ObjectMeta(name="job"), spec={"replicas": 1}))
    assert owner.metadata is not None and owner.metadata.uid is not None
    ref = OwnerReference(
        apiVersion="testenv.trainop.dev/v1",
        kind="Widget",
        name="job",
        uid=owner.metadata.uid,
        controller=True,
        blockOwnerDeletion=True,
    )
    pod = sim_pod("job-worker-0")
    pod.metadata.ownerReferences = [ref]  # type: ignore[union-attr]
    client.create(pod)
    client.delete(Widget, "job")
    # The GC re-reads discovery every 30 s: a CRD created moments ago may need that long.
    wait_for(lambda: _absent(client, Pod, "job-worker-0"), timeout=120, what="pod owned by a CR collected")


# ---------------------------------------------------------------------------------------------
# RBAC


def test_service_account_without_rights_is_denied(
    k8s_env: K8sEnv, k8s_namespace: str, client: Client
) -> None:
    k8s_env.kubectl("create", "serviceaccount", "nobody", namespace=k8s_namespace)
    token = k8s_env.kubectl("create", "token", "nobody", namespace=k8s_namespace).stdout.strip()

    with contextlib.closing(k8s_env.client_as_token(token, namespace=k8s_namespace)) as as_nobody:
        with pytest.raises(ApiError) as err:
            list(as_nobody.list(Pod))
        assert err.value.status.code == 403
        assert f"system:serviceaccount:{k8s_namespace}:nobody" in str(err.value.status.message)

        # grant exactly "list pods" and the same token now works, and nothing more
        k8s_env.kubectl(
            "create", "role", "pod-reader", "--verb=list", "--resource=pods", namespace=k8s_namespace
        )
        k8s_env.kubectl(
            "create", "rolebinding", "nobody-reads", "--role=pod-reader",
            f"--serviceaccount={k8s_namespace}:nobody", namespace=k8s_namespace,
        )  # fmt: skip
        wait_for(lambda: list(as_nobody.list(Pod)) is not None, timeout=30, what="RBAC grant applied")
        with pytest.raises(ApiError) as err2:
            as_nobody.create(ConfigMap(metadata=ObjectMeta(name="x")))
        assert err2.value.status.code == 403

    # impersonation reaches the same authorizer
    can = k8s_env.kubectl(
        "auth", "can-i", "delete", "pods", f"--as=system:serviceaccount:{k8s_namespace}:nobody",
        namespace=k8s_namespace, check=False,
    )  # fmt: skip
    assert can.stdout.strip() == "no"


# ---------------------------------------------------------------------------------------------
# Admission webhooks served on 127.0.0.1 are called by the apiserver


class _DenyForbidden(http.server.BaseHTTPRequestHandler):
    """A validating webhook: denies ConfigMaps that carry a `forbidden` key."""

    seen: list[str] = []

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = review["request"]
        obj = req["object"]
        self.seen.append(obj["metadata"].get("name", ""))
        allowed = "forbidden" not in (obj.get("data") or {})
        resp: dict[str, Any] = {"uid": req["uid"], "allowed": allowed}
        if not allowed:
            resp["status"] = {"code": 403, "message": "forbidden key rejected by the test webhook"}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_validating_webhook_on_loopback_is_called(
    k8s_env: K8sEnv, k8s_namespace: str, client: Client, tmp_path: Path
) -> None:
    pair = k8s_env.issue_serving_cert(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _DenyForbidden)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pair.cert_file, pair.key_file)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    name = f"deny-forbidden-{k8s_namespace}"
    k8s_env.apply_yaml(
        f"""
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: {name}}}
webhooks:
- name: deny-forbidden.testenv.trainop.dev
  clientConfig:
    url: https://127.0.0.1:{server.server_address[1]}/validate
    caBundle: {pair.ca_bundle_b64}
  rules:
  - {{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}
  namespaceSelector:
    matchLabels: {{kubernetes.io/metadata.name: {k8s_namespace}}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
"""
    )
    try:
        attempt = iter(range(10_000))

        def denied() -> ApiError | None:
            # The apiserver picks up new webhook configurations within a second or so.
            try:
                client.create(
                    ConfigMap(metadata=ObjectMeta(name=f"bad-{next(attempt)}"), data={"forbidden": "x"})
                )
            except ApiError as e:
                return e
            return None

        err = wait_for(denied, timeout=30, what="the webhook to deny")
        assert "rejected by the test webhook" in str(err.status.message)
        client.create(ConfigMap(metadata=ObjectMeta(name="fine"), data={"ok": "x"}))
        assert "fine" in _DenyForbidden.seen
    finally:
        k8s_env.kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found")
        server.shutdown()
        server.server_close()  # the listening TLS socket; unclosed it is a ResourceWarning
