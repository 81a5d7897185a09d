"""The pure reconcile core: ``reconcile(job, observed, plugin, topology, now) -> Plan``.

Conditions, restarts, back-off, deadlines, cleanup, TTL, suspend and managedBy (``policies``) are
decided here, once, for both backends. No I/O and no clock: time comes in as ``now`` and goes out as
``requeue_after``; tests/unit/test_layers.py enforces it.
"""
