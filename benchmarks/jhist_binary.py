"""A job history file in Avro-Binary, re-encoded from its Avro-Json form as Hadoop's ``EventWriter`` writes it in
BINARY mode: the fuzz targets' seeds and the collector tests' binary samples (tests import it from here; benchmarks
import nothing of tests)."""

from __future__ import annotations

import io
import json


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
