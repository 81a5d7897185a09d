"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's timing and rules.

A candidate takes the lease when it is free or its holder has not renewed it for
``lease_duration`` as measured on the candidate's own clock since it last saw the record change
(never by comparing another host's timestamps). The leader renews every ``retry_period``; if it
cannot renew for ``renew_deadline`` it has lost and must stop writing. Writes use the Lease's
resourceVersion, so two candidates can never both win. I/O adapter.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    PRIORITY_WRITE,
    KubeClient,
    api_status_code,
    request_priority,
    tolerate,
)

log = logging.getLogger(__name__)


def micro_time(ts: datetime) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    lease_duration: float = 15.0  # controller-runtime defaults
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        timings: LeaseTimings = LeaseTimings(),
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.t = timings
        self._mono = monotonic
        self._wall = wall
        self._observed: tuple[str, str, str] | None = None  # (holder, renewTime, resourceVersion)
        self._observed_at = 0.0
        self.is_leader = asyncio.Event()
        self.lost = asyncio.Event()

    def _spec(self, lease: dict[str, Any] | None, *, transitions_bump: bool) -> dict[str, Any]:
        now = micro_time(self._wall())
        spec = dict((lease or {}).get("spec") or {})
        transitions = int(spec.get("leaseTransitions") or 0)
        if transitions_bump:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = transitions + (1 if lease is not None else 0)
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = int(self.t.lease_duration)
        spec["renewTime"] = now
        return spec

    async def try_acquire_or_renew(self) -> bool:
        """One client-go tryAcquireOrRenew: True if we hold the lease afterwards."""
        api = self.client.api
        with request_priority(PRIORITY_WRITE):
            try:
                lease = dict(await api.get(r.Lease, self.name, namespace=self.namespace))
            except Exception as exc:
                if api_status_code(exc) != 404:
                    raise
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(None, transitions_bump=True),
                }
                return await self._write(api.create(r.Lease(body)))
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            record = (holder, str(spec.get("renewTime")), str(lease["metadata"].get("resourceVersion")))
            if record != self._observed:
                self._observed = record
                self._observed_at = self._mono()
            duration = float(spec.get("leaseDurationSeconds") or self.t.lease_duration)
            ours = holder == self.identity
            if holder and not ours and self._mono() < self._observed_at + duration:
                return False  # held by someone else and not expired
            lease["spec"] = self._spec(lease, transitions_bump=not ours)
            return await self._write(api.replace(r.Lease(lease)))

    async def _write(self, write: Awaitable[Any]) -> bool:
        """A create or replace of the Lease: False when another candidate wrote first (409)."""
        if not await tolerate(write, 409):
            return False
        self._observed_at = self._mono()
        return True

    async def run(self) -> None:
        """Acquire, then renew until the lease is lost (``lost`` is set and this returns)."""
        while not self.is_leader.is_set():
            try:
                if await self.try_acquire_or_renew():
                    log.info(
                        "leader election: %s acquired lease %s/%s", self.identity, self.namespace, self.name
                    )
                    self.is_leader.set()
                    break
            except Exception as exc:
                log.warning("leader election: cannot read lease %s/%s: %s", self.namespace, self.name, exc)
            await asyncio.sleep(self.t.retry_period)
        last_renew = self._mono()
        while True:
            await asyncio.sleep(self.t.retry_period)
            try:
                if await asyncio.wait_for(self.try_acquire_or_renew(), self.t.renew_deadline):
                    last_renew = self._mono()
                    continue
            except Exception as exc:
                log.warning("leader election: renew failed: %s", exc)
            if self._mono() - last_renew >= self.t.renew_deadline:
                log.error("leader election: %s lost lease %s/%s", self.identity, self.namespace, self.name)
                self.is_leader.clear()
                self.lost.set()
                return

    async def release(self) -> None:
        """Give the lease up on clean shutdown so a standby takes over at once (ReleaseOnCancel)."""
        if not self.is_leader.is_set():
            return
        with request_priority(PRIORITY_WRITE):
            try:
                lease = dict(await self.client.api.get(r.Lease, self.name, namespace=self.namespace))
                if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    return
                now = micro_time(self._wall())
                lease["spec"] = {
                    **(lease.get("spec") or {}),
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "renewTime": now,
                    "acquireTime": now,
                }
                await self.client.api.replace(r.Lease(lease))
            except Exception as exc:
                log.info("leader election: release failed (the lease will expire): %s", exc)
        self.is_leader.clear()
