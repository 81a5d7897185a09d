"""Suite-wide settings: the test control plane's fixtures, the signals the commands under test start
with, and how a warning found after the last test is reported."""

from __future__ import annotations

import gc
import signal
import warnings

import pytest

pytest_plugins = ["trainop.testing.testenv"]


def pytest_configure(config: pytest.Config) -> None:
    """A non-interactive shell starts a background command (``make test &``, ``nohup … &``) with SIGINT
    and SIGQUIT ignored, and every process under it inherits that. ``trainop run`` rightly keeps a
    signal its parent ignored ignored (test_local_run_signals.py), so the Ctrl-C tests would time out
    for how the suite was launched. The commands under test start with the default dispositions, as
    they do from a terminal."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


# What a test module imports to reach a binary of hack/testenv/build.sh without the k8s_env fixture
# (kubectl, Helm, Kueue, scheduler-plugins), and those of the binaries build.sh makes last.
TESTENV_FINDERS = ("find_bin_dir", "find_helm", "find_kueue_dir", "find_scheduler_plugins_dir", "start_kueue")
TESTENV_ADDONS = ("find_helm", "find_kueue_dir", "start_kueue")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs a binary build.sh makes is marked ``k8s``: one that uses the control plane
    (``k8s_env``, directly or through another fixture) or whose module imports a finder above. ``make
    test`` runs ``-m "not k8s"`` while the binaries still build, then ``-m k8s`` (Makefile), so a test
    missing the mark would fail for a binary not built yet."""
    for item in items:
        module = getattr(item, "module", None)
        if "k8s_env" in getattr(item, "fixturenames", ()) or any(hasattr(module, f) for f in TESTENV_FINDERS):
            item.add_marker(pytest.mark.k8s)
        if any(hasattr(module, f) for f in TESTENV_ADDONS):
            item.add_marker(pytest.mark.testenv_addons)  # Kueue, Helm: run after build.sh --wait


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Warnings are errors (pyproject's filterwarnings), so an unclosed socket a test leaves behind
    fails that test. One that only the garbage collector finds after the last test (an object in a
    reference cycle) belongs to no test: it is printed with its object, not turned into a failure of
    a run whose every test passed."""
    gc.collect()  # here, so what it finds is reported under the filter below
    warnings.filterwarnings("default", category=pytest.PytestUnraisableExceptionWarning)
