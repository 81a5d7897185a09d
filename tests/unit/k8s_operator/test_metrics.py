"""The operator's metric sinks as /metrics renders them: each call lands on its own labelled series."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from trainop.operator.metrics import OperatorMetrics


def samples(m: OperatorMetrics, *names: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(m.render().decode()):
        for s in family.samples:
            if s.name in names:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_every_sink_counts_on_its_series() -> None:
    m = OperatorMetrics(process=False)
    for name, ns in (("jobs_created", "a"), ("jobs_created", "a"), ("jobs_created", "b"), ("nope", "a")):
        m.count_job(name, ns, "pytorch")
    hook = m.rest_hook("https://api:6443")
    for method, code in (("POST", "201"), ("POST", "201"), ("PUT", "409")):
        hook(method, code)
    m.observe(("PyTorchJob", "a", "j"), "success", 0.01)
    m.observe(("PyTorchJob", "a", "j"), "success", 0.02)
    m.observe(("PyTorchJob", "a", "j"), "error", 0.03)
    m.added()
    m.added()
    m.retried()
    m.depth(3)
    m.queued_for(0.5)
    m.worked_for(0.25)

    job = ("job_namespace", "a"), ("framework", "pytorch")
    q = (("name", "trainop"),)
    host = "https://api:6443"
    assert samples(
        m,
        "training_operator_jobs_created_total",
        "rest_client_requests_total",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_count",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_sum",
        "workqueue_work_duration_seconds_sum",
    ) == {
        ("training_operator_jobs_created_total", tuple(sorted(job))): 2.0,
        ("training_operator_jobs_created_total", (("framework", "pytorch"), ("job_namespace", "b"))): 1.0,
        ("rest_client_requests_total", (("code", "201"), ("host", host), ("method", "POST"))): 2.0,
        ("rest_client_requests_total", (("code", "409"), ("host", host), ("method", "PUT"))): 1.0,
        ("controller_runtime_reconcile_total", (("controller", "trainop"), ("result", "success"))): 2.0,
        ("controller_runtime_reconcile_total", (("controller", "trainop"), ("result", "error"))): 1.0,
        ("controller_runtime_reconcile_errors_total", (("controller", "trainop"),)): 1.0,
        ("controller_runtime_reconcile_time_seconds_count", (("controller", "trainop"),)): 3.0,
        ("workqueue_adds_total", q): 2.0,
        ("workqueue_retries_total", q): 1.0,
        ("workqueue_depth", q): 3.0,
        ("workqueue_queue_duration_seconds_sum", q): 0.5,
        ("workqueue_work_duration_seconds_sum", q): 0.25,
    }


def test_pod_counters_and_limiter_waits() -> None:
    """The dashboard's pods and throttling panels: pods by job namespace and framework, and the
    client-side limiter's waits by API host."""
    m = OperatorMetrics(process=False)
    for name in ("pods_created", "pods_created", "pods_deleted"):
        m.count_job(name, "a", "tensorflow")
    wait = m.limiter_hook("api:6443")
    wait(0.0)
    wait(0.05)
    job = (("framework", "tensorflow"), ("job_namespace", "a"))
    assert samples(
        m,
        "training_operator_pods_created_total",
        "training_operator_pods_deleted_total",
        "rest_client_rate_limiter_duration_seconds_count",
        "rest_client_rate_limiter_duration_seconds_sum",
    ) == {
        ("training_operator_pods_created_total", job): 2.0,
        ("training_operator_pods_deleted_total", job): 1.0,
        ("rest_client_rate_limiter_duration_seconds_count", (("host", "api:6443"),)): 2.0,
        ("rest_client_rate_limiter_duration_seconds_sum", (("host", "api:6443"),)): 0.05,
    }
