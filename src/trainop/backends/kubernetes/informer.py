"""List+watch informers: a local cache of one resource kept current by a watch, with change handlers.

List once (remembering the list's resourceVersion), then watch from it; when the watch says the
version is too old (410 Gone) list again and report the difference as adds/updates/deletes, as
client-go's reflector does. Server-side label selectors keep unrelated objects out of memory;
``transform`` drops what the operator never reads (managedFields) and interns the strings the
cached objects repeat (``compact_object``). I/O adapter.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from lightkube.core.generic_client import ALL_NS
from lightkube.core.resource import GlobalResource
from lightkube.types import OnErrorAction, OnErrorResult

from trainop.backends.kubernetes.client import (
    PRIORITY_READ,
    WATCH_IDLE_S,
    DirectApi,
    KubeClient,
    api_status_code,
    request_priority,
    watch_error,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]
ObjKey = tuple[str, str]  # (namespace, name)


def obj_key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` (there is at most one)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop metadata.managedFields: often half of an object's size and never read by the operator."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = dict(meta)
        del meta["managedFields"]
        obj = {**obj, "metadata": meta}
    return obj


_intern = sys.intern


def _compact_dict(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        t = type(v)
        if t is str:
            v = _intern(v)
        elif t is dict:
            v = _compact_dict(v)
        elif t is list:
            v = _compact_list(v)
        out[_intern(k)] = v
    return out


def _compact_list(items: list[Any]) -> list[Any]:
    out = []
    for v in items:
        t = type(v)
        if t is str:
            v = _intern(v)
        elif t is dict:
            v = _compact_dict(v)
        elif t is list:
            v = _compact_list(v)
        out.append(v)
    return out


def compact_object(obj: Obj) -> Obj:
    """``obj`` without managedFields, as a fresh tree whose strings (keys and values) are interned.

    A decoded object holds its own copy of every string; across thousands of cached pods most are
    the same few (label keys and values, image, owner kind, condition types, node names), and
    sharing them takes a cached pod from 17 to 12 KB. Nothing else changes: same keys, same values.
    """
    return _compact_dict(strip_managed_fields(obj))


_decode_event = msgspec.json.Decoder().decode


def _decode_whole(line: bytes) -> tuple[str, Any, bool]:
    event = _decode_event(line)
    return str(event.get("type")), event.get("object"), False


def resource_version_newer(a: str | None, b: str | None) -> bool:
    """Whether version ``a`` is newer than ``b``. Versions are opaque to clients; etcd's are integers,
    and only then is the comparison made (otherwise ``a`` is taken as newer)."""
    if a is None or b is None:
        return a is not None
    if a.isdigit() and b.isdigit():
        return int(a) > int(b)
    return a != b


def _rv(obj: Obj) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None


def compute_watch_error_action(exc: BaseException, count: int) -> OnErrorResult:
    """What a watch does after an error: stop on 410 Gone (the caller lists again, as client-go's
    reflector does), otherwise retry from the last version seen, backing off 0.4 s doubling to 30 s."""
    if api_status_code(exc) == 410:
        return OnErrorResult(OnErrorAction.STOP)
    return OnErrorResult(OnErrorAction.RETRY, sleep=min(30.0, 0.2 * 2 ** min(count, 8)))


@dataclass
class Handlers:
    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


@dataclass
class Store:
    """Objects by (namespace, name), indexed by the uid of their controlling owner."""

    objects: dict[ObjKey, Obj] = field(default_factory=dict)
    by_owner: dict[str, set[ObjKey]] = field(default_factory=dict)

    def get(self, namespace: str, name: str) -> Obj | None:
        return self.objects.get((namespace, name))

    def owned_by(self, uid: str) -> list[Obj]:
        return [self.objects[k] for k in sorted(self.by_owner.get(uid, ())) if k in self.objects]

    def __len__(self) -> int:
        return len(self.objects)

    def upsert(self, obj: Obj) -> Obj | None:
        key = obj_key(obj)
        old = self.objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self.objects[key] = obj
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid"):
            self.by_owner.setdefault(ref["uid"], set()).add(key)
        return old

    def remove(self, key: ObjKey) -> Obj | None:
        old = self.objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: ObjKey, obj: Obj) -> None:
        ref = controller_ref(obj)
        if ref is not None and ref.get("uid"):
            keys = self.by_owner.get(ref["uid"])
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_owner[ref["uid"]]


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Any,
        *,
        namespace: str | None = None,
        labels: dict[str, Any] | None = None,
        transform: Callable[[Obj], Obj | None] = compact_object,
        name: str = "",
        page_size: int = 500,
        watch_decoder: Callable[[bytes], tuple[str, Any, bool]] | None = None,
    ) -> None:
        """``watch_decoder``: decodes one watch line into (type, object, shaped), ``shaped`` when the
        object is already what ``transform`` makes of it (shapes.py); by default lines are decoded
        whole and transformed."""
        self.client = client
        self.resource = resource
        self.namespace = namespace or None
        self.labels = labels
        self.transform = transform
        self.name = name or resource.__name__
        self.page_size = page_size
        self.store = Store()
        self.handlers: list[Handlers] = []
        self.synced = asyncio.Event()
        self.relists = 0
        # Seconds the server keeps one watch open: client-go picks 5-10 min so that many watches do
        # not reconnect at once (tests shorten it to see reconnection).
        self.watch_timeout = (300, 600)
        # Seconds without a line before a watch is taken for dead and opened again (client.py).
        self.watch_idle = WATCH_IDLE_S
        self.watch_decoder = watch_decoder or _decode_whole

    def add_handlers(self, handlers: Handlers) -> None:
        self.handlers.append(handlers)

    # --- change delivery -------------------------------------------------------------------------
    def _emit(self, change: str, *objs: Obj) -> None:
        """Call every handler's ``on_<change>`` ("add", "update" or "delete") with ``objs``."""
        for h in self.handlers:
            fn = getattr(h, f"on_{change}")
            if fn is None:
                continue
            try:
                fn(*objs)
            except Exception:  # a handler bug must not kill the watch
                log.exception("informer %s: handler failed", self.name)

    def apply_event(self, kind: str, obj: Obj, *, shaped: bool = False) -> None:
        """Fold one watch event into the store and call the handlers (``shaped``: ``obj`` is already
        what ``transform`` makes of it)."""
        if kind == "DELETED":
            old = self.store.remove(obj_key(obj))
            self._emit("delete", old if old is not None else obj)
            return
        new = obj if shaped else self.transform(obj)
        if new is None:  # not ours (e.g. a ConfigMap with an `app` label but no MPIJob owner)
            old = self.store.remove(obj_key(obj))
            if old is not None:
                self._emit("delete", old)
            return
        cur = self.store.get(*obj_key(new))
        if cur is not None and resource_version_newer(_rv(cur), _rv(new)):
            return  # older than what the operator itself just wrote (put_newer): already acted on
        old = self.store.upsert(new)
        if old is None:
            self._emit("add", new)
        else:
            self._emit("update", old, new)

    def put_newer(self, obj: Obj) -> None:
        """Store an object the operator just wrote, unless the cache already holds a newer version; so
        the next reconcile does not start from a status older than its own last write."""
        new = self.transform(obj)
        if new is None:
            return
        cur = self.store.get(*obj_key(new))
        if cur is None or resource_version_newer(_rv(new), _rv(cur)):
            self.store.upsert(new)

    # --- list + watch --------------------------------------------------------------------------------
    def _list_namespace(self) -> str | None:
        # Cluster-scoped resources (PriorityClass) take no namespace; lightkube refuses "*" for them.
        if isinstance(self.resource, type) and issubclass(self.resource, GlobalResource):
            return None
        return self.namespace or ALL_NS

    async def _list(self) -> str:
        with request_priority(PRIORITY_READ):
            it = self.client.watch_api.list(
                self.resource,
                namespace=self._list_namespace(),
                labels=self.labels,
                chunk_size=self.page_size,
            )
            seen: dict[ObjKey, Obj] = {}
            async for item in it:
                obj = self.transform(dict(item))
                if obj is not None:
                    seen[obj_key(obj)] = obj
            rv = getattr(it, "_resourceVersion", None) or ""
        # Replace the store, reporting the difference (client-go's Replace with DeletedFinalStateUnknown).
        for key in list(self.store.objects):
            if key not in seen:
                old = self.store.remove(key)
                if old is not None:
                    self._emit("delete", old)
        for obj in seen.values():
            old = self.store.upsert(obj)
            if old is None:
                self._emit("add", obj)
            elif _rv(old) != _rv(obj):
                self._emit("update", old, obj)
        return rv

    async def _watch(self, rv: str) -> bool:
        """Watch from ``rv`` until the server says it is too old; returns True then (list again)."""
        if self.client.direct is not None:
            return await self._watch_direct(self.client.direct, rv)
        gone = False

        def on_error(exc: Exception, count: int) -> OnErrorResult:
            nonlocal gone
            result = compute_watch_error_action(exc, count)
            if result.action is OnErrorAction.STOP:
                gone = True
            else:
                log.info("informer %s: watch error (%s), retrying", self.name, exc)
            return result

        with request_priority(PRIORITY_READ):
            stream = self.client.watch_api.watch(
                self.resource,
                namespace=self._list_namespace(),
                labels=self.labels,
                resource_version=rv or None,
                server_timeout=random.randint(*self.watch_timeout),
                on_error=on_error,
            )
            async for kind, obj in stream:
                if kind == "BOOKMARK":
                    continue
                self.apply_event(kind, dict(obj))
        if gone:
            log.info("informer %s: resourceVersion too old (410 Gone), listing again", self.name)
        return gone

    async def _watch_direct(self, direct: DirectApi, rv: str) -> bool:
        """``_watch`` over the direct path: each event line decoded once (msgspec) into the dict the
        cache keeps. The same rules as lightkube's watch loop: a watch the server ends is opened again
        from the last version seen (bookmarks included); errors back off; 410 Gone lists again."""
        ns = self._list_namespace()
        namespace = None if ns is None or ns == ALL_NS else ns
        errors = 0
        decode = self.watch_decoder
        while True:
            opened = time.monotonic()
            try:
                with request_priority(PRIORITY_READ):
                    async for batch in direct.watch(
                        self.resource,
                        namespace,
                        resource_version=rv or None,
                        labels=self.labels,
                        server_timeout=random.randint(*self.watch_timeout),
                        idle_timeout=self.watch_idle,
                    ):
                        for line in batch:
                            kind, obj, shaped = decode(line)
                            if kind == "ERROR":
                                raise watch_error(obj)
                            if not isinstance(obj, dict):
                                continue
                            rv = _rv(obj) or rv
                            if kind != "BOOKMARK":
                                self.apply_event(kind, obj, shaped=shaped)
            except Exception as exc:
                if isinstance(exc, msgspec.DecodeError):
                    exc = ValueError(f"undecodable watch event: {exc}")
                errors += 1
                action = compute_watch_error_action(exc, errors)
                if action.action is OnErrorAction.STOP:
                    log.info("informer %s: resourceVersion too old (410 Gone), listing again", self.name)
                    return True
                log.info("informer %s: watch error (%s), retrying", self.name, exc)
                await asyncio.sleep(action.sleep)
                continue
            if time.monotonic() - opened > 1.0:
                errors = 0  # a watch that ran and ended: the server's timeout
            else:  # ended at once, again and again: do not spin
                errors += 1
                await asyncio.sleep(min(30.0, 0.2 * 2 ** min(errors, 8)) if errors > 2 else 0)

    async def run(self) -> None:
        """List, then watch, forever; list again after 410 Gone or any failure (with backoff)."""
        failures = 0
        while True:
            try:
                rv = await self._list()
                self.synced.set()
                failures = 0
                await self._watch(rv)
                self.relists += 1
            except Exception as exc:
                failures += 1
                delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                log.warning("informer %s: %s; listing again in %.1fs", self.name, exc, delay)
                await asyncio.sleep(delay)
