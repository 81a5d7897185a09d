"""In-memory defaulting of a kubeflow.org/v1 job (contract §1.4, steps 1-7), plus container look-ups.

``apply_defaults`` returns a new job and never mutates its input. It copies only the objects it
changes, so the result shares untouched sub-objects (status, metadata, unchanged templates) with the
input: treat both as read-only. Pure: no I/O; called by core on every reconcile pass, so it is cheap.
"""

from __future__ import annotations

from typing import Any

from trainop.api.common import ReplicaSpec, RunPolicy, TrainingJob
from trainop.api.constants import CLEAN_NONE
from trainop.api.kinds import KIND_INFO, KindInfo
from trainop.api.rules import copy_model


def apply_defaults(job: TrainingJob) -> TrainingJob:
    """The job with upstream's in-memory defaults applied (§1.4); ``job`` itself is left untouched.

    Steps 3-5 (replica keys, replicas, restartPolicy, port) follow the kind's ``KindInfo`` row; the
    kind's own fields (MPI's cleanPodPolicy sync, TF's successPolicy, elastic bounds, nprocPerNode)
    are its spec model's ``default_fields``."""
    info = KIND_INFO[job.kind]
    spec = copy_model(job.spec)
    out = copy_model(job)
    out.spec = spec
    run_policy = copy_model(spec.run_policy) if spec.run_policy is not None else RunPolicy()
    spec.run_policy = run_policy

    # Steps 3-5: replica keys, replicas, restartPolicy, default port.
    field = type(spec).replica_field
    replica_specs: dict[str, ReplicaSpec] | None = getattr(spec, field, None)
    if replica_specs is not None:
        if info.replica_defaults:
            replica_specs = _default_listed_replicas(replica_specs, info)
        else:
            replica_specs = {
                key: _default_replica(rs, info, 1, add_port=True)
                for key, rs in _normalise_keys(replica_specs, info.replica_types).items()
            }
        setattr(spec, field, replica_specs)

    # The kind's own fields (steps 1, 2, 6, 7), then step 1: runPolicy.cleanPodPolicy nil → None.
    spec.default_fields()
    if run_policy.clean_pod_policy is None:
        run_policy.clean_pod_policy = CLEAN_NONE
    return out


def default_container(spec: ReplicaSpec, info: KindInfo) -> dict[str, Any] | None:
    """The container named after the kind's default container (``pytorch``, ``tensorflow`` …), if any."""
    for container in spec.containers:
        if isinstance(container, dict) and container.get("name") == info.default_container:
            return container
    return None


def container_port(spec: ReplicaSpec, info: KindInfo, port_name: str | None = None) -> int | None:
    """The containerPort named ``port_name`` (default: the kind's port name) in the default container.

    Mirrors upstream's port look-up (§3.4 ``MASTER_PORT`` and friends): only the default-named
    container is searched; ``None`` when there is no such port.
    """
    container = default_container(spec, info)
    if container is None:
        return None
    wanted = port_name if port_name is not None else info.port_name
    for port in container.get("ports") or ():
        if isinstance(port, dict) and port.get("name") == wanted:
            value = port.get("containerPort")
            return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _normalise_keys(specs: dict[str, ReplicaSpec], canonical: tuple[str, ...]) -> dict[str, ReplicaSpec]:
    """§1.4 step 3: ``worker`` → ``Worker``, ``ps`` → ``PS`` …; unknown keys are kept as written.

    Like upstream, a non-canonical spelling overwrites the canonical key when both are present.
    """
    by_fold = {c.casefold(): c for c in canonical}
    if all(by_fold.get(k.casefold(), k) == k for k in specs):
        return specs
    out: dict[str, ReplicaSpec] = {}
    for key, rs in specs.items():
        canon = by_fold.get(key.casefold(), key)
        if canon == key and canon in out:
            continue  # an earlier non-canonical spelling already took this slot (upstream: it wins)
        out[canon] = rs
    return out


def _default_replica(rs: ReplicaSpec, info: KindInfo, replicas: int, *, add_port: bool) -> ReplicaSpec:
    """§1.4 steps 4 and 5 on one replica spec; returns ``rs`` itself when nothing changes."""
    need_replicas = rs.replicas is None
    need_restart = not rs.restart_policy
    template = _with_default_port(rs.template, info) if add_port else rs.template
    if not (need_replicas or need_restart or template is not rs.template):
        return rs
    new = copy_model(rs)
    if need_replicas:
        new.replicas = replicas
    if need_restart:
        new.restart_policy = info.default_restart_policy
    if template is not rs.template:
        new.template = template
    return new


def _default_listed_replicas(specs: dict[str, ReplicaSpec], info: KindInfo) -> dict[str, ReplicaSpec]:
    # §1.4 for a kind with its own replica defaults (MPI: Launcher 1, Worker 0): keys are not
    # normalised, only the listed types are defaulted, and no port is added (§9.13).
    wanted = dict(info.replica_defaults)
    return {
        key: _default_replica(rs, info, wanted[key], add_port=False) if key in wanted else rs
        for key, rs in specs.items()
    }


def _with_default_port(template: dict[str, Any], info: KindInfo) -> dict[str, Any]:
    """§1.4 step 5: the template with ``{name: <port name>, containerPort: <port>}`` appended to the
    default-named container (else container 0), unless that container has a port of that name.
    Returns ``template`` itself when nothing is added; otherwise copies only the path it changes."""
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return template
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return template  # upstream would panic here; validation reports the missing containers (C3)
    index = next(
        (
            i
            for i, c in enumerate(containers)
            if isinstance(c, dict) and c.get("name") == info.default_container
        ),
        0,
    )
    container = containers[index]
    if not isinstance(container, dict):
        return template
    ports = container.get("ports")
    ports_list = ports if isinstance(ports, list) else []
    if any(isinstance(p, dict) and p.get("name") == info.port_name for p in ports_list):
        return template
    new_container = {
        **container,
        "ports": [*ports_list, {"name": info.port_name, "containerPort": info.default_port}],
    }
    new_containers = [*containers]
    new_containers[index] = new_container
    return {**template, "spec": {**pod_spec, "containers": new_containers}}
