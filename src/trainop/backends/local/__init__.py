"""The local backend: each "pod" is a group of host processes, state lives under ``$TRAINOP_HOME``.

``api`` is the entry for the SDK and CLI, ``store`` the SQLite state, ``runner`` the kubelet's job
(processes, restarts, back-off, logs), ``render`` the pod/Service dicts with loopback addresses,
``paths`` the layout of the state directory. Callers above go through ``api``; the CLI and the
SDK's local adapter still read ``api.LocalBackend.store`` in a few places (issue 14 moves them).
"""
