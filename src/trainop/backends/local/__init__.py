"""The local backend: each "pod" is a group of host processes, state lives under ``$TRAINOP_HOME``.

``api`` is the entry for the SDK and CLI, ``store`` the SQLite state, ``runner`` the kubelet's job
(processes, restarts, back-off, logs), ``render`` a pod's containers as host processes, ``paths`` the
layout of the state directory. Callers above go through ``api`` (``LocalBackend``, a ``JobClient``).
"""
