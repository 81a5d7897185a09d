"""The Kubernetes resources the operator reads and writes, as lightkube generic (dict-backed) classes.

Objects stay plain JSON dicts end to end (the core consumes Pod/Service dicts), so no typed model is
decoded on the hot path. Pure declarations: no I/O.
"""

from __future__ import annotations

from typing import Any

from lightkube.core import resource as lkres
from lightkube.generic_resource import (
    GenericGlobalResource,
    GenericNamespacedResource,
    create_api_info,
    create_namespaced_resource,
)

from trainop.api.constants import GROUP, VERSION
from trainop.api.kinds import KIND_INFO


def _private(base: type[Any], group: str, version: str, kind: str, plural: str) -> Any:
    # Built outside lightkube's global registry on purpose: registering "v1/Pod" there would shadow
    # lightkube's typed Pod for any other code in the process that loads YAML through lightkube.
    info = create_api_info(group, version, kind, plural)
    cls: Any = type(kind, (base,), {"_api_info": info})
    status_info = lkres.ApiInfo(
        resource=info.resource,
        parent=info.resource,
        plural=plural,
        verbs=["get", "patch", "put"],
        action="status",
    )
    cls.Status = type(f"{kind}Status", (base,), {"_api_info": status_info})
    return cls


Pod: Any = _private(GenericNamespacedResource, "", "v1", "Pod", "pods")
PersistentVolumeClaim: Any = _private(
    GenericNamespacedResource, "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"
)
Service: Any = _private(GenericNamespacedResource, "", "v1", "Service", "services")
ConfigMap: Any = _private(GenericNamespacedResource, "", "v1", "ConfigMap", "configmaps")
ServiceAccount: Any = _private(GenericNamespacedResource, "", "v1", "ServiceAccount", "serviceaccounts")
Secret: Any = _private(GenericNamespacedResource, "", "v1", "Secret", "secrets")
Event: Any = _private(GenericNamespacedResource, "", "v1", "Event", "events")
Role: Any = _private(GenericNamespacedResource, "rbac.authorization.k8s.io", "v1", "Role", "roles")
RoleBinding: Any = _private(
    GenericNamespacedResource, "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"
)
HorizontalPodAutoscaler: Any = _private(
    GenericNamespacedResource, "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"
)
TrainJob: Any = _private(  # Kubeflow Trainer v2's, read by the CLI (the operator has its own)
    GenericNamespacedResource, "trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs"
)
Lease: Any = _private(GenericNamespacedResource, "coordination.k8s.io", "v1", "Lease", "leases")
LocalQueue: Any = _private(
    GenericNamespacedResource, "kueue.x-k8s.io", "v1beta1", "LocalQueue", "localqueues"
)
SelfSubjectAccessReview: Any = _private(  # ``kubectl auth can-i``: the web view's actions
    GenericGlobalResource, "authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews"
)
TokenReview: Any = _private(  # the progress endpoint proves which pod posts (operator/progress.py)
    GenericGlobalResource, "authentication.k8s.io", "v1", "TokenReview", "tokenreviews"
)
ValidatingWebhookConfiguration: Any = _private(
    GenericGlobalResource,
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
)


class _JobResources(dict[str, Any]):
    """Job kind → its generic resource; a kind registered after import (``register_framework``) gets
    its resource on first use, from its ``KIND_INFO`` row."""

    def __missing__(self, kind: str) -> Any:
        info = KIND_INFO.get(kind)
        if info is None:
            raise KeyError(kind)
        resource = self[kind] = create_namespaced_resource(GROUP, VERSION, kind, info.plural)
        return resource


# The six job kinds (contract §1.1), as the brief's generic resources; they carry /status (and /scale).
JOB_RESOURCES: dict[str, Any] = _JobResources(
    {kind: create_namespaced_resource(GROUP, VERSION, kind, info.plural) for kind, info in KIND_INFO.items()}
)

# Objects a Plan may create, update or delete, by Kubernetes kind (core/plan.py actions carry the kind).
OWNED_RESOURCES: dict[str, Any] = {
    "Pod": Pod,
    "Service": Service,
    "ConfigMap": ConfigMap,
    "ServiceAccount": ServiceAccount,
    "Role": Role,
    "RoleBinding": RoleBinding,
    "HorizontalPodAutoscaler": HorizontalPodAutoscaler,
}


# PodGroups (contract §5): one of the two APIs, chosen by --gang-scheduler-name; status is the
# scheduler's (Volcano's phase gates pod creation), the operator writes only the main resource.
VolcanoPodGroup: Any = _private(
    GenericNamespacedResource, "scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"
)
PluginsPodGroup: Any = _private(
    GenericNamespacedResource, "scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups"
)
# Read for the PodGroup's minResources (§5: replica types by PriorityClass value, highest first).
PriorityClass: Any = _private(
    GenericGlobalResource, "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses"
)
POD_GROUP_RESOURCES: dict[str, Any] = {
    "scheduling.volcano.sh/v1beta1": VolcanoPodGroup,
    "scheduling.x-k8s.io/v1alpha1": PluginsPodGroup,
}


def use_pod_group_api(api_version: str) -> Any:
    """Make ``PodGroup`` an owned kind of this process, in the gang scheduler's API; returns its class.
    (One operator per process: a Plan's DeleteObject names only the kind.)"""
    cls = POD_GROUP_RESOURCES[api_version]
    OWNED_RESOURCES["PodGroup"] = cls
    return cls


def resource_for_kind(kind: str) -> Any:
    """The resource class of an owned object or a job kind; KeyError names what is supported."""
    if kind in OWNED_RESOURCES:
        return OWNED_RESOURCES[kind]
    if kind in JOB_RESOURCES:
        return JOB_RESOURCES[kind]
    raise KeyError(
        f"trainop does not manage objects of kind {kind!r} (known: "
        f"{', '.join([*OWNED_RESOURCES, *JOB_RESOURCES])})"
    )
