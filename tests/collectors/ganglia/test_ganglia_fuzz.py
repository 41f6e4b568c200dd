"""Fuzzing the XML parser: whatever the bytes, :class:`XmlParser` never raises, and every document it rejects is
counted and dead-lettered with a reason (hypothesis: mutated real dumps, random element trees, random bytes)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.ganglia.derive import round_events, rounds_from_document
from collectors.ganglia.xml import XmlParser, parse_document
from tests.collectors.ganglia.helpers import DATA

SAMPLES = [(DATA / name).read_bytes() for name in ("gmond_cluster.xml", "gmetad_grid.xml", "gmetad_summary.xml")]
TAGS = ["GANGLIA_XML", "GRID", "CLUSTER", "HOST", "METRIC", "EXTRA_DATA", "EXTRA_ELEMENT", "HOSTS", "METRICS", "X"]
ATTRS = ["NAME", "VAL", "TYPE", "REPORTED", "LOCALTIME", "TN", "TMAX", "UNITS", "IP", "VERSION", "SOURCE"]
VALUES = st.one_of(
    st.sampled_from(["1", "0", "-3", "1.5", "nan", "inf", "x", "", "float", "string", "uint32", "h", "&amp;", "&lt;"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='"<&'), max_size=8),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(parser: XmlParser, data: bytes | str) -> None:
    """The invariant: no exception; a rejected document is counted once and dead-lettered with a reason."""
    before_docs, before_bad, before_dead = parser.stats.documents, parser.stats.bad, parser.deadletter.count
    doc = parser.parse(data, "fuzz")
    assert parser.stats.documents == before_docs + 1
    if doc is None:
        assert parser.stats.bad == before_bad + 1 and parser.deadletter.count == before_dead + 1
        record = (parser.deadletter.records or [])[-1]
        assert record["reason"] and record["location"] == "fuzz" and record["source"] == "ganglia-xml"
    else:
        assert parser.stats.bad == before_bad and parser.deadletter.count == before_dead
        for rnd in rounds_from_document(doc, up_only=False):  # a parsed document always derives, to valid JSON
            json.dumps(round_events(rnd), allow_nan=False)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A real dump with a few byte-level edits: deletions, insertions, replacements, truncation."""
    data = bytearray(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "delete":
            del data[pos : pos + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from([b"<", b">", b'"', b"&", b"</HOST>", b"<HOST>", b"\x00", b"\xff\xfe"]))
        elif kind == "replace":
            data[pos : pos + 1] = bytes([draw(st.integers(0, 255))])
        else:
            del data[pos:]
    return bytes(data)


@st.composite
def element(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(TAGS))
    attrs = draw(st.dictionaries(st.sampled_from(ATTRS), VALUES, max_size=5))
    text = "".join(f' {k}="{v}"' for k, v in attrs.items())
    children = draw(st.lists(element(depth + 1), max_size=3)) if depth < 3 else []
    return f"<{tag}{text}>{''.join(children)}</{tag}>" if children else f"<{tag}{text}/>"


@st.composite
def trees(draw: st.DrawFn) -> str:
    """Random trees of Ganglia's elements and attributes, mostly under a GANGLIA_XML root."""
    body = "".join(draw(st.lists(element(1), max_size=4)))
    if draw(st.booleans()):
        return f'<GANGLIA_XML VERSION="3.7.2" SOURCE="gmond">{body}</GANGLIA_XML>'
    return body or "<X/>"


@st.composite
def structured(draw: st.DrawFn) -> str:
    """Documents of the right shape (CLUSTER > HOST > METRIC) whose attribute values are random: mostly accepted."""
    ints = st.integers(-5, 2_000_000_000).map(str)
    numbers = st.one_of(ints, st.floats(allow_nan=True).map(repr), st.floats(0, 100).map(str))

    def mostly(good: st.SearchStrategy[str]) -> str:  # a valid value 7 times in 8, else anything
        return draw(good if draw(st.integers(0, 7)) else VALUES)

    parts = ['<GANGLIA_XML VERSION="3.7.2" SOURCE="gmond">']
    for c in range(draw(st.integers(0, 2))):
        parts.append(f'<CLUSTER NAME="c{c}" LOCALTIME="{draw(st.integers(0, 2_000_000_000))}">')
        for h in range(draw(st.integers(0, 3))):
            parts.append(f'<HOST NAME="h{h}" REPORTED="{mostly(ints)}" TN="{draw(st.integers(0, 200))}" TMAX="20">')
            for m in range(draw(st.integers(0, 4))):
                mtype = draw(st.sampled_from(["float", "float", "double", "uint32", "string", "bogus"]))
                name = draw(st.sampled_from(["load_one", f"m{m}"]))
                val, tn = mostly(numbers), mostly(ints)
                parts.append(f'<METRIC NAME="{name}" VAL="{val}" TYPE="{mtype}" TN="{tn}"/>')
            parts.append("</HOST>")
        parts.append("</CLUSTER>")
    parts.append("</GANGLIA_XML>")
    return "".join(parts)


@SETTINGS
@given(structured())
def test_structured_documents(data: str) -> None:
    check(XmlParser(), data)


@SETTINGS
@given(mutated())
def test_mutated_dumps(data: bytes) -> None:
    check(XmlParser(), data)


@SETTINGS
@given(trees())
def test_random_trees(data: str) -> None:
    parser = XmlParser()
    check(parser, data)
    check(parser, data.encode("utf-8"))


@SETTINGS
@given(st.binary(max_size=300) | st.text(max_size=300))
def test_random_input(data: bytes | str) -> None:
    check(XmlParser(), data)


def test_counts_accumulate_over_many_documents() -> None:
    parser = XmlParser()
    docs = [*SAMPLES, b"", b"<x", SAMPLES[0][:500], "<GANGLIA_XML/>"]
    for d in docs:
        check(parser, d)
    assert parser.stats.documents == len(docs)
    assert parser.stats.bad == 3 == parser.deadletter.count == len(parser.deadletter.records or [])
    assert parse_document("<GANGLIA_XML/>").clusters == []
