"""The gmond/gmetad XML parser on real dumps (tests/collectors/ganglia/data, captured from gmond and gmetad 3.7.2) and
bad ones."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_ganglia import gmond_document
from collectors.ganglia.xml import GangliaXmlError, XmlParser, parse_document
from collectors.hadoop.deadletter import DeadLetterSink
from tests.collectors.ganglia.helpers import DATA


def _hosts(doc):
    return {h.name: h for c in doc.clusters for h in c.hosts}


def test_gmond_dump() -> None:
    doc = parse_document((DATA / "gmond_cluster.xml").read_bytes())
    assert (doc.source, doc.version) == ("gmond", "3.7.2")
    (cluster,) = doc.clusters
    assert (cluster.name, cluster.localtime, cluster.grid) == ("hcep", 1795350229, None)
    hosts = _hosts(doc)
    assert set(hosts) == {"localhost", "node-a", "node-b", "node-c", "fakeZ"}
    real = hosts["localhost"]
    assert (real.ip, real.reported, real.tn, real.tmax) == ("127.0.0.1", 1795350228, 1, 20)
    load = real.metrics["load_one"]
    assert (load.val, load.type, load.units, load.tn, load.tmax, load.slope) == (4.41, "float", "", 1, 70, "both")
    assert load.extra == {"GROUP": "load", "DESC": "One minute load average", "TITLE": "One Minute Load Average"}
    assert real.metrics["proc_run"].val == 4.0 and real.metrics["proc_run"].type == "uint32"
    assert real.metrics["os_name"].val == "Linux" and not real.metrics["os_name"].numeric
    assert {h: hosts[h].metrics["load_one"].val for h in ("node-a", "node-b", "node-c")} == {
        "node-a": 0.5,
        "node-b": 2.5,
        "node-c": 4.0,
    }
    assert hosts["node-a"].metrics["load_one"].extra == {"SPOOF_HOST": "127.89.77.172:node-a"}
    assert not hosts["fakeZ"].is_up() and hosts["node-a"].is_up()  # fakeZ: TN 148 > 4 x TMAX 20


def test_gmetad_dump_has_grid_and_cluster() -> None:
    doc = parse_document((DATA / "gmetad_grid.xml").read_bytes())
    assert doc.source == "gmetad"
    (cluster,) = doc.clusters
    assert (cluster.name, cluster.grid, cluster.localtime) == ("hcep", "hcep-grid", 1795350227)
    assert set(_hosts(doc)) == {"localhost", "node-a", "node-b", "node-c", "fakeZ"}


def test_gmetad_summary_has_no_hosts() -> None:
    doc = parse_document((DATA / "gmetad_summary.xml").read_bytes())
    assert doc.source == "gmetad" and doc.host_count() == 0


def test_hosts_without_cluster_and_str_input() -> None:
    text = (
        '<?xml version="1.0" encoding="ISO-8859-1"?><GANGLIA_XML VERSION="3.1" SOURCE="gmond">'
        '<HOST NAME="n\u00e9" IP="1.2.3.4" REPORTED="10"><METRIC NAME="load_one" VAL="1.5" TYPE="float"/></HOST>'
        "</GANGLIA_XML>"
    )
    doc = parse_document(text)  # a str is taken as already decoded, whatever the declaration says
    (cluster,) = doc.clusters
    assert cluster.name == "" and cluster.localtime is None
    assert cluster.hosts[0].name == "n\u00e9" and cluster.hosts[0].metrics["load_one"].val == 1.5
    assert parse_document(text.encode("iso-8859-1")).clusters[0].hosts[0].name == "n\u00e9"


def test_unknown_elements_are_skipped() -> None:
    doc = parse_document(
        b'<GANGLIA_XML><CLUSTER NAME="c" LOCALTIME="5"><FUTURE><HOST NAME="x"/></FUTURE>'
        b'<HOST NAME="h" REPORTED="4"><METRIC NAME="m" VAL="2" TYPE="int32"><NEW A="1"/></METRIC></HOST>'
        b"</CLUSTER></GANGLIA_XML>"
    )
    assert set(_hosts(doc)) == {"h"} and _hosts(doc)["h"].metrics["m"].val == 2.0


def test_synthetic_document_size() -> None:
    doc = parse_document(gmond_document(7, 5))
    assert doc.host_count() == 7 and doc.metric_count() == 35


BAD = {
    "empty": (b"", "empty document"),
    "blank": (b"  \n", "empty document"),
    "not xml": (b"hello", "not well-formed"),
    "truncated": (b'<GANGLIA_XML><CLUSTER NAME="c" LOCALTIME="1"><HOST NAME="h" REPORTED="1">', "not well-formed"),
    "wrong root": (b"<HTML/>", "root element is <HTML>"),
    "metric outside host": (b'<GANGLIA_XML><METRIC NAME="m" VAL="1" TYPE="float"/></GANGLIA_XML>', "inside"),
    "host in host": (
        b'<GANGLIA_XML><HOST NAME="a" REPORTED="1"><HOST NAME="b" REPORTED="1"/></HOST></GANGLIA_XML>',
        "inside <HOST>",
    ),
    "cluster without name": (b'<GANGLIA_XML><CLUSTER LOCALTIME="1"/></GANGLIA_XML>', "without NAME"),
    "host without reported": (b'<GANGLIA_XML><HOST NAME="h"/></GANGLIA_XML>', "without REPORTED"),
    "bad reported": (b'<GANGLIA_XML><HOST NAME="h" REPORTED="soon"/></GANGLIA_XML>', "not an integer"),
    "bad localtime": (b'<GANGLIA_XML><CLUSTER NAME="c" LOCALTIME="1.5"/></GANGLIA_XML>', "not an integer"),
    "metric without val": (
        b'<GANGLIA_XML><HOST NAME="h" REPORTED="1"><METRIC NAME="m" TYPE="float"/></HOST></GANGLIA_XML>',
        "without VAL",
    ),
    "non-numeric val": (
        b'<GANGLIA_XML><HOST NAME="h" REPORTED="1"><METRIC NAME="m" VAL="x" TYPE="float"/></HOST></GANGLIA_XML>',
        "VAL='x' is not a number",
    ),
    "bad tn": (
        b'<GANGLIA_XML><HOST NAME="h" REPORTED="1"><METRIC NAME="m" VAL="1" TYPE="float" TN="-"/></HOST></GANGLIA_XML>',
        "TN='-' is not a number",
    ),
    "unknown type": (
        b'<GANGLIA_XML><HOST NAME="h" REPORTED="1"><METRIC NAME="m" VAL="1" TYPE="quad"/></HOST></GANGLIA_XML>',
        "unknown TYPE",
    ),
    "entity bomb": (
        b'<?xml version="1.0"?><!DOCTYPE GANGLIA_XML [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        b"<GANGLIA_XML>&b;</GANGLIA_XML>",
        "entity declarations are not allowed",
    ),
    "two roots": (b"<GANGLIA_XML/><GANGLIA_XML/>", "not well-formed"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_documents_raise_with_reason(name: str) -> None:
    data, reason = BAD[name]
    with pytest.raises(GangliaXmlError, match=reason.replace("(", r"\(").replace("[", r"\[")):
        parse_document(data)


def test_xml_parser_counts_and_dead_letters(tmp_path) -> None:
    sink = tmp_path / "dead.jsonl"
    parser = XmlParser(DeadLetterSink(str(sink)))
    good = (DATA / "gmond_cluster.xml").read_bytes()
    assert parser.parse(good, "a:1") is not None
    for data, _reason in BAD.values():
        assert parser.parse(data, "b:2") is None
    parser.deadletter.close()
    assert parser.stats.documents == 1 + len(BAD) and parser.stats.bad == len(BAD)
    assert parser.stats.hosts == 5
    records = [json.loads(line) for line in sink.read_text().splitlines()]
    assert len(records) == len(BAD) == parser.deadletter.count
    assert all(r["source"] == "ganglia-xml" and r["location"] == "b:2" and r["reason"] for r in records)
    assert any(r["raw"] == "hello" and "not well-formed" in r["reason"] for r in records)


def test_default_sink_keeps_records_in_memory() -> None:
    parser = XmlParser()
    assert parser.parse(b"<nope", "") is None
    (record,) = parser.deadletter.records or []
    assert record["location"] == "<document>" and record["raw"] == "<nope"


def test_failing_sink_is_counted_not_raised(tmp_path) -> None:
    class Broken(DeadLetterSink):
        def write(self, *args: object) -> None:
            raise OSError("disk full")

    parser = XmlParser(Broken())
    assert parser.parse(b"", "x") is None
    assert parser.stats.bad == 1 and parser.stats.sink_errors == 1
