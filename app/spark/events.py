"""Inputs of the batch matcher as one Spark DataFrame of parsed events, in the order ``hcep match`` would see them.

Three kinds of input (several may be given; they are concatenated in the order given, as ``cat`` would):

- JSON lines (``*.jsonl``, ``*.json``, gzip-compressed too, or a directory of them): parsed in the executors; each
  event keeps its input position as ``seq`` (its id when it has none, and the tie-break between events of one tick),
  counted over non-blank lines exactly like ``hcep match``;
- the Parquet archive (``app.spark.archive``: a directory with ``events/``, or an ``events`` directory itself);
- raw Hadoop logs (job history, AM and reduce task syslogs), Spark event logs (``spark.eventLog.dir``, one log
  file or rolling directory, any codec) and Ganglia XML dumps: parsed on the driver by the collectors (their
  cross-file de-duplication and per-log state need one process), written to a temporary JSON-lines file, then read
  as above.

The parsed frame has one row per event: ``seq``, ``type``, ``tlo``/``thi`` (the tick interval), ``mid2`` (``tlo +
thi``, the time order of the precise runtime), ``json`` (the event as a JSON object: the executors rebuild the very
same :class:`engine.Event` from it), ``error`` (why the line is not an event, as ``FILE:LINE: reason``) and one
``k_<attr>`` column per requested partition attribute (the value as canonical JSON, null when absent).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz")
_SKIP_NAMES = ("_SUCCESS",)


def key_column(attr: str) -> str:
    return "k_" + "".join(ch if ch.isalnum() else "_" for ch in attr)


_encode_str = json.encoder.encode_basestring_ascii


def canonical_key(value: Any) -> str | None:
    """A partition value as a string that is equal exactly when the engine's pools see equal keys (1 == 1.0 == True)."""
    if value is None:
        return None
    kind = type(value)
    if kind is str:  # what json.dumps writes for a string (ensure_ascii), without its dispatch (the router's hot path)
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if isinstance(value, bool) or (isinstance(value, float) and value.is_integer()):
        value = int(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parsed_schema(attrs: Sequence[str]) -> str:
    keys = "".join(f", {key_column(a)} string" for a in attrs)
    return f"seq long, type string, tlo long, thi long, mid2 long, json string, error string{keys}"


def parse_event(
    obj: Any, text: str, seq: int, tick: float, attrs: Sequence[str], where: str, max_width: int | None = None
) -> tuple:
    """One parsed row (see the module doc); an invalid event, or one wider than ``max_width`` ticks (``hcep run``'s
    ``too_wide`` rule, :func:`engine.events.max_width_ticks`), becomes an error row naming ``where``."""
    from engine.events import EventError, decoder_for

    try:
        ev = decoder_for(tick).event(obj, seq)
    except EventError as err:
        return (seq, None, None, None, None, None, f"{where}: invalid event: {err}") + (None,) * len(attrs)
    if max_width is not None and ev.thi - ev.tlo > max_width:
        error = (
            f"{where}: event wider than --max-delta {(max_width - 1) * tick / 2:g} s: interval [{ev.lo:g}, "
            f"{ev.hi:g}] (raise --max-delta to accept it)"
        )
        return (seq, None, None, None, None, None, error) + (None,) * len(attrs)
    keys = tuple(canonical_key(ev.attrs.get(a)) for a in attrs)
    return (seq, ev.type, ev.tlo, ev.thi, ev.tlo + ev.thi, text, None) + keys


# ------------------------------------------------------------------------------------------------ input discovery


@dataclass(frozen=True)
class Input:
    """One input: ``kind`` is ``jsonl``, ``parquet`` or ``raw``; ``files`` are the JSON-lines files in order."""

    path: str
    kind: str
    files: tuple[str, ...] = ()


def _jsonl_files(directory: Path) -> list[str]:
    files = []
    for file in sorted(directory.rglob("*")):
        if not file.is_file() or file.name.startswith((".", "_")) or file.name in _SKIP_NAMES:
            continue
        if file.name.endswith(JSONL_SUFFIXES) or (file.name.startswith("part-") and file.suffix != ".parquet"):
            files.append(str(file))
    return files


def classify(path: str, kind: str = "auto") -> Input:
    """What an input path holds (``kind`` forces it)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(path)
    if kind == "parquet" or (kind == "auto" and _is_parquet(p)):
        base = p / "events" if (p / "events").is_dir() else p
        return Input(str(base), "parquet")
    if kind == "jsonl" or (kind == "auto" and (p.is_file() and p.name.endswith(JSONL_SUFFIXES))):
        return Input(path, "jsonl", (str(p),) if p.is_file() else tuple(_jsonl_files(p)))
    if kind == "auto" and p.is_dir():
        files = _jsonl_files(p)
        if files:
            return Input(path, "jsonl", tuple(files))
    if kind in ("auto", "raw"):
        return Input(path, "raw")
    raise ValueError(f"unknown input kind {kind!r}")


def _is_parquet(p: Path) -> bool:
    if p.is_file():
        return p.suffix == ".parquet"
    if (p / "events").is_dir():
        return True
    return any(f.suffix == ".parquet" for f in p.rglob("*.parquet"))


# ------------------------------------------------------------------------------------------------ raw logs


def is_spark_log(path: str) -> bool:
    """Whether ``path`` holds Spark event logs only: one single-file log, one rolling log directory, or a
    ``spark.eventLog.dir`` whose every entry is one (a Hadoop log tree is not)."""
    from collectors.spark import layout

    if os.path.isfile(path):
        return layout.single_log(path) is not None
    if not os.path.isdir(path):
        return False
    if layout.rolling_log(path) is not None:
        return True
    skipped: list[str] = []
    return bool(layout.discover(path, skipped)) and not skipped


def raw_to_jsonl(paths: Sequence[str], out_dir: str) -> str:
    """Raw logs -> one JSON-lines file: Hadoop events sorted by time as ``hcep collect hadoop`` writes them, then
    Spark events sorted by time as ``hcep collect spark`` writes them, then the Ganglia rounds in path order.  Needs
    the collectors."""
    from collectors.hadoop.collect import collect, sorted_events

    xml = [p for p in _walk(paths) if p.endswith(".xml")]
    spark = [p for p in paths if not p.endswith(".xml") and is_spark_log(p)]
    others = [p for p in paths if not p.endswith(".xml") and p not in spark]
    fd, out = tempfile.mkstemp(prefix="raw-", suffix=".jsonl", dir=out_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        if others:
            for text in sorted_events(collect(others)):
                handle.write(text)
                handle.write("\n")
        if spark:
            from collectors.spark.collect import collect as collect_spark

            for text in sorted_events(event for path in spark for event in collect_spark(path)):
                handle.write(text)
                handle.write("\n")
        for path in xml:
            for event in _ganglia_events(path):
                handle.write(json.dumps(event))
                handle.write("\n")
    return out


def _walk(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                for name in sorted(filenames):
                    yield os.path.join(dirpath, name)
        else:
            yield path


def _ganglia_events(path: str) -> list[dict[str, Any]]:
    from collectors.ganglia.derive import round_events, rounds_from_document
    from collectors.ganglia.xml import parse_document

    with open(path, "rb") as handle:
        doc = parse_document(handle.read())
    events: list[dict[str, Any]] = []
    for rnd in rounds_from_document(doc):
        events.extend(round_events(rnd))
    return events


# ------------------------------------------------------------------------------------------------ JSON lines


def _blank(line: str, first: bool) -> bool:
    return not (line.lstrip("\ufeff") if first else line).strip()


def _count_lines(frames: Iterator[Any], firsts: frozenset[int]) -> Iterator[Any]:
    """mapInPandas body: (partition, lines, non-blank lines) of one partition of text."""
    import pandas as pd

    pid, total, nonblank = -1, 0, 0
    for pdf in frames:
        if len(pdf):
            pid = int(pdf["pid"].iloc[0])
        for line in pdf["value"]:
            if not _blank(line, pid in firsts and total == 0):
                nonblank += 1
            total += 1
    if pid >= 0:
        yield pd.DataFrame([(pid, total, nonblank)], columns=["pid", "total", "nonblank"])


def _parse_lines(
    frames: Iterator[Any],
    plan: dict[int, tuple[str, int, int, bool]],
    tick: float,
    attrs: tuple[str, ...],
    max_width: int | None = None,
) -> Iterator[Any]:
    """mapInPandas body: one partition of text lines -> parsed rows; ``plan`` gives each partition its file, the
    line number and ``seq`` before its first line, and whether that line is the first of the file."""
    import pandas as pd

    from engine.events import loads_json

    columns = [c.split()[0] for c in parsed_schema(attrs).split(", ")]
    label = ""
    lineno = seq = 0
    first = False
    started = False
    for pdf in frames:
        rows = []
        for pid, line in zip(pdf["pid"], pdf["value"], strict=True):
            if not started:
                label, lineno, seq, first = plan[int(pid)]
                started = True
            lineno += 1
            if first and lineno == 1:
                line = line.lstrip("\ufeff")
            if not line.strip():
                continue
            where = f"{label}:{lineno}"
            try:
                obj = loads_json(line)
            except ValueError as err:  # bad JSON, a 5,000-digit integer, deep nesting: bad input, as hcep match says
                rows.append((seq, None, None, None, None, None, f"{where}: {err}") + (None,) * len(attrs))
            else:
                rows.append(parse_event(obj, line, seq, tick, attrs, where, max_width))
            seq += 1
        if rows:
            yield pd.DataFrame(rows, columns=columns)


def read_jsonl(
    spark: SparkSession,
    files: Sequence[str],
    tick: float,
    attrs: Sequence[str],
    seq0: int = 0,
    last: bool = True,
    max_width: int | None = None,
) -> tuple[DataFrame, int | None]:
    """JSON-lines files -> (parsed DataFrame, number of events).

    Spark reads the text (one scan per file, so partitions follow the files' order, and a file's splits its byte
    order); one counting pass gives every partition its first line number and ``seq``, so the parse runs in
    parallel and still numbers events exactly as ``hcep match`` does.  The count is skipped for a single split
    when no input follows (the number of events is then None).
    """
    from pyspark.sql import functions as F

    attrs = tuple(attrs)
    if not files:
        return spark.createDataFrame([], parsed_schema(attrs)), 0
    scans = [spark.read.text(f) for f in files]
    owners: list[int] = []
    for i, scan in enumerate(scans):
        owners.extend([i] * scan.rdd.getNumPartitions())
    text = scans[0]
    for scan in scans[1:]:
        text = text.union(scan)
    text = text.select(F.spark_partition_id().alias("pid"), "value")
    firsts = frozenset(j for j in range(len(owners)) if j == 0 or owners[j] != owners[j - 1])
    plan: dict[int, tuple[str, int, int, bool]] = {}
    count: int | None = None
    if len(owners) == 1 and last:  # one split: nothing to count first
        plan[0] = (files[0], 0, seq0, True)
    else:
        counted = text.mapInPandas(lambda it: _count_lines(it, firsts), "pid int, total long, nonblank long")
        counts = {r["pid"]: (r["total"], r["nonblank"]) for r in counted.collect()}
        seq = seq0
        lineno = 0
        for pid, owner in enumerate(owners):
            if pid in firsts:
                lineno = 0
            plan[pid] = (files[owner], lineno, seq, pid in firsts)
            total, nonblank = counts.get(pid, (0, 0))
            lineno += total
            seq += nonblank
        count = seq - seq0
    parsed = text.mapInPandas(lambda it: _parse_lines(it, plan, tick, attrs, max_width), parsed_schema(attrs))
    return parsed, count


# ------------------------------------------------------------------------------------------------ Parquet archive


def read_parquet(
    spark: SparkSession,
    path: str,
    tick: float,
    attrs: Sequence[str],
    seq0: int = 0,
    max_width: int | None = None,
) -> tuple[DataFrame, int]:
    """An archive's events -> (parsed DataFrame, number of events).  Input order is the archive's (batch, seq);
    archived events always carry their id, so ``seq`` only has to keep that order (batch offsets + archive seq)."""
    from pyspark.sql import functions as F

    attrs = tuple(attrs)
    frame = spark.read.option("basePath", path).parquet(path) if Path(path).is_dir() else spark.read.parquet(path)
    batches = frame.groupBy("batch").agg(F.max("seq").alias("top"), F.count(F.lit(1)).alias("n")).collect()
    offsets: dict[str, int] = {}
    seq = seq0
    events = 0
    for row in sorted(batches, key=lambda r: r["batch"]):
        offsets[row["batch"]] = seq
        seq += row["top"] + 1
        events += row["n"]
    schema = parsed_schema(attrs)
    columns = [c.split()[0] for c in schema.split(", ")]

    def convert(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from app.spark.archive import ArchiveError, event_from_row

        for pdf in frames:
            rows = []
            for batch, seq_, id_, type_, ts, lo, hi, attrs_json in zip(
                pdf["batch"],
                pdf["seq"],
                pdf["id"],
                pdf["type"],
                pdf["ts"],
                pdf["lo"],
                pdf["hi"],
                pdf["attrs"],
                strict=True,
            ):
                where = f"{path}: event {id_}"
                try:
                    obj = event_from_row({"type": type_, "ts": ts, "id": id_, "lo": lo, "hi": hi, "attrs": attrs_json})
                except ArchiveError as err:
                    rows.append(
                        (offsets[batch] + int(seq_), None, None, None, None, None, f"{path}: {err}")
                        + (None,) * len(attrs)
                    )
                    continue
                rows.append(
                    parse_event(obj, json.dumps(obj), offsets[batch] + int(seq_), tick, attrs, where, max_width)
                )
            yield pd.DataFrame(rows, columns=columns)

    cols = ["batch", "seq", "id", "type", "ts", "lo", "hi", "attrs"]
    return frame.select(*cols).mapInPandas(convert, schema), events


# ------------------------------------------------------------------------------------------------ all inputs


def read_inputs(
    spark: SparkSession,
    paths: Sequence[str],
    tick: float,
    attrs: Sequence[str],
    kind: str = "auto",
    tmp_dir: str | None = None,
    max_width: int | None = None,
) -> DataFrame:
    """Every input, concatenated in order, as one parsed DataFrame; events wider than ``max_width`` ticks are error
    rows."""
    inputs = [classify(p, kind) for p in paths]
    raw = [i.path for i in inputs if i.kind == "raw"]
    if raw:
        tmp_dir = tmp_dir or tempfile.mkdtemp(prefix="hcep-batch-")
        converted = raw_to_jsonl(raw, tmp_dir)
        first_raw = next(j for j, i in enumerate(inputs) if i.kind == "raw")
        inputs = [i for i in inputs if i.kind != "raw"]
        inputs.insert(first_raw, Input(converted, "jsonl", (converted,)))
    frames: list[DataFrame] = []
    total = 0
    pending: list[str] = []

    def take_jsonl(last: bool) -> None:
        nonlocal total
        if pending:
            frame, n = read_jsonl(spark, pending, tick, attrs, total, last, max_width)
            frames.append(frame)
            total += n or 0
            pending.clear()

    for item in inputs:
        if item.kind == "jsonl":
            pending.extend(item.files)
            continue
        take_jsonl(last=False)
        frame, n = read_parquet(spark, item.path, tick, attrs, total, max_width)
        frames.append(frame)
        total += n
    take_jsonl(last=True)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result
