"""Gang scheduling on the local backend (issue 11), with real replica processes: jobs competing for the
same GPUs (the TRAINOP_GPUS inventory) start all their pods together or none, in priority order
(TRAINOP_PRIORITY_CLASSES), and a waiting job's pods say why (who holds the GPUs, who goes first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from local_harness import condition, running_pids, wait_for

from trainop.backends.base import BackendError
from trainop.backends.local.api import LocalBackend
from trainop.testing.builders import pytorch_job

pytestmark = pytest.mark.integration

PREFIX = "0/1 nodes are available: insufficient nvidia.com/gpu: "


def gpu_job(name: str, release: Path, priority_class: str | None = None) -> dict[str, Any]:
    """A Master and a Worker with one GPU each; they print their GPUs and hold them until ``release``."""
    hold = (
        f'echo "gpus=[$CUDA_VISIBLE_DEVICES]"; for i in $(seq 1200); do [ -f {release} ] && exit 0; '
        "sleep 0.1; done"
    )
    b = pytorch_job(name).master(1).workers(1).command(["sh", "-c", hold]).gpu("Master", 1).gpu("Worker", 1)
    if priority_class is not None:
        b = b.run_policy(scheduling_policy={"priority_class": priority_class})
    return b.build_dict()


def scheduling(backend: LocalBackend, job: str, *, whole: bool = True) -> dict[str, tuple[str, str]]:
    """Each pod's PodScheduled condition: (status, message). With ``whole`` (every pod is in the gang),
    fails the test on a partial start: some pods scheduled while others wait."""
    got: dict[str, tuple[str, str]] = {}
    for p in backend.pods(job):
        cond: dict[str, Any] = next(
            (c for c in p.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        got[p["metadata"]["name"].removeprefix(f"{job}-")] = (
            str(cond.get("status", "")),
            str(cond.get("message", "")),
        )
    states = {status for status, _ in got.values()}
    assert not (whole and "True" in states and len(states) > 1), f"{job} started partly: {got}"
    return got


def waiting_with(backend: LocalBackend, job: str, why: str) -> dict[str, tuple[str, str]] | None:
    """The job's two pods, both unscheduled with ``why`` as the gang's reason, and no process of it."""
    got = scheduling(backend, job)
    want = {pod: ("False", f"{PREFIX}pod {job}-{pod} needs 1; {why}") for pod in ("master-0", "worker-0")}
    return got if got == want and not running_pids(backend, job) else None


def gpus_seen(backend: LocalBackend, job: str) -> dict[str, str] | None:
    lines = {line.replica: line.text for line in backend.logs(job)}
    return lines if len(lines) == 2 else None


def test_jobs_competing_for_gpus_start_whole_in_priority_order(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINOP_GPUS", "0,1")  # the inventory (this machine may have no GPU)
    monkeypatch.setenv("TRAINOP_PRIORITY_CLASSES", "high=1000,low=-10")
    backend = LocalBackend(home)
    releases = {name: home.parent / f"release-{name}" for name in ("holder", "low", "high")}

    backend.submit(gpu_job("holder", releases["holder"]))
    wait_for(lambda: condition(backend.get("holder"), "Running"), "the holder to run on both GPUs")
    # low is submitted first, high second: high must still go first.
    backend.submit(gpu_job("low", releases["low"], "low"))
    backend.submit(gpu_job("high", releases["high"], "high"))
    held_by_holder = (
        "gang of 2 pods needs 2 GPUs at once, 0 of 2 are free (held by default/holder: 2); its pods start "
        "together when enough are released"
    )
    wait_for(lambda: waiting_with(backend, "high", held_by_holder), "high to wait for the holder's GPUs")
    behind_high = (
        "gang of 2 pods needs 2 GPUs at once and waits behind default/high (priorityClass high = 1000, "
        "queue default), which needs 2 GPUs and starts first"
    )
    wait_for(lambda: waiting_with(backend, "low", behind_high), "low to wait behind high")
    events = [(e.type, e.reason, e.message) for e in backend.describe("low").events]
    assert (
        "Warning",
        "FailedScheduling",
        f"{PREFIX}pod low-worker-0 needs 1; {behind_high}",
    ) in events

    # The holder ends: its GPUs go to high, whole, and low keeps waiting (now on high's GPUs).
    releases["holder"].touch()
    wait_for(lambda: condition(backend.get("high"), "Running"), "high to start once the GPUs are free")
    wait_for(lambda: len(running_pids(backend, "high")) == 2, "both of high's replicas to run")
    held_by_high = (
        "gang of 2 pods needs 2 GPUs at once, 0 of 2 are free (held by default/high: 2); its pods start "
        "together when enough are released"
    )
    wait_for(lambda: waiting_with(backend, "low", held_by_high), "low to wait for high's GPUs")
    assert scheduling(backend, "high") == {"master-0": ("True", ""), "worker-0": ("True", "")}

    releases["high"].touch()
    wait_for(lambda: condition(backend.get("low"), "Running"), "low to start once high is done")
    releases["low"].touch()
    for name in ("holder", "high", "low"):
        assert condition(backend.wait(name, ["Succeeded", "Failed"], timeout=60), "Succeeded") is not None
    seen = {
        name: wait_for(lambda n=name: gpus_seen(backend, n), f"{name}'s replicas to print")
        for name in releases
    }
    got = {name: sorted(lines.values()) for name, lines in seen.items()}
    # Each job got both GPUs, one per replica.
    want = {name: ["gpus=[0]", "gpus=[1]"] for name in releases}
    assert got == want
    assert scheduling(backend, "low") == {"master-0": ("True", ""), "worker-0": ("True", "")}


def test_a_gang_larger_than_the_machine_waits_saying_what_to_change(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINOP_GPUS", "0")
    backend = LocalBackend(home)
    backend.submit(gpu_job("big", home.parent / "never"))
    why = (
        "gang of 2 pods needs 2 GPUs at once, more than this machine has (1): lower "
        "spec.runPolicy.schedulingPolicy.minAvailable or the replicas' nvidia.com/gpu limits"
    )
    # Neither pod starts, though one of them alone would fit.
    wait_for(lambda: waiting_with(backend, "big", why), "the gang to wait, saying why")
    backend.delete("big")


def test_same_priority_waits_in_creation_order_and_a_suspended_job_leaves_the_queue(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINOP_GPUS", "0,1")
    backend = LocalBackend(home)
    releases = {name: home.parent / f"release-{name}" for name in ("holder", "first", "second")}
    backend.submit(gpu_job("holder", releases["holder"]))
    wait_for(lambda: condition(backend.get("holder"), "Running"), "the holder to run on both GPUs")
    backend.submit(gpu_job("first", releases["first"]))
    backend.submit(gpu_job("second", releases["second"]))
    behind_first = (
        "gang of 2 pods needs 2 GPUs at once and waits behind default/first (priority 0, queue default), "
        "which needs 2 GPUs and starts first"
    )
    wait_for(lambda: waiting_with(backend, "second", behind_first), "second to wait behind first")

    # Suspended, first gives up its place: second now waits only for the GPUs, and gets them.
    backend.set_suspend("first", True)
    held_by_holder = (
        "gang of 2 pods needs 2 GPUs at once, 0 of 2 are free (held by default/holder: 2); its pods start "
        "together when enough are released"
    )
    wait_for(lambda: waiting_with(backend, "second", held_by_holder), "second to wait only for the GPUs")
    releases["holder"].touch()
    wait_for(lambda: condition(backend.get("second"), "Running"), "second to start")
    wait_for(lambda: len(running_pids(backend, "second")) == 2, "both of second's replicas to run")
    assert (backend.pods("first"), running_pids(backend, "first")) == ([], [])
    for name in ("second", "first"):
        releases[name].touch()
    backend.set_suspend("first", False)
    for name in ("holder", "second", "first"):
        assert condition(backend.wait(name, ["Succeeded", "Failed"], timeout=60), "Succeeded") is not None


def test_min_available_lowered_on_a_waiting_job_lets_its_gang_start(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream's e2e gang scenario on this machine: a gang larger than the machine waits; its
    ``minAvailable`` lowered through an update (as ``update_job`` makes it), the smaller gang starts
    whole, and the replicas beyond it take GPUs one by one as they are released."""
    monkeypatch.setenv("TRAINOP_GPUS", "0,1")
    backend = LocalBackend(home)
    release = home.parent / "release"
    manifest = gpu_job("big", release)
    manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    manifest["spec"].setdefault("runPolicy", {})["schedulingPolicy"] = {"minAvailable": 4}
    backend.submit(manifest)
    too_big = (
        "gang of 4 pods needs 4 GPUs at once, more than this machine has (2): lower "
        "spec.runPolicy.schedulingPolicy.minAvailable or the replicas' nvidia.com/gpu limits"
    )
    wait_for(
        lambda: (
            {s for s, _ in scheduling(backend, "big").values()} == {"False"}
            and all(m.endswith(too_big) for _, m in scheduling(backend, "big").values())
            and len(scheduling(backend, "big")) == 4
        ),
        "the gang of 4 to wait",
    )
    assert running_pids(backend, "big") == []
    manifest["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = 2
    backend.update(manifest)
    # The Master and the first Worker (the kind's order) start together on both GPUs.
    wait_for(lambda: len(running_pids(backend, "big")) == 2, "the gang of 2 to start")
    got = {pod: status for pod, (status, _) in scheduling(backend, "big", whole=False).items()}
    assert got == {"master-0": "True", "worker-0": "True", "worker-1": "False", "worker-2": "False"}
    release.touch()
    assert condition(backend.wait("big", ["Succeeded", "Failed"], timeout=60), "Succeeded") is not None


def test_yunikorn_labels_on_the_local_gangs_pods(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRAINOP_GANG_SCHEDULER_NAME=yunikorn (issue 25): the pods carry what the operator's
    --gang-scheduler-name=yunikorn writes (core/gang.py), while the local gang admission still decides."""
    monkeypatch.setenv("TRAINOP_GPUS", "0,1")
    monkeypatch.setenv("TRAINOP_GANG_SCHEDULER_NAME", "YuniKorn")
    backend = LocalBackend(home)
    release = home.parent / "release-yk"
    job = backend.submit(gpu_job("yk", release))
    wait_for(lambda: gpus_seen(backend, "yk"), "both replicas to start together")
    for pod in backend.pods("yk"):
        rtype = pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        assert pod["spec"]["schedulerName"] == "yunikorn"
        assert pod["metadata"]["labels"]["yunikorn.apache.org/app-id"] == job.metadata.uid
        assert pod["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == rtype
        groups = json.loads(pod["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
        assert [(g["name"], g["minMember"], g["minResource"]) for g in groups] == [
            ("master", 1, {"nvidia.com/gpu": "1"}),
            ("worker", 1, {"nvidia.com/gpu": "1"}),
        ]
    release.touch()
    wait_for(lambda: condition(backend.get("yk"), "Succeeded"), "the job to succeed")


def test_a_gang_scheduler_the_local_backend_cannot_honour_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINOP_GANG_SCHEDULER_NAME", "volcano")
    with pytest.raises(BackendError, match="TRAINOP_GANG_SCHEDULER_NAME=volcano: the local backend"):
        LocalBackend(home).submit(gpu_job("v", home.parent / "never"))
