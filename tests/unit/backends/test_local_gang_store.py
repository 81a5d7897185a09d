"""The store's side of local gang admission (issue 11), on a real SQLite database: one transaction
queues the request, decides with core/admission.py and reserves the gang's GPUs; the job's pods
then take the reserved GPUs, no other job can; release leaves the queue and frees the reservation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trainop.backends.local.paths import StatePaths
from trainop.backends.local.store import JobRow, Store
from trainop.core.admission import Admission, GangRequest

INVENTORY = ("0", "1", "2")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    home = tmp_path / "home"
    home.mkdir()
    s = Store(StatePaths(home))
    for i, name in enumerate(("a", "b", "c")):
        s.insert_job(
            JobRow(
                uid=f"uid-{name}",
                namespace="default",
                name=name,
                kind="PyTorchJob",
                manifest={},
                status={},
                base_dir=str(tmp_path),
                host_env={},
                generation=1,
                created_at=float(i),
            )
        )
    yield s
    s.close()


def request(name: str, gpus: int, created_at: float, priority: int = 0) -> GangRequest:
    return GangRequest(f"uid-{name}", f"default/{name}", 2, gpus, priority, "", "default", created_at)


def owners(store: Store) -> dict[str, tuple[str, str]]:
    return {gpu: (uid, pod) for gpu, (uid, pod, _) in store.gpus_in_use().items()}


def test_admission_reserves_and_the_pods_take_the_reservation(store: Store) -> None:
    got = {
        "a admitted": store.admit_gang(request("a", 2, 0.0), INVENTORY),
        "reserved": owners(store),
        "b refused": store.admit_gang(request("b", 2, 1.0), INVENTORY),
        "a again": store.admit_gang(request("a", 2, 0.0), INVENTORY),
        "a's pod": store.allocate_gpus("uid-a", "a-worker-0", [("pytorch", 1)], INVENTORY),
        "after the pod": owners(store),
    }
    want = {
        "a admitted": Admission(True),
        "reserved": {"0": ("uid-a", ""), "1": ("uid-a", "")},
        "b refused": Admission(
            False,
            "gang of 2 pods needs 2 GPUs at once, 1 of 3 are free (held by default/a: 2); its pods start "
            "together when enough are released",
        ),
        "a again": Admission(True),  # admitted stays admitted
        "a's pod": {"pytorch": ["0"]},
        "after the pod": {"0": ("uid-a", "a-worker-0"), "1": ("uid-a", "")},
    }
    assert got == want
    # Another job's pod cannot take a's reservation: only the one free GPU.
    assert store.allocate_gpus("uid-c", "c-worker-0", [("pytorch", 2)], INVENTORY) is None


def test_the_queue_and_its_release(store: Store) -> None:
    store.allocate_gpus("uid-c", "c-worker-0", [("pytorch", 3)], INVENTORY)  # c holds every GPU
    first = store.admit_gang(request("a", 2, 0.0), INVENTORY)
    behind = store.admit_gang(request("b", 2, 1.0), INVENTORY)
    store.release_gpus("uid-c", "c-worker-0")
    store.release_gang("uid-a")  # a suspended while waiting: b is first now
    got = (
        first.admit,
        "waits behind default/a (priority 0, queue default)" in behind.message,
        store.admit_gang(request("b", 2, 1.0), INVENTORY),
    )
    assert got == (False, True, Admission(True))
    store.release_gang("uid-b")
    assert owners(store) == {}


def test_a_deleted_job_leaves_the_queue(store: Store) -> None:
    store.allocate_gpus("uid-c", "c-worker-0", [("pytorch", 3)], INVENTORY)
    store.admit_gang(request("a", 2, 0.0, priority=10), INVENTORY)
    store.delete_job("uid-a")  # its queue row goes with it (ON DELETE CASCADE)
    store.release_gpus("uid-c", "c-worker-0")
    assert store.admit_gang(request("b", 2, 1.0), INVENTORY) == Admission(True)


def test_a_gang_that_gave_back_every_gpu_queues_again(store: Store) -> None:
    """A whole-job restart deletes every pod (their GPUs go back): the new pods start as a new gang,
    never some on the GPUs that are left while the others wait."""
    store.admit_gang(request("a", 2, 0.0), INVENTORY)
    for pod in ("a-master-0", "a-worker-0"):
        store.allocate_gpus("uid-a", pod, [("pytorch", 1)], INVENTORY)
        store.release_gpus("uid-a", pod)
    store.allocate_gpus("uid-c", "c-worker-0", [("pytorch", 2)], INVENTORY)  # c took two meanwhile
    assert store.admit_gang(request("a", 2, 0.0), INVENTORY) == Admission(
        False,
        "gang of 2 pods needs 2 GPUs at once, 1 of 3 are free (held by default/c: 2); its pods start "
        "together when enough are released",
    )
