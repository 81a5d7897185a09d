"""The Kubernetes operator process (``python -m trainop.operator`` / ``trainop operator``).

Upstream's flags (``flags``), the manager that wires informers, queue and controller (``manager``),
the admission webhook and its certificates (``webhook``, ``certs``, ``pki``), metrics and health
endpoints on a small HTTP server (``http``, ``metrics``). Wiring only: decisions live in the core.
"""
