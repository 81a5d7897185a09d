"""DNS-1123 label checks (apimachinery's IsDNS1123Label).

They guard every name the local backend turns into a path.
"""

from __future__ import annotations

import pytest

from trainop.api.errors import FieldError
from trainop.api.names import DNS1123_LABEL_MSG, validate_dns1123_label

P = "metadata.namespace"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("default", [], id="plain"),
        pytest.param("a", [], id="one character"),
        pytest.param("123-abc", [], id="digits first"),
        pytest.param("a" * 63, [], id="63 characters"),
        pytest.param(
            "a" * 64,
            [FieldError(P, f'Invalid value: "{"a" * 64}": must be no more than 63 characters')],
            id="64",
        ),
        pytest.param(
            "../../victim", [FieldError(P, f'Invalid value: "../../victim": {DNS1123_LABEL_MSG}')], id="dots"
        ),
        pytest.param(
            "/tmp/x", [FieldError(P, f'Invalid value: "/tmp/x": {DNS1123_LABEL_MSG}')], id="absolute"
        ),
        pytest.param("..", [FieldError(P, f'Invalid value: "..": {DNS1123_LABEL_MSG}')], id="parent"),
        pytest.param("", [FieldError(P, f'Invalid value: "": {DNS1123_LABEL_MSG}')], id="empty"),
        pytest.param("Ab", [FieldError(P, f'Invalid value: "Ab": {DNS1123_LABEL_MSG}')], id="uppercase"),
        pytest.param("-a", [FieldError(P, f'Invalid value: "-a": {DNS1123_LABEL_MSG}')], id="leading dash"),
        pytest.param("a.b", [FieldError(P, f'Invalid value: "a.b": {DNS1123_LABEL_MSG}')], id="dot"),
        pytest.param(
            "a\n", [FieldError(P, f'Invalid value: "a\\n": {DNS1123_LABEL_MSG}')], id="trailing newline"
        ),
        pytest.param(["a"], [FieldError(P, 'Invalid value: ["a"]: must be a string')], id="not a string"),
    ],
)
def test_validate_dns1123_label(value: object, want: list[FieldError]) -> None:
    assert validate_dns1123_label(value, P) == want
