"""The loops that drive the core: a keyed work queue with rate-limited requeues and timers
(``workqueue``), its workers (``loop``), and one reconcile of one job (``jobs``: observe, plan, apply).

``local_supervisor`` is the local backend's per-job process running the same steps around host
processes. Level-triggered: a pass reads the whole state and never relies on which event woke it.
"""
