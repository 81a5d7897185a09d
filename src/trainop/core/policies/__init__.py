"""One module per run-policy rule of contract §4: restart and exit codes (§4.5), backoffLimit (§4.6),
activeDeadlineSeconds (§4.7), cleanPodPolicy (§4.8), TTL (§4.9), suspend (§4.10) and managedBy (§4.11);
and trainop's own: the failure policy's rules and restart count (failure.py), startup deadlines
(startup.py), and their steps in a pass (whole_job.py), gang scheduling's steps (podgroup.py).

Each is a small pure decision over the defaulted job, the observed objects and ``now`` (the step
modules record through ``core/pass_state.py``); the order in which they run lives in
``trainop.core.reconcile``.
"""
