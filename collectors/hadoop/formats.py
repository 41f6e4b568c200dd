"""Formats ``hcep collect hadoop`` does not read, named rather than passed over in silence (issue 27).

A file the collector cannot tell as a job history file, an ApplicationMaster log or a map or reduce task log is
skipped.  Most such files are companions that hold nothing to read (a job's ``conf.xml``, ``.crc`` checksums, the
``.summary`` beside a ``.jhist``, a container's empty ``stdout``); those stay counted as skipped.  A file that looks
like a history or log file in a format the collector does not read is *named*: on stderr with why, counted per
format in the summary, and ``--strict`` exits 2 -- an operator pointing the collector at a Hadoop 1 cluster must
learn that nothing was read, not get an empty, successful run.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib

MRV1 = "Hadoop 1 (MRv1) JobTracker history"
SPARK = "Spark event log"
GZIP = "gzip-compressed history or log"
LOG4J = "log4j log of another kind"
#: Companions of the files read: never named (``.gz`` is looked into: a rotated log or a compressed history is).
_COMPANIONS = ("_tmp", ".xml", ".summary", ".crc", ".swp", ".jsonl", ".json")
_HEAD_BYTES = 64 * 1024
_HEAD_LINES = 20
#: Spark's event-log codecs (``spark.eventLog.compression.codec``): the file suffix and the stream's magic bytes.
_SPARK_CODECS = {
    "zstd": b"\x28\xb5\x2f\xfd",
    "lz4": b"LZ4Block",
    "snappy": b"\x82SNAPPY\x00",
    "lzf": b"ZV",
}
#: Hadoop's and YARN containers' log4j layouts (``%d{ISO8601} %p ...``) and Spark's (``yy/MM/dd HH:mm:ss %p``).
_LOG4J = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d{3}|\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) +"
    r"(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\b"
)


def _what(head: bytes) -> tuple[str, str] | None:
    """(format, why) of an uncompressed head, or None when it does not look like a history or log file."""
    text = head.decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()][:_HEAD_LINES]
    first = lines[0] if lines else ""
    if first.startswith('Meta VERSION="1"') or first.startswith(("Job JOBID=", "Task TASKID=")):
        return MRV1, "a Hadoop 1 (MRv1) JobTracker history file: not read by any hcep collector (Hadoop 2 .jhist is)"
    if first.startswith("Avro-Json") or first.startswith("Avro-Binary"):
        return "Hadoop 2 job history", "a Hadoop 2 MapReduce job history file (.jhist)"
    if first.startswith("{") and '"Event"' in first and "SparkListener" in first:
        return SPARK, "a Spark event log: read it with 'hcep collect spark'"
    if any(_LOG4J.match(line) for line in lines):
        return LOG4J, (
            "a log4j log that is neither an ApplicationMaster log nor a map or reduce task log (no MRAppMaster, "
            "shuffle or 'Processing split' lines near its start): a daemon's log?"
        )
    return None


def unread_format(path: str) -> tuple[str, str] | None:
    """(format, why) when the skipped file ``path`` looks like a history or log file the collector does not read;
    None for a companion file or anything else (which stays merely skipped)."""
    name = os.path.basename(path)
    if name.endswith(_COMPANIONS):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError:
        return None
    codec = name.removesuffix(".inprogress").rpartition(".")[2]
    if codec in _SPARK_CODECS and head.startswith(_SPARK_CODECS[codec]):
        return SPARK, f"a Spark event log ({codec}-compressed): read it with 'hcep collect spark'"
    if head[:2] != b"\x1f\x8b":
        return _what(head)
    try:
        with gzip.open(path, "rb") as inner:
            inside = _what(inner.read(_HEAD_BYTES))
    except (OSError, EOFError, zlib.error):
        return None
    if inside is None:
        return None
    return GZIP, f"gzip-compressed ({inside[1]}); decompress it first"
