"""One plugin per job kind (``pytorch``, ``tensorflow``, ``xgboost``, ``mpi``, ``paddle``, ``jax``),
found through the explicit ``registry``.

A plugin knows its replica types, default container and port, the env vars it injects and its
success rule; the core asks it, never a kind's name. Pure, like the core.
"""
