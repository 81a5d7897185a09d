"""A replica pod's containers on the local backend: init containers first and in order, every app
container, a shared emptyDir, and a pod that succeeds only when all its containers exit 0."""

from __future__ import annotations

from typing import Any

import pytest
from local_harness import condition

from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration


def step(name: str, cmd: str) -> dict[str, Any]:
    """A container that shares the pod's ``scratch`` emptyDir at /scratch."""
    mount = [{"name": "scratch", "mountPath": "/scratch"}]
    return {"name": name, "image": "i", "command": ["sh", "-c", cmd], "volumeMounts": mount}


def containers(template: dict[str, Any]) -> None:
    spec = template["spec"]
    spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    spec["initContainers"] = [
        step("first", "echo init-1 >> /scratch/order"),
        step("second", "sleep 0.3; echo init-2 >> /scratch/order"),
    ]
    spec["containers"] = [
        step("pytorch", "sleep 0.5; echo main >> /scratch/order; cat /scratch/order"),
        step("sidecar", "echo sidecar-ran"),
    ]


def test_init_containers_then_every_container(backend: LocalBackend) -> None:
    manifest = pytorch_job("pods").master(1).restart_policy("Never").template(containers).build_dict()
    job = backend.wait(backend.submit(manifest).name, ["Succeeded", "Failed"], timeout=60)
    master = backend.pods("pods")[0]
    lines = {(line.container, line.text) for line in backend.logs("pods")}
    got = {
        "succeeded": condition(job, "Succeeded") is not None,
        "pod": master["status"]["phase"],
        "exit codes": sorted(
            (cs["name"], cs["state"]["terminated"]["exitCode"])
            for key in ("initContainerStatuses", "containerStatuses")
            for cs in master["status"][key]
        ),
        "order seen by the app container": sorted(t for c, t in lines if c == "pytorch"),
        "sidecar": ("sidecar", "sidecar-ran") in lines,
    }
    want = {
        "succeeded": True,
        "pod": "Succeeded",
        "exit codes": [("first", 0), ("pytorch", 0), ("second", 0), ("sidecar", 0)],
        "order seen by the app container": ["init-1", "init-2", "main"],
        "sidecar": True,
    }
    assert got == want


def test_a_failing_init_container_fails_the_pod_under_never(backend: LocalBackend) -> None:
    def failing_init(template: dict[str, Any]) -> None:
        template["spec"]["initContainers"] = [
            {"name": "setup", "image": "i", "command": ["sh", "-c", "exit 7"]}
        ]

    manifest = (
        pytorch_job("initfail")
        .master(1)
        .restart_policy("Never")
        .command(["true"])
        .template(failing_init)
        .build_dict()
    )
    job = backend.wait(backend.submit(manifest).name, ["Succeeded", "Failed"], timeout=60)
    master = backend.pods("initfail")[0]
    init = master["status"]["initContainerStatuses"][0]["state"]["terminated"]
    main = master["status"]["containerStatuses"][0]["state"]
    got = (condition(job, "Failed") is not None, master["status"]["phase"], init["exitCode"], list(main))
    assert got == (True, "Failed", 7, ["waiting"])
