"""A pack over a file of events, outside any command: reading events files (:mod:`.read`), loading and compiling
packs as the command-line options ask (:mod:`.packs`), and the alerts ``hcep run`` would decide (:mod:`.judge`).

``hcep match``, ``batch``, ``stream``, ``run``, ``explain``, ``archive``, the demo, the benchmarks and the tests
share these; they import nothing of :mod:`app.commands` (the commands import them), and the engine only inside the
functions, so that ``hcep --help`` stays cheap.
"""
