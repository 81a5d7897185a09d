"""The local end of Trainer v2's progress contract: a job's supervisor listens on 127.0.0.1 for its
replicas' ``POST …/namespaces/{ns}/trainjobs/{name}/status`` and appends each ``trainerStatus`` to the
store (``Store.add_progress``), where ``trainop ui`` reads it.

The socket is bound when the supervisor starts (the replicas' env names its port), but aiohttp is
imported and served, on a thread of its own, only once a replica connects: a job that never posts
costs one socket. I/O adapter; what a valid post is lives in ``core.progress.check_trainer_status``.
"""

from __future__ import annotations

import hmac
import json
import secrets
import select
import socket
import threading
import time
from typing import Any

from trainop.api.constants import (
    ENV_TRAINER_SERVER_TOKEN,
    ENV_TRAINER_SERVER_URL,
    HEADER_PROGRESS_REPLICA,
)
from trainop.backends.local.paths import FILE_MODE, StatePaths
from trainop.backends.local.store import Store
from trainop.core.progress import ProgressError, check_trainer_status

STATUS_PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"
MAX_BODY = 64 * 1024  # a status is a few metrics; anything bigger is a mistake, refused with 413


class ProgressSink:
    """One job's progress endpoint: ``env()`` for its replicas; ``close()`` when the supervisor leaves."""

    def __init__(self, paths: StatePaths, uid: str, namespace: str, name: str) -> None:
        self.paths, self.uid = paths, uid
        self.path = STATUS_PATH.format(namespace=namespace, name=name)
        self.token = secrets.token_urlsafe(24)
        job_dir = paths.job_dir(namespace, name)
        job_dir.mkdir(parents=True, exist_ok=True)
        self.token_file = job_dir / "trainer-token"
        self.token_file.write_text(self.token)
        self.token_file.chmod(FILE_MODE)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self._stop_r, self._stop_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="progress", daemon=True)
        self._thread.start()

    def env(self) -> dict[str, str]:
        return {
            ENV_TRAINER_SERVER_URL: f"http://127.0.0.1:{self.port}{self.path}",
            ENV_TRAINER_SERVER_TOKEN: str(self.token_file),
        }

    def close(self) -> None:
        self._stop_w.send(b"x")
        self._thread.join(timeout=5)
        self.sock.close()
        self._stop_r.close()
        self._stop_w.close()

    def _serve(self) -> None:
        readable, _, _ = select.select([self.sock, self._stop_r], [], [])
        if self._stop_r in readable:
            return
        import asyncio

        asyncio.run(self._run_server())

    async def _run_server(self) -> None:
        import asyncio

        from aiohttp import web

        store = Store(self.paths)
        app = web.Application(client_max_size=MAX_BODY)
        app["store"] = store
        app.router.add_post(self.path, self._post)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.SockSite(runner, self.sock).start()
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()
        loop.add_reader(self._stop_r.fileno(), stopped.set)
        try:
            await stopped.wait()
        finally:
            loop.remove_reader(self._stop_r.fileno())
            await runner.cleanup()
            store.close()

    async def _post(self, request: Any) -> Any:
        from aiohttp import web

        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return web.json_response({"error": f"send the token in ${ENV_TRAINER_SERVER_TOKEN}"}, status=401)
        try:
            status = check_trainer_status(json.loads(await request.read()))
        except (ProgressError, ValueError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        replica = str(request.headers.get(HEADER_PROGRESS_REPLICA, ""))[:64]
        request.app["store"].add_progress(self.uid, replica, status, time.time())
        return web.json_response({"ok": True})
