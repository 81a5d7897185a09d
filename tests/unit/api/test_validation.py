"""validate_job: one case per rule of contract §2 (upstream paths and messages) and per trainop rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from trainop.api.load import parse_job
from trainop.api.validation import validate_for_apply, validate_job, validation_warnings
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
MANAGED = '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'

Edit = Callable[[dict[str, Any]], None]


def valid(kind: str, name: str = "a") -> JobBuilder:
    """A job of ``kind`` that passes every rule."""
    return {
        "PyTorchJob": lambda: pytorch_job(name).master(1).workers(2),
        "TFJob": lambda: tf_job(name).ps(1).workers(2),
        "XGBoostJob": lambda: xgboost_job(name).master(1).workers(2),
        "MPIJob": lambda: mpi_job(name).launcher(1).workers(2),
        "PaddleJob": lambda: paddle_job(name).workers(2),
        "JAXJob": lambda: jax_job(name).workers(2),
    }[kind]()


def doc(builder: JobBuilder, *edits: Edit) -> dict[str, Any]:
    d = builder.build_dict()
    for edit in edits:
        edit(d)
    return d


def specs(d: dict[str, Any]) -> dict[str, Any]:
    """The replica map of a job dict."""
    return next(v for k, v in d["spec"].items() if k.endswith("ReplicaSpecs"))


def containers(rtype: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    return lambda d: specs(d)[rtype]["template"]["spec"]["containers"]


def set_containers(rtype: str, value: Any) -> Edit:
    return lambda d: specs(d)[rtype]["template"]["spec"].__setitem__("containers", value)


def drop_replica_map(d: dict[str, Any]) -> None:
    del d["spec"][next(k for k in d["spec"] if k.endswith("ReplicaSpecs"))]


def rename_key(old: str, new: str) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        m = specs(d)
        m[new] = m.pop(old)

    return edit


def set_path(path: str, value: Any) -> Edit:
    """Set a dotted path in the job dict (``spec.runPolicy.backoffLimit``), creating mappings on the way;
    ``[Type]`` addresses the replica map."""

    def edit(d: dict[str, Any]) -> None:
        node: Any = d
        parts = path.split(".")
        for part in parts[:-1]:
            node = specs(d)[part[1:-1]] if part.startswith("[") else node.setdefault(part, {})
        node[parts[-1]] = value

    return edit


def drop(rtype: str, field: str) -> Edit:
    return lambda d: specs(d)[rtype].pop(field, None)


UPSTREAM_CASES = [
    # --- C1: metadata.name is a DNS-1035 label (all webhook kinds, JAX included) ---
    *[
        pytest.param(
            doc(valid(kind, "My_Job")),
            None,
            [f'metadata.name: Invalid value: "My_Job": should match: {DNS1035}'],
            id=f"C1 {kind}: name not a DNS-1035 label",
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
    ],
    pytest.param(
        doc(valid("TFJob", "a" * 64)),
        None,
        [f'metadata.name: Invalid value: "{"a" * 64}": should match: must be no more than 63 characters'],
        id="C1: name longer than 63 characters",
    ),
    pytest.param(
        doc(valid("TFJob", "9" + "A" * 63)),
        None,
        [
            f'metadata.name: Invalid value: "{"9" + "A" * 63}": should match: must be no more than 63 '
            f"characters,{DNS1035}"
        ],
        id="C1: both reasons joined by a comma",
    ),
    # --- C2: the replica map is required ---
    *[
        pytest.param(
            doc(valid(kind), drop_replica_map),
            None,
            [f"spec.{field}: Required value: must be required"],
            id=f"C2 {kind}: replica map missing",
        )
        for kind, field in (
            ("PyTorchJob", "pytorchReplicaSpecs"),
            ("TFJob", "tfReplicaSpecs"),
            ("PaddleJob", "paddleReplicaSpecs"),
            ("JAXJob", "jaxReplicaSpecs"),
        )
    ],
    pytest.param(
        doc(valid("XGBoostJob"), drop_replica_map),
        None,
        [
            "spec.xgbReplicaSpecs: Required value: must be required",
            "spec.xgbReplicaSpecs[Master]: Required value: must be present",
        ],
        id="C2 XGBoostJob: replica map missing (and so the Master)",
    ),
    # --- C3: at least one container (C5 follows, as upstream appends both) ---
    *[
        pytest.param(
            doc(valid(kind), set_containers("Worker", [])),
            None,
            [
                f"spec.{field}[Worker].template.spec.containers: Required value: must be specified",
                f"spec.{field}[Worker].template.spec.containers: Required value: must have at least one "
                f"container with name {name}",
            ],
            id=f"C3 {kind}: no containers",
        )
        for kind, field, name in (
            ("PyTorchJob", "pytorchReplicaSpecs", "pytorch"),
            ("TFJob", "tfReplicaSpecs", "tensorflow"),
            ("XGBoostJob", "xgbReplicaSpecs", "xgboost"),
            ("PaddleJob", "paddleReplicaSpecs", '"paddle"'),
            ("JAXJob", "jaxReplicaSpecs", "jax"),
        )
    ],
    pytest.param(
        doc(valid("PyTorchJob"), lambda d: specs(d)["Worker"].pop("template")),
        None,
        [
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must be specified",
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must have at "
            "least one container with name pytorch",
        ],
        id="C3: no template at all",
    ),
    # --- C4: every container has an image ---
    pytest.param(
        doc(
            valid("PyTorchJob").container("Worker", name="sidecar"),
            lambda d: containers("Worker")(d)[0].pop("image"),
        ),
        None,
        [
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be "
            "required",
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers[1].image: Required value: must be "
            "required",
        ],
        id="C4: containers without image, each by index",
    ),
    pytest.param(
        doc(
            valid("JAXJob").image(""),
        ),
        None,
        ["spec.jaxReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required"],
        id="C4 JAXJob: empty image",
    ),
    # --- C5: a container with the default name ---
    *[
        pytest.param(
            doc(valid(kind), lambda d: containers("Worker")(d)[0].__setitem__("name", "main")),
            None,
            [
                f"spec.{field}[Worker].template.spec.containers: Required value: must have at least one "
                f"container with name {name}"
            ],
            id=f"C5 {kind}: no default-named container",
        )
        for kind, field, name in (
            ("PyTorchJob", "pytorchReplicaSpecs", "pytorch"),
            ("TFJob", "tfReplicaSpecs", "tensorflow"),
            ("XGBoostJob", "xgbReplicaSpecs", "xgboost"),
            ("PaddleJob", "paddleReplicaSpecs", '"paddle"'),
            ("JAXJob", "jaxReplicaSpecs", "jax"),
        )
    ],
    # --- C6: managedBy values (not JAX) ---
    *[
        pytest.param(
            doc(valid(kind).managed_by("me")),
            None,
            [f'spec.runPolicy.managedBy: Unsupported value: "me": supported values: {MANAGED}'],
            id=f"C6 {kind}: unsupported managedBy",
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob")
    ],
    pytest.param(
        doc(valid("JAXJob").managed_by("me")), None, [], id="C6 JAXJob: managedBy is not checked (§9.3)"
    ),
    pytest.param(
        doc(valid("TFJob").managed_by("kueue.x-k8s.io/multikueue")), None, [], id="C6: multikueue is accepted"
    ),
    # --- C7: managedBy is immutable on update (not JAX) ---
    *[
        pytest.param(
            doc(valid(kind).managed_by("kueue.x-k8s.io/multikueue")),
            doc(valid(kind).managed_by("kubeflow.org/training-operator")),
            ['spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'],
            id=f"C7 {kind}: managedBy changed",
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob")
    ],
    pytest.param(
        doc(valid("TFJob")),
        doc(valid("TFJob").managed_by("kubeflow.org/training-operator")),
        ['spec.runPolicy.managedBy: Invalid value: "null": field is immutable'],
        id="C7: managedBy removed",
    ),
    pytest.param(
        doc(valid("JAXJob").managed_by("kueue.x-k8s.io/multikueue")),
        doc(valid("JAXJob")),
        [],
        id="C7 JAXJob: update sees only the new job",
    ),
    pytest.param(doc(valid("PaddleJob")), doc(valid("PaddleJob")), [], id="C7: unchanged managedBy passes"),
    # --- replica-type keys (PyTorch, XGBoost, Paddle, JAX; case-sensitive, before defaulting) ---
    *[
        pytest.param(
            doc(valid(kind), rename_key("Worker", "worker")),
            None,
            [f'spec.{field}[worker]: Unsupported value: "worker": supported values: {supported}'],
            id=f"keys {kind}: lower-case worker rejected",
        )
        for kind, field, supported in (
            ("XGBoostJob", "xgbReplicaSpecs", '"Master", "Worker"'),
            ("PaddleJob", "paddleReplicaSpecs", '"Master", "Worker"'),
            ("JAXJob", "jaxReplicaSpecs", '"Worker"'),
        )
    ],
    pytest.param(
        doc(valid("PyTorchJob"), rename_key("Worker", "Launcher")),
        None,
        [
            'spec.pytorchReplicaSpecs[Launcher]: Unsupported value: "Launcher": supported values: '
            '"Master", "Worker"'
        ],
        id="keys PyTorchJob: unknown type rejected",
    ),
    pytest.param(
        doc(valid("TFJob"), rename_key("Worker", "worker"), rename_key("PS", "Foo")),
        None,
        [],
        id="keys TFJob: not checked (upstream)",
    ),
    # --- PyTorchJob (§2.3) ---
    pytest.param(
        doc(valid("PyTorchJob"), drop("Master", "replicas")),
        None,
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
        id="PyTorch: Master replicas unset is rejected (v1.8+)",
    ),
    pytest.param(
        doc(pytorch_job("a").master(2).workers(1)),
        None,
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
        id="PyTorch: Master replicas 2",
    ),
    pytest.param(
        doc(pytorch_job("a").master(1).workers(0)),
        None,
        ["spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"],
        id="PyTorch: Worker replicas 0",
    ),
    pytest.param(
        doc(pytorch_job("a").master(1).elastic(min=1, max=2)),
        None,
        ["spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used"],
        id="PyTorch: elasticPolicy without Worker",
    ),
    pytest.param(
        doc(pytorch_job("a").workers(2).elastic(min=1, max=2, n_proc_per_node=2).nproc_per_node("2")),
        None,
        ["spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode"],
        id="PyTorch: deprecated elasticPolicy.nProcPerNode with nprocPerNode",
    ),
    pytest.param(
        doc(pytorch_job("a").workers(2).elastic(min=1, max=2, n_proc_per_node=2)),
        None,
        [],
        id="PyTorch: deprecated elasticPolicy.nProcPerNode alone passes (a warning)",
    ),
    # --- TFJob (§2.3) ---
    pytest.param(
        doc(tf_job("a").chief(1).master(1).workers(1)),
        None,
        ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"],
        id="TF: Chief and Master together",
    ),
    pytest.param(doc(tf_job("a").chief(3).workers(1)), None, [], id="TF: Chief replicas are not checked"),
    # --- XGBoostJob (§2.3) ---
    pytest.param(
        doc(xgboost_job("a").workers(2)),
        None,
        ["spec.xgbReplicaSpecs[Master]: Required value: must be present"],
        id="XGBoost: no Master",
    ),
    pytest.param(
        doc(valid("XGBoostJob"), drop("Master", "replicas")),
        None,
        ["spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"],
        id="XGBoost: Master replicas unset",
    ),
    pytest.param(
        doc(xgboost_job("a").master(3)),
        None,
        ["spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"],
        id="XGBoost: Master replicas 3",
    ),
    # --- MPIJob (§2.4, in-controller messages under their paths) ---
    pytest.param(
        doc(valid("MPIJob"), drop_replica_map),
        None,
        ["spec.mpiReplicaSpecs: MPIReplicaSpecs is not valid"],
        id="MPI: replica map missing",
    ),
    pytest.param(
        doc(valid("MPIJob"), set_containers("Worker", [])),
        None,
        [
            "spec.mpiReplicaSpecs[Worker].template.spec.containers: MPIReplicaSpecs is not valid: "
            "containers definition expected in Worker"
        ],
        id="MPI: no containers",
    ),
    pytest.param(
        doc(valid("MPIJob"), rename_key("Worker", "worker")),
        None,
        ["spec.mpiReplicaSpecs[worker]: MPIReplicaType is worker but must be one of [Launcher Worker]"],
        id="MPI: key not exactly Launcher or Worker",
    ),
    pytest.param(
        doc(
            valid("MPIJob").image(""),
        ),
        None,
        [
            "spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].image: MPIReplicaSpec is not "
            "valid: Image is undefined in the container of Launcher",
            "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].image: MPIReplicaSpec is not valid: "
            "Image is undefined in the container of Worker",
        ],
        id="MPI: container without image",
    ),
    pytest.param(
        doc(valid("MPIJob"), lambda d: containers("Worker")(d)[0].pop("name")),
        None,
        [
            "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].name: MPIReplicaSpec is not valid: "
            "ImageName is undefined in the container of Worker"
        ],
        id="MPI: container without name",
    ),
    pytest.param(
        doc(mpi_job("a").launcher(2).workers(1)),
        None,
        [
            "spec.mpiReplicaSpecs[Launcher].replicas: MPIReplicaSpec is not valid: There must be only 1 "
            "launcher replica"
        ],
        id="MPI: two launchers",
    ),
    pytest.param(
        doc(mpi_job("a").workers(2)),
        None,
        ["spec.mpiReplicaSpecs[Launcher]: MPIReplicaSpec is not valid: Master ReplicaSpec must be present"],
        id="MPI: no Launcher",
    ),
    pytest.param(doc(mpi_job("a").launcher(None).workers(None)), None, [], id="MPI: replicas unset pass"),
    pytest.param(
        doc(
            mpi_job(
                "a",
            ).launcher(1),
            lambda d: d["metadata"].update(name="a_b"),
        ),
        None,
        [f'metadata.name: Invalid value: "a_b": {SUBDOMAIN}'],
        id="MPI: no DNS-1035 rule, but pod names need a DNS-1123 subdomain",
    ),
]


def _name(n: int) -> str:
    return "j" * n


TRAINOP_CASES = [
    # --- §9.14: <job>-<rt>-<i> over 63 characters ---
    pytest.param(
        doc(pytorch_job(_name(55)).master(1).workers(11)),
        None,
        [
            f'metadata.name: Invalid value: "{_name(55)}": the pod and Service name '
            f'"{_name(55)}-worker-10" would be 65 '
            "characters, over the 63 a DNS-1035 label allows; shorten metadata.name by 2 characters"
        ],
        id="9.14: the longest replica name overflows (worker-10)",
    ),
    pytest.param(
        doc(tf_job(_name(53)).ps(1).workers(1).evaluator(1)),
        None,
        [
            f'metadata.name: Invalid value: "{_name(53)}": the pod and Service name '
            f'"{_name(53)}-evaluator-0" would be 65 '
            "characters, over the 63 a DNS-1035 label allows; shorten metadata.name by 2 characters"
        ],
        id="9.14: the longest replica type decides (evaluator)",
    ),
    pytest.param(
        doc(pytorch_job(_name(54)).workers(9).elastic(min=1, max=12)),
        None,
        [
            f'metadata.name: Invalid value: "{_name(54)}": the pod and Service name '
            f'"{_name(54)}-worker-11" would be 64 '
            "characters, over the 63 a DNS-1035 label allows; shorten metadata.name by 1 character"
        ],
        id="9.14: elastic maxReplicas counts",
    ),
    pytest.param(doc(jax_job(_name(54)).workers(10)), None, [], id="9.14: exactly 63 characters pass"),
    pytest.param(
        doc(
            jax_job("x").workers(1),
            lambda d: d["metadata"].pop("name"),
            set_path("metadata.generateName", _name(56) + "-"),
        ),
        None,
        [
            f'metadata.generateName: Invalid value: "{_name(56)}-": the pod and Service name '
            f'"{_name(56)}-xxxxx-worker-0" '
            "would be 71 characters, over the 63 a DNS-1035 label allows; shorten metadata.generateName "
            "by 8 characters"
        ],
        id="9.14: generateName counts the 5 generated characters",
    ),
    pytest.param(
        doc(mpi_job(_name(64)).launcher(1)),
        None,
        [
            f'metadata.name: Invalid value: "{_name(64)}": must be no more than 63 characters: it is the '
            "value of the training.kubeflow.org/job-name label on every pod; shorten it by 1 character"
        ],
        id="MPI: name longer than a label value",
    ),
    # --- replicas 0 and negative ---
    pytest.param(
        doc(tf_job("a").chief(1).workers(0)),
        None,
        [
            "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 0: must be at least 1; to run no "
            "Worker pods, remove spec.tfReplicaSpecs[Worker] instead"
        ],
        id="replicas 0 (TF Worker)",
    ),
    pytest.param(
        doc(paddle_job("a").workers(-1)),
        None,
        ["spec.paddleReplicaSpecs[Worker].replicas: Invalid value: -1: must be at least 1"],
        id="replicas negative (Paddle)",
    ),
    pytest.param(
        doc(xgboost_job("a").master(1).workers(0)),
        None,
        [
            "spec.xgbReplicaSpecs[Worker].replicas: Invalid value: 0: must be at least 1; to run no "
            "Worker pods, remove spec.xgbReplicaSpecs[Worker] instead"
        ],
        id="replicas 0 (XGBoost Worker)",
    ),
    pytest.param(doc(mpi_job("a").launcher(1).workers(0)), None, [], id="MPI Worker 0 is upstream's default"),
    pytest.param(
        doc(mpi_job("a").launcher(1).workers(-2)),
        None,
        ["spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 0"],
        id="MPI Worker negative",
    ),
    # --- unknown fields ---
    pytest.param(
        doc(valid("PyTorchJob"), set_path("spec.runPolicy.backofLimit", 3)),
        None,
        [
            "spec.runPolicy.backofLimit: Unsupported field: Kubernetes would drop it; did you mean "
            '"backoffLimit"?'
        ],
        id="unknown field: typo with a suggestion",
    ),
    pytest.param(
        doc(valid("TFJob"), set_path("spec.runPolicy.ttl_seconds_after_finished", 3)),
        None,
        [
            "spec.runPolicy.ttl_seconds_after_finished: Unsupported field: Kubernetes would drop it; "
            'did you mean "ttlSecondsAfterFinished"?'
        ],
        id="unknown field: snake_case is not accepted",
    ),
    pytest.param(
        doc(valid("XGBoostJob"), set_path("[Worker].replica", 3)),
        None,
        [
            "spec.xgbReplicaSpecs[Worker].replica: Unsupported field: Kubernetes would drop it; did you "
            'mean "replicas"?'
        ],
        id="unknown field inside a replica spec",
    ),
    pytest.param(
        doc(
            valid("PyTorchJob").elastic(min=1, max=2, rdzv_conf={"k": "v"}),
            lambda d: d["spec"]["elasticPolicy"]["rdzvConf"][0].update(val="x"),
        ),
        None,
        [
            "spec.elasticPolicy.rdzvConf[0].val: Unsupported field: Kubernetes would drop it; did you "
            'mean "value"?'
        ],
        id="unknown field inside a list item",
    ),
    pytest.param(
        doc(valid("JAXJob"), set_path("spec.runPolicy.schedulingPolicy.zzz", 1)),
        None,
        [
            "spec.runPolicy.schedulingPolicy.zzz: Unsupported field: Kubernetes would drop it; the fields "
            'here are "minAvailable", "minResources", "priorityClass", "queue", "scheduleTimeoutSeconds"'
        ],
        id="unknown field without a close match lists the fields",
    ),
    pytest.param(
        doc(valid("PaddleJob"), set_path("spec.Worker", {})),
        None,
        [
            'spec.Worker: Unsupported field: Kubernetes would drop it; the fields here are "elasticPolicy", '
            '"paddleReplicaSpecs", "runPolicy"'
        ],
        id="unknown field: a replica spec outside the map",
    ),
    pytest.param(
        doc(
            valid("PaddleJob"),
            set_path("[Worker].template.spec.nodeSelectr", {}),
            set_path("[Worker].template.metadata.labelz", {"x": "1"}),
        ),
        None,
        [
            "spec.paddleReplicaSpecs[Worker].template.spec.nodeSelectr: Unsupported field: Kubernetes would "
            'drop it; did you mean "nodeSelector"?',
            "spec.paddleReplicaSpecs[Worker].template.metadata.labelz: Unsupported field: Kubernetes would "
            'drop it; did you mean "labels"?',
        ],
        id="pod templates are checked against the core/v1 schema (api/podschema)",
    ),
    # --- enumerations ---
    pytest.param(
        doc(valid("PyTorchJob").restart_policy("onFailure", "Worker")),
        None,
        [
            'spec.pytorchReplicaSpecs[Worker].restartPolicy: Unsupported value: "onFailure": supported '
            'values: "Always", "OnFailure", "Never", "ExitCode"'
        ],
        id="restartPolicy not one of the four",
    ),
    pytest.param(
        doc(valid("TFJob").run_policy(clean_pod_policy="all")),
        None,
        [
            'spec.runPolicy.cleanPodPolicy: Unsupported value: "all": supported values: "All", '
            '"Running", "None"'
        ],
        id="cleanPodPolicy not one of the three",
    ),
    pytest.param(
        doc(valid("MPIJob").spec(clean_pod_policy="Some")),
        None,
        ['spec.cleanPodPolicy: Unsupported value: "Some": supported values: "All", "Running", "None"'],
        id="MPI deprecated cleanPodPolicy checked too",
    ),
    pytest.param(
        doc(valid("TFJob").success_policy("AllWorker")),
        None,
        ['spec.successPolicy: Unsupported value: "AllWorker": supported values: "", "AllWorkers"'],
        id="TF successPolicy",
    ),
    pytest.param(
        doc(valid("PyTorchJob").nproc_per_node("all")),
        None,
        ['spec.nprocPerNode: Invalid value: "all": must be "auto", "cpu", "gpu" or a positive integer'],
        id="PyTorch nprocPerNode word",
    ),
    pytest.param(
        doc(valid("PyTorchJob").nproc_per_node("0")),
        None,
        ['spec.nprocPerNode: Invalid value: "0": must be "auto", "cpu", "gpu" or a positive integer'],
        id="PyTorch nprocPerNode 0",
    ),
    pytest.param(doc(valid("PyTorchJob").nproc_per_node("8")), None, [], id="PyTorch nprocPerNode 8 passes"),
    # --- numbers ---
    pytest.param(
        doc(
            valid("PaddleJob").run_policy(
                backoff_limit=-1,
                active_deadline_seconds=-5,
                ttl_seconds_after_finished=-1,
                scheduling_policy={"min_available": -1, "schedule_timeout_seconds": -1},
            )
        ),
        None,
        [
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0",
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -1: must be greater than or "
            "equal to 0",
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: Invalid value: -1: must be greater "
            "than or equal to 0",
        ],
        id="negative runPolicy numbers",
    ),
    pytest.param(
        doc(
            valid("PyTorchJob").run_policy(
                backoff_limit=0, active_deadline_seconds=0, ttl_seconds_after_finished=0
            )
        ),
        None,
        [],
        id="zero runPolicy numbers pass",
    ),
    pytest.param(
        doc(pytorch_job("a").workers(2).elastic(min=3, max=2, max_restarts=-1, rdzv_port=70000)),
        None,
        [
            "spec.elasticPolicy.minReplicas: Invalid value: 3: must be less than or equal to "
            "spec.elasticPolicy.maxReplicas (2)",
            "spec.elasticPolicy.maxRestarts: Invalid value: -1: must be greater than or equal to 0",
            "spec.elasticPolicy.rdzvPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ],
        id="elastic policy numbers",
    ),
    pytest.param(
        doc(paddle_job("a").workers(2).elastic(min=0, max=0)),
        None,
        [
            "spec.elasticPolicy.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.elasticPolicy.maxReplicas: Invalid value: 0: must be greater than or equal to 1",
        ],
        id="Paddle elastic min/max below 1",
    ),
    pytest.param(
        doc(valid("MPIJob").slots_per_worker(0)),
        None,
        ["spec.slotsPerWorker: Invalid value: 0: must be greater than or equal to 1"],
        id="MPI slotsPerWorker 0",
    ),
    # --- queue immutability (the CRD's CEL rule, repeated for the local backend) ---
    pytest.param(
        doc(valid("JAXJob").run_policy(scheduling_policy={"queue": "b"})),
        doc(valid("JAXJob").run_policy(scheduling_policy={"queue": "a"})),
        [
            'spec.runPolicy.schedulingPolicy.queue: Invalid value: "string": '
            "spec.runPolicy.schedulingPolicy.queue is immutable"
        ],
        id="queue changed on update",
    ),
    pytest.param(
        doc(valid("JAXJob").run_policy(scheduling_policy={"queue": "b"})),
        doc(valid("JAXJob")),
        [],
        id="queue set on update where it was unset (CEL transition rules need both)",
    ),
    # --- the pod template's shape, where trainop reads it ---
    pytest.param(
        doc(valid("TFJob"), set_containers("Worker", {"name": "tensorflow"})),
        None,
        [
            'spec.tfReplicaSpecs[Worker].template.spec.containers: Invalid value: {"name":"tensorflow"}: '
            "must be a list of containers"
        ],
        id="containers not a list",
    ),
    pytest.param(
        doc(
            valid("TFJob").port(2222, rtype="Worker"),
            lambda d: containers("Worker")(d)[0]["ports"][0].update(containerPort="2222"),
        ),
        None,
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Invalid "
            'value: "2222": must be an integer'
        ],
        id="containerPort a string",
    ),
    pytest.param(
        doc(
            valid("TFJob").port(2222, rtype="Worker"),
            lambda d: containers("Worker")(d)[0]["ports"][0].pop("containerPort"),
        ),
        None,
        ["spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Required value"],
        id="containerPort missing",
    ),
    pytest.param(
        doc(valid("TFJob").port(0, rtype="Worker")),
        None,
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Invalid "
            "value: 0: must be between 1 and 65535, inclusive"
        ],
        id="containerPort 0",
    ),
    pytest.param(
        doc(valid("TFJob"), lambda d: containers("Worker")(d)[0].update(image=3)),
        None,
        ["spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Invalid value: 3: must be a string"],
        id="image not a string",
    ),
]


@pytest.mark.parametrize(("raw", "old", "want"), [*UPSTREAM_CASES, *TRAINOP_CASES])
def test_validate_job(raw: dict[str, Any], old: dict[str, Any] | None, want: list[str]) -> None:
    got = validate_job(parse_job(raw), parse_job(old) if old is not None else None)
    assert [str(e) for e in got] == want


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"])
def test_valid_jobs_pass(kind: str) -> None:
    assert validate_job(valid(kind).build()) == []


WARNINGS = [
    pytest.param(
        valid("PyTorchJob").elastic(min=1, max=2, n_proc_per_node=2),
        ["spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"],
        id="PyTorch elasticPolicy.nProcPerNode",
    ),
    pytest.param(
        valid("MPIJob").spec(clean_pod_policy="All"),
        ["spec.cleanPodPolicy is deprecated, use spec.runPolicy.cleanPodPolicy instead"],
        id="MPI spec.cleanPodPolicy",
    ),
    pytest.param(valid("PyTorchJob").nproc_per_node("2"), [], id="nothing deprecated"),
    pytest.param(
        valid("PyTorchJob").gpu("Worker", 1, resource="nvidia.com/gpus"),
        [
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources.limits[nvidia.com/gpus]: "
            'no node offers "nvidia.com/gpus" (extended resource names are free-form, so it is accepted, '
            'and the pod would wait for it forever on a cluster); did you mean "nvidia.com/gpu"?'
        ],
        id="a resource name one letter off nvidia.com/gpu",
    ),
    pytest.param(
        valid("TFJob").gpu("Worker", 1, resource="Memory"),
        [
            "spec.tfReplicaSpecs[Worker].template.spec.containers[0].resources.limits[Memory]: "
            'no node offers "Memory" (extended resource names are free-form, so it is accepted, '
            'and the pod would wait for it forever on a cluster); did you mean "memory"?'
        ],
        id="a native resource name in the wrong case",
    ),
    pytest.param(
        valid("PyTorchJob").gpu("Worker", 1, resource="nvidia.com/mig-1g.5gb"),
        [],
        id="a real extended resource is not a typo",
    ),
    pytest.param(valid("PyTorchJob").gpu("Worker", 2), [], id="nvidia.com/gpu"),
]


@pytest.mark.parametrize(("builder", "want"), WARNINGS)
def test_validation_warnings(builder: JobBuilder, want: list[str]) -> None:
    assert validation_warnings(builder.build()) == want


APPLY = [
    pytest.param(
        doc(valid("PyTorchJob"), set_path("[Worker].replicas", "2")),
        [
            'spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: "2": must be an integer: write 2 '
            "without quotes"
        ],
        id="parse error: replicas as a string",
    ),
    pytest.param(
        doc(valid("PyTorchJob"), set_path("[Worker].replicas", 7), set_path("metadata.name", "Bad")),
        [f'metadata.name: Invalid value: "Bad": should match: {DNS1035}'],
        id="parsed, then validated",
    ),
]


@pytest.mark.parametrize(("raw", "want"), APPLY)
def test_validate_for_apply(raw: dict[str, Any], want: list[str]) -> None:
    assert [str(e) for e in validate_for_apply(raw)] == want


def test_validate_does_not_mutate() -> None:
    job = valid("PyTorchJob").build()
    before = job.to_dict()
    validate_job(job)
    assert job.to_dict() == before


def test_an_unknown_empty_top_level_key_still_has_a_path() -> None:
    """`"": 1` at the top of a manifest: the unknown-field error names it as "" (it had no path)."""
    obj = pytorch_job("empty-key").master(1).workers(1).build_dict()
    obj[""] = 1
    errs = validate_for_apply(obj)
    assert [(e.path, e.message.split(";")[0]) for e in errs] == [
        ('""', "Unsupported field: Kubernetes would drop it")
    ]
