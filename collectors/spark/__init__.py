"""Spark event logs -> hcep events (the Spark vocabulary: ``collectors/README.md``).  Knows nothing of the engine."""
