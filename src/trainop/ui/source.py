"""The one seam between the web view and the jobs: everything the server reads or changes goes through
here: the backend's ``JobClient`` (backends/base.py), the one interface ``trainop get -w`` and
``logs -f`` read through too.

Backend calls block (SQLite, or requests on the cluster client's own thread): the server runs them on
one worker thread (``Source.call``); a followed log gets its own reader (``open_logs``), since it
blocks between polls for as long as the page is open.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from trainop.backends.base import JobClient, LogLine

T = TypeVar("T")


class Source:
    def __init__(self, backend: JobClient) -> None:
        self.backend = backend
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainop-ui-backend")
        self.writes = 0  # actions taken through this source (they change jobs without a data_version)
        self._may: dict[tuple[str, str, str], tuple[float, bool]] = {}

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the backend's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, lambda: fn(*args, **kwargs))

    def change_token(self) -> object | None:
        """Something that differs whenever a job may have changed (the backend's token and this
        process's own writes), or None where the backend has no cheap way to know (a cluster)."""
        token = self.backend.change_token()
        return None if token is None else (token, self.writes)

    def open_logs(
        self,
        name: str,
        namespace: str,
        replica: str | None,
        container: str | None,
        follow: bool,
        stop: Callable[[], bool],
        partials: Callable[[list[LogLine]], None],
    ) -> Iterator[LogLine]:
        """A log reader of its own: a client for its thread (the follower sleeps between polls, so it
        must not hold the shared worker), ``stop()`` ends a follow whose page has gone even while the
        job runs on and writes nothing, ``partials`` gets each container's unfinished last line where
        the backend keeps one."""
        self.backend.get(name, namespace)  # a job that is not there: said now, as a 404

        def read() -> Iterator[LogLine]:
            # Opened when first read: a page that went away before then leaves nothing open.
            with self.backend.reader() as own:
                yield from own.logs(
                    name,
                    namespace,
                    replica=replica,
                    container=container,
                    follow=follow,
                    stop=stop,
                    partials=partials,
                )

        return read()

    # The verb each action needs of the caller's RBAC, as `kubectl patch` and `kubectl delete` ask.
    ACTION_VERBS = {"suspend": "patch", "resume": "patch", "delete": "delete"}
    MAY_TTL = 30.0  # seconds an answer is kept: a page polls every second, RBAC rarely changes

    def allowed_actions(self, kind: str, namespace: str) -> dict[str, bool]:
        """Which of the page's actions the caller may take on ``kind`` jobs in ``namespace`` (asked
        once per verb, kept ``MAY_TTL`` seconds). Called on the worker thread."""
        now = time.monotonic()
        out: dict[str, bool] = {}
        for action, verb in self.ACTION_VERBS.items():
            key = (verb, kind, namespace)
            cached = self._may.get(key)
            if cached is None or now - cached[0] > self.MAY_TTL:
                cached = self._may[key] = (now, self.backend.may(verb, kind, namespace))
            out[action] = cached[1]
        return out

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)
