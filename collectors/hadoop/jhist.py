"""MapReduce job history (``.jhist``) -> JobStart/JobEnd, Mapper/Reducer, ReducerStart/ReducerEnd, DataIO.

A ``.jhist`` file is what ``EventWriter`` writes: a version line (``Avro-Json`` or ``Avro-Binary``), the ``Event``
schema on one line, then one datum per event -- Avro JSON encoding, one per line (blank lines between them), or Avro
binary datums back to back.  Each datum is ``{"type": EventType, "event": {<record full name>: {...}}}``.  Fields are
read by name, so the Hadoop 2.x and 3.x schemas (which differ in optional fields) both work; the binary form is decoded
with the file's own schema by fastavro.

Mapping (times are epoch milliseconds, UTC by construction):
JOB_INITED -> JobStart at launchTime (user/queue from JOB_SUBMITTED / JOB_QUEUE_CHANGED); JOB_FINISHED / JOB_FAILED /
JOB_KILLED / JOB_ERROR -> JobEnd; MAP_ATTEMPT_STARTED -> MapStart, REDUCE_ATTEMPT_STARTED -> ReducerStart (both with
the container and ``speculative`` from avataar); MAP/REDUCE_ATTEMPT_FINISHED|FAILED|KILLED -> Mapper/Reducer at
finishTime (period from the attempt's start; the attempt's input or shuffle counters), plus ReducerEnd for reduces
and, for successful maps of jobs with reduces, DataIO(+MAP_OUTPUT_MATERIALIZED_BYTES, else MAP_OUTPUT_BYTES) with the
job's map output written so far (``written``, ``maps_done`` of ``maps``).
"""

from __future__ import annotations

import bisect
import functools
import io
import json
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from collectors.hadoop import events as E
from collectors.hadoop.common import Context, LineParser, read_lines, run_lines

HEADER_JSON = "Avro-Json"
HEADER_BINARY = "Avro-Binary"

_IGNORED_TYPES = frozenset(
    {
        "AM_STARTED",
        "JOB_INFO_CHANGED",
        "JOB_PRIORITY_CHANGED",
        "JOB_STATUS_CHANGED",
        "TASK_FINISHED",
        "TASK_FAILED",
        "TASK_UPDATED",
        "NORMALIZED_RESOURCE",
        "SETUP_ATTEMPT_STARTED",
        "SETUP_ATTEMPT_FINISHED",
        "SETUP_ATTEMPT_FAILED",
        "SETUP_ATTEMPT_KILLED",
        "CLEANUP_ATTEMPT_STARTED",
        "CLEANUP_ATTEMPT_FINISHED",
        "CLEANUP_ATTEMPT_FAILED",
        "CLEANUP_ATTEMPT_KILLED",
    }
)
_PRIMITIVE_BRANCHES = frozenset({"string", "long", "int", "boolean", "double", "float", "bytes", "array", "map"})


#: A successful attempt's ``slowness`` is its duration over the median of the job's successful attempts of its kind
#: that finished before it, once at least this many have: how much slower than its siblings it ran, which a slow
#: host shows across jobs (a rule compares hosts, not jobs).
SLOWNESS_SIBLINGS = 3
#: A successful map attempt's ``pace`` is its time per input byte (its BYTES_READ / HDFS_BYTES_READ counter) over the
#: median of the same among the job's successful maps that finished before it on other hosts, once at least this
#: many have: per byte, so that a short last split is not "fast" and a whole block not "slow"; other hosts only, so
#: that a slow host's own attempts do not set its yardstick.  Natural stragglers reach 2 on about one attempt in
#: eight, scattered over hosts; every attempt of a host that runs 2x slower does.
PACE_SIBLINGS = 3
#: Beyond this many earlier maps the yardstick is the median over all of them (the host's own share is negligible).
_PACE_EXACT = 200


class RecordError(ValueError):
    """A datum that is not a usable job-history event (the message is the dead-letter reason)."""


def unwrap(value: Any) -> Any:
    """The value of an Avro JSON union (``{"string": "x"}`` -> ``"x"``, ``{"a.b.Rec": {...}}`` -> ``{...}``)."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in _PRIMITIVE_BRANCHES or "." in key:
            return inner
    return value


def _get(rec: dict[str, Any], name: str, kind: type | tuple[type, ...], etype: str) -> Any:
    if name not in rec:
        raise RecordError(f"{etype}: missing field {name!r}")
    value = unwrap(rec[name])
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise RecordError(f"{etype}: field {name!r} has the wrong type ({type(value).__name__})")
    return value


def counter(counters: Any, name: str) -> int | None:
    """A counter's value from a JhCounters record (any group), None when absent."""
    counters = unwrap(counters)
    if not isinstance(counters, dict):
        return None
    for group in counters.get("groups") or ():
        if not isinstance(group, dict):
            continue
        for count in group.get("counts") or ():
            if isinstance(count, dict) and count.get("name") == name and isinstance(count.get("value"), int):
                return int(count["value"])
    return None


@dataclass
class _JobState:
    job_id: str = ""
    user: str = "unknown"
    queue: str = "unknown"
    name: str = ""
    submit: int | None = None
    maps: int | None = None
    reduces: int | None = None
    started: bool = False
    task_start: dict[str, int] = field(default_factory=dict)
    attempts: dict[str, tuple[int, str, bool]] = field(default_factory=dict)
    containers: dict[str, str] = field(default_factory=dict)  # attempt id -> container id
    written: int = 0  # map output materialized so far (successful map attempts)
    maps_done: int = 0
    periods: dict[str, list[float]] = field(default_factory=lambda: {"m": [], "r": []})  # successful, so far
    #: successful maps so far: (host, seconds per input byte), in finish order, and the same values sorted
    map_rates: list[tuple[str, float]] = field(default_factory=list)
    sorted_rates: list[float] = field(default_factory=list)


def _pace(job: _JobState, host: str, period: float, input_bytes: Any) -> float | None:
    """The attempt's ``pace`` (see PACE_SIBLINGS), recording its rate for the later ones; None when unknown."""
    if not isinstance(input_bytes, int) or isinstance(input_bytes, bool) or input_bytes <= 0 or period <= 0:
        return None
    rate = period / input_bytes
    if len(job.map_rates) > _PACE_EXACT:
        ref: float | None = _sorted_median(job.sorted_rates)
    else:
        others = [r for h, r in job.map_rates if h != host]
        ref = statistics.median(others) if len(others) >= PACE_SIBLINGS else None
    job.map_rates.append((host, rate))
    bisect.insort(job.sorted_rates, rate)
    return round(rate / ref, 3) if ref else None


def _sorted_median(values: list[float]) -> float:
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


class JhistEvents:
    """Turns decoded job-history datums into hcep events; shared by the JSON and binary readers."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.job = _JobState()

    def handle(self, datum: Any, location: str) -> list[E.Event]:
        """Events of one datum; RecordError when it is malformed; [] for types hcep does not use."""
        if not isinstance(datum, dict):
            raise RecordError("datum is not an object")
        etype = datum.get("type")
        if not isinstance(etype, str):
            raise RecordError("missing or non-string 'type'")
        if "event" not in datum:
            raise RecordError("missing 'event'")
        rec = unwrap(datum["event"])
        if not isinstance(rec, dict):
            raise RecordError(f"{etype}: 'event' is not a record")
        handler = _HANDLERS.get(etype)
        if handler is None:
            if etype in _IGNORED_TYPES or (etype.isupper() and etype.replace("_", "").isalpha()):
                return []
            raise RecordError(f"unknown event type {etype!r}")
        return handler(self, etype, rec, location)

    # -- job level --------------------------------------------------------------------------------------------------
    def _submitted(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        job = self.job
        job.job_id = _get(rec, "jobid", str, etype)
        job.user = _get(rec, "userName", str, etype)
        job.submit = _get(rec, "submitTime", int, etype)
        job.name = unwrap(rec.get("jobName")) or ""
        queue = unwrap(rec.get("jobQueueName"))
        if isinstance(queue, str):
            job.queue = queue
        return []

    def _queue_changed(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        self.job.queue = _get(rec, "jobQueueName", str, etype)
        return []

    def _inited(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        job = self.job
        job_id = _get(rec, "jobid", str, etype)
        launch = _get(rec, "launchTime", int, etype)
        job.maps = _get(rec, "totalMaps", int, etype)
        job.reduces = _get(rec, "totalReduces", int, etype)
        job.job_id = job.job_id or job_id
        if job.started:
            return []
        job.started = True
        return [
            E.job_start(
                launch / 1000.0,
                self.ctx.eid(loc),
                job_id,
                user=job.user,
                queue=job.queue,
                maps=job.maps,
                reduces=job.reduces,
                delta=self.ctx.delta,
                submit_ts=(job.submit or launch) / 1000.0,
            )
        ]

    def _finished(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        job = self.job
        job_id = _get(rec, "jobid", str, etype)
        finish = _get(rec, "finishTime", int, etype)
        status = "SUCCEEDED" if etype == "JOB_FINISHED" else _get(rec, "jobStatus", str, etype)
        out: list[E.Event] = []
        if not job.started:  # failed before JOB_INITED: start it at submission so the pair stays complete
            job.started = True
            start = job.submit if job.submit is not None else finish
            out.append(
                E.job_start(
                    start / 1000.0,
                    self.ctx.eid(loc, 1),
                    job_id,
                    user=job.user,
                    queue=job.queue,
                    maps=job.maps or 0,
                    reduces=job.reduces or 0,
                    delta=self.ctx.delta,
                )
            )
        out.append(
            E.job_end(
                finish / 1000.0,
                self.ctx.eid(loc),
                job_id,
                status=status,
                user=job.user,
                queue=job.queue,
                maps=job.maps,
                reduces=job.reduces,
                delta=self.ctx.delta,
            )
        )
        return out

    # -- task level -------------------------------------------------------------------------------------------------
    def _task_started(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        self.job.task_start[_get(rec, "taskid", str, etype)] = _get(rec, "startTime", int, etype)
        return []

    def _attempt_started(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        attempt_id = _get(rec, "attemptId", str, etype)
        start = _get(rec, "startTime", int, etype)
        host = _get(rec, "trackerName", str, etype)
        if E.parse_attempt(attempt_id) is None:
            raise RecordError(f"{etype}: malformed attempt id {attempt_id!r}")
        speculative = unwrap(rec.get("avataar")) == "SPECULATIVE"
        self.job.attempts[attempt_id] = (start, host, speculative)
        extra: dict[str, Any] = {"speculative": speculative}
        container = unwrap(rec.get("containerId"))
        if isinstance(container, str) and container:
            self.job.containers[attempt_id] = extra["container_id"] = container
        if etype != "REDUCE_ATTEMPT_STARTED":
            job_id, task_id = E.parse_attempt(attempt_id)[:2]  # type: ignore[index]  # checked above
            return [
                E.fact(
                    "MapStart",
                    start / 1000.0,
                    self.ctx.eid(loc),
                    delta=self.ctx.delta,
                    job_id=job_id,
                    task_id=task_id,
                    attempt_id=attempt_id,
                    host=host,
                    **extra,
                )
            ]
        return [
            E.reducer_edge(
                "ReducerStart",
                start / 1000.0,
                self.ctx.eid(loc),
                attempt_id,
                host=host,
                delta=self.ctx.delta,
                **extra,
            )
        ]

    def _attempt_done(self, etype: str, rec: dict[str, Any], loc: str) -> list[E.Event]:
        attempt_id = _get(rec, "attemptId", str, etype)
        finish = _get(rec, "finishTime", int, etype)
        host = _get(rec, "hostname", str, etype)
        if etype.endswith("_FINISHED"):
            status = _get(rec, "taskStatus", str, etype)
        else:
            status = _get(rec, "status", str, etype)
        parsed = E.parse_attempt(attempt_id)
        if parsed is None:
            raise RecordError(f"{etype}: malformed attempt id {attempt_id!r}")
        _job_id, task_id, kind, _n = parsed
        start, _host, speculative = self.job.attempts.get(attempt_id, (None, host, False))
        extra: dict[str, Any] = {"speculative": speculative}
        if attempt_id in self.job.containers:
            extra["container_id"] = self.job.containers[attempt_id]
        counters = rec.get("counters")
        extra.update(_attempt_counters(counters, kind))
        if start is None:
            start = self.job.task_start.get(task_id)
            if start is None:
                start, extra["start_known"] = finish, False
        finish_s = finish / 1000.0
        period = (finish - start) / 1000.0
        if status == "SUCCEEDED" and "start_known" not in extra:
            done = self.job.periods[kind]
            if len(done) >= SLOWNESS_SIBLINGS:
                median = statistics.median(done)
                if median > 0:
                    extra["slowness"] = round(period / median, 3)
            done.append(period)
            if kind == "m":
                pace = _pace(self.job, host, period, extra.get("input_bytes"))
                if pace is not None:
                    extra["pace"] = pace
        out = [
            E.task_attempt(
                kind,
                finish_s,
                self.ctx.eid(loc),
                attempt_id,
                host=host,
                period=period,
                status=status,
                delta=self.ctx.delta,
                **extra,
            )
        ]
        if kind == "r":
            out.append(
                E.reducer_edge(
                    "ReducerEnd",
                    finish_s,
                    self.ctx.eid(loc, 1),
                    attempt_id,
                    host=host,
                    delta=self.ctx.delta,
                    status=status,
                    **extra,
                )
            )
        elif etype == "MAP_ATTEMPT_FINISHED" and status == "SUCCEEDED" and (self.job.reduces or 0) > 0:
            size = counter(counters, "MAP_OUTPUT_MATERIALIZED_BYTES")
            if size is None:
                size = counter(counters, "MAP_OUTPUT_BYTES")
            if size is not None:
                job = self.job
                job.written += size
                job.maps_done += 1
                out.append(
                    E.data_io(
                        finish_s,
                        self.ctx.eid(loc, 2),
                        job_id=parsed[0],
                        task_id=task_id,
                        size=size,
                        delta=self.ctx.delta,
                        map_attempt=attempt_id,
                        host=host,
                        written=job.written,
                        maps_done=job.maps_done,
                        maps=job.maps or 0,
                        reduces=job.reduces or 0,
                    )
                )
        return out


#: Per-attempt counters carried on Mapper / Reducer events (attribute -> counter names, the first present wins).
_MAP_COUNTERS = (
    ("input_bytes", ("BYTES_READ", "HDFS_BYTES_READ")),
    ("input_records", ("MAP_INPUT_RECORDS",)),
    ("output_bytes", ("MAP_OUTPUT_BYTES",)),
    ("output_records", ("MAP_OUTPUT_RECORDS",)),
    ("materialized_bytes", ("MAP_OUTPUT_MATERIALIZED_BYTES",)),
)
_REDUCE_COUNTERS = (
    ("shuffle_bytes", ("REDUCE_SHUFFLE_BYTES",)),
    ("input_records", ("REDUCE_INPUT_RECORDS",)),
    ("input_groups", ("REDUCE_INPUT_GROUPS",)),
    ("shuffled_maps", ("SHUFFLED_MAPS",)),
    ("failed_shuffles", ("FAILED_SHUFFLE",)),
)


def _attempt_counters(counters: Any, kind: str) -> dict[str, int]:
    """The input (map) or shuffle (reduce) counters of one attempt: what shows data skew (absent ones left out)."""
    out: dict[str, int] = {}
    if counters is None:
        return out
    for attr, names in _MAP_COUNTERS if kind == "m" else _REDUCE_COUNTERS:
        for name in names:
            value = counter(counters, name)
            if value is not None:
                out[attr] = value
                break
    return out


_HANDLERS = {
    "JOB_SUBMITTED": JhistEvents._submitted,
    "JOB_QUEUE_CHANGED": JhistEvents._queue_changed,
    "JOB_INITED": JhistEvents._inited,
    "JOB_FINISHED": JhistEvents._finished,
    "JOB_FAILED": JhistEvents._finished,
    "JOB_KILLED": JhistEvents._finished,
    "JOB_ERROR": JhistEvents._finished,
    "TASK_STARTED": JhistEvents._task_started,
    "MAP_ATTEMPT_STARTED": JhistEvents._attempt_started,
    "REDUCE_ATTEMPT_STARTED": JhistEvents._attempt_started,
    "MAP_ATTEMPT_FINISHED": JhistEvents._attempt_done,
    "REDUCE_ATTEMPT_FINISHED": JhistEvents._attempt_done,
    "MAP_ATTEMPT_FAILED": JhistEvents._attempt_done,
    "MAP_ATTEMPT_KILLED": JhistEvents._attempt_done,
    "REDUCE_ATTEMPT_FAILED": JhistEvents._attempt_done,
    "REDUCE_ATTEMPT_KILLED": JhistEvents._attempt_done,
}


class JhistJsonParser(LineParser):
    """The Avro-Json form, line by line (so it can also follow a job's growing staging-dir history file)."""

    kind = "jhist"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.events = JhistEvents(ctx)
        self._header_seen = False
        self._schema_seen = False

    def _feed(self, line: str, lineno: int) -> list[E.Event]:
        if not self._header_seen:
            self._header_seen = True
            if line.strip() == HEADER_JSON:
                self.used()
                return []
            if line.strip() == HEADER_BINARY:
                return self.bad(lineno, "Avro-Binary history file read as text", line)
            if not line.lstrip().startswith("{"):
                return self.bad(lineno, f"expected the {HEADER_JSON} version line", line)
        if not line.strip():
            self.continued()
            return []
        try:
            datum = json.loads(line)
        except ValueError as err:
            return self.bad(lineno, f"invalid JSON: {err}", line)
        if not self._schema_seen and isinstance(datum, dict) and "fields" in datum and "event" not in datum:
            self._schema_seen = True
            self.used()
            return []
        try:
            out = self.events.handle(datum, f"line {lineno}")
        except (RecordError, E.EventRangeError) as err:
            return self.bad(lineno, str(err), line)
        if datum.get("type") in _HANDLERS:
            self.used()
        return out


def parse_jhist_binary(handle: io.BytesIO, ctx: Context) -> Iterator[E.Event]:
    """The Avro-Binary form: version line, schema line, then schemaless datums until EOF.

    Datums are not framed, so after an undecodable datum the rest of the file cannot be resynchronised: the rest is
    dead-lettered as one record (with its offset) and reading stops.
    """
    import fastavro

    stats = ctx.stats
    source = ctx.source
    header = handle.readline()
    stats.lines += 1
    if header.strip() != HEADER_BINARY.encode():
        stats.dead += 1
        ctx.deadletter.write(source, f"{source}@0", f"expected the {HEADER_BINARY} version line", header[:200])
        return
    stats.used += 1
    offset = len(header)
    schema_line = handle.readline()
    stats.lines += 1
    try:
        schema = _parsed_schema(schema_line)
    except Exception as err:  # noqa: BLE001 - any schema problem makes the datums unreadable
        stats.dead += 1
        ctx.deadletter.write(source, f"{source}@{offset}", f"unusable schema line: {err}", schema_line[:2000])
        return
    stats.used += 1
    offset += len(schema_line)
    events = JhistEvents(ctx)
    size = handle.seek(0, io.SEEK_END)
    handle.seek(offset)
    while handle.tell() < size:
        start = handle.tell()
        stats.lines += 1
        try:
            datum = fastavro.schemaless_reader(handle, schema, None)
            if handle.tell() == start:  # cannot happen with a checked schema (_parsed_schema); never loop on it
                raise ValueError("a datum of zero bytes")
        except Exception as err:  # noqa: BLE001 - EOFError (truncated) or garbage: the rest is unreadable
            stats.dead += 1
            rest = _rest(handle, start)
            ctx.deadletter.write(
                source,
                f"{source}@{start}",
                f"undecodable datum ({type(err).__name__}: {err}); {len(rest)} bytes skipped",
                rest[:4096].hex(),
            )
            break
        try:
            out = events.handle(datum, f"@{start}")
        except Exception as err:  # noqa: BLE001 - RecordError, or anything odd a decodable datum still holds
            stats.dead += 1
            known = isinstance(err, (RecordError, E.EventRangeError))
            ctx.deadletter.write(
                source,
                f"{source}@{start}",
                str(err) if known else f"parser error: {type(err).__name__}: {err}",
                json.dumps(datum, default=str)[:4096],
            )
            continue
        if isinstance(datum, dict) and datum.get("type") in _HANDLERS:
            stats.used += 1
        else:
            stats.ignored += 1
        stats.events += len(out)
        yield from out


@functools.lru_cache(maxsize=16)
def _parsed_schema(schema_line: bytes) -> Any:
    """Files of one Hadoop version share a schema line: parse it once.  A schema whose datums, or the items of one
    of its arrays, can take zero bytes is refused: the reader would loop without consuming input (a record with no
    fields, an array of nulls with a count of 2**60 -- found by fuzzing)."""
    import fastavro

    raw = json.loads(schema_line)
    parsed = fastavro.parse_schema(raw)
    names: dict[str, Any] = {}
    _collect_names(raw, names, "")
    if _zero_size(raw, names, set()):
        raise ValueError("the schema's datums can be empty (zero bytes): the file cannot be framed")
    for items in _array_items(raw):
        if _zero_size(items, names, set()):
            raise ValueError("an array of zero-byte items: a corrupt count could never end")
    return parsed


_NONZERO = frozenset({"boolean", "int", "long", "float", "double", "bytes", "string"})


def _collect_names(schema: Any, names: dict[str, Any], namespace: str) -> None:
    """Named types (records, enums, fixed) by full and short name."""
    if isinstance(schema, list):
        for s in schema:
            _collect_names(s, names, namespace)
    elif isinstance(schema, dict):
        t = schema.get("type")
        if t in ("record", "error", "enum", "fixed") and isinstance(schema.get("name"), str):
            ns: Any = schema.get("namespace") if isinstance(schema.get("namespace"), str) else namespace
            name = schema["name"]
            names[name.rsplit(".", 1)[-1]] = schema
            names[name if "." in name or not ns else f"{ns}.{name}"] = schema
            namespace = ns
        for f in schema.get("fields") or () if isinstance(schema.get("fields"), list) else ():
            if isinstance(f, dict):
                _collect_names(f.get("type"), names, namespace)
        for key in ("items", "values"):
            if key in schema:
                _collect_names(schema[key], names, namespace)
        if isinstance(t, (dict, list)):
            _collect_names(t, names, namespace)


def _zero_size(schema: Any, names: dict[str, Any], seen: set[int]) -> bool:
    """Can a datum of ``schema`` take zero bytes?  (null, fixed(0), records of such fields; a union, array, map
    or enum always reads at least one byte.)"""
    if isinstance(schema, str):
        if schema == "null":
            return True
        if schema in _NONZERO:
            return False
        named = names.get(schema) or names.get(schema.rsplit(".", 1)[-1])
        if named is None or id(named) in seen:
            return False
        return _zero_size(named, names, seen | {id(named)})
    if isinstance(schema, dict):
        t = schema.get("type")
        if t in ("record", "error"):
            fields = schema.get("fields")
            if not isinstance(fields, list):
                return True
            inner = seen | {id(schema)}
            return all(isinstance(f, dict) and _zero_size(f.get("type"), names, inner) for f in fields)
        if t == "fixed":
            return schema.get("size") == 0
        if t in ("array", "map", "enum"):
            return False
        return _zero_size(t, names, seen)
    return False  # a union (list): its branch index is at least one byte


def _array_items(schema: Any) -> Iterator[Any]:
    """The item schemas of every array in ``schema``."""
    if isinstance(schema, list):
        for s in schema:
            yield from _array_items(s)
    elif isinstance(schema, dict):
        if schema.get("type") == "array":
            yield schema.get("items")
        for f in schema.get("fields") or () if isinstance(schema.get("fields"), list) else ():
            if isinstance(f, dict):
                yield from _array_items(f.get("type"))
        for key in ("items", "values", "type"):
            if isinstance(schema.get(key), (dict, list)):
                yield from _array_items(schema[key])


def _rest(handle: io.BytesIO, start: int) -> bytes:
    handle.seek(start)
    return handle.read()


def sniff_header(path: str) -> str | None:
    """``Avro-Json``, ``Avro-Binary`` or None, from a file's first line."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(64).strip()
    except OSError:
        return None
    for header in (HEADER_JSON, HEADER_BINARY):
        if first == header.encode():
            return header
    return None


def parse_jhist(path: str, ctx: Context | None = None) -> Iterator[E.Event]:
    """Events of one ``.jhist`` file, either encoding."""
    ctx = ctx or Context(source=path)
    if sniff_header(path) == HEADER_BINARY:
        # In memory: a corrupt length prefix then cannot make the reader allocate gigabytes (BytesIO.read is capped).
        with open(path, "rb") as handle:
            data = io.BytesIO(handle.read())
        yield from parse_jhist_binary(data, ctx)
        return
    yield from run_lines(JhistJsonParser(ctx), read_lines(path))
