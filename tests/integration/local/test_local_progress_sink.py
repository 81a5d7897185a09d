"""The local progress endpoint (backends/local/progress.py) as a replica meets it: a post with the
job's token lands in the store, a wrong token is refused (401), a body that is not a trainerStatus
(400) or too big (413) too; and serving it costs the supervisor no web framework import (the first
post of a DDP job is on its ranks' critical path: they wait for its answer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROBE = """
import json, sys, time, urllib.error, urllib.request
from pathlib import Path
from trainop.backends.local.paths import StatePaths
from trainop.backends.local.progress import MAX_BODY, ProgressSink
from trainop.backends.local.store import JobRow, Store
from trainop.trainer_progress import post_progress

Path(sys.argv[1]).mkdir(parents=True)
paths = StatePaths(Path(sys.argv[1]))
store = Store(paths)
store.insert_job(JobRow(uid="uid-1", namespace="default", name="job", kind="PyTorchJob", manifest={},
                        status={}, base_dir="/", host_env={}, generation=1, created_at=0.0))
sink = ProgressSink(paths, "uid-1", "default", "job")
env = sink.env()
ok = post_progress(percentage=50, metrics={"loss": 0.25}, replica="1", env=env)

def status(body, token):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = env["KUBEFLOW_TRAINER_SERVER_URL"]
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code

token = Path(env["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read_text()
codes = [
    status(b'{"progressPercentage": 10}', "wrong"),
    status(b'{"progressPercentage": "lots"}', token),
    status(b"x" * (MAX_BODY + 1), token),
]
sink.close()
rows = [(r, s.get("progressPercentage"), s.get("metrics")) for r, _, s in store.list_progress("uid-1")]
print(json.dumps({"accepted": ok, "codes": codes, "rows": rows,
                  "aiohttp imported": any(m.startswith("aiohttp") for m in sys.modules)}))
"""


def test_a_post_lands_bad_ones_are_refused_and_no_web_framework_is_loaded(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "home")], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {
        "accepted": True,
        "codes": [401, 400, 413],
        "rows": [["1", 50, [{"name": "loss", "value": "0.25"}]]],
        "aiohttp imported": False,
    }
