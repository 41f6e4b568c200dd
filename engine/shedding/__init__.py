"""pSPICE load shedding (digest-pspice): keep a latency bound under overload by dropping the partial matches least
likely to matter.

- :mod:`~engine.shedding.markov` -- per-query Markov chain over run states, completion probability and remaining
  cost, utility tables with drift-triggered, amortised rebuilds;
- :mod:`~engine.shedding.latency` -- the latency model (queueing + processing + shedding against the bound);
- :mod:`~engine.shedding.shedder` -- utility levels and O(n) victim selection; negation-state runs are never shed;
- :mod:`~engine.shedding.wrapper` -- :class:`SheddingMatcher`, what the service calls;
- :mod:`~engine.shedding.config` -- the pack's ``settings.shedding`` mapping.

The simulated-arrival replay harness and the deterministic cost model the benchmarks and tests use are research
tools: ``benchmarks/research/shedding_replay.py``.
"""

from engine.shedding.config import POLICIES, SheddingConfig, SheddingConfigError, from_pack, parse_shedding
from engine.shedding.latency import LatencyModel, OnlineFit
from engine.shedding.markov import QueryModel, completion_and_cost, negation_state, state_space
from engine.shedding.wrapper import Costs, SheddingMatcher

__all__ = [
    "POLICIES",
    "Costs",
    "LatencyModel",
    "OnlineFit",
    "QueryModel",
    "SheddingConfig",
    "SheddingConfigError",
    "SheddingMatcher",
    "completion_and_cost",
    "from_pack",
    "negation_state",
    "parse_shedding",
    "state_space",
]
