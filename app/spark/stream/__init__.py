"""``hcep stream``: a query pack as a Spark Structured Streaming query (one module per job).

- :mod:`plan` -- the pack compiled once, cut into families and buckets by the batch planner's shared code;
- :mod:`source` -- files or Kafka in, lines parsed by the engine's decoder and routed to buckets;
- :mod:`state` -- the engine's evaluators inside ``transformWithStateInPandas``, one bucket of groups per key;
- :mod:`sink` -- records, dead letters and alert transitions written once per micro-batch (idempotent);
- :mod:`job` -- the query built, started, reported and stopped.
"""
