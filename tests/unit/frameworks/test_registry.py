"""The registry covers the six kinds with the right static facts, and the plugins stay pure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import trainop.frameworks
from trainop.api.errors import FieldError
from trainop.api.kinds import KIND_INFO
from trainop.core.plugin import FrameworkPlugin, capabilities
from trainop.frameworks.registry import REGISTRY, UnknownKindError
from trainop.testing.builders import (
    JobBuilder,
    jax_job,
    mpi_job,
    paddle_job,
    pytorch_job,
    tf_job,
    xgboost_job,
)


def test_registry_kinds_and_capabilities() -> None:
    got = {
        kind: (REGISTRY.get(kind).info, _capability_names(REGISTRY.get(kind))) for kind in REGISTRY.kinds()
    }
    want = {
        "PyTorchJob": (KIND_INFO["PyTorchJob"], {"ExtraObjects", "LocalEnv", "LocalNoopHelpers"}),
        "TFJob": (KIND_INFO["TFJob"], set()),
        "XGBoostJob": (KIND_INFO["XGBoostJob"], set()),
        "MPIJob": (
            KIND_INFO["MPIJob"],
            {"ExtraObjects", "PodEvents", "LoopbackEnv", "LocalEnv", "LocalNoopHelpers", "RemoteExec"},
        ),
        "PaddleJob": (KIND_INFO["PaddleJob"], {"LoopbackEnv"}),
        "JAXJob": (KIND_INFO["JAXJob"], {"LoopbackEnv"}),
    }
    assert got == want


def _capability_names(plugin: FrameworkPlugin) -> set[str]:
    caps = capabilities(plugin)
    present = {
        "ExtraObjects": caps.extra_objects,
        "PodEvents": caps.pod_events,
        "LoopbackEnv": caps.loopback_env,
        "LocalEnv": caps.local_env,
        "LocalNoopHelpers": caps.noop_helpers,
        "RemoteExec": caps.remote_exec,
    }
    return {name for name, value in present.items() if value is not None}


def test_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(UnknownKindError) as err:
        REGISTRY.get("MXJob")
    assert err.value.args[0] == (
        "no framework plugin for kind 'MXJob'; known kinds: PyTorchJob, TFJob, XGBoostJob, MPIJob, "
        "PaddleJob, JAXJob"
    )


# Layers below frameworks, plus the standard library modules a pure module may use.
ALLOWED_TOP = {"__future__", "collections", "copy", "dataclasses", "json", "types", "typing", "trainop"}
ALLOWED_TRAINOP = ("trainop.api", "trainop.core", "trainop.frameworks")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_frameworks_import_nothing_impure() -> None:
    pkg = Path(trainop.frameworks.__file__).parent
    bad = {
        f"{path.name}: {name}"
        for path in sorted(pkg.glob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] not in ALLOWED_TOP
        or (name.startswith("trainop") and not name.startswith(ALLOWED_TRAINOP))
    }
    assert bad == set()


VALIDATE_CASES = [
    pytest.param(
        pytorch_job("a").master(2).workers(1),
        [FieldError("spec.pytorchReplicaSpecs[Master].replicas", "Forbidden: must be 1")],
        id="pytorch: Master replicas must be 1",
    ),
    pytest.param(
        tf_job("t").chief(1).master(1),
        [FieldError("spec.tfReplicaSpecs", "Forbidden: must not have more than 1 Chief or Master role")],
        id="tf: one Chief or Master",
    ),
    pytest.param(
        xgboost_job("x").workers(1),
        [FieldError("spec.xgbReplicaSpecs[Master]", "Required value: must be present")],
        id="xgboost: Master required",
    ),
    pytest.param(
        mpi_job("m").launcher(2),
        [
            FieldError(
                "spec.mpiReplicaSpecs[Launcher].replicas",
                "MPIReplicaSpec is not valid: There must be only 1 launcher replica",
            )
        ],
        id="mpi: one launcher (in-controller rule)",
    ),
    pytest.param(
        paddle_job("p").replicas("worker", 1),
        [
            FieldError(
                "spec.paddleReplicaSpecs[worker]",
                'Unsupported value: "worker": supported values: "Master", "Worker"',
            )
        ],
        id="paddle: replica keys are case-sensitive before defaulting",
    ),
    pytest.param(
        jax_job("j").replicas("Master", 1),
        [
            FieldError(
                "spec.jaxReplicaSpecs[Master]", 'Unsupported value: "Master": supported values: "Worker"'
            )
        ],
        id="jax: Worker only",
    ),
    pytest.param(pytorch_job("a").master(1).workers(2), [], id="a valid job has no errors"),
]


@pytest.mark.parametrize(("builder", "want"), VALIDATE_CASES)
def test_spec_hooks_apply_the_kinds_admission_rules(builder: JobBuilder, want: list[FieldError]) -> None:
    job = builder.build()  # raw: webhooks see the undefaulted job (§1.4)
    assert job.spec.upstream_errors(job, None) == want


def test_only_mpi_has_no_replica_services_and_keeps_its_failed_pods() -> None:
    # §3.9/§4.4: MPI's launcher drives its workers through its rsh agent; every other kind gets one
    # headless Service per replica (§3.2) and core's restart path for failed pods (§4.5).
    assert {k for k, info in KIND_INFO.items() if not info.replica_services} == {"MPIJob"}
    assert {k for k, info in KIND_INFO.items() if not info.restarts_failed_pods} == {"MPIJob"}
