"""The Kubernetes backend: informer caches (``informer``, ``cache``), a rate-limited async client
(``client``), the Plan applier (``apply``), events, expectations and leader election.

Observing a job reads the cache only; every write goes through ``apply``. Knows nothing of frameworks.
"""
