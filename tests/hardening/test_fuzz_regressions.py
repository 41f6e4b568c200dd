"""Regression tests for the crashes and hangs the fuzzing campaign found (issue 18, ``benchmarks/fuzz.py``): each
input below crashed, hung or was caught only by a parser's catch-all before the fix."""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from engine import Event, compile_query, match_events
from engine.language.ast import QueryError
from engine.language.parser import parse_query

# ------------------------------------------------------------------ events and the engine


def test_an_unhashable_partition_value_is_a_partition_not_a_crash() -> None:
    """``{"job_id": {"a": 1}}`` crashed every partitioned evaluator (TypeError: unhashable type: 'dict')."""
    events = [
        Event("A", 1.0, {"k": {"a": 1}, "v": 1}, id="a1", seq=0),
        Event("B", 2.0, {"k": {"a": 1}, "v": 2}, id="b1", seq=1),
        Event("B", 3.0, {"k": [1, 2], "v": 3}, id="b2", seq=2),
        Event("C", 4.0, {"k": {"a": 1}}, id="c1", seq=3),
        Event("B", 3.5, {"k": '{"a": 1}', "v": 9}, id="b3", seq=4),
    ]  # a string that looks the same: not equal
    text = "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 1 minute"
    for strategy, output in [
        ("skip_till_any_match", "all"),
        ("skip_till_any_match", "distinct"),
        ("skip_till_next_match", "all"),
        ("partition_contiguity", "all"),
    ]:
        records = match_events(compile_query(text, strategy=strategy, output=output), events)
        assert all(r["match"]["b"] == ["b1"] for r in records), (strategy, records)
        assert records, strategy
    trend = compile_query(
        "PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 1 minute RETURN count(*)"
    )
    match_events(trend, events)


def test_one_event_id_twice_in_a_kleene_binding_is_no_crash() -> None:
    """Two elements of a Kleene binding with the same interval and id (a line twice in a mutated file) tied on the
    sort key of the record's id list, and sorting went on to compare the Events: TypeError out of ``hcep match``."""
    from engine.plan.predicates import KleeneCell
    from engine.runtime.matcher import _kleene_ids

    twice = [Event("B", 104.0, {"v": 1}, id="p4", seq=1), Event("B", 104.0, {"v": 1}, id="p4", seq=2)]
    cell = None
    for ev in [
        Event("B", 100.0, {}, id="p0", seq=0),
        *twice,
        Event("B", 104.0, {}, seq=3),
    ]:  # and one without an id: "3"
        cell = KleeneCell(ev, cell, ())
    assert cell is not None
    ids, lo, hi = _kleene_ids(cell)  # built from scratch (no cache along the chain)
    assert ids == ["p0", "3", "p4", "p4"] and (lo, hi) == (100.0, 104.0)


def test_arithmetic_beyond_floats_and_on_strings_is_unknown() -> None:
    """``10**400 / 3`` raised OverflowError out of a predicate; ``"ab" * n`` built strings of any size."""
    events = [
        Event("A", 1.0, {"k": 1, "v": 10**400, "s": "ab"}, id="a", seq=0),
        Event("B", 2.0, {"k": 1, "v": 3, "n": 10**9}, id="b", seq=1),
    ]
    q = compile_query(
        "PATTERN SEQ(A a, B b) WHERE [k] RETURN a.v / 3 AS q, a.s * b.n AS rep, a.v * 1.5 AS f, a.v + b.v AS exact"
    )
    (record,) = match_events(q, events)
    assert record["return"] == {"q": None, "rep": None, "f": None, "exact": 10**400 + 3}
    agg = compile_query("PATTERN SEQ(A a, B+ b[]) WHERE [k] RETURN avg(b[].v) AS m, sum(b[].v) AS s")
    events2 = [
        Event("A", 1.0, {"k": 1}, id="a", seq=0),
        Event("B", 2.0, {"k": 1, "v": 10**400}, id="b1", seq=1),
        Event("B", 3.0, {"k": 1, "v": 0.5}, id="b2", seq=2),
    ]
    assert any(r["return"] == {"m": None, "s": None} for r in match_events(agg, events2))


def test_the_service_dead_letters_an_object_as_the_type(tmp_path: Path) -> None:
    """``{"type": {...}}`` raised TypeError in ``hcep run``'s clock-only path (``obj.get("type") not in built``)."""
    from tests.hardening.test_service_ingest import BAD

    assert b'{"type": {"a": 1}, "ts": 1}' in BAD


def test_huge_windows_and_too_many_sliding_windows_are_query_errors() -> None:
    """``WITHIN 2e31 minutes SLIDE 5 minutes`` put each event in 4e30 GRETA windows: it never finished."""
    trend = "PATTERN SEQ(A a, B+ b[]) WITHIN {w} SLIDE {s} RETURN COUNT(*)"
    with pytest.raises(QueryError, match="at most 1e"):
        parse_query(trend.format(w="19999999999999999999999999999990 minutes", s="5 minutes"), "q")
    with pytest.raises(QueryError, match="windows"):
        parse_query(trend.format(w="1 day", s="1 s"), "q")
    with pytest.raises(QueryError, match="positive, finite"):
        parse_query("PATTERN SEQ(A a, B b) WITHIN 1e400 s", "q")
    parse_query(trend.format(w="1 day", s="10 s"), "q")  # 8,640 windows per event: allowed


# ------------------------------------------------------------------ collectors


def test_xml_with_an_unknown_encoding_is_a_bad_document() -> None:
    """expat raised LookupError for ``encoding="ISO-N-N"``; the collector's catch-all hid it as 'unexpected'."""
    from collectors.ganglia.xml import XmlParser

    parser = XmlParser()
    assert parser.parse(b'<?xml version="1.0" encoding="ISO-8859-99"?><GANGLIA_XML/>', "f.xml") is None
    assert parser.deadletter.records[0]["reason"].startswith("unsupported XML encoding declaration")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "record", "name": "Event", "fields": []},  # a datum of zero bytes: the reader never advanced
        {"type": "record", "name": "Event", "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}]},
        {
            "type": "record",
            "name": "Event",
            "fields": [
                {
                    "name": "a",
                    "type": {
                        "type": "array",
                        "items": {"type": "record", "name": "E", "fields": [{"name": "n", "type": "null"}]},
                    },
                }
            ],
        },
    ],
)
def test_binary_jhist_whose_schema_cannot_frame_datums_is_dead_lettered(schema: dict) -> None:
    """A mutated schema line (``"fids"`` for ``"fields"``) made parse_jhist_binary loop forever."""
    from collectors.hadoop.common import Context
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.hadoop.jhist import parse_jhist_binary

    data = b"Avro-Binary\n" + json.dumps(schema).encode() + b"\n" + b"\xfe\xff\xff\xff\x0f" * 4
    ctx = Context(source="bin", deadletter=DeadLetterSink.memory())
    start = time.monotonic()
    assert list(parse_jhist_binary(io.BytesIO(data), ctx)) == []
    assert time.monotonic() - start < 2.0
    assert ctx.stats.dead == 1 and "unusable schema line" in ctx.deadletter.records[0]["reason"]


def _rrd(tmp_path: Path) -> Path:
    rrdtool = pytest.importorskip("rrdtool")
    path = tmp_path / "c" / "h" / "load_one.rrd"
    path.parent.mkdir(parents=True)
    rrdtool.create(str(path), "--start", "1700000085", "--step", "15", "DS:sum:GAUGE:120:U:U", "RRA:AVERAGE:0.5:1:12")
    for k in range(1, 6):  # 1_700_000_100 is a multiple of 15: values at row boundaries read back exactly
        rrdtool.update(str(path), f"{1700000085 + 15 * k}:{k}")
    return path


@pytest.mark.parametrize("edit", ["ds_cnt", "rra_cnt", "cf", "dst", "row_cnt", "cur_row", "cut", "version"])
def test_rrd_with_a_corrupt_header_is_dead_lettered_before_librrd_reads_it(tmp_path: Path, edit: str) -> None:
    """librrd corrupted the heap and aborted the process on mutated headers (glibc: corrupted size vs. prev_size)."""
    from collectors.ganglia.rrd import read_history
    from collectors.hadoop.deadletter import DeadLetterSink

    path = _rrd(tmp_path)
    raw = bytearray(path.read_bytes())
    rra0 = 128 + 120  # one data source
    if edit == "ds_cnt":
        struct.pack_into("<Q", raw, 24, 7)
    elif edit == "rra_cnt":
        struct.pack_into("<Q", raw, 32, 2**40)
    elif edit == "cf":
        raw[rra0 : rra0 + 7] = b"AVERAGX"
    elif edit == "dst":
        raw[128 + 20 : 128 + 25] = b"GAUGX"
    elif edit == "row_cnt":
        struct.pack_into("<Q", raw, rra0 + 24, 13)
    elif edit == "cur_row":
        struct.pack_into("<Q", raw, len(raw) - 12 * 8 - 8, 12)
    elif edit == "cut":
        del raw[-9:]
    else:
        raw[4:9] = b"0009\0"
    path.write_bytes(bytes(raw))
    sink = DeadLetterSink.memory()
    assert read_history(tmp_path, 1_699_999_000, 1_700_001_000, deadletter=sink) == []
    assert sink.count == 1 and sink.records[0]["location"] == str(path)
    assert sink.records[0]["reason"].startswith("not a valid RRD file")


def test_rrd_header_check_accepts_what_rrdtool_writes(tmp_path: Path) -> None:
    from collectors.ganglia.rrd import check_rrd, read_history

    path = _rrd(tmp_path)
    check_rrd(path)
    assert [v for *_, v in read_history(tmp_path, 1_699_999_000, 1_700_001_000)] == [1.0, 2.0, 3.0, 4.0, 5.0]


# ------------------------------------------------------------------ webhook responses


def _serve_once(reply: bytes) -> int:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(2)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head, _, body = buf.partition(b"\r\n\r\n")
            need = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(body) < need:
                body += conn.recv(65536)
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


@pytest.mark.parametrize(
    "reply",
    [
        b"garbage\r\n\r\n",  # BadStatusLine
        b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:99999999/x\r\nContent-Length: 0\r\n\r\n",  # InvalidURL
        b"HTTP/7.7 200 OK\r\n\r\n",  # UnknownProtocol
    ],
)
def test_malformed_webhook_answers_are_failed_deliveries(reply: bytes) -> None:
    """http.client's errors (not OSErrors) escaped post() and would have killed the AlertSender thread: every
    malformed answer is one DeliveryError (an OSError), which the sender retries."""
    from app.alerts.webhook import DeliveryError, Webhook, post

    port = _serve_once(reply)
    with pytest.raises(DeliveryError):
        post(Webhook("ops", f"http://127.0.0.1:{port}/hook"), [_alert()], timeout=2.0)


def _alert() -> dict:
    from contracts.alerts import Alert

    return Alert({"alertname": "Q1", "severity": "info"}, {"summary": "s"}, 1.7e9).to_webhook()


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",  # IncompleteRead before
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\nx",  # OverflowError before
    ],
)
def test_a_2xx_answer_with_a_broken_body_is_delivered(reply: bytes) -> None:
    """The status line said 200: the body is never read, so a short or absurd one is no failure."""
    from app.alerts.webhook import Webhook, post

    port = _serve_once(reply)
    post(Webhook("ops", f"http://127.0.0.1:{port}/hook"), [_alert()], timeout=2.0)


def _serve_any(reply: bytes) -> int:
    """One connection answered with ``reply`` whatever the request (a GET has no body)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(2)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(65536)
            head, _, body = buf.partition(b"\r\n\r\n")
            length = [ln for ln in head.lower().split(b"\r\n") if ln.startswith(b"content-length:")]
            need = int(length[0].split(b":")[1]) if length else 0
            while len(body) < need:
                body += conn.recv(65536)
            conn.sendall(reply)
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        # requests decodes a redirect's Location as UTF-8: UnicodeDecodeError escaped the client untyped
        (b"HTTP/1.1 302 Found\r\nLocation: \x83/x\r\nContent-Length: 0\r\n\r\n", "malformed answer"),
        # an answer that is not HTTP: it did answer, so not "cannot reach Alertmanager"
        (b"garbage\r\n\r\n", "a malformed answer"),
        # JSON nested past the parser's recursion limit: RecursionError, not a ValueError
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"[" * 5000, "not JSON"),
    ],
)
def test_malformed_alertmanager_answers_are_alertmanager_errors(reply: bytes, says: str) -> None:
    """The Alertmanager client's documented error is AlertmanagerError naming the method and URL; the sender thread
    handles only that (the fuzz target ``alertmanager``)."""
    from app.alerts.alertmanager import Alertmanager, AlertmanagerError

    port = _serve_any(reply)
    client = Alertmanager(f"http://127.0.0.1:{port}", timeout=2.0)
    try:
        with pytest.raises(AlertmanagerError, match=says) as err:
            client.alerts()
    finally:
        client.close()
    assert str(err.value).startswith(f"GET http://127.0.0.1:{port}/api/v2/alerts: ")


# ------------------------------------------------------------------ the Parquet archive


def test_archive_readers_raise_archive_error_naming_where(tmp_path: Path) -> None:
    """Arrow's errors, invalid UTF-8 and a row whose attrs are not JSON escaped the readers untyped."""
    pytest.importorskip("pyarrow")
    from app.spark.archive import ArchiveError, ArchiveWriter, event_from_row, read_table

    with ArchiveWriter(tmp_path) as w:
        w.add_event({"type": "A", "ts": 1.7e9, "v": 1})
    (part,) = tmp_path.rglob("*.parquet")
    good = part.read_bytes()
    assert read_table(tmp_path).num_rows == 1
    part.write_bytes(good[:100] + b"\x00" * 50 + good[150:])
    with pytest.raises(ArchiveError, match=str(tmp_path / "events")):
        read_table(tmp_path)
    part.write_bytes(good.replace(b'{"v":1}', b'{"v":\xff}'))  # invalid UTF-8 inside a string column
    with pytest.raises(ArchiveError):
        read_table(tmp_path)
    row = {"type": "A", "ts": 1.0, "id": "e7", "lo": 1.0, "hi": 1.0, "attrs": '{"v": '}
    with pytest.raises(ArchiveError, match="event 'e7'"):
        event_from_row(row)
    with pytest.raises(ArchiveError, match="not a JSON object"):
        event_from_row({**row, "attrs": "[1, 2]"})


# ------------------------------------------------------------------ collectors publish only events the engine takes


def test_collectors_dead_letter_times_the_engine_rejects() -> None:
    """A year 9999 log line, a finishTime of 9e15 ms, a LOCALTIME of 1e14: the collectors published events that
    ``hcep run`` then rejected; now they are dead-lettered where they are, naming the line or document."""
    from collectors.ganglia.xml import XmlParser
    from collectors.hadoop.amlog import AmLogParser
    from collectors.hadoop.common import Context, run_lines
    from collectors.hadoop.deadletter import DeadLetterSink
    from collectors.hadoop.jhist import JhistJsonParser
    from engine import event_from_json
    from tests.collectors.ganglia.helpers import DATA
    from tests.collectors.hadoop_testkit import sample

    lines = sample("am_syslog").read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if "Transitioned from INITED to SETUP" in line)
    lines[i] = "9999" + lines[i][4:]
    ctx = Context(source="am", deadletter=DeadLetterSink.memory())
    events = list(run_lines(AmLogParser(ctx), lines))
    assert any(r["location"] == f"am:{i + 1}" and "out of range" in r["reason"] for r in ctx.deadletter.records)
    text = sample("jhist").read_text().replace('"finishTime":1700000141900', '"finishTime":9000000000000000')
    jctx = Context(source="jh", deadletter=DeadLetterSink.memory())
    events += list(run_lines(JhistJsonParser(jctx), text.split("\n")))
    assert any("out of range" in r["reason"] for r in jctx.deadletter.records)
    for ev in events:
        event_from_json(ev, 0)  # every published event is one the engine takes
    xml = (DATA / "gmond_cluster.xml").read_text()
    parser = XmlParser()
    bad = xml.replace('LOCALTIME="', 'LOCALTIME="9999999', 1)
    assert parser.parse(bad, "g.xml") is None and "out of range" in parser.deadletter.records[0]["reason"]


def test_a_pack_with_a_control_character_names_its_line() -> None:
    """PyYAML reports a control character without a mark: the error named the file only (fuzzing)."""
    from engine.language.packs import PackError, parse_pack

    with pytest.raises(PackError) as info:
        parse_pack("pack: t\nqueries:\n  - name: q\x01\n", "f.yaml")
    assert str(info.value) == "f.yaml: line 3, column 12: invalid YAML: special characters are not allowed (#x0001)"
