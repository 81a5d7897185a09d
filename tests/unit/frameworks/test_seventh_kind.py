"""A seventh framework is one module and a registration (issue 14): nothing else needs touching,
for either API (issue 23: the module's ``MLPolicyPlugin`` serves Trainer v2 runtimes with
``mlPolicy.light``, and its ``convert_to_trainjob`` lets ``trainop convert`` turn a LightJob into a
TrainJob).

``LightJob`` below is a throw-away kind written as a new ``frameworks/light.py`` would be: its
``KindInfo`` row, its spec model (defaults and admission rules as hooks), its plugin (env, status rule,
the ``LoopbackEnv`` capability). ``register_framework`` hands it to the registry; then parsing,
defaulting, validation, the CRD, the webhook, core's reconcile and the local backend's render all
serve it through the code the six kinds use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import pytest
import yaml
from pydantic import Field

from trainop.api.common import JobSpec, ReplicaSpec, TrainingJob
from trainop.api.crds import build_crd
from trainop.api.defaults import apply_defaults
from trainop.api.errors import FieldError
from trainop.api.kinds import KIND_INFO, KindInfo
from trainop.api.load import parse_job
from trainop.api.rules import replica_specs_common, webhook_prelude
from trainop.api.trainer import TrainingRuntime, TrainJob
from trainop.api.trainer_rules import parse_trainer_object
from trainop.api.validation import validate_job
from trainop.backends.local.render import build_local_env, build_rendered_pod
from trainop.core.convert import ConvertedTrainer, build_trainjob
from trainop.core.observed import Observed
from trainop.core.plan import CreateObject
from trainop.core.plugin import ConditionUpdate, ReplicaCounts, capabilities
from trainop.core.reconcile import reconcile
from trainop.core.topology import ServiceTopology, Topology
from trainop.core.trainjob import (
    LoopbackTrainJobTopology,
    PolicyContext,
    RuntimeResolutionError,
    reserved_env_error,
    resolve_trainjob,
    upsert_env,
)
from trainop.frameworks.generic import (
    BasePlugin,
    env_var,
    generic_failure,
    peer_port,
    running_update,
    succeeded_update,
)
from trainop.frameworks.registry import REGISTRY, build_registry, register_framework, unregister_framework
from trainop.operator.manifests import build_cluster_role, build_webhook_configuration
from trainop.operator.webhook import build_admission_response, build_routes, webhook_name, webhook_path
from trainop.testing.builders import job_builder, pod

# --- what frameworks/light.py would hold ------------------------------------------------------------

KIND = "LightJob"
INFO = KindInfo(
    KIND, "lightjobs", "lightReplicaSpecs", ("Worker",), "light",
    "light-port", 7777, "OnFailure", "lightjob-controller", "light", False,
    title="Light",
)  # fmt: skip
ENV_LIGHT_PEER = "LIGHT_PEER"
ENV_LIGHT_BIND = "LIGHT_BIND"
NOW = datetime(2024, 1, 1, tzinfo=UTC)


class LightJobSpec(JobSpec):
    replica_field = "light_replica_specs"
    light_replica_specs: dict[str, ReplicaSpec] | None = None

    def upstream_errors(self, job: TrainingJob, old: TrainingJob | None) -> list[FieldError]:
        return webhook_prelude(job, old) + replica_specs_common(job, INFO, INFO.replica_types)


class LightJob(TrainingJob):
    kind: Literal["LightJob"] = "LightJob"
    spec: LightJobSpec = Field(default_factory=LightJobSpec)


class LightPlugin(BasePlugin):
    kind: ClassVar[str] = KIND

    def build_env(self, job: TrainingJob, rtype: str, index: int, topology: Topology) -> list[dict[str, Any]]:
        port = peer_port(job, topology, self.info, "Worker", 0)
        return [env_var(ENV_LIGHT_PEER, f"{topology.host(job, 'Worker', 0)}:{port}")]

    def compute_conditions(
        self, job: TrainingJob, counts: Mapping[str, ReplicaCounts]
    ) -> list[ConditionUpdate]:
        out: list[ConditionUpdate] = []
        for rtype in self.status_order(job):
            c = self.counts_for(counts, rtype, job.replica_specs.get(rtype))
            if c.expected == 0:
                out.append(succeeded_update(job, namespaced=True))
            elif c.active > 0:
                out.append(running_update(job, namespaced=True))
            out += generic_failure(job, rtype, c)
        return out

    def build_loopback_env(self, env: Mapping[str, str], pod_ip: str) -> dict[str, str]:
        return {} if ENV_LIGHT_BIND in env else {ENV_LIGHT_BIND: pod_ip}

    def convert_to_trainjob(self, job: TrainingJob) -> ConvertedTrainer:
        workers = job.replica_specs["Worker"].replicas or 1
        return ConvertedTrainer("light-distributed", "Worker", "light", workers, None)


class LightPolicy:
    """Trainer v2's side of the framework: ``mlPolicy.light`` injects the peer address."""

    ml_policy = "light"

    def trainjob_errors(self, ctx: PolicyContext) -> list[FieldError]:
        return reserved_env_error(ctx.job, (ENV_LIGHT_PEER,))

    def enforce_ml_policy(self, ctx: PolicyContext) -> None:
        container = ctx.trainer_container()
        trainer = ctx.job.spec.trainer
        step = ctx.step_by_ancestor("trainer")
        if step is not None and trainer is not None and trainer.num_nodes is not None:
            step.count = trainer.num_nodes
        if container is not None:
            port = ctx.topology.port(ctx.job.name, "node", 0, 0, INFO.default_port)
            upsert_env(
                container,
                [env_var(ENV_LIGHT_PEER, f"{ctx.topology.host(ctx.job.name, 'node', 0, 0)}:{port}")],
            )


# --- the tests ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def light() -> Iterator[LightPlugin]:
    plugin = LightPlugin(INFO)
    register_framework(plugin, LightJob, LightPolicy())
    yield plugin
    unregister_framework(KIND, "light")
    assert KIND not in KIND_INFO and KIND not in REGISTRY and REGISTRY.ml_policy("light") is None


def manifest(workers: int | None = 2, **container: Any) -> dict[str, Any]:
    replica: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "light", "image": "light:1", **container}]}}
    }
    if workers is not None:
        replica["replicas"] = workers
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": KIND,
        "metadata": {"name": "a", "namespace": "default", "uid": "a-uid"},
        "spec": {"lightReplicaSpecs": {"Worker": replica}},
    }


def test_parse_default_and_validate() -> None:
    job = parse_job(manifest(workers=None))
    assert isinstance(job, LightJob)
    assert validate_job(job) == []
    worker = apply_defaults(job).replica_specs["Worker"]
    assert (worker.replicas, worker.restart_policy, worker.containers[0]["ports"]) == (
        1,
        "OnFailure",
        [{"name": "light-port", "containerPort": 7777}],
    )


def test_invalid_job_gets_its_kinds_paths() -> None:
    raw = manifest()
    raw["metadata"]["name"] = "A"
    raw["spec"]["lightReplicaSpecs"]["Chief"] = raw["spec"]["lightReplicaSpecs"]["Worker"]
    got = [str(e) for e in validate_job(parse_job(raw))]
    assert got[:2] == [
        'metadata.name: Invalid value: "A": should match: a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')",
        'spec.lightReplicaSpecs[Chief]: Unsupported value: "Chief": supported values: "Worker"',
    ]


def test_crd_and_webhook() -> None:
    crd = build_crd(KIND)
    assert (crd["metadata"]["name"], crd["spec"]["names"]["kind"], crd["spec"]["versions"][0]["schema"]
            ["openAPIV3Schema"]["description"]) == (
        "lightjobs.kubeflow.org", KIND, "A LightJob: distributed Light training (kubeflow.org/v1)."
    )  # fmt: skip
    assert webhook_path(KIND) in build_routes([KIND])
    bad = manifest()
    del bad["spec"]["lightReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    review = {"request": {"uid": "u", "operation": "CREATE", "object": bad}}
    assert build_admission_response(review, KIND)["response"]["status"]["message"] == (
        "spec.lightReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required"
    )


def test_rbac_and_webhook_manifests_name_it() -> None:
    """``make crds`` writes the ClusterRole's kind rules and the webhook configuration from the kind
    table (operator/manifests.py): the new kind is in both without editing a manifest."""
    role = yaml.safe_load(build_cluster_role())
    kinds_rules = [r["resources"] for r in role["rules"] if r["apiGroups"] == ["kubeflow.org"]]
    assert [[x for x in res if x.startswith("lightjobs")] for res in kinds_rules] == [
        ["lightjobs"],
        ["lightjobs/status"],
        ["lightjobs/finalizers"],
    ]
    hooks = yaml.safe_load(build_webhook_configuration())["webhooks"]
    light = [h for h in hooks if h["rules"][0]["resources"] == ["lightjobs"]]
    assert [(h["name"], h["clientConfig"]["service"]["path"]) for h in light] == [
        (webhook_name(KIND), webhook_path(KIND))
    ]


def test_reconcile_creates_pods_and_services_then_runs() -> None:
    job = parse_job(manifest())
    plugin = REGISTRY.get(KIND)
    caps: Any = capabilities(plugin)  # (a LightJob is its own LoopbackEnv: mypy sees two types)
    assert caps.loopback_env is plugin and caps.local_env is None and caps.pod_events is None
    plan = reconcile(job, Observed(job, [], [], {}), plugin, ServiceTopology(), NOW)
    created = [a.obj for a in plan.actions if isinstance(a, CreateObject)]
    assert [(o["kind"], o["metadata"]["name"]) for o in created] == [
        ("Pod", "a-worker-0"),
        ("Pod", "a-worker-1"),
        ("Service", "a-worker-0"),
        ("Service", "a-worker-1"),
    ]
    env = created[1]["spec"]["containers"][0]["env"]
    assert env == [{"name": ENV_LIGHT_PEER, "value": "a-worker-0:7777"}]
    assert [c.reason for c in plan.status.conditions or []] == ["LightJobCreated"]

    stored = job.model_copy(update={"status": plan.status})
    pods = [pod(stored, "Worker", i).running().build() for i in range(2)]
    plan = reconcile(stored, Observed(stored, pods, created[2:], {}), plugin, ServiceTopology(), NOW)
    assert [(c.reason, c.message) for c in plan.status.conditions or []] == [
        ("LightJobCreated", "LightJob a is created."),
        ("LightJobRunning", "LightJob default/a is running."),
    ]


def test_local_backend_env() -> None:
    job = apply_defaults(parse_job(manifest(command=["light"])))
    plan = reconcile(job, Observed(job, [], [], {}), REGISTRY.get(KIND), ServiceTopology(), NOW)
    first = next(a.obj for a in plan.actions if isinstance(a, CreateObject))
    env = {e["name"]: e["value"] for e in build_rendered_pod(first, KIND, {})["spec"]["containers"][0]["env"]}
    assert env[ENV_LIGHT_BIND] == "127.0.0.1"
    assert build_local_env(KIND, first, {ENV_LIGHT_BIND: "mine"}) == {
        "GLOO_SOCKET_IFNAME": "lo",
        "NCCL_SOCKET_IFNAME": "lo",
        "TP_SOCKET_IFNAME": "lo",
    }


def test_registries_built_later_have_it() -> None:
    assert KIND in build_registry().kinds()


def test_builders_serve_it_too() -> None:
    job = job_builder(KIND, "b").workers(3).build()
    assert isinstance(job, LightJob) and job.replica_specs["Worker"].replicas == 3


def test_the_cluster_backends_have_its_resource() -> None:
    from trainop.backends.kubernetes.resources import JOB_RESOURCES

    res = JOB_RESOURCES[KIND]
    assert (res._api_info.resource.group, res._api_info.resource.version, res._api_info.plural) == (
        "kubeflow.org",
        "v1",
        "lightjobs",
    )


# --- Trainer v2 -------------------------------------------------------------------------------------


def light_runtime() -> TrainingRuntime:
    rt = parse_trainer_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "light-distributed"},
            "spec": {
                "mlPolicy": {"numNodes": 1, "light": {}},
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "metadata": {
                                        "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                                    },
                                    "spec": {
                                        "template": {"spec": {"containers": [{"name": "node", "image": "l"}]}}
                                    },
                                },
                            }
                        ]
                    }
                },
            },
        }
    )
    assert isinstance(rt, TrainingRuntime)
    return rt


def light_trainjob(**trainer: Any) -> TrainJob:
    job = parse_trainer_object(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t"},
            "spec": {"runtimeRef": {"name": "light-distributed"}, "trainer": {"numNodes": 3, **trainer}},
        }
    )
    assert isinstance(job, TrainJob)
    return job


def test_trainer_v2_runtime_with_its_policy() -> None:
    resolved = resolve_trainjob(light_trainjob(), light_runtime(), REGISTRY)
    assert [p.name for p in resolved.pods()] == ["t-node-0-0", "t-node-0-1", "t-node-0-2"]
    env = resolved.pods()[1].pod["spec"]["containers"][0]["env"]
    assert env == [{"name": ENV_LIGHT_PEER, "value": "t-node-0-0.t:7777"}]
    local = resolve_trainjob(
        light_trainjob(), light_runtime(), REGISTRY, LoopbackTrainJobTopology({("node", 0, 0): 4000})
    )
    assert local.pods()[0].pod["spec"]["containers"][0]["env"] == [
        {"name": ENV_LIGHT_PEER, "value": "127.0.0.1:4000"}
    ]


def test_trainer_v2_reserved_env() -> None:
    with pytest.raises(RuntimeResolutionError) as exc:
        resolve_trainjob(
            light_trainjob(env=[{"name": ENV_LIGHT_PEER, "value": "x"}]), light_runtime(), REGISTRY
        )
    assert "invalid envs configured: [LIGHT_PEER]" in str(exc.value)


def test_convert_to_a_trainjob() -> None:
    job = parse_job(manifest(workers=4, command=["light-run"]))
    got = build_trainjob(job, REGISTRY.get(KIND)).trainjob
    assert got["spec"]["runtimeRef"]["name"] == "light-distributed"
    assert got["spec"]["trainer"] == {"image": "light:1", "command": ["light-run"], "numNodes": 4}
