"""A seeded simulation of a Hadoop cluster running the SWIM Facebook job mix, writing genuine Hadoop artifacts.

``simulate(SimConfig(nodes=..., hours=..., seed=...), out_dir)`` writes job history files, ApplicationMaster and
reduce task syslogs, per-host ``load_one`` samples and a ground truth of planted anomalies (see ``run.py``).
"""

from simulator.config import SimConfig
from simulator.run import simulate

__all__ = ["SimConfig", "simulate"]
