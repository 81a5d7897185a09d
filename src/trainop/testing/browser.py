"""The web view's test harness: ``trainop ui`` as a real process, and Debian's headless Chromium driven
through Selenium by path (browser downloads are blocked here, so Selenium Manager is never asked).

A missing browser fails the test with the install command; it never skips.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

INSTALL = "apt-get install -y chromium chromium-driver (or: make chromium)"
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_PATHS = ("/usr/bin/chromedriver",)


def find_chromium() -> tuple[str, str]:
    """(browser, driver) paths; raises RuntimeError naming the install command when either is missing."""
    browser = next((p for p in CHROMIUM_PATHS if os.path.exists(p)), None) or shutil.which("chromium")
    driver = next((p for p in DRIVER_PATHS if os.path.exists(p)), None) or shutil.which("chromedriver")
    if not browser or not driver:
        missing = "chromium" if not browser else "chromedriver"
        raise RuntimeError(f"the web view's browser tests need Debian's {missing}: {INSTALL}")
    return browser, driver


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver (Selenium), closed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = find_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in containers and CI
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@dataclass
class UiServer:
    """A running ``trainop ui``: its URL with the token, the base without it, and the process."""

    url: str
    base: str
    token: str
    proc: subprocess.Popen[str]

    @property
    def cookie(self) -> str:
        return f"trainop_ui_{self.base.rsplit(':', 1)[1]}={self.token}"

    def get(self, path: str, *, cookie: bool = True, timeout: float = 30.0) -> tuple[int, bytes]:
        """(status, body) of a GET, with the session's cookie unless told not to."""
        return self.request("GET", path, cookie=cookie, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        cookie: bool = True,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, bytes]:
        req = urllib.request.Request(self.base + path, method=method, headers=dict(headers or {}))
        if cookie:
            req.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()

    def status_field(self, name: str) -> int:
        """A number from the server's /proc/PID/status: ``VmHWM`` (peak RSS, KiB), ``Threads`` …"""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return int(line.split()[1])
        raise AssertionError(f"no {name} in /proc/{self.proc.pid}/status")

    def open_files(self, suffix: str = "") -> int:
        """How many files the server has open (those whose path ends with ``suffix``)."""
        fd_dir = f"/proc/{self.proc.pid}/fd"
        paths = []
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                paths.append(os.readlink(f"{fd_dir}/{fd}"))
        return sum(p.endswith(suffix) for p in paths)

    def rss_peak_kib(self) -> int:
        return self.status_field("VmHWM")


@contextlib.contextmanager
def start_ui(*args: str, env: Mapping[str, str] | None = None, timeout: float = 60.0) -> Iterator[UiServer]:
    """``trainop ui --port 0 ARGS`` until the block ends; the URL is read from its first line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainop.cli.main", "ui", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=None if env is None else dict(env),
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "http://" in line or not line:
                break
        if "http://" not in line:
            rest = proc.stdout.read() if proc.poll() is not None else ""
            raise AssertionError(f"trainop ui printed no URL: {line!r}{rest!r}")
        url = line[line.index("http://") :].strip()
        base, token = url.split("/?token=")
        yield UiServer(url, base, token, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def wait_until(check: Callable[[], T | None], what: str, timeout: float = 30.0, interval: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy (exceptions count as not yet); fail naming
    ``what`` and the last value or error."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except Exception as exc:  # a node not rendered yet, a stale element
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def text_of(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def texts_of(driver: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [str(e.text) for e in driver.find_elements(By.CSS_SELECTOR, css)]


def screenshot(driver: Any, directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


@contextlib.contextmanager
def chromium_or_fail() -> Iterator[Any]:
    """``chromium()`` for a pytest fixture: a missing browser fails the test with the install command."""
    import pytest

    try:
        find_chromium()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    with chromium() as driver:
        yield driver


def open_page(driver: Any, ui: UiServer, path: str = "/") -> None:
    """``path`` of ``ui``; the first visit of a session trades the printed URL's token for its cookie.
    Marks the page, so a test can tell that later updates came without a reload."""
    if not driver.current_url.startswith(ui.base):
        driver.get(ui.url)
    driver.get(ui.base + path)
    driver.execute_script("window.__notReloaded = true")


def job_cell(driver: Any, key: str, col: str) -> str:
    """A cell of the job list: ``key`` is ``namespace/name``."""
    return text_of(driver, f'tr[data-job="{key}"] td[data-col="{col}"]')


def replica_cell(driver: Any, replica: str, col: str) -> str:
    """A cell of a job page's replica table (``master-0``; phase, restarts, exit, waiting)."""
    return text_of(driver, f'#replicas tr[data-replica="{replica}"] td[data-col="{col}"]')


def run_trainop(env: Mapping[str, str], *args: str, stdin: str | None = None, timeout: float = 120.0) -> str:
    """``trainop ARGS`` as a user runs it (a fresh process in ``env``); its stdout. Fails the test with
    its output when it exits non-zero."""
    done = subprocess.run(
        [sys.executable, "-m", "trainop.cli.main", *args],
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"trainop {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    )
    return done.stdout
