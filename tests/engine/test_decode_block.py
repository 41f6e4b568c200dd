"""The block decoder (``EventDecoder.decode_block``, issue 20) against the line-at-a-time reader it replaces.

``hcep match`` reads a file in blocks, decodes with orjson where that gives what Python's decoder gives, builds only
the types its queries read and keeps the others' clocks (:class:`engine.events.Stamp`).  Whatever the lines -- bad
JSON, a byte-order mark, integers beyond 64 bits, NaN, lone surrogates, blank and ``null`` lines, invalid events,
events wider than ``--max-delta`` -- the events (or the ``FILE:LINE: reason`` of the first bad line) are those of the
per-line reader, at every block size; and matching with only the read types built gives the same records.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.commands import CommandError
from app.matching.read import blocks, built_types, read_events
from app.matching.read import parse_blocks as _parse_blocks
from app.matching.read import parse_lines as _parse_lines
from engine.evaluate import StreamedMatch
from engine.events import SLOW, Event, EventDecoder, Stamp, fast_value, loads_exact, loads_json
from engine.language.packs import load_pack
from engine.plan.compiler import compile_spec

ROOT = Path(__file__).resolve().parents[2]

GOOD = [
    b'{"type": "A", "ts": 10.0, "id": "a1", "delta": 0.5, "k": 1, "v": 3}',
    b'{"type": "B", "ts": 10.04, "k": 1, "v": 2.5}',
    b'{"type": "C", "ts": 11, "delta": 7.5, "k": "x"}',
    b'{"type": "N", "ts": 12.3, "id": "n", "k": 1}',
    b'{"type": "B", "ts": 9.0, "lo": 8.5, "hi": 9.7, "k": 2, "v": 1}',
    b'{"type": "A", "ts": 13.0, "id": null, "k": 12345678901234567890123}',
    b'{"type": "C", "ts": 14.0, "v": NaN}',
    b'{"type": "B", "ts": 15.0, "s": "\\ud800"}',
    b'{"type": "N", "ts": 15.5, "a": 1, "a": 2, "b": [1, {"c": null}]}',
    b'{"type": "A", "ts": 16, "id": "x", "delta": 0}\r',
    b'{"type": "C", "ts": 0.30000000000000004441, "v": 1e-400}',
    b"",
    b"   ",
    b"null",
    b'{"type":"B","ts":17.25,"delta":1,"v":-0.0}',
]
BAD = [
    b'{"type": "A", "ts": 10.0',
    b'{"type": "A", "ts": "10"}',
    b'{"type": "A"}',
    b'{"ts": 1.0}',
    b'{"type": "", "ts": 1.0}',
    b'{"type": "A", "ts": 1e300}',
    b'{"type": "A", "ts": 1.0, "delta": -1}',
    b'{"type": "A", "ts": 1.0, "delta": 8}',
    b'{"type": "N", "ts": 1.0, "delta": 9}',
    b'{"type": "A", "ts": 1.0, "lo": 2, "hi": 1}',
    b'{"type": "A", "ts": true}',
    b'{"type": "A", "ts": 1.0, "id": 1.5}',
    b'{"type": "A", "ts": 1.0, "id": 7}',
    b'{"type": "N", "ts": NaN}',
    b"[1, 2]",
    b"5",
    b'"\xff"',
    b"\xef\xbb\xbf{}",
    b"{} {}",
    b"[" * 3000,
]
TYPES = [None, frozenset({"A", "B", "C"}), frozenset({"B"}), frozenset()]


def _state(ev: Any) -> tuple[Any, ...]:
    if isinstance(ev, Stamp):
        return ("stamp", ev.type, ev.t, ev.tlo, ev.thi, ev.seq, ev.id)
    return ("event", ev.type, ev.ts, ev.id, ev.lo, ev.hi, ev.seq, ev.tlo, ev.thi, ev.t, list(ev.attrs.items()))


def _stamped(ev: Event) -> tuple[Any, ...]:
    return ("stamp", ev.type, ev.t, ev.tlo, ev.thi, ev.seq, ev.id)


def _outcome(read: Any) -> Any:
    try:
        return [_state(e) for e in read()]
    except CommandError as err:
        return str(err)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.sampled_from(GOOD) | st.sampled_from(BAD), max_size=12),
    bom=st.booleans(),
    newline=st.booleans(),
    size=st.sampled_from([1, 7, 64, 1 << 20]),
    built=st.sampled_from(TYPES),
)
def test_blocks_read_what_lines_read(lines: list[bytes], bom: bool, newline: bool, size: int, built: Any) -> None:
    data = b"\n".join(lines) + (b"\n" if newline and lines else b"")
    if bom:
        data = b"\xef\xbb\xbf" + data
    decoder = EventDecoder(0.1, 7.5)
    expected = _outcome(lambda: _parse_lines(io.BytesIO(data), "f.jsonl", decoder))
    got = _outcome(lambda: _parse_blocks_sized(data, size, decoder, built))
    if isinstance(expected, list) and built is not None:  # the types not built: their clocks, the same
        expected = [s if s[1] in built or s[0] != "event" or _odd(s) else _stamp_of(s) for s in expected]
    assert got == expected


def _odd(state: tuple[Any, ...]) -> bool:
    """An event not of the common shape (``lo``/``hi`` given: the one such line of GOOD) is built whatever its type."""
    return (state[4], state[5]) == (8.5, 9.7)


def _stamp_of(state: tuple[Any, ...]) -> tuple[Any, ...]:
    _, etype, _, eid, _, _, seq, tlo, thi, t, _ = state
    return ("stamp", etype, t, tlo, thi, seq, eid)


def _parse_blocks_sized(data: bytes, size: int, decoder: EventDecoder, built: Any) -> list[Any]:
    return _parse_blocks(io.BytesIO(data), "f.jsonl", decoder, built, size)


@pytest.mark.parametrize("size", [1, 2, 5, 100])
def test_blocks_are_whole_lines(size: int) -> None:
    data = b"ab\ncd\n\nefgh\nij"
    got = list(blocks(io.BytesIO(data), size))
    assert b"".join(got) == data
    assert all(b.endswith(b"\n") for b in got[:-1])


@pytest.mark.parametrize("raw", GOOD + BAD + [b"18446744073709551616", b"-9223372036854775809", b"1" * 40 + b".5"])
def test_loads_exact_is_loads_json(raw: bytes) -> None:
    def outcome(f: Any) -> Any:
        try:
            return ("ok", repr(f(raw, True)))
        except (ValueError, RecursionError) as err:
            return ("error", str(err))

    assert outcome(loads_exact) == outcome(loads_json)


@pytest.mark.parametrize("raw", GOOD + BAD + [b"18446744073709551616", b"\xef\xbb\xbf{}", b'{"a": 1}\r\n'])
def test_fast_value_is_json_loads_or_slow(raw: bytes) -> None:
    """``hcep archive``'s reader takes orjson's value only where it is ``json.loads``'s."""
    value = fast_value(raw)
    if value is not SLOW:
        assert repr(value) == repr(json.loads(raw.decode("utf-8")))


def test_big_integers_stay_exact() -> None:
    [ev], _ = EventDecoder(0.1).decode_block(b'{"type": "A", "ts": 1, "n": 18446744073709551617}\n')
    assert isinstance(ev, Event) and ev.attrs["n"] == 18446744073709551617


def test_a_stamp_has_no_attributes() -> None:
    [st_], _ = EventDecoder(0.1).decode_block(b'{"type": "Metric", "ts": 1, "val": 2}', built=frozenset({"A"}))
    assert isinstance(st_, Stamp) and st_.id == "0"
    with pytest.raises(AttributeError):
        st_.attrs  # noqa: B018 - reading it is the point


PACKS = [ROOT / "queries" / "hadoop.yaml", ROOT / "queries" / "trends.yaml"]
INPUTS = [ROOT / "queries" / "samples" / "hadoop_sample.jsonl", ROOT / "tests" / "data" / "hadoop_handcheck.jsonl"]


@pytest.mark.parametrize("pack_file", PACKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("events_file", INPUTS, ids=lambda p: p.stem)
def test_building_only_the_read_types_keeps_every_record(pack_file: Path, events_file: Path) -> None:
    """The types a pack's queries read -- their components, their negations, and every type under a contiguity
    strategy -- are built, the others only clocked: each query and the whole pack give the same records."""
    pack = load_pack(pack_file)
    cqs = [compile_spec(q, pack.tick) for q in pack.queries if q.enabled]
    for chosen in [[cq] for cq in cqs] + [cqs]:
        built = built_types(chosen)
        full = list(StreamedMatch(chosen, read_events(events_file, pack.tick, 7.5)))
        lean = list(StreamedMatch(chosen, read_events(events_file, pack.tick, 7.5, built)))
        assert json.dumps(lean, sort_keys=True) == json.dumps(full, sort_keys=True)
        for cq in chosen:
            types = set(cq.relevant_types) | {n.type for n in cq.negations}
            assert built is None or types <= built


def test_built_types_of_a_contiguity_query_is_every_type() -> None:
    from engine.plan.compiler import compile_query

    cq = compile_query("PATTERN SEQ(A a, B b) WITHIN 10 s", name="q", strategy="strict_contiguity")
    assert built_types([cq]) is None
    neg = compile_query("PATTERN SEQ(A a, ~N n, B b) WITHIN 10 s", name="q", strategy="skip_till_next_match")
    assert built_types([neg]) == {"A", "B", "N"}
