"""The RBAC and webhook manifests that list the job kinds, generated from the kind table (issue 22):
``manifests/base/cluster-role.yaml`` (its kubeflow.org rules name every kind's plural) and
``manifests/base/validating-webhook-configuration.yaml`` (one webhook per kind). ``make crds`` writes
them with the CRDs; tests/unit/k8s_operator/test_generated_manifests.py fails when they are stale, so
a new kind is one plugin module and the registry, never a hand-edited manifest. Pure text builders
and one writer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from string import Template

from trainop.api.kinds import KIND_INFO
from trainop.operator.webhook import webhook_name, webhook_path

CLUSTER_ROLE = "cluster-role.yaml"
WEBHOOK_CONFIGURATION = "validating-webhook-configuration.yaml"

# The ClusterRole: every rule says which code path uses it; $jobs, $jobs_status and $jobs_finalizers
# are the kinds' plurals (KIND_INFO's order).
_CLUSTER_ROLE = Template(
    """# What the operator needs cluster-wide, and nothing more. Every rule says which code path uses it.
# No wildcard verbs or resources. Leases and reading Secrets are NOT here: the namespaced Role
# (role.yaml) grants them, only in the operator's own namespace and only for the objects it owns
# (a TrainJob's MPI key Secret is created, never read).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: training-operator
  labels:
    app.kubernetes.io/name: training-operator
    app.kubernetes.io/part-of: trainop
rules:
# The six job kinds: informers (list, watch); re-read on a status conflict (get); TTL deletion
# (delete, §4.9); patch only writes the annotation trainop.dev/trainer-status (--trainer-progress,
# operator/progress.py). The spec is never written.
- apiGroups: [kubeflow.org]
  resources: [$jobs]
  verbs: [get, list, watch, delete, patch]
# Status is written only through /status (§6.1).
- apiGroups: [kubeflow.org]
  resources: [$jobs_status]
  verbs: [update]
# Owned objects carry blockOwnerDeletion: true (§6.2); the OwnerReferencesPermissionEnforcement
# admission plugin then requires update on the owner's finalizers subresource.
- apiGroups: [kubeflow.org]
  resources: [$jobs_finalizers]
  verbs: [update]
# Replica pods: informer (list, watch), create, delete (restart, scale-down, cleanPodPolicy, suspend).
# get: the MPI launcher Role grants pods get/list/watch, and RBAC only lets us grant what we hold.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete]
# The MPI launcher Role grants pods/exec create on its workers (§3.9); same escalation rule.
- apiGroups: [""]
  resources: [pods/exec]
  verbs: [create]
# Per-replica headless Services (§3.2): informer, create, delete. Never updated.
- apiGroups: [""]
  resources: [services]
  verbs: [list, watch, create, delete]
# MPI's <job>-config ConfigMap (§3.9): informer, create, and update when the hostfile drifts.
# --trainer-progress: each job's <job>-tls-config (the CA its pods check) is created, read back when
# it exists, and updated when the CA rotates or a v1 job and a TrainJob of one name share it.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update]
# MPI's launcher ServiceAccount (§3.9): informer, create.
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [list, watch, create]
# MPI's launcher Role and RoleBinding (§3.9): informer, create, update when their rules drift.
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [list, watch, create, update]
# PyTorch elasticPolicy.metrics HPA (§3.4): informer, create, update on drift, delete on suspend.
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [list, watch, create, update, delete]
# Gang scheduling (--gang-scheduler-name, §5), one API or the other: list and watch feed the PodGroup
# informer (Volcano's phase gates pod creation; list also checks the CRD at startup), create the
# job's group, update it when minAvailable & co. change, delete it on finish and suspend.
- apiGroups: [scheduling.volcano.sh, scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [list, watch, create, update, delete]
# Gang scheduling: PodGroup minResources counts replica types by PriorityClass value (§5); read only.
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [list, watch]
# Kubeflow Trainer v2 (operator/trainjobs.py): TrainJobs are listed and watched and their status
# merge-patched; the runtimes they name are read. Pods, the headless Service and MPI's hostfile
# ConfigMap use the rules above.
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs, trainingruntimes, clustertrainingruntimes]
  verbs: [get, list, watch]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs/status]
  verbs: [patch]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs/finalizers]
  verbs: [update]
# A TrainJob's claims (its runtime's volumeClaimPolicies) and its MPI SSH key Secret: create only
# (an existing one is kept; nothing is read back).
- apiGroups: [""]
  resources: [persistentvolumeclaims, secrets]
  verbs: [create]
# --trainer-progress: a progress post's bearer token is checked with a TokenReview (the pod it was
# issued to, its audience trainer.kubeflow.org).
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
# Events about jobs (§6.3): create, and patch to aggregate repeats (count, lastTimestamp).
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
# The webhook's caBundle is injected into this one configuration (§6.4); nothing else is touched.
- apiGroups: [admissionregistration.k8s.io]
  resources: [validatingwebhookconfigurations]
  resourceNames: [validator.training-operator.kubeflow.org]
  verbs: [get, update]
"""
)

_WEBHOOK_HEAD = """\
# Upstream's webhook wiring (§2.1), CREATE and UPDATE, failurePolicy Fail, plus one for MPIJob, which
# upstream lacks: our CRDs keep pod templates opaque, so this webhook rejects a malformed MPIJob template
# as upstream's typed CRD schema did (operator/webhook.py). The operator injects clientConfig.caBundle.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validator.training-operator.kubeflow.org
  labels:
    app.kubernetes.io/name: training-operator
    app.kubernetes.io/part-of: trainop
webhooks:
"""

_WEBHOOK = Template(
    """- name: $name
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service:
      name: training-operator
      namespace: kubeflow
      path: $path
      port: 443
  rules:
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [$plural]
"""
)


def build_cluster_role() -> str:
    """cluster-role.yaml's text for the kinds registered now."""
    plurals = [info.plural for info in KIND_INFO.values()]
    return _CLUSTER_ROLE.substitute(
        jobs=", ".join(plurals),
        jobs_status=", ".join(f"{p}/status" for p in plurals),
        jobs_finalizers=", ".join(f"{p}/finalizers" for p in plurals),
    )


def build_webhook_configuration() -> str:
    """validating-webhook-configuration.yaml's text: one webhook per kind, by kind name."""
    entries = [
        _WEBHOOK.substitute(name=webhook_name(kind), path=webhook_path(kind), plural=KIND_INFO[kind].plural)
        for kind in sorted(KIND_INFO, key=str.lower)
    ]
    return _WEBHOOK_HEAD + "".join(entries)


def build_files() -> dict[str, str]:
    return {CLUSTER_ROLE: build_cluster_role(), WEBHOOK_CONFIGURATION: build_webhook_configuration()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m trainop.operator.manifests <manifests/base>", file=sys.stderr)
        return 2
    for name, text in build_files().items():
        path = Path(argv[0]) / name
        path.write_text(text)
        print(f"wrote {path} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
