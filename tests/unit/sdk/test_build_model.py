"""``build_model``: Kubernetes JSON into upstream's model classes by type name, as upstream's
ApiClient.deserialize does; a value that does not fit its type is kept as it is."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from trainop.sdk.models import KubeflowOrgV1JobCondition, KubeObject, build_model


@pytest.mark.parametrize(
    ("data", "klass", "want"),
    [
        pytest.param(None, "V1Pod", None, id="None stays None"),
        pytest.param(["1", 2], "list[int]", [1, 2], id="a list of ints"),
        pytest.param("x", "list[int]", "x", id="not a list: kept"),
        pytest.param({"a": "1"}, "dict(str, int)", {"a": 1}, id="a dict of ints"),
        pytest.param([1], "dict(str, int)", [1], id="not a mapping: kept"),
        pytest.param({"a": [1]}, "object", {"a": [1]}, id="object: as is"),
        pytest.param({"a": "1"}, "Quantity", {"a": "1"}, id="an alias of object"),
        pytest.param("7", "long", 7, id="long is int"),
        pytest.param("seven", "int", "seven", id="not an int: kept"),
        pytest.param(
            "2026-01-02T03:04:05Z", "datetime", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), id="time"
        ),
        pytest.param("2026-01-02T03:04:05Z", "date", date(2026, 1, 2), id="date"),
        pytest.param("soon", "datetime", "soon", id="not a time: kept"),
        pytest.param(3, date, 3, id="not a date: kept"),
        pytest.param("text", "V1Pod", "text", id="not a mapping for a model: kept"),
    ],
)
def test_leaves_and_containers(data: Any, klass: Any, want: Any) -> None:
    got = build_model(data, klass)
    assert (got, type(got)) == (want, type(want))


def test_models_ours_kubernetes_clients_and_unknown_names() -> None:
    cond = build_model(
        {"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z", "extra": 1},
        "KubeflowOrgV1JobCondition",
    )
    assert isinstance(cond, KubeflowOrgV1JobCondition)
    assert (cond.type, cond.status, cond.last_transition_time.year) == ("Succeeded", "True", 2026)
    pod = build_model({"metadata": {"name": "p", "labels": {"a": "b"}}}, "V1Pod")
    assert (type(pod).__name__, pod.metadata.name, pod.metadata.labels) == ("V1Pod", "p", {"a": "b"})
    other = build_model({"someField": 1}, "NoSuchModel")
    assert isinstance(other, KubeObject)
    assert other.some_field == 1
    assert isinstance(build_model({"a": 1}, None), KubeObject)


class Point(BaseModel):
    x: int


class Plain:
    """A model class without upstream's ``local_vars_configuration`` argument."""

    openapi_types = {"x": "int"}
    attribute_map = {"x": "xValue"}

    def __init__(self, x: int | None = None) -> None:
        self.x = x


def test_pydantic_models_and_models_without_the_configuration_argument() -> None:
    assert build_model({"x": "1"}, Point) == Point(x=1)
    assert build_model({"xValue": "2"}, Plain).x == 2


def test_models_take_upstreams_arguments_by_position_or_name() -> None:
    cond = KubeflowOrgV1JobCondition(None, None, "m", "r", "True", "Succeeded")
    assert cond == KubeflowOrgV1JobCondition(message="m", reason="r", status="True", type="Succeeded")
    assert cond.attribute_map["last_transition_time"] == "lastTransitionTime"
    with pytest.raises(TypeError):
        KubeflowOrgV1JobCondition(state="True")
    with pytest.raises(ValueError, match="Invalid value for `status`, must not be `None`"):
        KubeflowOrgV1JobCondition(status=None, type="Running")
