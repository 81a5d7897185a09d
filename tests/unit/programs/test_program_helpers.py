"""trainop.programs' pure helpers: where a model URI points, how values are coerced, shard ranges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainop.programs.hf_llm_training import (
    build_single_rank_env,
    client_versions,
    coerce_value,
    compute_ranges,
)
from trainop.programs.sources import ModelSource, build_model_source, build_repo_folder, detect_offline


@pytest.mark.parametrize(
    ("uri", "want"),
    [
        pytest.param(
            "hf://google-bert/bert-base-cased",
            ModelSource("hf://google-bert/bert-base-cased", repo="google-bert/bert-base-cased"),
            id="hf://",
        ),
        pytest.param(
            "file:///models/tiny", ModelSource("file:///models/tiny", path=Path("/models/tiny")), id="file://"
        ),
        pytest.param(
            "/models/tiny", ModelSource("/models/tiny", path=Path("/models/tiny")), id="an absolute path"
        ),
        pytest.param("org/name", ModelSource("org/name", repo="org/name"), id="a bare repo id, as upstream"),
    ],
)
def test_model_source(uri: str, want: ModelSource) -> None:
    assert build_model_source(uri) == want


def test_model_source_refuses_other_schemes() -> None:
    with pytest.raises(ValueError, match="scheme 's3' is not one of hf://, file:// or a path"):
        build_model_source("s3://bucket/model")


def test_repo_folder_and_offline() -> None:
    assert build_repo_folder("acme/tiny-gpt") == "models--acme--tiny-gpt"
    assert [detect_offline({"HF_HUB_OFFLINE": v}) for v in ("1", "TRUE", "0", "")] == [
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize(
    ("value", "default", "want"),
    [
        pytest.param("3", 0, 3, id="int"),
        pytest.param("0.5", 1.0, 0.5, id="float"),
        pytest.param("true", False, True, id="bool"),
        pytest.param("steps", "no", "steps", id="text stays text"),
        pytest.param("x", 1, "x", id="not a number: left for the class to refuse"),
        pytest.param(["a"], None, ["a"], id="no scalar default"),
    ],
)
def test_coerce_value(value: Any, default: Any, want: Any) -> None:
    assert coerce_value(value, default) == want


@pytest.mark.parametrize(
    ("rows", "want"),
    [
        pytest.param([], "", id="none"),
        pytest.param([0, 1, 2, 3], "0-3", id="one run"),
        pytest.param([0, 1, 5, 7, 8], "0-1,5,7-8", id="runs and singles"),
    ],
)
def test_compute_ranges(rows: list[int], want: str) -> None:
    assert compute_ranges(rows) == want


def test_client_versions() -> None:
    assert client_versions({"TRAINOP_CLIENT_VERSIONS": "transformers=4.50.2 peft=0.15.1"}) == {
        "transformers": "4.50.2",
        "peft": "0.15.1",
    }
    assert client_versions({}) == {}


@pytest.mark.parametrize(
    ("env", "single"),
    [
        pytest.param({}, True, id="no PET_* (run by hand): one process"),
        pytest.param({"PET_NNODES": "1", "PET_NPROC_PER_NODE": "1"}, True, id="a Master alone"),
        pytest.param({"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1"}, False, id="two nodes"),
        pytest.param({"PET_NNODES": "1", "PET_NPROC_PER_NODE": "2"}, False, id="two processes"),
    ],
)
def test_single_rank_env(env: dict[str, str], single: bool) -> None:
    got = build_single_rank_env({**env, "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": "4242"})
    if not single:
        assert got is None
        return
    assert got == {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "GROUP_RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "4242",
    }
