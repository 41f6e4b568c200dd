"""pSPICE load shedding (digest-pspice): keep a latency bound under overload by dropping the partial matches least
likely to matter.

- :mod:`~engine.shedding.markov` -- per-query Markov chain over run states, completion probability and remaining
  cost, utility tables with drift-triggered, amortised rebuilds;
- :mod:`~engine.shedding.latency` -- the latency model (queueing + processing + shedding against the bound);
- :mod:`~engine.shedding.shedder` -- utility levels and O(n) victim selection; negation-state runs are never shed;
- :mod:`~engine.shedding.wrapper` -- :class:`SheddingMatcher`, what the service calls;
- :mod:`~engine.shedding.config` -- the pack's ``settings.shedding`` mapping;
- :mod:`~engine.shedding.replay` -- a simulated-arrival replay harness and a deterministic cost model.
"""

from engine.shedding.config import POLICIES, SheddingConfig, SheddingConfigError, from_pack, parse_shedding
from engine.shedding.latency import LatencyModel, OnlineFit
from engine.shedding.markov import QueryModel, completion_and_cost, negation_state, state_space
from engine.shedding.replay import CostModel, ReplayResult, arrivals, capacity, replay
from engine.shedding.wrapper import SheddingMatcher

__all__ = [
    "POLICIES",
    "CostModel",
    "LatencyModel",
    "OnlineFit",
    "QueryModel",
    "ReplayResult",
    "SheddingConfig",
    "SheddingConfigError",
    "SheddingMatcher",
    "arrivals",
    "capacity",
    "completion_and_cost",
    "from_pack",
    "negation_state",
    "parse_shedding",
    "replay",
    "state_space",
]
