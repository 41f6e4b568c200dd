"""Research baselines the benchmarks (and their tests) compare the product with; the product imports none of them.

- :mod:`benchmarks.research.imprecise_orders` -- the imprecise-timestamp paper's run-based evaluation orders
  (sorting, any-state, selectivity) and the rule choosing between them;
- :mod:`benchmarks.research.shedding_replay` -- pSPICE's simulated-arrival replay harness and deterministic cost
  model (``hcep run`` measures real time; its shedding policies, baselines included, stay in :mod:`engine.shedding`).
"""
