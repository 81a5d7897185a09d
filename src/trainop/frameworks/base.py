"""The plugin interface, as frameworks see it: re-exported from ``trainop.core.plugin``.

The Protocol lives in core because core calls it and layers import downward only (design.md);
plugins import it from here. Pure; no I/O.
"""

from trainop.core.plugin import ConditionUpdate, FrameworkPlugin, ReplicaCounts

__all__ = ["ConditionUpdate", "FrameworkPlugin", "ReplicaCounts"]
