"""The deployment tests (issue 26) run real tools: Helm (built into the test control plane's cache),
kubectl's kustomize, promtool and pip. A missing tool fails the test with its install command."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
