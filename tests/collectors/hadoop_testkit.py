"""Helpers for the collector tests: the sample files (Hadoop's real formats), a JSON -> binary .jhist converter (so
both encodings are checked against the same facts), and event comparison."""

from __future__ import annotations

import io
import json
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent / "samples"
JOB = "job_1700000000000_0007"


def sample(name: str) -> Path:
    if name == "jhist":
        return next(SAMPLES.glob("*.jhist"))
    return SAMPLES / name


def json_jhist_to_binary(text: str) -> bytes:
    """Re-encode an Avro-Json history file as Avro-Binary (as EventWriter does in BINARY mode)."""
    import fastavro

    lines = text.split("\n")
    schema = fastavro.parse_schema(json.loads(lines[1]))
    body = "\n".join(line for line in lines[2:] if line.strip()) + "\n"
    out = io.BytesIO()
    out.write(b"Avro-Binary\n" + lines[1].encode() + b"\n")
    for record in fastavro.json_reader(io.StringIO(body), schema):
        fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def strip(event: dict) -> dict:
    """An event without its id/delta, for comparisons across sources."""
    return {k: v for k, v in event.items() if k not in ("id", "delta")}
