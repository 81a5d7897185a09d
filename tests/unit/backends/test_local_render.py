"""The local backend's pure render: a Pod (as the core builds it) → host processes, kubelet rules."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from trainop.api.errors import FieldError
from trainop.backends.local.render import (
    POD_IP,
    LocalContext,
    PodProcesses,
    ProcessSpec,
    build_agent_files,
    build_configmap_files,
    build_container_env,
    build_loopback_env,
    build_pod_processes,
    build_rendered_pod,
    build_rsh_agent,
    detect_pod_errors,
    expand_vars,
    parse_quantity,
    rewrite_mount_paths,
)
from trainop.backends.local.runner import ContainerRun, PodRun, compute_phase
from trainop.core.plugin import capabilities
from trainop.frameworks.mpi import build_mpi_tmpdir
from trainop.frameworks.pytorch import build_rdzv_host_conf
from trainop.frameworks.registry import REGISTRY

# What every container gets on the local backend unless it sets them (build_loopback_env).
LOOPBACK = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo", "TP_SOCKET_IFNAME": "lo"}

CTX = LocalContext(
    host_env={"PATH": "/usr/bin", "HOME": "/home/u"},
    base_dir="/jobs/demo",
    hostname="box",
    cpu_count=8,
    memory_bytes=16 * 2**30,
)


def pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "j-worker-0", "namespace": "ns", "uid": "u-1", "labels": {"a": "b"}},
        "spec": {"containers": containers, **spec},
    }


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("$(A)/x", "1/x", id="a defined variable"),
        pytest.param("$(NOPE)", "$(NOPE)", id="an undefined one is kept"),
        pytest.param("$$(A)", "$(A)", id="$$ escapes the reference"),
        pytest.param("cost $$5", "cost $5", id="$$ is one $"),
        pytest.param("$(A", "$(A", id="an unterminated reference is kept"),
        pytest.param("a$b $", "a$b $", id="a lone $ is left alone"),
        pytest.param("$(A)$(B)", "12", id="adjacent references"),
    ],
)
def test_expand_vars_like_the_kubelet(text: str, want: str) -> None:
    assert expand_vars(text, {"A": "1", "B": "2"}.get) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("500m", Decimal("0.5"), id="milli"),
        pytest.param("2Gi", Decimal(2 * 2**30), id="binary suffix"),
        pytest.param("1e3", Decimal(1000), id="exponent"),
        pytest.param(4, Decimal(4), id="a bare number"),
        pytest.param("12Q", None, id="unknown suffix"),
    ],
)
def test_parse_quantity(value: object, want: Decimal | None) -> None:
    assert parse_quantity(value) == want


@pytest.mark.parametrize(
    ("env", "resources", "ctx", "want"),
    [
        pytest.param(
            [{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)-$(C)"}, {"name": "C", "value": "c"}],
            {},
            CTX,
            {"A": "x", "B": "x-$(C)", "C": "c"},
            id="$(VAR) sees only earlier entries",
        ),
        pytest.param(
            [{"name": "A", "value": "user"}, {"name": "A", "value": "operator"}],
            {},
            CTX,
            {"A": "operator"},
            id="a later duplicate wins",
        ),
        pytest.param(
            [
                {"name": n, "valueFrom": {"fieldRef": {"fieldPath": p}}}
                for n, p in [
                    ("NAME", "metadata.name"),
                    ("NS", "metadata.namespace"),
                    ("UID", "metadata.uid"),
                    ("LABEL", "metadata.labels['a']"),
                    ("IP", "status.podIP"),
                    ("NODE", "spec.nodeName"),
                ]
            ],
            {},
            CTX,
            {"NAME": "j-worker-0", "NS": "ns", "UID": "u-1", "LABEL": "b", "IP": "127.0.0.1", "NODE": "box"},
            id="fieldRef: pod identity, loopback address, this host",
        ),
        pytest.param(
            [
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {
                    "name": "MEM",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
                },
                {
                    "name": "REQ",
                    "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
                },
            ],
            {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m"}},
            CTX,
            {"CPU": "8", "MEM": "1024", "REQ": "250"},
            id="resourceFieldRef: a missing limit is the machine's capacity",
        ),
        pytest.param(
            [],
            {"limits": {"nvidia.com/gpu": 2}},
            LocalContext({}, "/", "box", gpus={"pytorch": ("1", "3")}, machine_has_gpus=True),
            {"CUDA_VISIBLE_DEVICES": "1,3"},
            id="GPU limit: the allocated GPUs",
        ),
        pytest.param(
            [],
            {},
            LocalContext({}, "/", "box", machine_has_gpus=True),
            {"CUDA_VISIBLE_DEVICES": ""},
            id="no GPU limit on a GPU machine: no GPU, as on Kubernetes",
        ),
    ],
)
def test_container_env(
    env: list[dict[str, Any]], resources: dict[str, Any], ctx: LocalContext, want: dict[str, str]
) -> None:
    container = {"name": "pytorch", "env": env, "resources": resources}
    full, own = build_container_env(container, pod([container]), ctx)
    assert (own, full) == ({**want, **LOOPBACK}, {**ctx.host_env, **want, **LOOPBACK})


OMPI = {"OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_btl_tcp_if_include": "lo"}


@pytest.mark.parametrize(
    ("kind", "env", "want"),
    [
        pytest.param(
            "PyTorchJob", {"MASTER_ADDR": "127.0.0.1"}, LOOPBACK, id="torch: gloo, NCCL, TensorPipe on lo"
        ),
        pytest.param(
            "PyTorchJob",
            {"GLOO_SOCKET_IFNAME": "eth1", "NCCL_SOCKET_IFNAME": ""},
            {"TP_SOCKET_IFNAME": "lo"},
            id="a variable the user set (even empty) is kept",
        ),
        pytest.param("MPIJob", {}, {**LOOPBACK, **OMPI}, id="MPI: Open MPI's daemons and ranks on lo"),
        pytest.param(
            "MPIJob",
            {"OMPI_MCA_btl_tcp_if_exclude": "docker0", "OMPI_MCA_oob_tcp_if_include": "eth0"},
            LOOPBACK,
            id="MPI: no include next to the user's exclude (Open MPI refuses both)",
        ),
        pytest.param("PaddleJob", {}, {**LOOPBACK, "POD_IP": "127.0.0.1"}, id="Paddle: launch's own address"),
        pytest.param(
            "JAXJob",
            {"COORDINATOR_PORT": "4321"},
            {**LOOPBACK, "JAX_COORDINATOR_BIND_ADDRESS": "127.0.0.1:4321"},
            id="JAX: the coordinator binds loopback on its port",
        ),
        pytest.param(
            "TFJob", {}, LOOPBACK, id="TF: nothing of its own (its gRPC server has no such setting)"
        ),
    ],
)
def test_loopback_env_defaults(kind: str, env: dict[str, str], want: dict[str, str]) -> None:
    assert build_loopback_env(kind, env) == want


@pytest.mark.parametrize(
    ("meta", "env", "listed", "want"),
    [
        pytest.param(
            {"name": "j-worker-0", "uid": "u-1"}, {}, (), {"TMPDIR": "/tmp/trainop-mpi-u-1"}, id="under /tmp"
        ),
        pytest.param(
            {"name": "j-worker-0", "uid": "u-1"},
            {"TMPDIR": "/scratch/"},
            (),
            {"TMPDIR": "/scratch/trainop-mpi-u-1"},
            id="under the host's TMPDIR",
        ),
        pytest.param(
            {"name": "j-worker-0", "namespace": "ns"},
            {},
            (),
            {"TMPDIR": "/tmp/trainop-mpi-ns-j-worker-0"},
            id="no uid: namespace and pod name",
        ),
        pytest.param(
            {"name": "j-worker-0", "uid": "u-1"},
            {"TMPDIR": "/mine"},
            ("TMPDIR",),
            {},
            id="the container's own TMPDIR is kept",
        ),
    ],
)
def test_mpi_tmpdir_per_replica(
    meta: dict[str, str], env: dict[str, str], listed: tuple[str, ...], want: dict[str, str]
) -> None:
    assert build_mpi_tmpdir({"metadata": meta}, env, listed) == want


ELASTIC = {"PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "127.0.0.1:4321"}


def replica(rtype: str, index: int) -> dict[str, Any]:
    labels = {"training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": str(index)}
    return {"metadata": {"name": f"j-{rtype}-{index}", "labels": labels}}


@pytest.mark.parametrize(
    ("pod", "env", "want"),
    [
        pytest.param(
            replica("worker", 0), ELASTIC, {"PET_RDZV_CONF": "is_host=true"}, id="worker 0 hosts the store"
        ),
        pytest.param(
            replica("worker", 1),
            {**ELASTIC, "PET_RDZV_CONF": "last_call_timeout=5"},
            {"PET_RDZV_CONF": "last_call_timeout=5,is_host=false"},
            id="another worker does not; the user's rdzvConf is kept",
        ),
        pytest.param(
            replica("master", 0), ELASTIC, {"PET_RDZV_CONF": "is_host=false"}, id="nor does a master"
        ),
        pytest.param(
            replica("worker", 1),
            {**ELASTIC, "PET_RDZV_CONF": "is_host=1"},
            {},
            id="an is_host in the user's rdzvConf wins",
        ),
        pytest.param(
            replica("worker", 0),
            {**ELASTIC, "PET_RDZV_ENDPOINT": "etcd.example:2379"},
            {},
            id="an endpoint the user chose elsewhere: left to torch",
        ),
        pytest.param(
            replica("worker", 0),
            {**ELASTIC, "PET_RDZV_BACKEND": "etcd-v2"},
            {},
            id="another rendezvous backend",
        ),
        pytest.param(replica("worker", 0), {"MASTER_ADDR": "127.0.0.1"}, {}, id="not elastic"),
    ],
)
def test_rdzv_host_conf(pod: dict[str, Any], env: dict[str, str], want: dict[str, str]) -> None:
    assert build_rdzv_host_conf(pod, env, POD_IP) == want


def test_rendered_pod_shows_the_loopback_env_of_containers_that_run() -> None:
    delivery = {"name": "kubectl-delivery", "env": [{"name": "TARGET_DIR", "value": "/opt/kube"}]}
    mpi = {
        "name": "mpi",
        "command": ["mpirun", "python", "x.py"],
        "env": [{"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "docker0"}],
    }
    got = build_rendered_pod(pod([mpi], initContainers=[delivery]), "MPIJob", {"NCCL_SOCKET_IFNAME": "eth0"})
    want = pod(
        [
            {
                **mpi,
                "env": [
                    *mpi["env"],
                    {"name": "GLOO_SOCKET_IFNAME", "value": "lo"},
                    {"name": "TP_SOCKET_IFNAME", "value": "lo"},
                    {"name": "OMPI_MCA_oob_tcp_if_include", "value": "lo"},
                    {"name": "TMPDIR", "value": "/tmp/trainop-mpi-u-1"},
                ],
            }
        ],
        initContainers=[delivery],
    )
    assert got == want


def test_rendered_pod_sets_the_rdzv_conf_in_place() -> None:
    torch = {
        "name": "pytorch",
        "command": ["torchrun", "train.py"],
        "env": [
            {"name": "PET_RDZV_ENDPOINT", "value": "127.0.0.1:4321"},
            {"name": "PET_RDZV_BACKEND", "value": "c10d"},
            {"name": "PET_RDZV_CONF", "value": "join_timeout=60"},
        ],
    }
    worker0 = {**replica("worker", 0), "spec": {"containers": [torch]}}
    got = build_rendered_pod(worker0, "PyTorchJob", {})
    conf = {"name": "PET_RDZV_CONF", "value": "join_timeout=60,is_host=true"}
    loopback = [{"name": k, "value": v} for k, v in LOOPBACK.items()]
    want = {**worker0, "spec": {"containers": [{**torch, "env": [*torch["env"][:2], conf, *loopback]}]}}
    assert got == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("/etc/mpi/hostfile", "/state/cfg/hostfile", id="a file under the mount"),
        pytest.param("--hostfile=/etc/mpi", "--hostfile=/state/cfg", id="after an equals sign"),
        pytest.param("/etc/mpi-x /x/etc/mpi", "/etc/mpi-x /x/etc/mpi", id="never inside a longer name"),
        pytest.param("/data/in /data2", "/scratch/in /data2", id="two mounts, whole paths only"),
    ],
)
def test_rewrite_mount_paths(text: str, want: str) -> None:
    table = [("/etc/mpi", "/state/cfg"), ("/data", "/scratch")]
    assert rewrite_mount_paths(text, table) == want


def test_configmap_volume_files_honour_items_and_modes_and_swap_the_rsh_agent() -> None:
    cm = {"data": {"hostfile": "w-0 slots=1\n", "kubexec.sh": "kubectl exec ...", "other": "x"}}
    source = {
        "name": "cfg",
        "items": [
            {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
            {"key": "hostfile", "path": "hostfile"},
        ],
    }
    got = build_configmap_files(cm, source, {"kubexec.sh": "AGENT", "absent.sh": "never shown"})
    assert got == {"kubexec.sh": (b"AGENT", 0o555), "hostfile": (b"w-0 slots=1\n", 0o644)}


def test_only_a_kind_with_an_rsh_agent_gets_the_local_one() -> None:
    got = {kind: build_agent_files(kind, "/state/jobs/ns/j/exec", "j") for kind in REGISTRY.kinds()}
    mpi = capabilities(REGISTRY.get("MPIJob")).remote_exec
    assert mpi is not None
    want: dict[str, dict[str, str]] = {kind: {} for kind in REGISTRY.kinds()} | {
        "MPIJob": {"kubexec.sh": build_rsh_agent("/state/jobs/ns/j/exec", "MPIJob", mpi.exec_agent, "j")}
    }
    assert got == want


def test_pod_processes() -> None:
    worker = {
        "name": "pytorch",
        "command": ["python", "$(SCRIPT)"],
        "args": ["--hostfile", "/etc/mpi/hostfile"],
        "workingDir": "src",
        "env": [{"name": "SCRIPT", "value": "train.py"}],
        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/mpi"}],
    }
    init_user = {"name": "init-pytorch", "command": ["sh", "-c", "echo mine"]}
    init_operator = {"name": "init-pytorch", "command": ["sh", "-c", "nslookup 127.0.0.1"]}
    ctx = LocalContext(CTX.host_env, "/jobs/demo", "box", volume_dirs={"cfg": "/state/cfg"})
    p = pod(
        [worker],
        initContainers=[init_user, init_operator],
        restartPolicy="OnFailure",
        terminationGracePeriodSeconds=5,
    )
    env = {**CTX.host_env, "SCRIPT": "train.py", **LOOPBACK}
    init_env = {**CTX.host_env, **LOOPBACK}
    noop = "the master address is 127.0.0.1 on the local backend, so there is no DNS name to wait for"
    want = PodProcesses(
        init=(
            ProcessSpec("init-pytorch", True, ("sh", "-c", "echo mine"), "/jobs/demo", init_env),
            ProcessSpec(
                "init-pytorch", True, ("sh", "-c", "nslookup 127.0.0.1"), "/jobs/demo", init_env, noop
            ),
        ),
        main=(
            ProcessSpec(
                "pytorch",
                False,
                ("python", "train.py", "--hostfile", "/state/cfg/hostfile"),
                "/jobs/demo/src",
                env,
            ),
        ),
        grace_seconds=5.0,
    )
    assert build_pod_processes(p, ctx, template_init_count=1) == want


PATH = "spec.pytorchReplicaSpecs[Worker]"


@pytest.mark.parametrize(
    ("rendered", "template", "want"),
    [
        pytest.param(
            pod([{"name": "pytorch", "image": "i"}]),
            pod([{"name": "pytorch", "image": "i"}]),
            [
                FieldError(
                    f"{PATH}.template.spec.containers[0].command",
                    "Required value: the local backend runs host processes, so each container needs a "
                    "command (the image's entrypoint is not used, except for the images of train(): "
                    'docs/finetune.md); add e.g. command: ["python", "train.py"]',
                )
            ],
            id="no command",
        ),
        pytest.param(
            pod(
                [{"name": "mpi", "command": ["sleep"], "args": ["365d"]}],
                initContainers=[{"name": "kubectl-delivery"}],
            ),
            pod([{"name": "mpi"}]),
            [],
            id="commands and helpers the operator adds are fine",
        ),
        pytest.param(
            pod(
                [
                    {
                        "name": "c",
                        "command": ["x"],
                        "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                    }
                ],
                volumes=[
                    {"name": "v", "configMap": {"name": "user-cm"}},
                    {"name": "w", "secret": {"secretName": "s"}},
                ],
            ),
            pod([{"name": "c", "env": [{}]}], volumes=[{}, {}]),
            [
                FieldError(
                    f"{PATH}.template.spec.containers[0].env[0].valueFrom.secretKeyRef",
                    "Forbidden: the local backend has no ConfigMaps or Secrets to read; put the value in "
                    "env[].value (or mark the reference optional: true)",
                ),
                FieldError(
                    f"{PATH}.template.spec.volumes[0].configMap.name",
                    'Not found: "user-cm": the local backend has only the ConfigMaps the job itself '
                    "creates; use a hostPath volume pointing at a local directory instead",
                ),
                FieldError(
                    f"{PATH}.template.spec.volumes[1]",
                    'Unsupported value: "secret": the local backend supports emptyDir (a per-replica '
                    "directory), configMap (created by the job), hostPath (used as is) and "
                    "persistentVolumeClaim (a directory of the job, shared by its replicas) volumes",
                ),
            ],
            id="secrets and ConfigMaps that only exist on a cluster",
        ),
        pytest.param(
            pod(
                [
                    {
                        "name": "c",
                        "command": ["x"],
                        "env": [
                            {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeSelector"}}},
                            {
                                "name": "B",
                                "valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}},
                            },
                            {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "c", "optional": True}}},
                            {"name": "D", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                            {"name": "E", "value": "x"},
                            {"name": "F", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                        ],
                        "envFrom": [
                            {"configMapRef": {"name": "a"}},
                            {"secretRef": {"name": "b", "optional": True}},
                        ],
                    }
                ],
            ),
            pod([{"name": "c", "env": [{}] * 5}]),
            [
                FieldError(
                    f"{PATH}.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
                    'Unsupported value: "spec.nodeSelector": supported values: "metadata.name", '
                    '"metadata.namespace", "metadata.uid", "metadata.labels[\'<key>\']", '
                    '"metadata.annotations[\'<key>\']", "spec.nodeName", "spec.serviceAccountName", '
                    '"status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs"',
                ),
                FieldError(
                    f"{PATH}.template.spec.containers[0].env[1].valueFrom.resourceFieldRef.resource",
                    'Unsupported value: "limits.nvidia.com/gpu": supported values: "limits.cpu", '
                    '"limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", '
                    '"requests.ephemeral-storage"',
                ),
                FieldError(
                    f"{PATH}.template.spec.containers[0].env[3].valueFrom.configMapKeyRef",
                    "Forbidden: the local backend has no ConfigMaps or Secrets to read; put the value in "
                    "env[].value (or mark the reference optional: true)",
                ),
                FieldError(
                    f"{PATH}.template.spec.containers[0].envFrom[0]",
                    "Forbidden: the local backend has no ConfigMaps or Secrets to read; list the variables "
                    "under env",
                ),
            ],
            id="env the local backend cannot resolve; entries past the template's (the operator's) unchecked",
        ),
    ],
)
def test_detect_pod_errors(
    rendered: dict[str, Any], template: dict[str, Any], want: list[FieldError]
) -> None:
    assert detect_pod_errors(rendered, template, PATH, configmaps=["j-config"]) == want


# The MPI agent, byte for byte as the local backend wrote it before MPI's names moved to its plugin.
MPI_AGENT = r"""#!/bin/sh
# trainop local backend: runs a command in a replica's context (replaces kubectl exec).
pod="$1"; shift
job=mine
refuse() {
  echo "trainop rsh agent: refusing \"$pod\": $1" >&2
  exit 255
}
case "$pod" in
  "$job-launcher") ;;
  "$job-worker-"*)
    case "${pod#"$job-worker-"}" in
      ""|*[!0-9]*) refuse "not a replica of MPIJob $job (only its launcher and workers)" ;;
    esac ;;
  *) refuse "not a replica of MPIJob $job (only its launcher and workers)" ;;
esac
ctx='/state/x y/jobs/default/mine/exec'/"$pod".sh
if [ ! -f "$ctx" ]; then
  echo "trainop rsh agent: replica $pod of this job is not running on this machine" >&2
  exit 255
fi
exec /bin/sh "$ctx" /bin/sh -c "$*"
"""


def test_mpi_rsh_agent_script() -> None:
    mpi = capabilities(REGISTRY.get("MPIJob")).remote_exec
    assert mpi is not None
    assert build_rsh_agent("/state/x y/jobs/default/mine/exec/", "MPIJob", mpi.exec_agent) == MPI_AGENT


def run(state: str, exit_code: int | None = None, last: int | None = None) -> ContainerRun:
    c = ContainerRun(ProcessSpec("c", False, ("x",), "/", {}), "img", attempt=0)
    c.running = state == "running"
    if state == "terminated":
        c.terminated = {"exitCode": exit_code}
    if last is not None:
        c.last_terminated = {"exitCode": last}
    return c


@pytest.mark.parametrize(
    ("policy", "containers", "want"),
    [
        pytest.param("OnFailure", [run("running"), run("terminated", 0)], "Running", id="one still running"),
        pytest.param(
            "OnFailure", [run("terminated", 0), run("terminated", 0)], "Succeeded", id="all exited 0"
        ),
        pytest.param("Never", [run("terminated", 0), run("terminated", 2)], "Failed", id="Never: one failed"),
        pytest.param(
            "OnFailure", [run("waiting", last=1)], "Running", id="OnFailure: crash-looping counts as stopped"
        ),
        pytest.param("Always", [run("terminated", 0)], "Running", id="Always: never finishes"),
        pytest.param("Never", [run("waiting")], "Pending", id="not started yet"),
    ],
)
def test_pod_phase_follows_the_kubelet(policy: str, containers: list[ContainerRun], want: str) -> None:
    p = PodRun(
        obj={"metadata": {"name": "p"}, "spec": {"restartPolicy": policy}}, created_at=0.0, scheduled=True
    )
    p.plan = PodProcesses((), tuple(c.spec for c in containers), 30.0)
    p.mains = containers
    assert compute_phase(p) == want
