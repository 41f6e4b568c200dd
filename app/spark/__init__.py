"""History and batch analysis on Spark (PySpark): the Parquet archive, history aggregates, the distributed batch
matcher and a Kafka data source.

Nothing here is imported by the engine or by ``hcep --help``: PySpark (and its JVM) is loaded only by the commands
that need it (``hcep archive`` needs only pyarrow).
"""
