"""Suite-wide settings: the test control plane's fixtures, and how a warning found after the last
test is reported."""

from __future__ import annotations

import gc
import warnings

import pytest

pytest_plugins = ["trainop.testing.testenv"]


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Warnings are errors (pyproject's filterwarnings), so an unclosed socket a test leaves behind
    fails that test. One that only the garbage collector finds after the last test (an object in a
    reference cycle) belongs to no test: it is printed with its object, not turned into a failure of
    a run whose every test passed."""
    gc.collect()  # here, so what it finds is reported under the filter below
    warnings.filterwarnings("default", category=pytest.PytestUnraisableExceptionWarning)
