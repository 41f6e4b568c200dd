"""The dead-letter sink shared by all Hadoop parsers: malformed input is kept, with why and where, never dropped.

One JSON object per line: ``{"source": ..., "location": "file:line" | "file@offset", "reason": ..., "raw": ...}``.
Parsers never raise on bad input; they hand the bad line here and carry on, so one corrupt record cannot stop a
collector, and an operator can replay or inspect what was skipped.
"""

from __future__ import annotations

import json
import os
import threading
from typing import IO, Any

#: Raw text longer than this is cut (with a marker) so a giant garbage line cannot bloat the sink.
MAX_RAW = 16384


class DeadLetterSink:
    """Counts dead letters and, when given a file, appends them to it as JSON lines."""

    def __init__(self, path: str | None = None, stream: IO[str] | None = None) -> None:
        self.count = 0
        self.records: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self._own = False
        self._stream: IO[str] | None = stream
        if path is not None and stream is None:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            self._stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            self._own = True

    @classmethod
    def memory(cls) -> DeadLetterSink:
        """A sink that keeps every record in ``records`` (tests, benchmarks)."""
        sink = cls()
        sink.records = []
        return sink

    def write(self, source: str, location: str, reason: str, raw: str | bytes) -> None:
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="backslashreplace")
        if len(raw) > MAX_RAW:
            raw = raw[:MAX_RAW] + f"...[{len(raw) - MAX_RAW} more chars]"
        record = {"source": source, "location": location, "reason": reason, "raw": raw}
        with self._lock:
            self.count += 1
            if self.records is not None:
                self.records.append(record)
            if self._stream is not None:
                self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")

    def flush(self) -> None:
        if self._stream is not None:
            self._stream.flush()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.flush()
            if self._own:
                self._stream.close()
            self._stream = None
