"""The shape in which the operator's cache keeps pods and Services, decoded straight from a watch line.

A watch delivers every change of every owned pod and Service as a whole object (~4 KB for a pod, half
of it managedFields, container specs and volumes the operator never reads). Decoding a line into
these msgspec structs skips what the cache does not keep while parsing, instead of building the
whole tree and slimming it afterwards (``slim_owned``): 14 instead of 52 µs for a running pod. The
result is the same dict ``slim_owned`` makes of the full object: every ObjectMeta field but
managedFields, the scalar fields of the spec, and the whole status. I/O adapter (pure functions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

Obj = dict[str, Any]


class ObjectMeta(msgspec.Struct, omit_defaults=True):
    """metav1.ObjectMeta without managedFields."""

    name: str | None = None
    generateName: str | None = None
    namespace: str | None = None
    selfLink: str | None = None
    uid: str | None = None
    resourceVersion: str | None = None
    generation: int | None = None
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None
    deletionGracePeriodSeconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None


class PodSpecScalars(msgspec.Struct, omit_defaults=True):
    """The scalar fields of core/v1 PodSpec (Kubernetes 1.34)."""

    activeDeadlineSeconds: int | None = None
    automountServiceAccountToken: bool | None = None
    dnsPolicy: str | None = None
    enableServiceLinks: bool | None = None
    hostIPC: bool | None = None
    hostNetwork: bool | None = None
    hostPID: bool | None = None
    hostUsers: bool | None = None
    hostname: str | None = None
    hostnameOverride: str | None = None
    nodeName: str | None = None
    preemptionPolicy: str | None = None
    priority: int | None = None
    priorityClassName: str | None = None
    restartPolicy: str | None = None
    runtimeClassName: str | None = None
    schedulerName: str | None = None
    serviceAccount: str | None = None
    serviceAccountName: str | None = None
    setHostnameAsFQDN: bool | None = None
    shareProcessNamespace: bool | None = None
    subdomain: str | None = None
    terminationGracePeriodSeconds: int | None = None


class ServiceSpecScalars(msgspec.Struct, omit_defaults=True):
    """The scalar fields of core/v1 ServiceSpec (Kubernetes 1.34)."""

    allocateLoadBalancerNodePorts: bool | None = None
    clusterIP: str | None = None
    externalName: str | None = None
    externalTrafficPolicy: str | None = None
    healthCheckNodePort: int | None = None
    internalTrafficPolicy: str | None = None
    ipFamilyPolicy: str | None = None
    loadBalancerClass: str | None = None
    loadBalancerIP: str | None = None
    publishNotReadyAddresses: bool | None = None
    sessionAffinity: str | None = None
    trafficDistribution: str | None = None
    type: str | None = None


S = TypeVar("S")


class Object(msgspec.Struct, Generic[S], omit_defaults=True):
    apiVersion: str | None = None
    kind: str | None = None
    metadata: ObjectMeta | None = None
    spec: S | None = None
    status: dict[str, Any] | None = None


class Event(msgspec.Struct, Generic[S]):
    type: str
    object: Object[S]


SPECS: dict[str, type[msgspec.Struct]] = {"Pod": PodSpecScalars, "Service": ServiceSpecScalars}

_any = msgspec.json.Decoder().decode
_to_builtins = msgspec.to_builtins


def watch_decoder(kind: str) -> Callable[[bytes], tuple[str, Any, bool]]:
    """A decoder of one watch line of ``kind`` ("Pod" or "Service") into (event type, object, shaped):
    ``shaped`` when the object is already as the cache keeps it. A line of another shape (an ERROR
    event's Status, a field of an unexpected type) is decoded whole instead, not shaped."""
    decode = msgspec.json.Decoder(Event[SPECS[kind]]).decode  # type: ignore[valid-type]

    def decode_line(line: bytes) -> tuple[str, Any, bool]:
        try:
            event = decode(line)
        except msgspec.ValidationError:
            whole = _any(line)
            return str(whole.get("type")), whole.get("object"), False
        return event.type, _to_builtins(event.object), True

    return decode_line
