"""``trainop ui``: a live web view of jobs, on this machine or a cluster (issue 27).

A front door beside the CLI: it reads jobs through the same backend interface (``source.py`` is the
one seam), serves pages and server-sent events with aiohttp.web, and changes a job only through the
backend's suspend, resume and delete, behind a per-session token and a CSRF token.
"""
