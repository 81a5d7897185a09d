"""What ``TrainingClient`` needs from a backend: job CRUD, pods, logs and events, as Kubernetes JSON.

Two adapters implement it: ``trainop.sdk.kube`` (the Kubernetes API through lightkube) and
``trainop.sdk.local`` (the local backend). Errors are the typed ones of ``trainop.sdk.errors``.
No logic about conditions, selectors or waiting lives here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol


class ClientBackend(Protocol):
    """Synchronous operations on one backend. Every object in and out is a Kubernetes JSON dict.

    ``timeout`` is the request timeout in seconds (None: the backend's default).
    """

    name: str  # "kubernetes" or "local", for messages

    def create_job(self, obj: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Create the job in ``obj.metadata.namespace``; AlreadyExistsError, InvalidJobError, SDKError."""
        ...

    def get_job(
        self, kind: str, namespace: str, name: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """The job as stored (with status); NotFoundError when absent."""
        ...

    def list_jobs(
        self, kind: str, namespace: str, *, timeout: float | None = None
    ) -> list[dict[str, Any]]: ...

    def patch_job(
        self, kind: str, namespace: str, name: str, patch: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Apply a JSON merge patch (RFC 7386) to the job; the result is validated like an update."""
        ...

    def delete_job(
        self,
        kind: str,
        namespace: str,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> None: ...

    def list_pods(
        self, namespace: str, labels: Mapping[str, str], *, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Pods whose labels include every ``labels`` pair."""
        ...

    def read_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> str:
        """The container's whole log so far (``job``: the pod's job, for backends that file logs by job)."""
        ...

    def stream_log(
        self, namespace: str, job: str, pod: str, container: str, *, timeout: float | None = None
    ) -> Iterator[str]:
        """The container's log lines (without newline) from the start, until the container ends."""
        ...

    def list_events(self, namespace: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """core/v1 Event dicts of the namespace (involvedObject, message, timestamps)."""
        ...

    def check_local_queue(self, namespace: str, queue_name: str) -> None:
        """Best-effort check that a Kueue LocalQueue exists (§7.3, 1.9.3+); warns, never fails on 403/404."""
        ...

    def create_function_job(
        self, obj: dict[str, Any], *, packages_to_install: Sequence[str] | None, pip_index_url: str
    ) -> dict[str, Any]:
        """Create a function-mode job whose script pip-installs ``packages_to_install``. They must not
        land in the caller's environment: the local backend gives the job its own virtual environment
        (and installs them there first); on Kubernetes the pod's environment is already its own."""
        ...
