"""The one event decoder (:class:`engine.events.EventDecoder`): its fast path equals :func:`event_from_json` on
every object, bad numbers included, with any ``seq``; its clock-only path agrees with the event it would build; its
two JSON front-ends say the same things of bad text as ``hcep match`` always did."""

from __future__ import annotations

import copy
import random

import pytest

from engine.events import Event, EventDecoder, EventError, event_from_json, loads_json

BAD = [1e308, -1e308, float("nan"), float("inf"), 10**400, 1e11, 1e11 + 1, 2**53, 0.05, -0.05, 0, 1, True, "5"]


#: Every field of an event (``Event.__slots__`` interpreted; a compiled Event has no ``__slots__``).
FIELDS = ("type", "ts", "id", "lo", "hi", "attrs", "seq", "tlo", "thi", "t")


def test_fields_are_every_slot() -> None:
    assert set(getattr(Event, "__slots__", FIELDS)) == set(FIELDS)


def _same(a: Event, b: Event) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x == y and type(x) is type(y), (name, x, y)


@pytest.mark.parametrize("tick", [0.1, 1.0, 1e-9])
def test_fast_path_equals_event_from_json(tick: float) -> None:
    rng = random.Random(7)
    decoder = EventDecoder(tick)
    objs: list[object] = [
        {"type": "A", "ts": 12.5, "delta": 0.5, "id": None, "k": 1},  # an explicit null id is no attribute
        {"type": "A", "ts": 3, "id": "x"},
        {"type": "A", "ts": 3, "id": 7},
        {"type": "A", "ts": 1.0, "lo": 0.5, "hi": 2.0},
        [1],
        {"type": "", "ts": 1},
    ]
    objs += [{"type": "T", "ts": ts, "delta": d} for ts in BAD for d in [*BAD, -1]]
    objs += [
        {"type": "R", "ts": round(rng.uniform(-1e4, 2e9), 2), "delta": rng.choice([0, 0.5, 7.5]), "v": i}
        for i in range(500)
    ]
    for seq, obj in enumerate(objs):
        before = copy.deepcopy(obj)
        try:
            want = event_from_json(obj, seq, tick)
        except EventError:
            with pytest.raises(EventError):
                decoder.event(obj, seq)
            continue
        _same(decoder.event(obj, seq), want)
        assert obj == before or obj != obj  # not modified (NaN is not equal to itself)
        point = decoder.point(obj)
        if point is not None:
            assert point == (want.t, want.tlo, want.thi)


def test_width_bound_and_json_front_ends() -> None:
    decoder = EventDecoder(0.1, 7.5)
    ev = decoder.event({"type": "A", "ts": 100, "delta": 8})
    assert decoder.too_wide(ev.tlo, ev.thi) and "wider than --max-delta 7.5 s" in decoder.wide_reason(ev)
    ok = decoder.event({"type": "A", "ts": 100, "delta": 7.5})
    assert not decoder.too_wide(ok.tlo, ok.thi) and not EventDecoder(0.1).too_wide(0, 10**9)
    assert loads_json(b"  \n") is None and loads_json(b'\xef\xbb\xbf{"a": 1}', first=True) == {"a": 1}
    for bad, reason in [
        (b"{not json", "invalid JSON: Expecting property name"),
        (b"\xff", "not UTF-8 text"),
        (b"[" * 100_000, "invalid JSON"),
        (b"1" * 5000, "invalid JSON"),
    ]:
        with pytest.raises(ValueError, match=reason):
            loads_json(bad)
    fast = EventDecoder(0.1, fast_json=True)
    with pytest.raises(ValueError):
        fast.loads(b'{"ts": NaN}')  # streams: NaN is not JSON (files: a NaN time is an invalid event)
    assert fast.loads(b'{"a": 1}') == {"a": 1}
