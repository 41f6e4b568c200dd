"""The engine side of ``hcep run``: :class:`engine.evaluate.PackRunner`, re-exported here for the service.

The pack runner (every enabled query of a pack, its memory bounds, its pSPICE latency bound, its replay horizon and
how its stream may be cut) lives in the engine, so that ``hcep match``, ``hcep run``, ``hcep batch`` and the Spark
streaming job run a pack one way; see its docstring for how the service's arrival times drive shedding.
"""

from __future__ import annotations

from engine.evaluate import JOB_KEYS, PackRunner

__all__ = ["JOB_KEYS", "PackRunner"]
