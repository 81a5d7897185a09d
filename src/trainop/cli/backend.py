"""Which backend a ``trainop`` command talks to, and the operations it may call on it.

``--backend local|kubernetes`` (or ``$TRAINOP_BACKEND``; default local), ``--kubeconfig`` and
``--context`` (either one alone also means kubernetes). ``Backend`` is the one interface the CLI
uses: ``LocalBackend`` (this machine) and ``KubernetesBackend`` (a cluster through a kubeconfig)
both implement it, so no command reads a backend's storage itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob
    from trainop.backends.base import ContainerRun, JobFeed, LogLine

BACKENDS = ("local", "kubernetes")
ENV_BACKEND = "TRAINOP_BACKEND"


class Backend(Protocol):
    def where(self) -> str: ...
    def close(self) -> None: ...
    def prepare(self, manifest: Mapping[str, Any]) -> TrainingJob: ...
    def submit(
        self,
        manifest: Mapping[str, Any],
        *,
        base_dir: Any = None,
        namespace: str | None = None,
        attached_client: Any = None,
    ) -> TrainingJob: ...
    def get(self, name: str, namespace: str = "default", kind: str | None = None) -> TrainingJob: ...
    def list_jobs(self, namespace: str | None = None, kind: str | None = None) -> list[TrainingJob]: ...
    def known_names(self, namespace: str) -> list[str]: ...
    def describe(self, name: str, namespace: str = "default") -> Any: ...
    def pods(self, name: str, namespace: str = "default") -> list[dict[str, Any]]: ...
    def replica_pods(self, namespace: str | None) -> list[tuple[TrainingJob, dict[str, Any], int | None]]: ...
    def runs(self, name: str, namespace: str = "default") -> list[ContainerRun]: ...
    def feed(self, job: TrainingJob) -> JobFeed: ...
    def set_suspend(
        self, name: str, suspend: bool, namespace: str = "default", *, interrupted: bool = False
    ) -> TrainingJob: ...
    def kill_replicas(self, name: str, namespace: str = "default") -> None: ...
    def delete(
        self, name: str, namespace: str = "default", *, wait: bool = True, grace: float | None = None
    ) -> None: ...
    def wait(
        self, name: str, conditions: Sequence[str], namespace: str = "default", timeout: float | None = None
    ) -> TrainingJob: ...
    def logs(
        self,
        name: str,
        namespace: str = "default",
        *,
        replica: str | None = None,
        container: str | None = None,
        follow: bool = False,
        previous: bool = False,
    ) -> Iterator[LogLine]: ...


class SelectionError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Selection:
    backend: str = "local"
    kubeconfig: str | None = None
    context: str | None = None


def build_selection(
    backend: str | None, kubeconfig: str | None, context: str | None, env: Mapping[str, str]
) -> Selection:
    """The flags first, then ``$TRAINOP_BACKEND``; a kubeconfig or context alone means kubernetes.
    Raises SelectionError (one line) for an unknown backend or a kubeconfig given to local. Pure."""
    name = backend or env.get(ENV_BACKEND) or None
    if name is None:
        name = "kubernetes" if (kubeconfig or context) else "local"
    name = {"k8s": "kubernetes", "kube": "kubernetes"}.get(name.lower(), name.lower())
    if name not in BACKENDS:
        source = "--backend" if backend else f"${ENV_BACKEND}"
        raise SelectionError(f'unknown backend "{name}" ({source}); use local or kubernetes')
    if name == "local" and (kubeconfig or context):
        flag = "--kubeconfig" if kubeconfig else "--context"
        raise SelectionError(f"{flag} names a cluster, but the backend is local: add --backend kubernetes")
    return Selection(name, kubeconfig, context)
