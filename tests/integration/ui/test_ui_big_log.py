"""A log of 1 GiB streams to the page without the server's memory growing past 100 MB (issue 27): the
follower reads bounded chunks, and a slow reader slows it down instead of queueing the log."""

from __future__ import annotations

import http.client
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainop.testing.browser import UiServer, run_trainop, wait_until

pytestmark = pytest.mark.integration

LINE = 4095  # bytes of text per line; + "\n": 262,144 lines make 1 GiB
LINES = (1 << 30) // (LINE + 1)
SCRIPT = f"""
import sys
from pathlib import Path
out = sys.stdout.buffer
block = (b"x" * {LINE} + b"\\n") * 1024
for _ in range({LINES} // 1024 - 1):
    out.write(block)
out.write((b"x" * {LINE} + b"\\n") * 1023)
out.write(b"the end %d\\n".rjust({LINE + 1}, b".") % {LINES})
"""


def _job() -> dict[str, Any]:
    container = {"name": "pytorch", "image": "python", "command": [sys.executable, "-c", SCRIPT]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "big-log"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                }
            }
        },
    }


def test_a_gigabyte_log_streams_in_bounded_memory(
    ui: UiServer, ui_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run_trainop(ui_env, "submit", "-", stdin=yaml.safe_dump(_job()))
    run_trainop(ui_env, "wait", "big-log", "--timeout", "5m", timeout=600)
    assert ui.get("/api/jobs/default/big-log")[0] == 200  # warm: the page's ordinary work is paid for
    before = ui.rss_peak_kib()
    request = urllib.request.Request(
        ui.base + "/api/stream/jobs/default/big-log/logs?replica=master-0", headers={"Cookie": ui.cookie}
    )
    received, tail = 0, b""
    with urllib.request.urlopen(request, timeout=120) as response:
        while chunk := response.read(1 << 20):
            received += len(chunk)
            tail = (tail + chunk)[-8192:]
    peak = ui.rss_peak_kib()
    assert f"the end {LINES}".encode() in tail and tail.endswith(b"event: end\ndata: {}\n\n"), tail[-200:]
    assert received > 1 << 30
    growth_mb = (peak - before) / 1024
    with capsys.disabled():
        print(
            f"\n[ui] 1 GiB log streamed ({received / (1 << 20):.0f} MiB of events): server peak RSS "
            f"{before / 1024:.0f} -> {peak / 1024:.0f} MiB (+{growth_mb:.0f} MiB)"
        )
    assert growth_mb < 100, f"the server grew {growth_mb:.0f} MB streaming the log"
    wait_until(lambda: ui.proc.poll() is None, "the server still up")


def test_a_closed_log_page_stops_its_reader_while_the_job_runs_on(
    ui: UiServer, ui_env: dict[str, str], tmp_path: Path
) -> None:
    """Ten pages open a silent, running job's log and go away: every reader they started ends and
    closes the log file, while the job runs on and writes nothing (none waits for the job's end)."""
    go = str(tmp_path / "go")
    script = f"import os,time\nprint('hello', flush=True)\nwhile not os.path.exists({go!r}): time.sleep(0.1)"
    job = _job()
    job["metadata"]["name"] = "silent"
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["command"][2] = script
    run_trainop(ui_env, "submit", "-", stdin=yaml.safe_dump(job))
    host, port = ui.base.removeprefix("http://").rsplit(":", 1)

    def open_and_leave() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            conn.request("GET", "/api/stream/jobs/default/silent/logs", headers={"Cookie": ui.cookie})
            assert b"hello" in conn.getresponse().read1(65536)
        finally:
            conn.close()  # the page goes away: its socket closes

    for _ in range(10):
        open_and_leave()
    # A reader holds the log file open while it follows it (SQLite may keep a closed connection's
    # descriptors until its other connections unlock, so those are not counted).
    wait_until(lambda: ui.open_files(".log") == 0, "every reader to have closed the log", timeout=30)
    (tmp_path / "go").touch()
