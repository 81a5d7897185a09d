"""kubeflow-training 1.9.4's public API against ``trainop.sdk``'s, computed with ``inspect``.

Every public name upstream's package offers (top level, ``models``, ``constants``, ``utils.utils``,
``api_client``, ``configuration``, ``exceptions``, ``rest``, ``api.training_client``), every
constant's value, every ``TrainingClient`` method and every ``KubeflowOrgV1*`` model (parameter
names, order, kinds and defaults; the models' ``attribute_map``/``openapi_types`` and members) is
compared with ours. A difference must be in ``EXPLAINED``, and ``EXPLAINED`` must name exactly the
rows of docs/sdk.md's "API differences" table: an unexplained difference fails, and so does an
explanation (here or in the docs) that no longer matches a difference.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

upstream = pytest.importorskip(
    "kubeflow.training", reason="kubeflow-training==1.9.4 (the pinned test dependency) is not installed"
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "sdk.md"
DOC_SECTION = "## API differences from kubeflow-training"

# (where, name) → the difference, in words. Each key is a row of docs/sdk.md's table.
EXPLAINED: dict[tuple[str, str], str] = {
    (
        "TrainingClient.__init__",
        "namespace",
    ): "default None (resolved in-pod, then kube-config, then 'default')",
    ("TrainingClient.__init__", "backend"): "extra keyword-only parameter: choose the local backend",
    (
        "TrainingClient.__init__",
        "local_home",
    ): "extra keyword-only parameter: the local backend's state directory",
    ("TrainingClient.create_job", "fail_fast"): "extra keyword-only parameter: fail at the first error",
    ("kubeflow.training", "SDKError"): "extra: RuntimeError subclass the backends' failures raise",
    ("kubeflow.training", "NotFoundError"): "extra: RuntimeError subclass for a 404",
    ("kubeflow.training", "AlreadyExistsError"): "extra: RuntimeError subclass for a 409",
    ("kubeflow.training", "InvalidJobError"): "extra: RuntimeError subclass for a 422/403",
    ("kubeflow.training", "JobFailedError"): "extra: RuntimeError subclass for a Failed job",
    ("kubeflow.training", "WaitTimeoutError"): "extra: TimeoutError subclass",
    ("kubeflow.training", "KubeObject"): "extra: read-only view of a Kubernetes JSON object",
    ("kubeflow.training.constants", "JAXJOB_REPLICA_TYPES"): "('worker',), not 'worker'",
    ("kubeflow.training.constants", "REPLICA_TYPES"): "extra: every replica type, lower case",
    ("kubeflow.training.models", "KubeObject"): "extra: the same view, where upstream's models are",
    ("kubeflow.training.api.training_client", "logger"): "named trainop.sdk.client",
    ("kubeflow.training.rest", "logger"): "kubernetes.client.rest's",
    ("kubeflow.training.utils.utils", "logger"): "named trainop.sdk.utils",
}

# Names a module holds only because it imported them: stdlib and typing helpers, __future__ features,
# dependencies' modules. They are no API.
NOT_API_MODULES = ("typing", "__future__", "collections.abc")


def is_api(value: Any, root: str) -> bool:
    """Whether a public attribute of a module under ``root`` is part of its API."""
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith(root + ".")
    if isinstance(value, typing._Final) or type(value).__module__ in NOT_API_MODULES:  # type: ignore[attr-defined]
        return False
    if isinstance(value, __import__("__future__")._Feature):
        return False
    if inspect.isclass(value) or inspect.isroutine(value):
        module = value.__module__ or ""
        return module.startswith((root, "kubernetes"))
    return True


def public_names(module: types.ModuleType, root: str) -> dict[str, Any]:
    out = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if is_api(value, root):
            out[name] = value
    return out


def declared_names(module: types.ModuleType) -> set[str]:
    """Our module's declared public names: ``__all__`` where it has one, else what ``public_names`` sees."""
    declared = getattr(module, "__all__", None)
    if declared is not None:  # filtered as upstream's names are (a typing alias is not API)
        return {name for name in declared if is_api(getattr(module, name, None), "trainop")}
    return set(public_names(module, "trainop"))


# attributes of a module-level instance that record its use, not its API
RUN_TIME_STATE = frozenset({"first_call"})


def shape(value: Any) -> Any:
    """A value as comparable across the two packages: classes by name, containers element-wise."""
    if inspect.isclass(value):
        return value.__name__
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(shape(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return {shape(v) for v in value}
    if hasattr(value, "to_dict") and hasattr(value, "attribute_map"):
        return (type(value).__name__, value.to_dict())
    if isinstance(value, logging.Logger):
        return ("Logger", value.name)
    if type(value).__module__.startswith(("kubeflow.training", "trainop")) and hasattr(value, "__dict__"):
        # an instance such as status_logger: its configuration, not what using it changed (first_call
        # flips once any test in this process has waited on a job)
        state = {k: v for k, v in vars(value).items() if k not in RUN_TIME_STATE}
        return (type(value).__name__, shape(state))
    return value


def parameters(fn: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [(p.name, p.kind.name, shape(p.default)) for p in sig.parameters.values()]


def signature_diffs(
    where: str, up: Callable[..., Any], us: Callable[..., Any]
) -> Iterator[tuple[str, str, str]]:
    """One difference per parameter: missing, extra, or a different position, kind or default."""
    a, b = parameters(up), parameters(us)
    names_a, names_b = [p[0] for p in a], [p[0] for p in b]
    for i, (name, kind, default) in enumerate(a):
        if name not in names_b:
            yield where, name, "missing parameter"
            continue
        j = names_b.index(name)
        _, kind_b, default_b = b[j]
        if j != i:
            yield where, name, f"position {j}, upstream {i}"
        elif kind_b != kind:
            yield where, name, f"kind {kind_b}, upstream {kind}"
        elif default_b != default:
            yield where, name, f"default {default_b!r}, upstream {default!r}"
    for name in names_b:
        if name not in names_a:
            yield where, name, "extra parameter"


def members(cls: type) -> dict[str, Any]:
    return {n: v for n, v in inspect.getmembers(cls) if not n.startswith("_") or n == "__init__"}


def class_diffs(where: str, up: type, us: type) -> Iterator[tuple[str, str, str]]:
    """A class: its public members (methods, properties, class attributes) and their signatures."""
    if up is us:
        return
    ma, mb = members(up), members(us)
    for name, value in ma.items():
        if name not in mb:
            yield where, name, "missing member"
            continue
        other = mb[name]
        if inspect.isroutine(value):
            if not inspect.isroutine(other):
                yield where, name, f"{type(other).__name__}, upstream a method"
                continue
            yield from signature_diffs(f"{where}.{name}", value, other)
        elif isinstance(value, property):
            if not isinstance(other, property):
                yield where, name, f"{type(other).__name__}, upstream a property"
        elif name in ("attribute_map", "openapi_types") and value != other:
            yield where, name, f"{other!r}, upstream {value!r}"
    for name in mb:
        if name not in ma:
            yield where, name, "extra member"


def module_diffs(where: str, up: types.ModuleType, us: types.ModuleType) -> Iterator[tuple[str, str, str]]:
    names = public_names(up, "kubeflow.training")
    for name, value in sorted(names.items()):
        if not hasattr(us, name):
            yield where, name, "missing"
            continue
        other = getattr(us, name)
        if value is other:
            continue
        if isinstance(value, types.ModuleType):
            if not isinstance(other, types.ModuleType):
                yield where, name, f"{type(other).__name__}, upstream a module"
        elif inspect.isclass(value):
            if not inspect.isclass(other):
                yield where, name, f"{type(other).__name__}, upstream a class"
            else:
                yield from class_diffs(name, value, other)
        elif inspect.isroutine(value):
            if not inspect.isroutine(other):
                yield where, name, f"{type(other).__name__}, upstream a function"
            else:
                yield from signature_diffs(f"{where}.{name}", value, other)
        elif shape(value) != shape(other):
            yield where, name, f"value {shape(other)!r}, upstream {shape(value)!r}"
    for name in sorted(declared_names(us) - set(names)):
        if getattr(us, name, None) is not us:  # a module's own alias (constants.constants) is its path
            yield where, name, "extra"


# upstream module → ours (as a user imports each)
MODULES = [
    ("kubeflow.training", "trainop.sdk"),
    ("kubeflow.training.models", "trainop.sdk.models"),
    ("kubeflow.training.constants.constants", "trainop.sdk.constants.constants"),
    ("kubeflow.training.utils.utils", "trainop.sdk.utils.utils"),
    ("kubeflow.training.api_client", "trainop.sdk.api_client"),
    ("kubeflow.training.configuration", "trainop.sdk.configuration"),
    ("kubeflow.training.exceptions", "trainop.sdk.exceptions"),
    ("kubeflow.training.rest", "trainop.sdk.rest"),
    ("kubeflow.training.api.training_client", "trainop.sdk.api.training_client"),
]


def build_differences() -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for up_name, our_name in MODULES:
        up = importlib.import_module(up_name)
        try:
            us = importlib.import_module(our_name)
        except ImportError as e:
            found[(up_name, "")] = f"module missing: import {our_name} fails ({e})"
            continue
        # The constants package's attribute on upstream's top level is its inner module.
        for where, name, what in module_diffs(up_name.replace(".constants.constants", ".constants"), up, us):
            found.setdefault((where, name), what)
    # Upstream's generated per-model modules (kubeflow.training.models.kubeflow_org_v1_py_torch_job …).
    for name, value in public_names(upstream.models, "kubeflow.training").items():
        if isinstance(value, types.ModuleType) and name.startswith("kubeflow_org_v1_"):
            try:
                importlib.import_module(f"trainop.sdk.models.{name}")
            except ImportError:
                found[("kubeflow.training.models", name)] = "module missing"
    return found


def documented_rows() -> set[tuple[str, str]]:
    """The (where, name) cells of docs/sdk.md's API-differences table."""
    text = DOC.read_text()
    assert DOC_SECTION in text, f"{DOC} has no {DOC_SECTION!r} section"
    section = text.split(DOC_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        rows.add((cells[0].strip("`"), cells[1].strip("`")))
    return rows


@pytest.mark.integration
def test_no_unexplained_api_difference() -> None:
    found = build_differences()
    unexplained = {k: v for k, v in sorted(found.items()) if k not in EXPLAINED}
    stale = {k: v for k, v in sorted(EXPLAINED.items()) if k not in found}
    assert (unexplained, stale) == ({}, {})


@pytest.mark.integration
def test_explanations_are_the_documented_ones() -> None:
    rows = documented_rows()
    assert (sorted(set(EXPLAINED) - rows), sorted(rows - set(EXPLAINED))) == ([], [])


def test_version_compared() -> None:
    assert upstream.__version__ == "1.9.4"
    assert re.fullmatch(r"\d+\.\d+\.\d+", upstream.__version__)


def test_train_checks_its_parameters_as_upstream_does(tmp_path: Path) -> None:
    """train() refuses a missing or foreign parameter object with upstream's ValueErrors, before it
    creates anything."""
    from trainop.sdk import TrainingClient

    client = TrainingClient(backend="local", local_home=tmp_path / "home")
    with pytest.raises(ValueError, match=r"^One of the required parameters is None$"):
        client.train(name="llm")
    with pytest.raises(ValueError, match=r"^Invalid model provider parameters 1$"):
        client.train(
            name="llm", model_provider_parameters=1, dataset_provider_parameters=1, trainer_parameters=1
        )
    assert client.list_jobs() == []
