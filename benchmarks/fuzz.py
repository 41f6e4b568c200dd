"""The fuzzing campaign (issue 18): every parser and entry point that takes outside input, coverage-guided.

    python -m benchmarks.fuzz TARGET [--runs N] [--seed S] [--timeout S] [--out DIR]   # atheris (libFuzzer)
    python -m benchmarks.fuzz TARGET --mutate [--runs N] [--seed S]                     # no atheris: random mutation
    python -m benchmarks.fuzz --list

Each target is a function ``check(data: bytes)`` that feeds one input to the real entry point and asserts the pass
criteria: no exception but the entry point's documented error types, every rejected input counted and reported (a
dead letter or an error message) with a reason naming where it is (file:line, offset, node), and no hang -- the
harness arms a per-input alarm (``--timeout``, 2 s by default) and a run over it is a finding.  Seeds are the
project's real samples (``tests/collectors/samples``, ``tests/collectors/ganglia/data``, ``queries/``, generated RRD
and Parquet files); atheris mutates them under coverage guidance of the project's own modules.

A finding does not stop the campaign: it is recorded once per signature (exception type and the innermost project
frame, or the failed assertion), with the first input that produced it, under ``--out`` (default
``.run/fuzz/TARGET``), and the summary line at the end counts inputs and distinct findings.
``tests/benchmarks/test_fuzz_targets.py`` runs every target for a few seconds with the seeded mutator (``--mutate``)
as part of the test suite; the campaign figures are in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "collectors" / "samples"
GANGLIA = ROOT / "tests" / "collectors" / "ganglia" / "data"
QUERIES = ROOT / "queries"


class Hang(Exception):
    """An input ran longer than the per-input time bound."""


# ------------------------------------------------------------------------------------------------ the targets


@dataclass
class Target:
    name: str
    what: str
    seeds: Callable[[], list[bytes]]
    check: Callable[[bytes], None]
    max_len: int = 4096
    setup: Callable[[], None] | None = None
    native: bool = False  # C code reads the input (librrd, Arrow): a crash there kills the process
    ready: bool = field(default=False)

    def prepare(self) -> None:
        if not self.ready:
            if self.setup is not None:
                self.setup()
            self.ready = True


def _lines(path: Path, n: int, step: int = 1) -> list[bytes]:
    """Chunks of ``n`` consecutive lines of a sample, as separate seeds."""
    lines = path.read_bytes().splitlines(keepends=True)
    return [b"".join(lines[i : i + n]) for i in range(0, len(lines), max(1, n * step))]


# -- event JSON: a file line (hcep match, hcep batch) ------------------------------------------------------------------

_EVENT_QUERIES: list = []

EVENT_QUERY_TEXTS = [
    (
        "skip_till_any_match",
        "all",
        "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v >= b[i-1].v AND c.v * 2 > avg(b[].v) + a.v / 3 - 1e308 "
        "WITHIN 1 hour RETURN a.v * b.len AS x, sum(b[].v) AS s, max(b[].v) - min(b[].v) AS r",
    ),
    (
        "skip_till_next_match",
        "all",
        "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND b[i].v > avg(b[..i-1].v) % 7 WITHIN 10 minutes "
        "RETURN a.k AS k, c.v / a.v AS q",
    ),
    (
        "skip_till_any_match",
        "all",
        "PATTERN SEQ(A a, ~D d, C c) WHERE d.v > a.v AND a.v - c.v < 10 * a.v WITHIN 1 minute RETURN a.v AS v",
    ),
    (
        "skip_till_any_match",
        "all",
        "PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 1 hour RETURN count(*)",
    ),
    ("strict_contiguity", "all", "PATTERN SEQ(A a, B b) WHERE a.v = b.v RETURN a.v + b.v AS s"),
]


def _event_setup() -> None:
    from engine import compile_query
    from engine.language.packs import load_pack
    from engine.plan.compiler import compile_spec

    for name in ("hadoop.yaml", "trends.yaml"):  # the packs as shipped, GRETA's trend queries included
        pack = load_pack(QUERIES / name)
        _EVENT_QUERIES.extend(compile_spec(q, 0.1) for q in pack.queries if q.enabled)
    for strategy, output, text in EVENT_QUERY_TEXTS:
        with contextlib.suppress(ValueError):  # a query GRETA rejects is fine: the rest still runs
            _EVENT_QUERIES.append(
                compile_query(text, name=f"f{len(_EVENT_QUERIES)}", strategy=strategy, output=output, tick=0.1)
            )


def _event_seeds() -> list[bytes]:
    synthetic = [
        b'{"type": "A", "ts": 1, "k": 1, "v": 2}\n{"type": "B", "ts": 2, "k": 1, "v": 3, "delta": 0.5}\n'
        b'{"type": "B", "ts": 3, "k": 1, "v": 4}\n{"type": "D", "ts": 3.5, "v": 9}\n{"type": "C", "ts": 4, "k": 1, '
        b'"v": 10, "lo": 3.9, "hi": 4.2}\n',
        b'{"type": "A", "ts": 1e11, "id": "x", "v": 1e308}\n{"type": "B", "ts": -5, "v": [1, 2], "k": {"a": 1}}\n',
    ]
    metrics = b"".join(
        b'{"type": "Metric", "ts": %d, "delta": 7.5, "host": "h%d", "metric": "load_one", "val": %s, "cluster": "c"}\n'
        % (15 * i, i % 3, v)
        for i, v in enumerate([b"0.5", b"2.5", b"1e308", b"-3", b"7"])
    )
    return [
        *synthetic,
        metrics,
        *_lines(QUERIES / "samples" / "hadoop_sample.jsonl", 12, 3),
        *_lines(ROOT / "tests" / "data" / "hadoop_handcheck.jsonl", 15),
    ]


def check_event_file(data: bytes) -> None:
    """``hcep match``'s reader reports the first bad line as ``FILE:LINE: reason`` (``--max-delta`` included), the
    line it names is the first one that fails on its own; then the Hadoop and trends packs and a few
    predicate-heavy queries run over the lines that are events (as ``hcep run`` keeps them), their records written
    as ``hcep match`` writes them."""
    from app.commands import CommandError
    from app.matching.read import decode_line
    from app.matching.read import parse_blocks as _parse_blocks
    from app.matching.read import parse_lines as _parse_lines
    from engine import EventError, event_from_json
    from engine.evaluate import StreamedMatch
    from engine.events import EventDecoder, max_width_ticks
    from engine.runtime.limits import Limits

    widest = max_width_ticks(7.5, 0.1)
    events = []
    first_bad = None
    for lineno, raw in enumerate(io.BytesIO(data), 1):
        try:
            obj = decode_line(raw, lineno == 1)
            if obj is None:
                continue
            ev = event_from_json(obj, seq=len(events), tick=0.1)
        except (ValueError, EventError):  # EventError is a ValueError; decode_line raises ValueError
            first_bad = first_bad or lineno
            continue
        if ev.thi - ev.tlo > widest:
            first_bad = first_bad or lineno
            continue
        events.append(ev)
    try:
        read = _parse_lines(io.BytesIO(data), "fuzz.jsonl", EventDecoder(0.1, 7.5))
        assert first_bad is None, f"line {first_bad} is bad on its own but the file was accepted"
    except CommandError as err:
        m = re.match(r"fuzz\.jsonl:(\d+): \S", str(err))
        assert m and int(m[1]) == first_bad, f"the error names line {m and m[1]}, the first bad one is {first_bad}"
        assert "\n" not in str(err), "a one-line reason"
        read = str(err)
    # hcep match's block reader (orjson, only some types built): the same events, or the same message.
    size = 1 + zlib.crc32(data) % 64
    try:
        blocked: Any = _parse_blocks(io.BytesIO(data), "fuzz.jsonl", EventDecoder(0.1, 7.5), None, size)
    except CommandError as err:
        blocked = str(err)
    if isinstance(read, str) or isinstance(blocked, str):
        assert blocked == read, f"block reader: {blocked!r}, line reader: {read!r}"
    else:
        assert [_event_state(e) for e in blocked] == [_event_state(e) for e in read], "block reader differs"
    # Two of the queries per input, chosen by the input's checksum (the fuzzer can aim at each; all of them per
    # input made an instrumented run ten times slower), and small bounds to keep each input fast (the fuzzer favours
    # inputs with many overlapping Kleene events, whose signatures are exponential by design; the bounds themselves
    # are tested in tests/engine/test_limits.py).
    pick = zlib.crc32(data) % len(_EVENT_QUERIES)
    chosen = [_EVENT_QUERIES[pick], _EVENT_QUERIES[(pick + 7) % len(_EVENT_QUERIES)]]
    for record in StreamedMatch(chosen, events, Limits(runs_per_key=50, runs=200)):
        json.dumps(record)


def _event_state(ev: Any) -> tuple[Any, ...]:
    """Everything an event carries, NaN-safe (repr)."""
    return (ev.type, ev.ts, ev.id, ev.lo, ev.hi, ev.seq, ev.tlo, ev.thi, ev.t, repr(ev.attrs))


# -- event JSON: a Kafka message value (hcep run) ----------------------------------------------------------------------

_SERVICE: list = []


def _kafka_setup() -> None:
    from app.stream import Service, ServiceConfig
    from app.stream.memory import MemoryBroker, MemorySource
    from engine.language.packs import load_pack

    tmp = tempfile.mkdtemp(prefix="hcep-fuzz-kafka-")
    pack = load_pack(QUERIES / "hadoop.yaml")
    cfg = ServiceConfig(
        pack=str(QUERIES / "hadoop.yaml"),
        bootstrap="unused:9092",
        data_dir=tmp,
        metrics_port=None,
        shared_topics=["t"],
        broadcast_topics=[],
        matches_topic=None,
        shedding=False,
    )
    broker = MemoryBroker()
    broker.create("t", 1)
    svc = Service(cfg, pack, source=MemorySource(broker, ["t"]))
    svc.start()
    while not svc.epoch.active:
        svc.step()
    _SERVICE.append(svc)
    _SERVICE.append(0)


def _kafka_epoch() -> None:
    """A new epoch over the same (empty) partition: a fresh engine and watermark."""
    svc = _SERVICE[0]
    svc._begin_epoch({("t", 0)})


def check_kafka_value(data: bytes) -> None:
    """``hcep run``'s ingest of one message (packed JSON lines): every non-blank line is counted, each rejected one
    is dead-lettered once with its offset and index and a reason; nothing raises."""
    from types import SimpleNamespace

    svc = _SERVICE[0]
    _SERVICE[1] += 1
    if _SERVICE[1] % 2000 == 0:  # the watermark buffers what it accepts: start a new epoch now and then
        _kafka_epoch()
    outputs = svc.outputs
    offset = svc.epoch.position[("t", 0)]
    dead0 = len(outputs.dead)
    total0 = svc.metrics.total("hcep_deadletter_total")
    events0 = svc.metrics.total("hcep_events_total")
    svc._ingest([SimpleNamespace(topic="t", partition=0, offset=offset, value=data, timestamp=0)])
    lines = data.split(b"\n") if b"\n" in data else [data]
    nonblank = sum(1 for line in lines if line and not line.isspace())
    dead = outputs.dead[dead0:]
    assert svc.metrics.total("hcep_events_total") - events0 == nonblank
    assert svc.metrics.total("hcep_deadletter_total") - total0 == len(dead)
    assert len({(d.offset, d.idx) for d in dead}) == len(dead), "one dead letter per line"
    for d in dead:
        assert d.topic == "t" and d.offset == offset and 0 <= d.idx < len(lines) and d.reason, d
    if len(outputs.dead) > 10_000:
        outputs.clear()


# -- query text ---------------------------------------------------------------------------------------------------

_QUERY_EVENTS: list = []


def _query_setup() -> None:
    from engine import Event

    rng = random.Random(3)
    types = ["A", "B", "C", "D", "JobStart", "Mapper", "JobEnd", "LoadStd", "ReducerStart", "ReducerEnd", "DataPull"]
    for i in range(40):
        t = rng.choice(types)
        attrs = {
            "v": rng.choice([0, 1, 2.5, -3, "x", None, 1e308, 10**30]),
            "k": rng.randint(1, 2),
            "job_id": "j1",
            "task_id": rng.choice(["t1", "t2"]),
            "period": rng.uniform(0, 9),
            "val": rng.random(),
        }
        _QUERY_EVENTS.append(Event(t, i * 0.7, attrs, id=f"e{i}", seq=i, lo=i * 0.7 - 0.5, hi=i * 0.7 + 0.5))


def _query_seeds() -> list[bytes]:
    import yaml

    out = []
    for name in ("hadoop.yaml", "trends.yaml"):
        for q in yaml.safe_load((QUERIES / name).read_text())["queries"]:
            out.append(q["query"].encode())
    out += [text.encode() for _, _, text in EVENT_QUERY_TEXTS]
    out += [b"PATTERN SEQ(A a, !(B b), C c) WHERE a.x \xe2\x89\xa5 c.x \xe2\x88\xa7 b.y \xe2\x89\xa0 'q' WITHIN 5 s"]
    return out


def check_query(data: bytes) -> None:
    """``parse_query`` raises only QueryError naming the query (with line and column when the text is at fault);
    a parsed query compiles under every strategy and output mode or raises ValueError, and runs."""
    from engine import compile_query
    from engine.evaluate import StreamedMatch
    from engine.language.ast import QueryError
    from engine.language.parser import parse_query
    from engine.runtime.limits import Limits

    text = data.decode("utf-8", "replace")
    try:
        query = parse_query(text, "fz")
    except QueryError as err:
        assert str(err).startswith("query fz") and err.line >= 1, str(err)  # the query, the line and the column
        return
    for strategy in ("skip_till_any_match", "skip_till_next_match", "strict_contiguity"):
        for output in ("all", "distinct", "collapsed"):
            try:
                cq = compile_query(query, name="fz", strategy=strategy, output=output, tick=0.1)
            except ValueError as err:
                assert str(err), "a reason"
                continue
            for record in StreamedMatch([cq], _QUERY_EVENTS, Limits(runs_per_key=50, runs=200)):
                json.dumps(record)


# -- pack YAML ----------------------------------------------------------------------------------------------------


def _pack_seeds() -> list[bytes]:
    return [
        (QUERIES / "hadoop.yaml").read_bytes(),
        (QUERIES / "trends.yaml").read_bytes(),
        b"pack: t\ntick: 0.5\nsettings: {limits: {runs: 10}, max_delta: 3, shedding: {enabled: true, "
        b"latency_bound_ms: 100}}\nqueries:\n  - name: q\n    query: PATTERN SEQ(A a, B b) WITHIN 1 s\n"
        b"    alert: {severity: info, webhook: ops}\n",
    ]


def check_pack(data: bytes) -> None:
    """``parse_pack`` raises only PackError naming the file; a pack it accepts compiles, and its settings
    (shedding, limits, max_delta) are accepted or rejected with an error naming the pack."""
    from app.commands import CommandError
    from app.matching.packs import max_delta_of
    from engine.language.packs import PackError, parse_pack
    from engine.plan.compiler import compile_spec
    from engine.runtime.limits import LimitsError, from_settings
    from engine.shedding import from_pack

    text = data.decode("utf-8", "replace")
    try:
        pack = parse_pack(text, "fuzz.yaml")
    except PackError as err:
        assert str(err).startswith("fuzz.yaml: "), str(err)
        assert err.line >= 1 or not err.reason.startswith("invalid YAML"), str(err)  # where in the file
        return
    for spec in pack.queries:
        try:
            compile_spec(spec, pack.tick)
        except ValueError as err:
            assert str(err)
    with contextlib.suppress(PackError):
        from_pack(pack)
    with contextlib.suppress(LimitsError):
        from_settings(pack.settings)
    with contextlib.suppress(CommandError):
        max_delta_of(argparse.Namespace(max_delta=None, pack="fuzz.yaml"), pack)


# -- gmond / gmetad XML -------------------------------------------------------------------------------------------


def _xml_seeds() -> list[bytes]:
    return [p.read_bytes()[:4096] for p in sorted(GANGLIA.glob("*.xml"))] + [
        p.read_bytes() for p in sorted(GANGLIA.glob("*.xml"))
    ]


def check_xml(data: bytes) -> None:
    """The Ganglia XML parser never raises; a rejected document is counted and dead-lettered with its origin and
    a reason; an accepted one derives to valid JSON events.  A reason ``unexpected ...`` is the parser's catch-all
    firing: a bug, so a finding too."""
    from collectors.ganglia.derive import round_events, rounds_from_document
    from collectors.ganglia.xml import XmlParser

    parser = XmlParser()
    doc = parser.parse(data, "fuzz.xml")
    assert parser.stats.documents == 1
    if doc is None:
        assert parser.stats.bad == 1 and parser.deadletter.count == 1
        record = parser.deadletter.records[-1]
        assert record["location"] == "fuzz.xml" and record["reason"]
        assert not record["reason"].startswith("unexpected"), record["reason"]
        return
    for rnd in rounds_from_document(doc, up_only=False):
        for ev in round_events(rnd):
            json.dumps(ev, allow_nan=False)
            _engine_accepts(ev)


# -- gmetad RRD files ---------------------------------------------------------------------------------------------

_RRD_DIR: list[Path] = []
RRD_T0 = 1_700_000_100


def _rrd_setup() -> None:
    root = Path(tempfile.mkdtemp(prefix="hcep-fuzz-rrd-"))
    (root / "c" / "h").mkdir(parents=True)
    _RRD_DIR.append(root)


def _rrd_seeds() -> list[bytes]:
    import rrdtool

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (rows, steps) in enumerate([(12, 1), (30, 2), (8, 1)]):
            path = os.path.join(tmp, f"s{i}.rrd")
            rrdtool.create(
                path,
                "--start",
                str(RRD_T0 - 15),
                "--step",
                "15",
                "DS:sum:GAUGE:120:U:U",
                f"RRA:AVERAGE:0.5:1:{rows}",
                f"RRA:AVERAGE:0.5:{steps}:{rows}",
            )
            for k in range(rows):
                rrdtool.update(path, f"{RRD_T0 + 15 * k}:{0.25 * k if k % 5 else 'U'}")
            out.append(Path(path).read_bytes())
    return out


def check_rrd(data: bytes) -> None:
    """``read_history`` over a directory holding the fuzzed file: rows or a dead letter naming the file, never an
    exception; rows carry finite times and numbers."""
    from collectors.ganglia.rrd import read_history
    from collectors.hadoop.deadletter import DeadLetterSink

    path = _RRD_DIR[0] / "c" / "h" / "load_one.rrd"
    path.write_bytes(data)
    sink = DeadLetterSink.memory()
    rows = read_history(_RRD_DIR[0], RRD_T0 - 1000, RRD_T0 + 10_000, deadletter=sink)
    if sink.count:
        assert sink.count == 1 and sink.records[0]["location"] == str(path) and sink.records[0]["reason"]
        assert rows == []
    for ts, cluster, host, metric, value in rows:
        assert (cluster, host, metric) == ("c", "h", "load_one")
        assert isinstance(ts, float) and math.isfinite(ts) and isinstance(value, float)


# -- Hadoop job history, MRAppMaster and task logs ---------------------------------------------------------------


def _line_seeds(name: str) -> Callable[[], list[bytes]]:
    def seeds() -> list[bytes]:
        path = next(SAMPLES.glob("*.jhist")) if name == "jhist" else SAMPLES / name
        chunks = _lines(path, 25)
        return [chunks[0], *chunks[1:], path.read_bytes()[:4096]]

    return seeds


def _jhist_seeds() -> list[bytes]:
    from benchmarks.jhist_binary import json_jhist_to_binary

    text = next(SAMPLES.glob("*.jhist")).read_text()
    head = text.split("\n")[:2]
    body = text.split("\n")[2:]
    out = [("\n".join(head + body[i : i + 10]) + "\n").encode() for i in range(0, len(body), 10)]
    out.append(json_jhist_to_binary(text))
    out.append(json_jhist_to_binary("\n".join(head + body[:20]) + "\n"))
    return out


def _check_lines(parser_name: str, data: bytes) -> None:
    from collectors.hadoop.amlog import AmLogParser
    from collectors.hadoop.common import Context, run_lines
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.hadoop.jhist import JhistJsonParser
    from collectors.hadoop.tasklog import ReduceLogParser

    cls = {"jhist": JhistJsonParser, "amlog": AmLogParser, "tasklog": ReduceLogParser}[parser_name]
    # As read_lines reads a file: undecodable bytes become U+FFFD, lines split on \n only.
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ctx = Context(source="fuzz", deadletter=DeadLetterSink.memory())
    events = list(run_lines(cls(ctx), lines))
    s = ctx.stats
    assert s.lines == len(lines) and s.used + s.ignored + s.continuation + s.dead == s.lines
    assert ctx.deadletter.count == s.dead == len(ctx.deadletter.records)
    for record in ctx.deadletter.records:
        lineno = int(record["location"].rsplit(":", 1)[1])
        assert record["location"].startswith("fuzz:") and 1 <= lineno <= len(lines) and record["reason"]
        assert not record["reason"].startswith("parser error:"), record["reason"]  # the catch-all: a bug
    for ev in events:
        assert isinstance(ev["type"], str) and isinstance(ev["ts"], float) and math.isfinite(ev["ts"])
        json.dumps(ev, allow_nan=False)
        _engine_accepts(ev)


def _engine_accepts(ev: dict) -> None:
    """A collector publishes only events ``hcep run`` accepts: one it would dead-letter as invalid is a bug of the
    collector (it should have been dead-lettered there, naming the line)."""
    from engine import EventError, event_from_json

    try:
        event_from_json(ev, 0)
    except EventError as err:
        raise AssertionError(f"a collector event the engine rejects: {err}") from None


def check_jhist(data: bytes) -> None:
    """Job history: Avro-Binary (an undecodable datum dead-letters the rest with its offset) or Avro-Json lines
    (every line accounted for once, dead letters name ``file:line``); no catch-all firing, events valid JSON."""
    from collectors.hadoop.common import Context
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.hadoop.jhist import HEADER_BINARY, parse_jhist_binary

    if not data.startswith(HEADER_BINARY.encode()):
        _check_lines("jhist", data)
        return
    ctx = Context(source="bin", deadletter=DeadLetterSink.memory())
    events = list(parse_jhist_binary(io.BytesIO(data), ctx))
    s = ctx.stats
    assert s.used + s.ignored + s.dead == s.lines and ctx.deadletter.count == s.dead
    for record in ctx.deadletter.records:
        assert re.fullmatch(r"bin@\d+", record["location"]) and record["reason"], record
        assert not record["reason"].startswith("parser error:"), record["reason"]
    for ev in events:
        json.dumps(ev, allow_nan=False)
        _engine_accepts(ev)


# -- webhook responses ------------------------------------------------------------------------------------------

_WEBHOOK: dict = {}


def _webhook_setup() -> None:
    """A local server that answers each request with the bytes the harness put in ``_WEBHOOK['reply']``."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    _WEBHOOK["port"] = srv.getsockname()[1]
    _WEBHOOK["reply"] = b""

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            with conn:
                conn.settimeout(2.0)
                buf = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                    head, _, body = buf.partition(b"\r\n\r\n")
                    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                    need = int(m[1]) if m else 0
                    while len(body) < need:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        body += chunk
                    conn.sendall(_WEBHOOK["reply"])
                    conn.shutdown(socket.SHUT_WR)

    threading.Thread(target=serve, daemon=True).start()


def _webhook_seeds() -> list[bytes]:
    return [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 500 Internal Server Error\r\n\r\n",
        b"HTTP/1.0 204 No Content\r\nConnection: close\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
        b"garbage\r\n\r\n",
        b"",
    ]


def check_webhook(data: bytes) -> None:
    """``post`` returns on a 2xx answer and otherwise raises only what ``AlertSender`` handles: an OSError (its
    DeliveryError) or ValueError (then the alert is retried with back-off), whatever bytes the receiver sends back."""
    from app.alerts.webhook import Webhook, post
    from contracts.alerts import Alert

    _WEBHOOK["reply"] = data
    alert = Alert({"alertname": "Q1", "severity": "info", "job_id": "j1"}, {"summary": "s"}, 1.7e9).to_webhook()
    with contextlib.suppress(OSError, ValueError):
        post(Webhook("ops", f"http://127.0.0.1:{_WEBHOOK['port']}/hook"), [alert], timeout=1.5)


# -- Alertmanager API answers --------------------------------------------------------------------------------------


def _alertmanager_setup() -> None:
    """The webhook target's answering server; the sender's back-off warnings are not findings: silenced."""
    import logging

    _webhook_setup()
    logging.getLogger("app.alerts.alertmanager").setLevel(logging.CRITICAL)


_AM_CALLS = ("ready", "status", "alerts", "groups", "silences", "create_silence", "expire_silence", "sender")


def _alertmanager_seeds() -> list[bytes]:
    def ok(body: bytes, status: bytes = b"200 OK") -> bytes:
        head = b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (status, len(body))
        return head + body

    alert = (
        b'{"labels": {"alertname": "Q1", "job_id": "j1"}, "annotations": {"summary": "s"}, "startsAt": '
        b'"2023-11-14T22:13:20Z", "endsAt": "2023-11-14T23:13:20Z", "fingerprint": "abc", "receivers": [{"name": '
        b'"ops"}], "status": {"state": "active", "silencedBy": [], "inhibitedBy": []}, "updatedAt": '
        b'"2023-11-14T22:13:21Z", "generatorURL": ""}'
    )
    return [
        ok(b"OK"),
        ok(
            b'{"cluster": {"name": "x", "peers": [], "status": "ready"}, "config": {"original": "route: {}"}, '
            b'"uptime": "2023-11-14T22:13:20Z", "versionInfo": {"version": "0.27.0"}}'
        ),
        ok(b"[" + alert + b"]"),
        ok(b'[{"labels": {"job_id": "j1"}, "receiver": {"name": "ops"}, "alerts": [' + alert + b"]}]"),
        ok(
            b'[{"id": "s1", "matchers": [{"name": "job_id", "value": "j1", "isRegex": false, "isEqual": true}], '
            b'"startsAt": "2023-11-14T22:13:20Z", "endsAt": "2023-11-14T23:13:20Z", "createdBy": "hcep", '
            b'"comment": "c", "status": {"state": "active"}, "updatedAt": "2023-11-14T22:13:20Z"}]'
        ),
        ok(b'{"silenceID": "7a7b1e4c-0f0e-4b7e-9a57-4e5f3c2d1b0a"}'),
        ok(b"", b"200 OK"),
        ok(b'{"code": 400, "message": "start time must be before end time"}', b"400 Bad Request"),
        ok(b"[]", b"503 Service Unavailable"),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n[]{}",
        b"HTTP/1.1 302 Found\r\nLocation: /api/v2/alerts\r\nContent-Length: 0\r\n\r\n",
        b"",
    ]


def check_alertmanager(data: bytes) -> None:
    """The Alertmanager client (``app.alerts.alertmanager``) over whatever the server answers: one API call per
    input (chosen by checksum) raises only AlertmanagerError, with the method and the URL in its message, and
    returns the documented shape; ``ready`` never raises; the sender's round (``post_alerts`` with retry and
    back-off) never raises and counts the alert as delivered, failed or rejected."""
    from app.alerts.alertmanager import Alertmanager, AlertmanagerError, AlertmanagerSender
    from contracts.alerts import Alert

    _WEBHOOK["reply"] = data
    url = f"http://127.0.0.1:{_WEBHOOK['port']}"
    client = Alertmanager(url, timeout=1.5, connect_timeout=1.0)
    call = _AM_CALLS[zlib.crc32(data) % len(_AM_CALLS)]
    try:
        if call == "ready":
            assert isinstance(client.ready(), bool)
        elif call == "sender":
            results: list[str] = []
            sender = AlertmanagerSender(client, on_result=lambda status, n: results.append(status))
            sender.submit([Alert({"alertname": "Q1", "job_id": "j1"}, {"summary": "s"}, 1.7e9)])
            wait = sender._round()
            assert len(results) == 1 and results[0] in ("delivered", "failed", "rejected"), results
            assert math.isfinite(wait) and wait >= 0, wait
        else:
            try:
                if call == "status":
                    assert isinstance(client.status(), dict)
                elif call in ("alerts", "groups", "silences"):
                    answer = getattr(client, call)(filter={"job_id": "j1"})
                    assert isinstance(answer, list)
                elif call == "create_silence":
                    assert isinstance(client.create_silence({"job_id": "j1"}), str)
                else:
                    client.expire_silence("s1")
            except AlertmanagerError as err:
                text = str(err)
                assert url in text and text.split(" ", 1)[0] in ("GET", "POST", "DELETE"), text
                assert "\n" not in text, text
    finally:
        client.close()


# -- archive Parquet ----------------------------------------------------------------------------------------------

_ARCHIVE: list[Path] = []


def _archive_setup() -> None:
    _ARCHIVE.append(Path(tempfile.mkdtemp(prefix="hcep-fuzz-archive-")))


def _archive_seeds() -> list[bytes]:
    from app.spark.archive import ArchiveWriter

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (3, 12):
            root = Path(tmp) / f"a{n}"
            with ArchiveWriter(root) as w:
                for line in (QUERIES / "samples" / "hadoop_sample.jsonl").read_text().splitlines()[:n]:
                    obj = json.loads(line)
                    obj["ts"] = 1.7e9  # one date partition
                    obj["type"] = "JobStart"  # one type partition: one file
                    w.add_event(obj)
            out.extend(p.read_bytes() for p in sorted(root.rglob("*.parquet")))
    return out


def check_archive(data: bytes) -> None:
    """The archive readers: ``read_table`` over a directory holding the fuzzed file returns a table or raises
    ArchiveError naming the file; every row comes back as an event (``event_from_row`` and the engine) or an
    ArchiveError naming the row's event."""
    from app.spark.archive import ArchiveError, event_from_row, read_table
    from engine import EventError, event_from_json

    root = _ARCHIVE[0]
    part = root / "events" / "date=2023-11-14" / "type=JobStart"
    part.mkdir(parents=True, exist_ok=True)
    path = part / "part-x-0.parquet"
    path.write_bytes(data)
    try:
        table = read_table(root)
    except ArchiveError as err:
        assert str(path) in str(err) or str(root) in str(err), str(err)
        return
    for i, row in enumerate(table.to_pylist()):
        try:
            obj = event_from_row(row)
        except ArchiveError as err:
            assert "event" in str(err), str(err)
            continue
        with contextlib.suppress(EventError):
            event_from_json(obj, seq=i)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target(
            "event-file",
            "event JSON lines through hcep match's reader and the engine",
            _event_seeds,
            check_event_file,
            setup=_event_setup,
        ),
        Target(
            "event-kafka",
            "event JSON lines in a Kafka message through hcep run's ingest",
            _event_seeds,
            check_kafka_value,
            setup=_kafka_setup,
        ),
        Target("query", "query text: parse, check, compile, run", _query_seeds, check_query, setup=_query_setup),
        Target("pack", "pack YAML: parse, compile, settings", _pack_seeds, check_pack, max_len=8192),
        Target("gmond-xml", "gmond/gmetad XML documents", _xml_seeds, check_xml, max_len=16384),
        Target(
            "rrd",
            "gmetad RRD files through read_history",
            _rrd_seeds,
            check_rrd,
            max_len=8192,
            setup=_rrd_setup,
            native=True,
        ),
        Target("jhist", "job history files, Avro-Json lines and Avro-Binary", _jhist_seeds, check_jhist, max_len=8192),
        Target("amlog", "MRAppMaster syslog lines", _line_seeds("am_syslog"), lambda d: _check_lines("amlog", d)),
        Target(
            "tasklog", "reduce task syslog lines", _line_seeds("reduce_syslog"), lambda d: _check_lines("tasklog", d)
        ),
        Target(
            "webhook",
            "webhook responses to app.alerts.webhook.post",
            _webhook_seeds,
            check_webhook,
            max_len=2048,
            setup=_webhook_setup,
        ),
        Target(
            "alertmanager",
            "Alertmanager API answers to app.alerts.alertmanager's client and sender",
            _alertmanager_seeds,
            check_alertmanager,
            max_len=2048,
            setup=_alertmanager_setup,
        ),
        Target(
            "archive",
            "archive Parquet files through read_table and event_from_row",
            _archive_seeds,
            check_archive,
            max_len=16384,
            setup=_archive_setup,
            native=True,
        ),
    ]
}


# ------------------------------------------------------------------------------------------------ the harness


@dataclass
class Campaign:
    """Runs one target's check under a time bound and records findings by signature."""

    target: Target
    timeout: float = 2.0
    out: Path | None = None
    inputs: int = 0
    findings: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.target.prepare()
        signal.signal(signal.SIGALRM, self._alarm)

    @staticmethod
    def _alarm(_signum: int, _frame: object) -> None:
        raise Hang("per-input time bound exceeded")

    def one(self, data: bytes) -> str | None:
        """Run one input; the finding's signature, or None."""
        self.inputs += 1
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            self.target.check(data)
        except Exception as err:  # noqa: BLE001 - every escape is a finding
            signal.setitimer(signal.ITIMER_REAL, 0)
            return self._record(err, data)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return None

    def _record(self, err: BaseException, data: bytes) -> str:
        frames = traceback.extract_tb(err.__traceback__)
        ours = [f for f in frames if str(ROOT) in f.filename and "/benchmarks/fuzz.py" not in f.filename]
        where = ours[-1] if ours else (frames[-1] if frames else None)
        loc = f"{os.path.relpath(where.filename, ROOT)}:{where.lineno}" if where else "?"
        kind = "hang" if isinstance(err, Hang) else type(err).__name__
        if kind == "hang":  # where the alarm happened to strike says little: one signature per target
            loc = self.target.name
        detail = str(err).splitlines()[0][:160] if str(err) else ""
        if isinstance(err, AssertionError):  # the invariant that failed, without the varying text
            detail = ":".join(re.sub(r"\d+", "N", detail).split(":")[:2])[:80]
        sig = f"{kind} at {loc}" + (f": {detail}" if isinstance(err, AssertionError) else "")
        if sig not in self.findings:
            self.findings[sig] = (f"{kind}: {detail}\n" + "".join(traceback.format_exception(err)), data)
            print(f"fuzz {self.target.name}: NEW FINDING {sig} ({detail})", file=sys.stderr, flush=True)
            if self.out is not None:
                self.out.mkdir(parents=True, exist_ok=True)
                n = len(self.findings)
                (self.out / f"finding-{n:03d}.bin").write_bytes(data)
                (self.out / f"finding-{n:03d}.txt").write_text(sig + "\n\n" + self.findings[sig][0])
        return sig

    def summary(self) -> str:
        secs = time.monotonic() - self.started
        return (
            f"fuzz {self.target.name}: {self.inputs:,} inputs in {secs:.0f} s ({self.inputs / max(secs, 1e-9):,.0f}"
            f"/s), {len(self.findings)} distinct finding(s)"
        )


def mutate(rng: random.Random, data: bytes, pool: list[bytes], max_len: int) -> bytes:
    """A few byte-level edits: flips, deletions, insertions of interesting tokens, splices with another seed."""
    buf = bytearray(data)
    tokens = [
        b"\x00",
        b"\xff",
        b"\n",
        b'"',
        b"{",
        b"}",
        b"[",
        b"]",
        b"<",
        b">",
        b"&",
        b":",
        b",",
        b"-1",
        b"1e308",
        b"NaN",
        b"Infinity",
        b"9" * 30,
        b"null",
        b"true",
        b"\\u0000",
        b"\r\n",
        b"%",
        b"'",
        b"(",
        b")",
        b"*",
    ]
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(6)
        pos = rng.randint(0, len(buf))
        if kind == 0 and buf:
            buf[min(pos, len(buf) - 1)] = rng.randrange(256)
        elif kind == 1 and buf:
            del buf[pos : pos + rng.randint(1, 16)]
        elif kind == 2:
            buf[pos:pos] = rng.choice(tokens)
        elif kind == 3:
            other = rng.choice(pool)
            a = rng.randint(0, len(other))
            buf[pos:pos] = other[a : a + rng.randint(1, 64)]
        elif kind == 4 and buf:
            a = rng.randint(0, len(buf))
            buf[pos:pos] = buf[a : a + rng.randint(1, 32)]
        else:
            del buf[pos:]
    return bytes(buf[:max_len])


def run_mutation(
    target: Target, runs: int, seed: int, timeout: float = 2.0, out: Path | None = None, seconds: float | None = None
) -> Campaign:
    """The seeded mutation fuzzer: ``runs`` inputs (or until ``seconds`` pass) mutated from the seeds."""
    camp = Campaign(target, timeout, out)
    rng = random.Random(seed)
    pool = [s[: target.max_len] for s in target.seeds()]
    for s in pool:
        camp.one(s)
    deadline = None if seconds is None else time.monotonic() + seconds
    # A crash in C code kills the process: the input it was running is left in current.bin.
    current = out / "current.bin" if out is not None and target.native else None
    if current is not None:
        out.mkdir(parents=True, exist_ok=True)
    while camp.inputs < runs and (deadline is None or time.monotonic() < deadline):
        data = mutate(rng, rng.choice(pool), pool, target.max_len)
        if current is not None:
            current.write_bytes(data)
        camp.one(data)
    return camp


def run_atheris(target: Target, runs: int, seed: int, timeout: float, out: Path, extra: list[str]) -> int:
    import atheris

    camp_box: list[Campaign] = []
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(target.seeds()):
        (corpus / f"seed-{i:03d}").write_bytes(s[: target.max_len])

    def one(data: bytes) -> None:
        camp = camp_box[0]
        camp.one(data)
        if camp.inputs % 10_000 == 0 or camp.inputs >= runs:
            report()
            if camp.inputs >= runs:  # libFuzzer ends with exit(), which skips Python's atexit: stop here instead
                sys.stdout.flush()
                os._exit(1 if camp.findings else 0)

    with atheris.instrument_imports(include=["engine", "collectors", "app"]):
        import app.alerts.alertmanager  # noqa: F401 - instrumented for coverage
        import app.alerts.webhook  # noqa: F401
        import app.matching.read  # noqa: F401
        import app.service  # noqa: F401
        import app.spark.archive  # noqa: F401
        import app.stream.decode  # noqa: F401
        import collectors.ganglia.derive  # noqa: F401
        import collectors.ganglia.rrd  # noqa: F401
        import collectors.ganglia.xml  # noqa: F401
        import collectors.hadoop.amlog  # noqa: F401
        import collectors.hadoop.jhist  # noqa: F401
        import collectors.hadoop.tasklog  # noqa: F401
        import engine.imprecise.evaluator  # noqa: F401
        import engine.language.packs  # noqa: F401
        import engine.language.parser  # noqa: F401
        import engine.runtime.matcher  # noqa: F401
    camp_box.append(Campaign(target, timeout, out))

    def report() -> None:
        camp = camp_box[0]
        if camp.inputs >= runs:
            print(camp.summary(), flush=True)
        (out / "summary.txt").write_text(camp.summary() + "\n" + "".join(f"  {sig}\n" for sig in camp.findings))

    # libFuzzer writes its own crash/slow/oom units to the working directory unless told otherwise: keep them
    # beside the campaign's findings, never in the source tree.
    argv = [
        sys.argv[0],
        f"-seed={seed}",
        f"-max_len={target.max_len}",
        "-rss_limit_mb=4096",
        f"-artifact_prefix={out}/",
        *extra,
        str(corpus),
    ]
    atheris.Setup(argv, one)
    atheris.Fuzz()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", help="one of --list")
    parser.add_argument("--list", action="store_true", help="the targets")
    parser.add_argument("--runs", type=int, default=1_000_000, help="inputs to try (1,000,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=2.0, help="per-input time bound in seconds (2)")
    parser.add_argument("--out", help="findings and corpus (default .run/fuzz/TARGET)")
    parser.add_argument("--mutate", action="store_true", help="the seeded mutation fuzzer instead of atheris")
    parser.add_argument("--replay", metavar="FILE", help="run one saved input and show what it does")
    args, extra = parser.parse_known_args(argv)
    if args.list or not args.target:
        for t in TARGETS.values():
            print(f"{t.name:12} {t.what}")
        return 0
    target = TARGETS[args.target]
    out = Path(args.out or ROOT / ".run" / "fuzz" / target.name)
    if args.replay:
        target.prepare()
        target.check(Path(args.replay).read_bytes())
        print("no finding")
        return 0
    if args.mutate:
        camp = run_mutation(target, args.runs, args.seed, args.timeout, out)
        print(camp.summary())
        for sig in camp.findings:
            print(f"  {sig}")
        return 1 if camp.findings else 0
    return run_atheris(target, args.runs, args.seed, args.timeout, out, extra)


if __name__ == "__main__":
    raise SystemExit(main())
