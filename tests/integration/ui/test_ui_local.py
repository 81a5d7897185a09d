"""The web view in a real headless Chromium against the local backend (issue 27): a live list, crash
loops, pending reasons, followed logs, ``\\r`` bars, the DDP demo's loss chart, actions and their
token, and job text that stays text."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium.webdriver.common.by import By

from trainop.testing.browser import (
    UiServer,
    open_page,
    replica_cell,
    run_trainop,
    screenshot,
    text_of,
    texts_of,
    wait_until,
)
from trainop.testing.browser import job_cell as cell

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pytorch" / "ddp-digits"


def job(
    name: str,
    script: str,
    *,
    restart: str = "Never",
    labels: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
    workers: int = 0,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "pytorch",
        "image": "python",
        "command": [sys.executable, "-c", script],
    }
    if resources:
        container["resources"] = resources
    spec = {"replicas": 1, "restartPolicy": restart, "template": {"spec": {"containers": [container]}}}
    specs = {"Master": spec} | ({"Worker": {**spec, "replicas": workers}} if workers else {})
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def trainop(env: dict[str, str], *args: str) -> str:
    return run_trainop(env, *args)


def submit(env: dict[str, str], manifest: dict[str, Any]) -> None:
    run_trainop(env, "submit", "-", stdin=yaml.safe_dump(manifest))


def test_the_list_updates_without_reload_when_a_job_starts_and_ends(
    browser: Any, ui: UiServer, ui_env: dict[str, str], tmp_path: Path, shots: Path
) -> None:
    open_page(browser, ui)
    gate = tmp_path / "go"
    script = f"import os,time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.05)\nprint('done')"
    submit(ui_env, job("listed", script, labels={"team": "vision"}))
    wait_until(lambda: cell(browser, "default/listed", "state") == "Running", "listed Running in the list")
    assert cell(browser, "default/listed", "replicas") == "1/1"
    assert cell(browser, "default/listed", "labels") == "team=vision"
    gate.touch()
    wait_until(lambda: cell(browser, "default/listed", "state") == "Succeeded", "listed Succeeded")
    assert browser.execute_script("return window.__notReloaded") is True


def test_a_crash_looping_replica_shows_its_restarts_and_exit_code(
    browser: Any, ui: UiServer, ui_env: dict[str, str]
) -> None:
    submit(ui_env, job("crashy", "import sys\nprint('boom')\nsys.exit(3)", restart="OnFailure"))
    open_page(browser, ui, "/jobs/default/crashy")
    wait_until(lambda: int(replica_cell(browser, "master-0", "restarts")) >= 2, "two restarts of master-0")
    assert replica_cell(browser, "master-0", "exit") == "3 (Error)"
    wait_until(
        lambda: (
            "CrashLoopBackOff" in replica_cell(browser, "master-0", "waiting")
            or replica_cell(browser, "master-0", "phase") == "Running"
        ),
        "the loop shown",
    )
    assert browser.execute_script("return window.__notReloaded") is True


def test_a_pending_replica_shows_why(browser: Any, ui: UiServer, ui_env: dict[str, str], shots: Path) -> None:
    gpus = {"limits": {"nvidia.com/gpu": 1}}
    submit(ui_env, job("wants-gpu", "print('never')", resources=gpus))
    open_page(browser, ui, "/jobs/default/wants-gpu")
    why = wait_until(lambda: replica_cell(browser, "master-0", "waiting"), "a waiting reason")
    assert "nvidia.com/gpu" in why and why.startswith("waiting for GPUs"), why
    assert replica_cell(browser, "master-0", "phase") == "Pending"
    screenshot(browser, shots, "job-pending")
    trainop(ui_env, "delete", "wants-gpu")


def test_followed_logs_show_new_lines_and_a_carriage_return_bar_in_place_then_as_one_line(
    browser: Any, ui: UiServer, ui_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate, half, seen = tmp_path / "go", tmp_path / "half", tmp_path / "seen"
    script = (
        "import os,sys,time\n"
        "print('first line', flush=True)\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
        "print(f'second line {time.time()!r}', flush=True)\n"
        "for i in range(0, 101, 10):\n"
        "    sys.stdout.write(f'\\rtraining {i:3d}%|' + '#' * (i // 10))\n"
        "    sys.stdout.flush(); time.sleep(0.02)\n"
        f"    while i == 50 and not os.path.exists({str(half)!r}): time.sleep(0.01)\n"
        "print(flush=True)\n"
        f"while not os.path.exists({str(seen)!r}): time.sleep(0.05)\n"
    )
    submit(ui_env, job("chatty", script))
    open_page(browser, ui, "/jobs/default/chatty#logs")
    browser.find_element(By.ID, "tab-logs").click()
    wait_until(lambda: "first line" in texts_of(browser, "#log .line")[0], "the first line")
    gate.touch()
    line = wait_until(
        lambda: [t for t in texts_of(browser, "#log .line") if "second line" in t], "the second line"
    )
    shown = time.time()
    written = float(line[0].rsplit(" ", 1)[1])
    # Half way, the bar is drawn in place: one unfinished line in its state now, no finished line yet.
    half_way = ["master-0 | training  50%|#####"]
    wait_until(lambda: texts_of(browser, "#log-partial .partial") == half_way, "the bar half way, in place")
    assert [t for t in texts_of(browser, "#log .line") if "training" in t] == []
    half.touch()
    bar = wait_until(lambda: [t for t in texts_of(browser, "#log .line") if "training" in t], "the bar")
    wait_until(lambda: texts_of(browser, "#log-partial .partial") == [], "the unfinished line gone")
    seen.touch()
    # The bar's eleven \r states end as the one line a terminal shows.
    assert bar == ["master-0 | training 100%|##########"], bar
    assert browser.execute_script("return window.__notReloaded") is True
    with capsys.disabled():
        print(f"\n[ui] a followed line reached the page {shown - written:.2f}s after the replica wrote it")


def test_suspend_resume_delete_from_the_page_and_a_request_without_the_token_is_refused(
    browser: Any, ui: UiServer, ui_env: dict[str, str]
) -> None:
    submit(ui_env, job("actor", "import time\ntime.sleep(600)"))
    open_page(browser, ui, "/jobs/default/actor")
    wait_until(lambda: text_of(browser, "#job-state").startswith("Running"), "actor Running")
    browser.find_element(By.ID, "act-suspend").click()
    wait_until(lambda: text_of(browser, "#job-state").startswith("Suspended"), "actor Suspended")
    browser.find_element(By.ID, "act-resume").click()
    wait_until(lambda: text_of(browser, "#job-state").startswith("Running"), "actor Running again")

    # Without the session cookie, without the CSRF header, or with a wrong one: 403, and nothing changes.
    path = "/api/jobs/default/actor/delete"
    assert ui.request("POST", path, cookie=False)[0] == 403
    assert ui.request("POST", path)[0] == 403
    assert ui.request("POST", path, headers={"X-CSRF-Token": "guess"})[0] == 403
    assert ui.get("/api/jobs", cookie=False)[0] == 403
    assert ui.get("/api/jobs", cookie=True)[0] == 200
    assert "actor" in trainop(ui_env, "get", "actor")

    browser.find_element(By.ID, "act-delete").click()
    browser.switch_to.alert.accept()
    wait_until(lambda: browser.find_element(By.ID, "gone"), "the page to say the job is gone")
    assert "actor" not in trainop(ui_env, "get")


def test_html_in_labels_and_escape_sequences_in_logs_render_as_text(
    browser: Any, ui: UiServer, ui_env: dict[str, str]
) -> None:
    evil = "<img src=x onerror=window.__xss=1>"
    script = "print('\\x1b[31m<script>window.__xss=2</script>\\x1b[0m <b>bold</b>', flush=True)"
    submit(ui_env, job("evil", script, labels={"note": evil}))
    open_page(browser, ui)
    wait_until(lambda: cell(browser, "default/evil", "state") == "Succeeded", "evil Succeeded")
    assert cell(browser, "default/evil", "labels") == f"note={evil}"
    open_page(browser, ui, "/jobs/default/evil#logs")
    browser.find_element(By.ID, "tab-logs").click()
    line = wait_until(lambda: [t for t in texts_of(browser, "#log .line") if "script" in t], "the log line")
    # The colour codes are dropped, the markup is shown as the characters it is.
    assert line == ["master-0 | <script>window.__xss=2</script> <b>bold</b>"], line
    assert browser.find_elements(By.CSS_SELECTOR, "#app img, #app script, #log b") == []
    assert browser.execute_script("return window.__xss") is None


def test_the_ddp_demo_plots_one_loss_point_per_epoch_per_rank(
    browser: Any, ui: UiServer, ui_env: dict[str, str], shots: Path, tmp_path: Path
) -> None:
    manifest = yaml.safe_load((EXAMPLE / "pytorchjob.yaml").read_text())
    manifest["metadata"]["name"] = "ddp-loss"
    for rs in manifest["spec"]["pytorchReplicaSpecs"].values():
        c = rs["template"]["spec"]["containers"][0]
        c["command"] = [sys.executable, "train.py"]
        c["workingDir"] = str(EXAMPLE)
        c["env"] = [{"name": "EPOCHS", "value": "4"}]
    path = tmp_path / "ddp-loss.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run_trainop(ui_env, "run", str(path), timeout=600)
    open_page(browser, ui, "/jobs/default/ddp-loss#progress")
    browser.find_element(By.ID, "tab-progress").click()
    box = wait_until(lambda: browser.find_element(By.ID, "chart-loss"), "the loss chart")
    # Master is rank 0, the two workers ranks 1 and 2: four epochs each.
    assert json.loads(box.get_attribute("data-points")) == {"0": 4, "1": 4, "2": 4}
    assert box.find_elements(By.TAG_NAME, "canvas"), "uPlot drew no canvas"
    screenshot(browser, shots, "job-progress")
    browser.find_element(By.ID, "tab-overview").click()
    screenshot(browser, shots, "job")
    open_page(browser, ui)  # the list, with the jobs of this module's tests
    wait_until(lambda: cell(browser, "default/ddp-loss", "state") == "Succeeded", "ddp-loss in the list")
    screenshot(browser, shots, "jobs")
