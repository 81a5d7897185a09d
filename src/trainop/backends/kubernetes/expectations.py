"""Creations and deletions the backend has made but its cache has not shown yet (contract §6.1).

A reconcile that read a cache missing its own last writes would create or delete the same objects
again; upstream guards against that with "expectations", and so do we, per job key, by object name.
Expectations expire (5 minutes, as upstream) so a lost watch event cannot wedge a job. Pure state;
the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K")

EXPECTATION_TTL = 300.0

ObjRef = tuple[str, str]  # (Kubernetes kind, name)


@dataclass(slots=True)
class _Pending:
    adds: set[ObjRef] = field(default_factory=set)
    deletes: set[ObjRef] = field(default_factory=set)
    since: float = 0.0


class Expectations(Generic[K]):
    def __init__(self, ttl: float = EXPECTATION_TTL) -> None:
        self._pending: dict[K, _Pending] = {}
        self.ttl = ttl

    def expect(
        self, key: K, *, now: float, adds: Iterable[ObjRef] = (), deletes: Iterable[ObjRef] = ()
    ) -> None:
        adds, deletes = set(adds), set(deletes)
        if not adds and not deletes:
            return
        p = self._pending.setdefault(key, _Pending(since=now))  # (an emptied one is gone: _gc)
        p.adds |= adds
        p.deletes |= deletes

    def observed_add(self, key: K, ref: ObjRef) -> None:
        p = self._pending.get(key)
        if p is not None:
            p.adds.discard(ref)
            self._gc(key, p)

    def observed_delete(self, key: K, ref: ObjRef) -> None:
        p = self._pending.get(key)
        if p is not None:
            p.deletes.discard(ref)
            # A delete seen before its create was observed also settles the create.
            p.adds.discard(ref)
            self._gc(key, p)

    def _gc(self, key: K, p: _Pending) -> None:
        if not p.adds and not p.deletes:
            del self._pending[key]

    def satisfied(self, key: K, now: float) -> bool:
        p = self._pending.get(key)
        if p is None:
            return True
        if now - p.since >= self.ttl:
            del self._pending[key]
            return True
        return False

    def since(self, key: K) -> float | None:
        """When the oldest unsatisfied expectation of ``key`` was recorded (None if none)."""
        p = self._pending.get(key)
        return p.since if p is not None else None

    def forget(self, key: K) -> None:
        self._pending.pop(key, None)
