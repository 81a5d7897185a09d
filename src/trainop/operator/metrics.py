"""Prometheus metrics served on ``/metrics`` (contract §6.6).

Upstream's job counters with their names and labels (``training_operator_jobs_*_total`` by
``job_namespace`` and ``framework``), plus what controller-runtime and client-go serve: work-queue
depth, adds, latency and work duration, reconcile counts and durations, and REST requests by
method and code. One registry per operator instance, so tests can run several in one process.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.process_collector import ProcessCollector

from trainop.operator.http import Response

JOB_COUNTERS = {
    "jobs_created": "Counts number of jobs created",
    "jobs_deleted": "Counts number of jobs deleted",
    "jobs_successful": "Counts number of jobs successful",
    "jobs_failed": "Counts number of jobs failed",
    "jobs_restarted": "Counts number of jobs restarted",
    # Upstream counts pods in unlabelled created_pods_total / deleted_pods_total that its manager never
    # serves (§6.6); these are served, by job namespace and framework like the job counters.
    "pods_created": "Counts number of replica pods created",
    "pods_deleted": "Counts number of replica pods deleted",
}

# controller-runtime's buckets for reconcile time; client-go's exponential ones for the queue and
# for the client-side rate limiter's wait.
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25,
                     30, 40, 50, 60)  # fmt: skip
QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(10))

QUEUE_NAME = "trainop"
CONTROLLER_NAME = "trainop"


class OperatorMetrics:
    def __init__(self, *, process: bool = True) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.jobs = {
            name: Counter(f"training_operator_{name}", doc, ["job_namespace", "framework"], registry=reg)
            for name, doc in JOB_COUNTERS.items()
        }
        self.queue_depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name"], registry=reg)
        self.queue_adds = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", ["name"], registry=reg
        )
        self.queue_retries = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", ["name"], registry=reg
        )
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"], buckets=QUEUE_BUCKETS, registry=reg,
        )  # fmt: skip
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            ["name"], buckets=QUEUE_BUCKETS, registry=reg,
        )  # fmt: skip
        self.reconcile_total = Counter(
            "controller_runtime_reconcile", "Total number of reconciliations per controller",
            ["controller", "result"], registry=reg,
        )  # fmt: skip
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors", "Total number of reconciliation errors per controller",
            ["controller"], registry=reg,
        )  # fmt: skip
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller",
            ["controller"], buckets=RECONCILE_BUCKETS, registry=reg,
        )  # fmt: skip
        self.rest_requests = Counter(
            "rest_client_requests", "Number of HTTP requests, partitioned by status code, method, and host",
            ["code", "method", "host"], registry=reg,
        )  # fmt: skip
        self.rate_limiter_wait = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds (time a request waited for its token)",
            ["host"], buckets=QUEUE_BUCKETS, registry=reg,
        )  # fmt: skip
        self.leader = Gauge(
            "leader_election_master_status", "1 if this instance is the leader", ["name"], registry=reg
        )
        if process:
            ProcessCollector(registry=reg)
        # Each series' child is looked up once: ``.labels()`` on every call was 2 % of the operator's
        # CPU at 500 x (1+3) (issue 16); prometheus_client keeps every child it made anyway.
        self._depth = self.queue_depth.labels(QUEUE_NAME)
        self._adds = self.queue_adds.labels(QUEUE_NAME)
        self._retries = self.queue_retries.labels(QUEUE_NAME)
        self._latency = self.queue_latency.labels(QUEUE_NAME)
        self._work = self.work_duration.labels(QUEUE_NAME)
        self._reconcile_time = self.reconcile_time.labels(CONTROLLER_NAME)
        self._reconcile_errors = self.reconcile_errors.labels(CONTROLLER_NAME)
        self._results: dict[str, Counter] = {}
        self._job_counts: dict[tuple[str, str, str], Counter] = {}
        self._depth.set(0)

    # --- sinks the lower layers call -----------------------------------------------------------------
    def count_job(self, name: str, namespace: str, framework: str) -> None:
        child = self._job_counts.get((name, namespace, framework))
        if child is None:
            counter = self.jobs.get(name)
            if counter is None:
                return
            child = counter.labels(job_namespace=namespace, framework=framework)
            self._job_counts[(name, namespace, framework)] = child
        child.inc()

    def rest_hook(self, host: str):  # type: ignore[no-untyped-def]
        children: dict[tuple[str, str], Counter] = {}

        def hook(method: str, code: str) -> None:
            child = children.get((method, code))
            if child is None:
                child = children[(method, code)] = self.rest_requests.labels(
                    code=code, method=method, host=host
                )
            child.inc()

        return hook

    def limiter_hook(self, host: str) -> Callable[[float], None]:
        observe: Callable[[float], None] = self.rate_limiter_wait.labels(host=host).observe
        return observe

    # workqueue.QueueMetrics
    def depth(self, n: int) -> None:
        self._depth.set(n)

    def added(self) -> None:
        self._adds.inc()

    def queued_for(self, seconds: float) -> None:
        self._latency.observe(seconds)

    def worked_for(self, seconds: float) -> None:
        self._work.observe(seconds)

    def retried(self) -> None:
        self._retries.inc()

    # loop.ReconcileMetrics
    def observe(self, key: object, result: str, seconds: float) -> None:
        child = self._results.get(result)
        if child is None:
            child = self._results[result] = self.reconcile_total.labels(CONTROLLER_NAME, result)
        child.inc()
        if result == "error":
            self._reconcile_errors.inc()
        self._reconcile_time.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    async def handle(self, method: str, body: bytes) -> Response:
        return Response(200, self.render(), "text/plain; version=0.0.4; charset=utf-8")
