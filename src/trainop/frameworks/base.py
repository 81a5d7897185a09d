"""The plugin interface, as frameworks see it: re-exported from ``trainop.core.plugin``.

The Protocols live in core because core calls them and layers import downward only (design.md);
plugins import them from here. ``FrameworkPlugin`` is what every kind implements; ``ExtraObjects``,
``PodEvents``, ``LoopbackEnv``, ``LocalEnv``, ``LocalNoopHelpers`` and ``RemoteExec`` (with its
``ExecAgent``) are the optional capabilities a plugin has by having their members.
Pure; no I/O.
"""

from trainop.core.plugin import (
    ConditionUpdate,
    ExecAgent,
    ExtraObjects,
    FrameworkPlugin,
    LocalEnv,
    LocalNoopHelpers,
    LoopbackEnv,
    PodEvents,
    PodView,
    RemoteExec,
    ReplicaCounts,
)

__all__ = [
    "ConditionUpdate",
    "ExecAgent",
    "ExtraObjects",
    "FrameworkPlugin",
    "LocalEnv",
    "LocalNoopHelpers",
    "LoopbackEnv",
    "PodEvents",
    "PodView",
    "RemoteExec",
    "ReplicaCounts",
]
