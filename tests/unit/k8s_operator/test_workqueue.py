"""The keyed work queue: de-duplication, one worker per key, per-key backoff, earliest timer wins."""

from __future__ import annotations

import asyncio

import pytest

from trainop.backends.kubernetes.expectations import Expectations
from trainop.controller.loop import Controller, Result
from trainop.controller.workqueue import ExponentialBackoff, ShutDown, WorkQueue


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def drain(q: WorkQueue[str]) -> list[str]:
    """Every key waiting, in the order a worker gets them."""
    got = []
    while len(q):
        k = await q.get()
        got.append(k)
        q.done(k)
    return got


@pytest.mark.parametrize(
    ("adds", "want"),
    [
        pytest.param(["a"], ["a"], id="one key"),
        pytest.param(["a", "a", "a"], ["a"], id="a key waiting is stored once"),
        pytest.param(["a", "b", "a", "c"], ["a", "b", "c"], id="first-add order is kept"),
    ],
)
def test_dedup(adds: list[str], want: list[str]) -> None:
    async def go() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        for k in adds:
            q.add(k)
        return await drain(q)

    assert run(go()) == want


@pytest.mark.parametrize(
    ("adds", "want"),
    [
        pytest.param(
            [("new1", False), ("new2", False), ("run1", True), ("new3", False), ("run2", True)],
            ["run1", "run2", "new1", "new2", "new3"],
            id="urgent keys first, each lane in order",
        ),
        pytest.param(
            [("a", False), ("b", False), ("c", False), ("b", True)],
            ["b", "a", "c"],
            id="a waiting key moves to the urgent lane, once",
        ),
        pytest.param(
            [("a", True), ("a", False), ("b", False)],
            ["a", "b"],
            id="a plain add never demotes an urgent key",
        ),
    ],
)
def test_urgent_lane(adds: list[tuple[str, bool]], want: list[str]) -> None:
    """A running job's pass (its pods changed) goes before new jobs (issue 16)."""

    async def go() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        for k, urgent in adds:
            q.add(k, urgent=urgent)
        assert len(q) == len(want)
        return await drain(q)

    assert run(go()) == want


def test_an_urgent_add_while_processing_requeues_the_key_in_the_urgent_lane() -> None:
    async def go() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        q.add("a")
        k = await q.get()
        q.add("b")
        q.add("a", urgent=True)  # its pods changed while its pass ran
        q.done(k)
        got = [await q.get(), await q.get()]
        return got

    assert run(go()) == ["a", "b"]


def test_key_added_while_processing_is_handed_out_only_after_done() -> None:
    async def go() -> list[str]:
        q: WorkQueue[str] = WorkQueue()
        q.add("a")
        k = await q.get()
        q.add("a")  # an event arrives while "a" is reconciled
        seen = [f"queued={len(q)}"]
        q.done(k)
        seen.append(f"queued={len(q)}")
        seen.append(await q.get())
        return seen

    assert run(go()) == ["queued=0", "queued=1", "a"]


@pytest.mark.parametrize(
    ("failures", "want"),
    [
        pytest.param(1, [0.005], id="first retry after 5 ms"),
        pytest.param(4, [0.005, 0.01, 0.02, 0.04], id="doubles per failure"),
        pytest.param(40, 1000.0, id="capped at 1000 s"),
    ],
)
def test_backoff(failures: int, want: list[float] | float) -> None:
    b: ExponentialBackoff[str] = ExponentialBackoff()
    got = [b.when("k") for _ in range(failures)]
    if isinstance(want, float):
        assert got[-1] == want
    else:
        assert got == pytest.approx(want)
    b.forget("k")
    assert b.when("k") == 0.005


def test_earliest_timer_wins() -> None:
    async def go() -> tuple[float | None, float | None]:
        q: WorkQueue[str] = WorkQueue()
        q.add_after("k", 100)
        q.add_after("k", 0.01)
        q.add_after("k", 50)  # later than the pending one: ignored
        pending = q.pending_timer("k")
        await asyncio.wait_for(q.get(), 5)
        return pending, q.pending_timer("k")

    pending, after = run(go())
    assert pending is not None and pending <= 0.01
    assert after is None


def test_shutdown_wakes_waiting_workers() -> None:
    async def go() -> str:
        q: WorkQueue[str] = WorkQueue()
        waiter = asyncio.create_task(q.get())
        await asyncio.sleep(0)
        await q.shutdown()
        try:
            await asyncio.wait_for(waiter, 5)
        except ShutDown:
            return "shut down"
        return "not woken"

    assert run(go()) == "shut down"


class _Recorder:
    """A reconciler that records overlapping calls per key and fails a key a set number of times."""

    def __init__(self, fail: dict[str, int]) -> None:
        self.fail = dict(fail)
        self.active: set[str] = set()
        self.overlaps = 0
        self.calls: list[str] = []
        self.succeeded: set[str] = set()
        self.all_succeeded = asyncio.Event()  # every key failing at first has succeeded since

    async def reconcile(self, key: str) -> Result:
        if key in self.active:
            self.overlaps += 1
        self.active.add(key)
        self.calls.append(key)
        for _ in range(3):  # stay active while the other workers run (no wall clock)
            await asyncio.sleep(0)
        self.active.discard(key)
        if self.fail.get(key, 0) > 0:
            self.fail[key] -= 1
            raise RuntimeError("boom")
        self.succeeded.add(key)
        if self.succeeded >= set(self.fail):
            self.all_succeeded.set()
        return Result()


async def _drained(q: WorkQueue[str]) -> None:
    while len(q) or q.processing:
        await asyncio.sleep(0)


def test_controller_never_runs_one_key_twice_at_once_and_retries_failures() -> None:
    async def go() -> _Recorder:
        # No backoff delay: a failed key is requeued at once, so the test waits on state, not time.
        q: WorkQueue[str] = WorkQueue(backoff=ExponentialBackoff(base=0.0))
        rec = _Recorder(fail={"b": 2})
        ctl = Controller(q, rec, workers=4)
        task = asyncio.create_task(ctl.run())
        for _ in range(5):
            for k in ("a", "b", "c"):
                q.add(k)
            await asyncio.sleep(0)
        await asyncio.wait_for(rec.all_succeeded.wait(), 5)
        await asyncio.wait_for(_drained(q), 5)
        await q.shutdown()
        await asyncio.wait_for(task, 5)
        return rec

    rec = run(go())
    assert rec.overlaps == 0
    assert rec.calls.count("b") >= 3  # two failures, then the retry that succeeds
    assert set(rec.calls) == {"a", "b", "c"}


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        pytest.param([], True, id="nothing expected"),
        pytest.param([("expect", 0.0)], False, id="created, not seen yet"),
        pytest.param([("expect", 0.0), ("seen-add", 1.0)], True, id="seen by the informer"),
        pytest.param([("expect", 0.0), ("seen-delete", 1.0)], True, id="deleted before its add was seen"),
        pytest.param([("expect", 0.0), ("now", 301.0)], True, id="expires after 5 minutes"),
    ],
)
def test_expectations(steps: list[tuple[str, float]], want: bool) -> None:
    e: Expectations[str] = Expectations()
    now = 0.0
    for what, t in steps:
        now = t
        if what == "expect":
            e.expect("job", now=t, adds=[("Pod", "p-0")])
        elif what == "seen-add":
            e.observed_add("job", ("Pod", "p-0"))
        elif what == "seen-delete":
            e.observed_delete("job", ("Pod", "p-0"))
    assert e.satisfied("job", now) is want
