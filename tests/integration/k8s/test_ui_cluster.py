"""``trainop ui --backend kubernetes`` in a real headless Chromium against the test cluster (issue 27):
the operator reconciles, kwok plays the pods' fates from annotations. The list updates without reload,
a crash loop shows its restarts and exit code, pending replicas say why (no GPU fits, an image that
cannot be pulled), suspend and delete work from the page and need the session's tokens, and a user
whose RBAC reads jobs but not pods or events sees that said, not an error page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from k8s_harness import OperatorProcess, annotate
from selenium.webdriver.common.by import By

from trainop.testing.browser import UiServer, chromium_or_fail, open_page, start_ui, text_of, wait_until
from trainop.testing.browser import job_cell as cell
from trainop.testing.browser import replica_cell as replica
from trainop.testing.builders import pytorch_job
from trainop.testing.testenv import SIM_EXIT_CODE, SIM_FAIL_TIMES, SIM_OUTCOME, SIM_RUN_DURATION, K8sEnv


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium_or_fail() as driver:  # never a silent skip: a missing browser fails with its install
        yield driver


@pytest.fixture(scope="module")
def ui(k8s_env: K8sEnv, operator: OperatorProcess) -> Iterator[UiServer]:
    with start_ui("--kubeconfig", str(k8s_env.kubeconfig)) as server:
        yield server


def create(k8s_env: K8sEnv, namespace: str, obj: dict[str, Any]) -> None:
    obj["metadata"].pop("uid", None)  # the builders' fixed uid is the API server's to give
    obj["metadata"]["namespace"] = namespace
    done = k8s_env.kubectl("create", "-f", "-", namespace=namespace, input=json.dumps(obj), check=False)
    assert done.returncode == 0, done.stderr


def test_the_list_updates_without_reload_and_a_crash_loop_shows_restarts_and_exit_code(
    browser: Any, ui: UiServer, k8s_env: K8sEnv, k8s_namespace: str, tmp_path: Path
) -> None:
    open_page(browser, ui, f"/?namespace={k8s_namespace}")
    quick = (
        pytorch_job("quick").master(1).template(annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "3s"}))
    )
    create(k8s_env, k8s_namespace, quick.build_dict())
    key = f"{k8s_namespace}/quick"
    wait_until(lambda: cell(browser, key, "state") == "Running", "quick Running", timeout=60)
    wait_until(lambda: cell(browser, key, "state") == "Succeeded", "quick Succeeded", timeout=60)

    loop = pytorch_job("loop").master(1).restart_policy("OnFailure")
    loop.template(
        annotate({SIM_OUTCOME: "fail", SIM_EXIT_CODE: "2", SIM_FAIL_TIMES: "100", SIM_RUN_DURATION: "1s"})
    )
    create(k8s_env, k8s_namespace, loop.build_dict())
    wait_until(
        lambda: int(cell(browser, f"{k8s_namespace}/loop", "restarts")) >= 1, "loop restarts in the list", 90
    )
    assert browser.execute_script("return window.__notReloaded") is True

    open_page(browser, ui, f"/jobs/{k8s_namespace}/loop")
    wait_until(lambda: int(replica(browser, "master-0", "restarts")) >= 1, "master-0's restarts", timeout=60)
    wait_until(
        lambda: replica(browser, "master-0", "exit") == "2 (Error)", "master-0's exit code", timeout=60
    )


def test_pending_replicas_say_why(browser: Any, ui: UiServer, k8s_env: K8sEnv, k8s_namespace: str) -> None:
    job = pytorch_job("waits").master(1).workers(1).gpu("Master", 100)
    job.template(annotate({"sim.trainop.dev/waiting-reason": "ImagePullBackOff"}), "Worker")
    create(k8s_env, k8s_namespace, job.build_dict())
    open_page(browser, ui, f"/jobs/{k8s_namespace}/waits")
    master = wait_until(lambda: replica(browser, "master-0", "waiting"), "the Master's reason", timeout=60)
    assert master.startswith("waiting for GPUs: ") and "nvidia.com/gpu" in master, master
    worker = wait_until(lambda: replica(browser, "worker-0", "waiting"), "the Worker's reason", timeout=60)
    assert worker == "ImagePullBackOff: simulated by kwok", worker


def test_suspend_and_delete_from_the_page_need_the_sessions_tokens(
    browser: Any, ui: UiServer, k8s_env: K8sEnv, k8s_namespace: str
) -> None:
    job = (
        pytorch_job("acted").master(1).template(annotate({SIM_OUTCOME: "succeed", SIM_RUN_DURATION: "600s"}))
    )
    create(k8s_env, k8s_namespace, job.build_dict())
    open_page(browser, ui, f"/jobs/{k8s_namespace}/acted")
    wait_until(lambda: text_of(browser, "#job-state").startswith("Running"), "acted Running", timeout=60)
    offered = [
        a for a in ("suspend", "resume", "delete") if browser.find_element(By.ID, f"act-{a}").is_displayed()
    ]
    assert offered == ["suspend", "resume", "delete"], offered  # an admin's RBAC allows all three
    assert not browser.find_element(By.ID, "read-only").is_displayed()
    path = f"/api/jobs/{k8s_namespace}/acted/delete"
    assert ui.request("POST", path, cookie=False)[0] == 403
    assert ui.request("POST", path)[0] == 403  # the cookie alone: no CSRF token
    browser.find_element(By.ID, "act-suspend").click()
    wait_until(lambda: text_of(browser, "#job-state").startswith("Suspended"), "acted Suspended", timeout=60)
    spec = k8s_env.kubectl_json("get", "pytorchjob", "acted", namespace=k8s_namespace)["spec"]
    assert spec["runPolicy"]["suspend"] is True
    browser.find_element(By.ID, "act-delete").click()
    browser.switch_to.alert.accept()
    wait_until(lambda: browser.find_element(By.ID, "gone"), "the page to say the job is gone", timeout=60)


def test_what_rbac_hides_is_said_as_such(
    browser: Any, k8s_env: K8sEnv, operator: OperatorProcess, k8s_namespace: str, tmp_path: Path
) -> None:
    """A user who may read PyTorchJobs in one namespace, and nothing else."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "jobs-only"},
        "rules": [
            {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["get", "list", "watch"]}
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "jobs-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobs-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}],
    }
    for obj in (role, binding):
        create(k8s_env, k8s_namespace, obj)
    create(k8s_env, k8s_namespace, pytorch_job("seen").master(1).build_dict())
    kubeconfig = k8s_env.user_kubeconfig(tmp_path, "reader")
    with start_ui("--kubeconfig", str(kubeconfig)) as reader:
        browser.get(reader.url)
        browser.get(reader.base + f"/jobs/{k8s_namespace}/seen")
        boxes = wait_until(
            lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#overview .error")] or None,
            "what the reader cannot read",
            timeout=60,
        )
        assert any(t.startswith("cannot read the pods: ") and "forbidden" in t.lower() for t in boxes), boxes
        assert text_of(browser, "#job-title") == f"{k8s_namespace}/seen"
        # No action the reader's RBAC refuses is offered (the page asks as `kubectl auth can-i` does)…
        note = wait_until(lambda: text_of(browser, "#read-only"), "the read-only note", timeout=30)
        assert note == "your access does not allow: suspend, resume, delete", note
        shown = [
            a
            for a in ("suspend", "resume", "delete")
            if browser.find_element(By.ID, f"act-{a}").is_displayed()
        ]
        assert shown == [], shown
        # … and one asked for anyway (the session's tokens, straight to the server) is the cluster's 403.
        csrf = browser.execute_script("return CSRF")
        status, body = reader.request(
            "POST", f"/api/jobs/{k8s_namespace}/seen/suspend", headers={"X-CSRF-Token": csrf}
        )
        assert status == 403 and "forbidden" in json.loads(body)["error"].lower(), (status, body)
        status, body = reader.get("/api/jobs")  # every namespace: not the reader's to list
        assert status == 200 and json.loads(body)["error"], body
