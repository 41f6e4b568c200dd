"""``hcep run``, the streaming service, as small parts with one job each:

- :mod:`~app.stream.config`: the settings (:class:`ServiceConfig`) and tuning constants;
- :mod:`~app.stream.source`: where messages come from (the :class:`Source` interface; Kafka: a consumer group for the
  shared topics, every partition of the broadcast ones);
- :mod:`~app.stream.decode`: message bytes -> events, or dead letters with a reason;
- :mod:`~app.stream.epochs`: an assignment's engine rebuilt from the checkpoints, its watermark merge and replay;
- :mod:`~app.stream.outputs`: records, alert transitions, dead letters and kept events pending for the checkpoint;
- :mod:`~app.stream.checkpointer`: the checkpoint, one SQLite transaction;
- :mod:`~app.stream.publisher`: committed records to the matches topic;
- :mod:`~app.stream.metrics`: the gauges;
- :mod:`~app.stream.loop`: the :class:`Service` that wires them;
- :mod:`~app.stream.memory`: an in-memory broker, source and sink, so a whole flow runs inside a test.
"""

from app.stream.config import ServiceConfig
from app.stream.loop import Service, run_service

__all__ = ["Service", "ServiceConfig", "run_service"]
