"""The world the collectors observe (docs/semantics.md section 9): a seeded Hadoop cluster running the SWIM Facebook
job mix (its background, faults injected by cause), writing genuine Hadoop and Ganglia artifacts.

``simulate(SimConfig(nodes=..., hours=..., seed=..., faults=...), out_dir)`` writes job history files,
ApplicationMaster, map and reduce task syslogs, per-host ``load_one`` samples, and -- outside them -- the ground truth
of what it caused (see ``run.py``, ``README.md``).
"""

from simulator.config import SimConfig
from simulator.run import simulate

__all__ = ["SimConfig", "simulate"]
