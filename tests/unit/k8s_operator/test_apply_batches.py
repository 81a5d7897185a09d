"""How a Plan's actions are grouped for concurrent application: order kept, prerequisites first."""

from __future__ import annotations

import pytest

from trainop.backends.executor import build_batches as _batches
from trainop.core.plan import Action, CreateObject, DeleteJob, DeleteObject, UpdateObject


def create(kind: str, name: str) -> CreateObject:
    return CreateObject({"kind": kind, "metadata": {"name": name}})


def label(a: Action) -> str:
    if isinstance(a, CreateObject | UpdateObject):
        return f"{type(a).__name__[:6]} {a.obj['kind']}/{a.obj['metadata']['name']}"
    if isinstance(a, DeleteObject):
        return f"Delete {a.kind}/{a.name}"
    return "DeleteJob"


@pytest.mark.parametrize(
    ("actions", "want"),
    [
        pytest.param(
            [create("Pod", "m-0"), create("Pod", "w-0"), create("Service", "m-0"), create("Service", "w-0")],
            [["Create Pod/m-0", "Create Pod/w-0", "Create Service/m-0", "Create Service/w-0"]],
            id="a job's pods and services: one round trip",
        ),
        pytest.param(
            [create("ServiceAccount", "l"), create("ConfigMap", "c"), create("Role", "l"),
             create("RoleBinding", "l"),
             create("Pod", "w-0"), create("Pod", "l")],
            [["Create ServiceAccount/l", "Create ConfigMap/c", "Create Role/l", "Create RoleBinding/l"],
             ["Create Pod/w-0", "Create Pod/l"]],
            id="MPI: what the launcher needs at admission goes first",
        ),
        pytest.param(
            [DeleteObject("Pod", "a"), DeleteObject("Service", "a"), create("Pod", "a"),
             UpdateObject({"kind": "ConfigMap", "metadata": {"name": "c"}}),
             UpdateObject({"kind": "Role", "metadata": {"name": "r"}}), DeleteJob()],
            [["Delete Pod/a", "Delete Service/a"], ["Create Pod/a"], ["Update ConfigMap/c"],
             ["Update Role/r"],
             ["DeleteJob"]],
            id="kinds of action keep their order; updates one by one",
        ),
    ],
)  # fmt: skip
def test_batches(actions: list[Action], want: list[list[str]]) -> None:
    assert [[label(a) for a in b] for b in _batches(actions)] == want
