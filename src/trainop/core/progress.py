"""Trainer v2's progress contract (KEP-2779), the pure half: what a valid post is, where a job's pods
post it, and what the operator adds to each pod so that they can (``--trainer-progress``).

On a cluster every container of a job's pods gets ``KUBEFLOW_TRAINER_SERVER_URL`` (the operator's
``…/namespaces/{ns}/{plural}/{name}/status`` for its job), the CA that signs the operator's HTTPS
server and a projected ServiceAccount token with the audience ``trainer.kubeflow.org``: the
operator's TokenReview proves which pod posts. The I/O (the endpoint, the ConfigMap holding the CA)
is ``operator/progress.py``; the local backend's endpoint is ``backends/local/progress.py``. No I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from trainop.api.constants import (
    ANNOTATION_TRAINER_STATUS,
    ENV_TRAINER_SERVER_CA_CERT,
    ENV_TRAINER_SERVER_TOKEN,
    ENV_TRAINER_SERVER_URL,
)

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob

AUDIENCE = "trainer.kubeflow.org"  # the projected token's audience; the operator's TokenReview asks it
TOKEN_EXPIRATION_S = 3600
VOLUME_NAME = "kubeflow-trainer-token"
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_KEY = "ca.crt"
TOKEN_FILE = "token"
MAX_METRICS = 64
STATUS_FIELDS = ("progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime")


class ProgressError(ValueError):
    """A post that does not follow the contract; the message names the field and what to send."""


def check_trainer_status(doc: Any) -> dict[str, Any]:
    """The ``trainerStatus`` of a posted body, checked as upstream's CRD would (percentage 0-100,
    seconds >= 0, metrics ``[{name, value}]`` with string values). Raises ProgressError."""
    if not isinstance(doc, dict) or not isinstance(doc.get("trainerStatus"), dict):
        raise ProgressError('the body must be a JSON object with a "trainerStatus" object')
    status: dict[str, Any] = doc["trainerStatus"]
    _check_count(status, "progressPercentage", 100)
    _check_count(status, "estimatedRemainingSeconds", None)
    _check_metrics(status.get("metrics"))
    stamp = status.get("lastUpdatedTime")
    if stamp is not None and not isinstance(stamp, str):
        raise ProgressError(
            f'trainerStatus.lastUpdatedTime: must be an RFC 3339 time ("2025-01-23T10:30:45Z"), got {stamp!r}'
        )
    return status


def _check_count(status: Mapping[str, Any], field: str, top: int | None) -> None:
    """An optional integer field: absent, or 0 to ``top`` (no bound when None)."""
    value = status.get(field)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or (top and value > top):
        bound = f"0 to {top}" if top else ">= 0"
        raise ProgressError(f"trainerStatus.{field}: must be an integer {bound}, got {value!r}")


def _check_metrics(metrics: Any) -> None:
    """Absent, or at most ``MAX_METRICS`` items ``{name: non-empty string, value: string}``."""
    if metrics is None:
        return
    if not isinstance(metrics, list) or len(metrics) > MAX_METRICS:
        raise ProgressError(f"trainerStatus.metrics: must be a list of at most {MAX_METRICS} items")
    for i, m in enumerate(metrics):
        if not (isinstance(m, dict) and isinstance(m.get("name"), str) and m["name"]):
            raise ProgressError(f"trainerStatus.metrics[{i}].name: must be a non-empty string")
        if not isinstance(m.get("value"), str):
            raise ProgressError(
                f"trainerStatus.metrics[{i}].value: must be a string (upstream serializes numbers as "
                f'strings: "0.42"), got {m.get("value")!r}'
            )


def build_stored_status(status: Mapping[str, Any], now: str) -> dict[str, Any]:
    """What the operator stores of a checked ``trainerStatus``: upstream's fields only (the CRD would
    prune the rest), ``lastUpdatedTime`` ``now`` when the post has none, metrics as ``{name, value}``."""
    out = {k: status[k] for k in STATUS_FIELDS if status.get(k) is not None}
    if "metrics" in out:
        out["metrics"] = [{"name": m["name"], "value": m["value"]} for m in out["metrics"]]
    out.setdefault("lastUpdatedTime", now)
    return out


def build_status_path(api_version: str, plural: str, namespace: str, name: str) -> str:
    """``/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status``: the API server's path of
    the job's status, which is also where the operator takes a post for it."""
    return f"/apis/{api_version}/namespaces/{namespace}/{plural}/{name}/status"


def build_tls_config_map_name(job_name: str) -> str:
    return f"{job_name}-tls-config"


def build_tls_config_map(
    job_name: str, namespace: str, ca_pem: str, owner: Mapping[str, Any], labels: Mapping[str, str]
) -> dict[str, Any]:
    """``<job>-tls-config``: the CA of the operator's HTTPS server, the same for every job. A v1 job and a
    TrainJob of one name share it, so each job holds an ownerReference (``add_owner``), none of them
    the controller: the garbage collector deletes it once every owner is gone."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": build_tls_config_map_name(job_name),
            "namespace": namespace,
            "labels": dict(labels),
            "ownerReferences": add_owner([], owner),
        },
        "data": {CA_KEY: ca_pem},
    }


def add_owner(refs: Iterable[Mapping[str, Any]], owner: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``refs`` with ``owner``'s reference (not a controller) in place of any of its kind and name: a
    job deleted and made again under its name replaces the old one's."""
    ref = {k: owner[k] for k in ("apiVersion", "kind", "name", "uid")}
    same = (ref["kind"], ref["name"])
    return [*(dict(o) for o in refs if (o.get("kind"), o.get("name")) != same), ref]


def build_progress_env(url: str) -> list[dict[str, str]]:
    return [
        {"name": ENV_TRAINER_SERVER_URL, "value": url},
        {"name": ENV_TRAINER_SERVER_CA_CERT, "value": f"{MOUNT_PATH}/{CA_KEY}"},
        {"name": ENV_TRAINER_SERVER_TOKEN, "value": f"{MOUNT_PATH}/{TOKEN_FILE}"},
    ]


def build_progress_volume(job_name: str) -> dict[str, Any]:
    return {
        "name": VOLUME_NAME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": AUDIENCE,
                        "expirationSeconds": TOKEN_EXPIRATION_S,
                        "path": TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": build_tls_config_map_name(job_name),
                        "items": [{"key": CA_KEY, "path": CA_KEY}],
                    }
                },
            ]
        },
    }


def inject_progress(pod: dict[str, Any], job_name: str, url: str) -> None:
    """Give every container (init containers too) of ``pod`` the contract's env and the token and CA
    volume. A variable the template already sets is left as the user wrote it; a pod that already has
    the volume (a template copied from one of ours) is left alone."""
    spec = pod.setdefault("spec", {})
    volumes = spec.setdefault("volumes", [])
    if any(isinstance(v, dict) and v.get("name") == VOLUME_NAME for v in volumes):
        return
    volumes.append(build_progress_volume(job_name))
    env = build_progress_env(url)
    mount = {"name": VOLUME_NAME, "mountPath": MOUNT_PATH, "readOnly": True}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if not isinstance(container, dict):
                continue
            have = {e.get("name") for e in container.get("env") or () if isinstance(e, dict)}
            container["env"] = [*(container.get("env") or ()), *(e for e in env if e["name"] not in have)]
            container["volumeMounts"] = [*(container.get("volumeMounts") or ()), dict(mount)]


def read_annotated_status(job: TrainingJob) -> list[tuple[str, float, dict[str, Any]]]:
    """A v1 job's latest trainerStatus, from the annotation the operator writes (the v1 status has no
    field for it), as the one post a cluster keeps: ``[("", 0.0, trainerStatus)]``, or ``[]``."""
    text = (job.metadata.annotations or {}).get(ANNOTATION_TRAINER_STATUS)
    if not text:
        return []
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    return [("", 0.0, doc)] if isinstance(doc, dict) else []
