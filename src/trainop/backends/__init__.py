"""Where plans meet the world: ``kubernetes`` (an apiserver) and ``local`` (host processes + SQLite).

``base`` holds what both share (the reader/writer protocols, ``is_finished``). Each backend observes a
job and what it owns, and applies the core's Plan; neither decides anything the core decides.
"""
