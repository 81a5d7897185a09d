"""The loops that drive the core: a keyed work queue with rate-limited requeues and timers
(``workqueue``), its workers (``loop``), and one reconcile of one job (``jobs``: observe, plan, apply).

The local backend's per-job process runs the same steps around host processes; it lives with that
backend (backends/local/supervisor.py). Level-triggered: a pass reads the whole state and never
relies on which event woke it.
"""
