"""The local end of Trainer v2's progress contract: a job's supervisor listens on 127.0.0.1 for its
replicas' ``POST …/namespaces/{ns}/trainjobs/{name}/status`` and appends each ``trainerStatus`` to the
store (``Store.add_progress``), where ``trainop ui`` reads it.

The socket is bound when the supervisor starts (the replicas' env names its port) and served on a
thread of its own by the standard library's HTTP request handler, one connection at a time (a post
is one small local request): no web framework to import, so the first post, which a DDP job's ranks
wait for, is answered at once (aiohttp's import, lazily on the first post, took ~1 s of it on a busy
machine). I/O adapter; what a valid post is lives in ``core.progress.check_trainer_status``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import select
import socket
import threading
import time
from typing import Any

from trainop.api.constants import ENV_TRAINER_SERVER_TOKEN, ENV_TRAINER_SERVER_URL, HEADER_PROGRESS_REPLICA
from trainop.backends.local.paths import FILE_MODE, StatePaths
from trainop.backends.local.store import Store
from trainop.core.progress import ProgressError, check_trainer_status

STATUS_PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"
MAX_BODY = 64 * 1024  # a status is a few metrics; anything bigger is a mistake, refused with 413
CLIENT_TIMEOUT = 5.0  # seconds a connection may take to send its request


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
        store: Store | None = None
        try:
            while True:
                readable, _, _ = select.select([self.sock, self._stop_r], [], [])
                if self._stop_r in readable:
                    return
                try:
                    conn, addr = self.sock.accept()
                except OSError:
                    continue
                store = store or Store(self.paths)  # (opened on this thread, the one that writes)
                with conn:
                    conn.settimeout(CLIENT_TIMEOUT)
                    _answer(conn, addr, self, store)
        finally:
            if store is not None:
                store.close()

    def handle_post(self, headers: Any, body: bytes | None, store: Store) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON reply) for one post; ``body`` None: larger than MAX_BODY."""
        given = str(headers.get("Authorization", "")).removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return 401, {"error": f"send the token in ${ENV_TRAINER_SERVER_TOKEN}"}
        if body is None:
            return 413, {"error": f"a trainerStatus is at most {MAX_BODY} bytes"}
        try:
            status = check_trainer_status(json.loads(body))
        except (ProgressError, ValueError) as exc:
            return 400, {"error": str(exc)}
        replica = str(headers.get(HEADER_PROGRESS_REPLICA, ""))[:64]
        store.add_progress(self.uid, replica, status, time.time())
        return 200, {"ok": True}


def _answer(conn: socket.socket, addr: Any, sink: ProgressSink, store: Store) -> None:
    """Serve one connection with the standard library's request handler (HTTP/1.0: one request)."""
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != sink.path:
                self._reply(404, {"error": f"post to {sink.path}"})
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length <= MAX_BODY else None
            self._reply(*sink.handle_post(self.headers, body, store))

        def _reply(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no access log

    with contextlib.suppress(OSError, ValueError):  # a client gone, or garbage: nothing to answer
        Handler(conn, addr, None)  # type: ignore[arg-type]  # (it never reads its server)
