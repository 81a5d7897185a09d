"""Post training progress the way Kubeflow Trainer v2 asks (KEP-2779): ``progressPercentage``,
``estimatedRemainingSeconds`` and ``metrics`` to ``$KUBEFLOW_TRAINER_SERVER_URL`` with the bearer
token in the file ``$KUBEFLOW_TRAINER_SERVER_TOKEN`` (and ``$KUBEFLOW_TRAINER_SERVER_CA_CERT`` for https).

Standard library only, so training code (the DDP demo, the fine-tuning trainer) imports it without
pulling in the operator. Without the URL it does nothing; a failed post never stops training.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime

from trainop.api.constants import (
    ENV_TRAINER_SERVER_CA_CERT,
    ENV_TRAINER_SERVER_TOKEN,
    ENV_TRAINER_SERVER_URL,
    HEADER_PROGRESS_REPLICA,
)


def build_trainer_status(
    *,
    percentage: float | None = None,
    remaining_seconds: float | None = None,
    metrics: Mapping[str, float | int | str] | None = None,
    now: datetime,
) -> dict[str, object]:
    """The request body: ``{"trainerStatus": {...}}``, values as upstream's types (ints; metric values
    as strings, their order kept)."""
    status: dict[str, object] = {"lastUpdatedTime": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if percentage is not None:
        status["progressPercentage"] = max(0, min(100, int(percentage)))
    if remaining_seconds is not None:
        status["estimatedRemainingSeconds"] = max(0, int(remaining_seconds))
    if metrics:
        status["metrics"] = [{"name": str(k), "value": str(v)} for k, v in metrics.items()]
    return {"trainerStatus": status}


def post_progress(
    *,
    percentage: float | None = None,
    remaining_seconds: float | None = None,
    metrics: Mapping[str, float | int | str] | None = None,
    replica: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 2.0,
) -> bool:
    """Send one progress report; True when the server took it. ``replica`` names the sender's curve
    (default: ``$RANK``, else the host name). Returns False, without raising, when no server is
    configured or the post fails: progress is best effort, as upstream's callback treats it."""
    env = os.environ if env is None else env
    url = env.get(ENV_TRAINER_SERVER_URL)
    if not url:
        return False
    body = build_trainer_status(
        percentage=percentage, remaining_seconds=remaining_seconds, metrics=metrics, now=datetime.now(UTC)
    )
    headers = {"Content-Type": "application/json"}
    who = replica if replica is not None else env.get("RANK") or env.get("HOSTNAME") or ""
    if who:
        headers[HEADER_PROGRESS_REPLICA] = who
    try:
        token_file = env.get(ENV_TRAINER_SERVER_TOKEN)
        if token_file:
            with open(token_file, encoding="utf-8") as fh:
                headers["Authorization"] = f"Bearer {fh.read().strip()}"
        ca = env.get(ENV_TRAINER_SERVER_CA_CERT)
        context = ssl.create_default_context(cafile=ca) if url.startswith("https:") else None
        request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return 200 <= int(response.status) < 300
    except (OSError, ValueError):
        return False
