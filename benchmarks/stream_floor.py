"""``hcep stream`` with its operator swapped for one that reads its rows and keeps nothing: what Spark, PySpark and
the router cost for the query's shape (file source, router, shuffle by bucket, ``transformWithStateInPandas``, the
sink), so that the part of ``hcep stream``'s CPU the operator can never give back is measured, not guessed.

``python3 -m benchmarks.stream_floor stream ARGS`` runs ``hcep stream ARGS`` so; ``bench_stream_sustained
--operators floor`` runs it at the same rates as the real thing.  The floor operator reads its rows as the real one
does (Arrow to pandas, the router's packed values to Python lists) and answers each call with one clock row, so the
sink commits every batch as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from app.spark.stream.state import OUT_COLUMNS, clock_row, unpack_rows


def _base() -> type:
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


class FloorProcessor(_base()):  # type: ignore[misc]
    """Reads its rows as the real operator does, keeps no state, registers no timer."""

    def __init__(self, plan: Any, keys: list[int] | None = None) -> None:
        self.plan = plan

    def init(self, handle: Any) -> None:
        self.handle = handle

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:  # noqa: N802, N803
        import pandas as pd

        n = 0
        for pdf in rows:
            for packed in pdf["rows"]:
                n += len(unpack_rows(packed))
        yield pd.DataFrame([clock_row(timerValues.getCurrentWatermarkInMs(), n, 0)], columns=OUT_COLUMNS)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:  # noqa: N802, N803
        return iter(())

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    from app.cli import main as cli_main
    from app.spark.stream import job
    from benchmarks.stream_floor import FloorProcessor as importable  # not __main__'s: the workers import it by name

    job.BucketProcessor = importable  # type: ignore[misc]
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
