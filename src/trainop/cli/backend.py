"""Which backend a ``trainop`` command talks to.

``--backend local|kubernetes`` (or ``$TRAINOP_BACKEND``; default local), ``--kubeconfig`` and
``--context`` (either one alone also means kubernetes). Commands reach jobs only through the chosen
backend's ``JobClient`` (backends/base.py), so no command reads a backend's storage itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

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
