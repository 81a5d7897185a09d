"""One plugin per job kind (``pytorch``, ``tensorflow``, ``xgboost``, ``mpi``, ``paddle``, ``jax``),
found through the explicit ``registry``.

Everything about a framework lives in its module: replica types, default container and port, the env
vars it injects, its success rule, and the optional capabilities of ``base`` (extra owned objects, a
launcher, the local backend's env). Its admission rules and defaults are its spec model's hooks, its
static facts its ``KindInfo`` row. Core and the backends ask capabilities, never a kind's name
(tests/unit/test_kind_names.py). A seventh kind is a new module here plus a line in
``registry.build_registry`` (or ``register_framework``). Pure, like the core.
"""
