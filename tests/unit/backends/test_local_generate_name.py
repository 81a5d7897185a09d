"""``metadata.generateName`` on the local backend: the API server's generated name (prefix cut to 58
characters, 5 characters from apimachinery's rand alphabet)."""

from __future__ import annotations

import re

import pytest

from trainop.backends.local.api import GENERATED_NAME_ALPHABET, build_generated_name


@pytest.mark.parametrize(
    ("prefix", "want_prefix"),
    [
        pytest.param("tqdm-", "tqdm-", id="a short prefix kept whole"),
        pytest.param("a" * 70, "a" * 58, id="a long prefix cut to 58, so the name fits 63"),
        pytest.param("", "", id="an empty prefix: the suffix alone"),
    ],
)
def test_generated_name(prefix: str, want_prefix: str) -> None:
    names = {build_generated_name(prefix) for _ in range(20)}
    shapes = {
        bool(re.fullmatch(re.escape(want_prefix) + f"[{GENERATED_NAME_ALPHABET}]{{5}}", n)) for n in names
    }
    assert (shapes, len(names) > 1) == ({True}, True)
