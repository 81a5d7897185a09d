"""Events about a job (core/v1 Event, involvedObject = the job, contract §6.3), recorded best effort.

Identical events (same object, type, reason, message) are aggregated as client-go's recorder does:
the first is created, repeats patch ``count`` and ``lastTimestamp`` (so "ExitedWithCode" on every
reconcile, quirk 9, stays one object). Events are sent from a bounded queue at the lowest request
priority, once other requests pause (at most 30 s late), and never block or fail a reconcile.
I/O adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lightkube.types import PatchType

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import PRIORITY_EVENT, KubeClient, api_status_code, request_priority

log = logging.getLogger(__name__)

AGGREGATE_CACHE_SIZE = 4096  # client-go's maxLruCacheEntries


def rfc3339(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class EventSpec:
    involved: dict[str, Any]  # {apiVersion, kind, namespace, name, uid, resourceVersion}
    type: str
    reason: str
    message: str
    component: str
    at: datetime


def involved_object(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


def build_event(spec: EventSpec, name: str) -> dict[str, Any]:
    ts = rfc3339(spec.at)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": spec.involved.get("namespace")},
        "involvedObject": spec.involved,
        "reason": spec.reason,
        "message": spec.message,
        "type": spec.type,
        "source": {"component": spec.component},
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
    }


class EventRecorder:
    def __init__(self, client: KubeClient, *, queue_size: int = 10000, senders: int = 4) -> None:
        self.client = client
        self._queue: asyncio.Queue[EventSpec] = asyncio.Queue(maxsize=queue_size)
        self._seen: OrderedDict[tuple[str, str, str, str, str], tuple[str, str, int]] = OrderedDict()
        self._senders = senders
        self.dropped = 0
        self.sent = 0

    def record(self, obj: dict[str, Any], type_: str, reason: str, message: str, *, component: str) -> None:
        """Queue an event about ``obj``; drops it (and counts) if the queue is full."""
        spec = EventSpec(involved_object(obj), type_, reason, message, component, datetime.now(UTC))
        try:
            self._queue.put_nowait(spec)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped % 100 == 1:
                log.warning("event queue full, dropped %d events so far", self.dropped)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for _ in range(self._senders):
                tg.create_task(self._send_loop())

    async def flush(self, timeout: float = 10.0) -> None:
        """Wait until every queued event was sent (tests and shutdown)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)

    async def _send_loop(self) -> None:
        while True:
            spec = await self._queue.get()
            try:
                # Best effort: yield the API server to pods, Services and status while they are busy.
                await self.client.activity.wait_quiet()
                await self._send(spec)
                self.sent += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info(
                    "event %s %s on %s not recorded: %s",
                    spec.type,
                    spec.reason,
                    spec.involved.get("name"),
                    exc,
                )
            finally:
                self._queue.task_done()

    async def _send(self, spec: EventSpec) -> None:
        ns = spec.involved.get("namespace") or "default"
        key = (str(spec.involved.get("uid")), spec.type, spec.reason, spec.message, spec.component)
        with request_priority(PRIORITY_EVENT):
            seen = self._seen.get(key)
            if seen is not None:
                name, _, count = seen
                patch = {"count": count + 1, "lastTimestamp": rfc3339(spec.at)}
                try:
                    await self.client.api.patch(
                        r.Event, name, patch, namespace=ns, patch_type=PatchType.MERGE
                    )
                    self._seen[key] = (name, ns, count + 1)
                    self._seen.move_to_end(key)
                    return
                except Exception as exc:
                    if api_status_code(exc) != 404:  # expired (events live 1 h): create a new one
                        raise
            # client-go names events <object>.<unique hex>; nanoseconds keep them unique per object.
            name = f"{spec.involved.get('name')}.{time.time_ns():x}"
            await self.client.api.create(r.Event(build_event(spec, name)))
            self._seen[key] = (name, ns, 1)
            self._seen.move_to_end(key)
            while len(self._seen) > AGGREGATE_CACHE_SIZE:
                self._seen.popitem(last=False)
