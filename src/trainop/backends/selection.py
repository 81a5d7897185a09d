"""Which backend a front door talks to, picked once: the choice (``build_selection``) and the one
``JobClient`` it opens (``open_job_client``).

``--backend local|kubernetes`` (or ``$TRAINOP_BACKEND``; the CLI's default is local), ``--kubeconfig``
and ``--context`` (either one alone also means kubernetes). Front doors reach jobs only through the
client this returns (backends/base.py), so none of them names a backend's class or reads its storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainop.backends.base import JobClient
    from trainop.backends.local.spawn import Spawner

BACKENDS = ("local", "kubernetes")
ENV_BACKEND = "TRAINOP_BACKEND"


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


def open_job_client(
    chosen: Selection, env: Mapping[str, str], *, spawner: Spawner | None = None
) -> JobClient:
    """The chosen backend's client. ``env``: the environment a job records for its replicas here;
    ``spawner``: how this machine starts a job's supervisor (backends/local/spawn.py's default when
    None). A cluster that cannot be reached through the kubeconfig raises ClusterError."""
    if chosen.backend == "kubernetes":
        from trainop.backends.kubernetes.jobs import KubernetesBackend

        return KubernetesBackend(chosen.kubeconfig, chosen.context)
    from trainop.backends.local.api import LocalBackend

    return LocalBackend(env=env, spawner=spawner)
