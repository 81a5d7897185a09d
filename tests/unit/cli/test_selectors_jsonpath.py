"""kubectl's ``-l`` selectors and ``-o jsonpath=`` templates, as the CLI reads them."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cli.jsonpath import JsonPathError, render_jsonpath
from trainop.cli.selectors import SelectorError, matches, parse_selector

LABELS = {"team": "vision", "tier": "gpu", "training.kubeflow.org/job-name": "demo"}


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param("team=vision", True, id="equality"),
        pytest.param("team==vision", True, id="double equals"),
        pytest.param("team!=vision", False, id="inequality"),
        pytest.param("owner!=bob", True, id="inequality holds for a missing key"),
        pytest.param("team", True, id="exists"),
        pytest.param("!team", False, id="does not exist"),
        pytest.param("tier in (cpu, gpu)", True, id="in"),
        pytest.param("tier notin (gpu)", False, id="notin"),
        pytest.param(
            "team=vision,tier in (cpu,gpu)", True, id="all of several (commas inside parentheses kept)"
        ),
        pytest.param("team=vision,tier=cpu", False, id="one of several fails"),
        pytest.param("training.kubeflow.org/job-name=demo", True, id="a prefixed key"),
    ],
)
def test_selector(selector: str, want: bool) -> None:
    assert matches(LABELS, parse_selector(selector)) is want


@pytest.mark.parametrize(
    "selector", [pytest.param("a=b,", id="stray comma"), pytest.param("a=(b", id="garbage")]
)
def test_bad_selector(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(selector)


OBJ: dict[str, Any] = {
    "kind": "List",
    "items": [
        {
            "metadata": {"name": "a", "labels": {"x.y/z": "1"}},
            "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]},
        },
        {"metadata": {"name": "b"}, "spec": {"suspend": True}},
    ],
}


@pytest.mark.parametrize(
    ("template", "want"),
    [
        pytest.param("{.items[*].metadata.name}", "a b", id="a list, space-joined"),
        pytest.param("{.items[0].metadata.name}", "a", id="an index"),
        pytest.param("{.items[-1].metadata.name}", "b", id="a negative index"),
        pytest.param(
            '{range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[-1].type}{"\\n"}{end}',
            "a\tRunning\nb\t\n",
            id="range with literals",
        ),
        pytest.param("{.items[0].metadata.labels['x.y/z']}", "1", id="a quoted key with dots"),
        pytest.param("name: {.items[1].spec.suspend}", "name: true", id="text around; booleans as kubectl"),
        pytest.param("{.items[1].metadata}", '{"name":"b"}', id="an object as JSON"),
        pytest.param("{.nothing}", "", id="a missing field: empty"),
    ],
)
def test_jsonpath(template: str, want: str) -> None:
    assert render_jsonpath(template, OBJ) == want


@pytest.mark.parametrize(
    "template",
    [
        pytest.param("{.items", id="unclosed"),
        pytest.param("{range .items[*]}{.a}", id="range without end"),
        pytest.param("{end}", id="end without range"),
        pytest.param("{.items[x]}", id="bad index"),
    ],
)
def test_bad_jsonpath(template: str) -> None:
    with pytest.raises(JsonPathError):
        render_jsonpath(template, OBJ)
