"""Every SDK model declares its fields for type checkers exactly as ``openapi_types`` lists them: the
package is typed (py.typed), so a user's mypy refuses a misspelt field and an editor completes them;
this keeps the two lists from drifting apart."""

from __future__ import annotations

import inspect

import pytest

from trainop.sdk import models

MODELS = [
    cls
    for name, cls in inspect.getmembers(models, inspect.isclass)
    if name.startswith("KubeflowOrgV1") and issubclass(cls, models.OpenAPIModel)
]


def _declared(cls: type) -> set[str]:
    base = set(vars(models.OpenAPIModel).get("__annotations__", {}))
    names: set[str] = set()
    for klass in cls.__mro__:
        names |= set(vars(klass).get("__annotations__", {}))
    return {n for n in names - base if not n.startswith("_") and n != "openapi_types"}


def test_there_are_all_of_upstreams_models() -> None:
    assert len(MODELS) == 27


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_a_models_declared_fields_are_its_openapi_types(cls: type[models.OpenAPIModel]) -> None:
    assert _declared(cls) == set(cls.openapi_types)
