"""Operator flags compatible with upstream's /manager (§6.4); bad values say what to change."""

from __future__ import annotations

import pytest

from trainop.operator.flags import FlagError, parse_flags


@pytest.mark.parametrize(
    ("argv", "env", "want"),
    [
        pytest.param(
            [],
            {},
            {"kinds": ["PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob"],
             "namespace": None,
             "qps": 100.0, "burst": 200, "leader_elect": False, "controller_threads": 32},
            id="defaults: every kind, all namespaces, raised QPS",
        ),
        pytest.param(
            ["--enable-scheme=PyTorchJob", "--enable-scheme", "tfjob", "--enable-scheme=pytorchjob"],
            {},
            {"kinds": ["PyTorchJob", "TFJob"]},
            id="schemes repeatable, case-insensitive, deduplicated",
        ),
        pytest.param([], {"KUBEFLOW_NAMESPACE": "team-a"}, {"namespace": "team-a"}, id="namespace from env"),
        pytest.param(["--namespace=team-b"], {"KUBEFLOW_NAMESPACE": "team-a"}, {"namespace": "team-b"},
                     id="flag wins"),
        pytest.param(["--leader-elect"], {}, {"leader_elect": True}, id="bare bool flag"),
        pytest.param(["--leader-elect=false"], {}, {"leader_elect": False}, id="Go-style bool value"),
        pytest.param(
            ["--kube-api-qps=200", "--kube-api-burst", "400", "--controller-threads=32"],
            {},
            {"qps": 200.0, "burst": 400, "controller_threads": 32},
            id="limits and workers",
        ),
        pytest.param(
            [],
            {"MY_POD_NAMESPACE": "ops"},
            {"pod_namespace": "ops", "leader_election_namespace": "ops",
             "webhook_cert_hosts": ["training-operator.ops.svc"]},
            id="certificate host from the pod namespace",
        ),
        pytest.param(
            ["--webhook-cert-host=127.0.0.1", "--zap-log-level=debug", "--zap-devel"],
            {},
            {"webhook_cert_hosts": ["training-operator.kubeflow.svc", "127.0.0.1"], "log_level": "debug"},
            id="extra certificate host for URL clientConfig; zap flags accepted",
        ),
        pytest.param(["--gang-scheduler-name=volcano"], {}, {"gang_scheduler_name": "volcano"}, id="volcano"),
        pytest.param(
            ["--gang-scheduler-name", "scheduler-plugins-scheduler"],
            {},
            {"gang_scheduler_name": "scheduler-plugins-scheduler"},
            id="scheduler-plugins",
        ),
        pytest.param([], {}, {"manage_webhook_cert": True}, id="the operator makes its webhook certificate"),
        pytest.param(["--manage-webhook-cert=false"], {}, {"manage_webhook_cert": False},
                     id="cert-manager makes it (the chart's webhook.certManager)"),
        pytest.param([], {}, {"trainer_progress": False}, id="progress off by default"),
        pytest.param(["--trainer-progress"], {"MY_POD_NAMESPACE": "ops"},
                     {"trainer_progress": True, "trainer_progress_server": "https://training-operator.ops.svc"},
                     id="progress: pods post to the webhook's Service"),
        pytest.param(["--trainer-progress", "--trainer-progress-server=https://op.example:9443/"], {},
                     {"trainer_progress_server": "https://op.example:9443"}, id="progress server given"),
    ],
)  # fmt: skip
def test_parse(argv: list[str], env: dict[str, str], want: dict[str, object]) -> None:
    cfg = parse_flags(argv, env)
    got = {k: getattr(cfg, k) for k in want}
    assert got == want


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param(["--enable-scheme=mxjob"], "scheme mxjob is not supported yet", id="unknown scheme"),
        pytest.param(["--controller-threads=0"], "argument --controller-threads: '0' must be at least 1",
                     id="threads"),
        pytest.param(["--leader-elect=maybe"],
                     "argument --leader-elect: 'maybe' is not a boolean (use true or false)",
                     id="bad bool"),
        pytest.param(["--no-such-flag"], "unrecognized arguments: --no-such-flag", id="unknown flag"),
        pytest.param(["--trainer-progress", "--enable-webhook=false"],
                     "--trainer-progress is served on the webhook's HTTPS server: "
                     "drop --enable-webhook=false, or --trainer-progress", id="progress needs the webhook"),
        pytest.param(["--trainer-progress-server=http://op:80"],
                     "--trainer-progress-server http://op:80: use an https:// URL (the pods check the CA)",
                     id="progress server over http"),
    ],
)  # fmt: skip
def test_errors(argv: list[str], want: str) -> None:
    with pytest.raises(FlagError) as exc:
        parse_flags(argv, {})
    assert str(exc.value) == want
