"""MPI's owned objects as whole dicts (§3.9): ServiceAccount, ConfigMap, Role, RoleBinding."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.core.plugin import capabilities
from trainop.core.topology import ServiceTopology
from trainop.frameworks.registry import REGISTRY
from trainop.testing.builders import JobBuilder, mpi_job, pod

from .helpers import defaulted, observed

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "MPIJob",
    "name": "m",
    "uid": "m-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": "ns", "labels": {"app": "m"}, "ownerReferences": [OWNER]}


def kubexec(container: str = "") -> str:
    flag = f" --container {container}" if container else ""
    return (
        "#!/bin/sh\n"
        "# rsh agent for mpirun: $1 is the worker pod, the rest is the command to run there\n"
        "set -x\n"
        'POD_NAME="$1"\n'
        "shift\n"
        f'/opt/kube/kubectl exec "${{POD_NAME}}"{flag} -- /bin/sh -c "$*"\n'
    )


def objects(
    sa: str, hostfile: str, discover: str, workers: list[str], script: str = kubexec()
) -> list[dict[str, Any]]:
    exec_rule: dict[str, Any] = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    if workers:
        exec_rule["resourceNames"] = workers
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(sa)},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta("m-config"),
            "data": {"hostfile": hostfile, "kubexec.sh": script, "discover_hosts.sh": discover},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta("m-launcher"),
            "rules": [
                {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
                exec_rule,
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta("m-launcher"),
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": "ns"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "m-launcher"},
        },
    ]


def M() -> JobBuilder:
    return mpi_job("m").namespace("ns")


CASES = [
    pytest.param(
        M().launcher().workers(3).gpu("Launcher").slots_per_worker(2),
        lambda j: [
            pod(j, "Launcher", 0).running().build(),
            pod(j, "Worker", 2).running().build(),
            pod(j, "Worker", 1).pending().build(),
            pod(j, "Worker", 0).running().build(),
        ],
        objects(
            "m-launcher",
            "m-launcher slots=2\nm-worker-0 slots=2\nm-worker-1 slots=2\nm-worker-2 slots=2\n",
            "#!/bin/sh\necho m-launcher:2\necho m-worker-0:2\necho m-worker-2:2\n",
            ["m-worker-0", "m-worker-1", "m-worker-2"],
        ),
        id="GPU launcher: launcher line first; discover_hosts lists only running workers, sorted",
    ),
    pytest.param(
        M().launcher().workers(2).spec(main_container="trainer"),
        lambda j: [],
        objects(
            "m-launcher",
            "m-worker-0 slots=1\nm-worker-1 slots=1\n",
            "#!/bin/sh\n",
            ["m-worker-0", "m-worker-1"],
            kubexec("trainer"),
        ),
        id="CPU launcher, one slot, no pods yet; mainContainer in kubexec.sh",
    ),
    pytest.param(
        M()
        .launcher()
        .workers(1)
        .template(lambda t: t["spec"].update(serviceAccountName="mpi-sa"), "Launcher"),
        lambda j: [pod(j, "Worker", 0).failed().build()],
        objects("mpi-sa", "m-worker-0 slots=1\n", "#!/bin/sh\n", ["m-worker-0"]),
        id="the template's service account is created and bound; failed workers are not hosts",
    ),
    pytest.param(
        M().launcher(),
        lambda j: [],
        objects("m-launcher", "", "#!/bin/sh\n", []),
        id="no workers (Worker defaults to 0): empty hostfile, exec rule without resourceNames",
    ),
    pytest.param(
        M().launcher().workers(2),
        lambda j: [pod(j, "Launcher", 0).succeeded().build(), pod(j, "Worker", 0).running().build()],
        [],
        id="launcher finished: nothing more to ensure",
    ),
]


@pytest.mark.parametrize(("builder", "pods", "want"), CASES)
def test_mpi_extra_objects(builder: JobBuilder, pods: Any, want: list[dict[str, Any]]) -> None:
    job = defaulted(builder)
    extra = capabilities(REGISTRY.get("MPIJob")).extra_objects
    assert extra is not None
    got = extra.build_extra_objects(job, observed(job, pods(job)), ServiceTopology())
    assert got == want
