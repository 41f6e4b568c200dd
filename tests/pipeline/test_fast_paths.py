"""The service's fast paths give the same answers as the general ones: the direct event parser equals
``event_from_json``, and ``Watermark.offer_point`` (events of types no query reads, never built) equals
``offer(keep=False)``."""

from __future__ import annotations

import copy
import random

import pytest

from app.service import make_event_parser
from app.watermark import Watermark
from engine.events import Event, EventError, event_from_json
from tests.engine.test_event_decoder import FIELDS as SLOTS  # (a compiled Event has no __slots__)


def _same(a: Event, b: Event) -> None:
    for name in SLOTS:
        x, y = getattr(a, name), getattr(b, name)
        assert x == y and type(x) is type(y), (name, x, y)


@pytest.mark.parametrize("tick", [0.1, 1.0, 0.25])
def test_direct_parser_equals_event_from_json(tick: float) -> None:
    rng = random.Random(3)
    parse = make_event_parser(tick)
    objs = [
        {"type": "DataPull", "ts": 1700000001.25, "delta": 0.5, "job_id": "j", "period": 1.5},
        {"type": "LoadStd", "ts": 1700000000, "delta": 7.5, "id": "g1", "val": 0.7},
        {"type": "Mapper", "ts": 12, "host": "h"},
        {"type": "X", "ts": -3.05, "delta": 0, "id": "i", "nested": {"a": [1]}},
        {"type": "Y", "ts": 1.0, "lo": 0.5, "hi": 2.0, "a": 1},  # explicit interval: the general path
        {"type": "Z", "ts": 5.0, "id": 7},  # an integer id: the general path
    ]
    objs += [
        {
            "type": "R",
            "ts": round(rng.uniform(-1e4, 2e9), rng.choice([0, 1, 2, 3])),
            "delta": rng.choice([0, 0.5, 7.5, 0.05, 3]),
            "k": rng.random(),
        }
        for _ in range(2000)
    ]
    for obj in objs:
        before = copy.deepcopy(obj)
        _same(parse(obj), event_from_json(obj, 0, tick))
        assert obj == before  # not modified
    for bad in ({"type": "", "ts": 1.0}, {"type": "T"}, {"type": "T", "ts": 1.0, "delta": -1}, [1]):
        with pytest.raises(EventError):
            parse(bad)


BAD_NUMBERS = [
    1e308,
    -1e308,
    float("nan"),
    float("inf"),
    -float("inf"),
    10**400,
    -(10**400),
    1e11,
    1e11 + 1,
    99999999999.95,
    2**53,
    0.05,
    -0.05,
    0,
    1,
]


@pytest.mark.parametrize("tick", [0.1, 1e-9])
def test_direct_parser_equals_event_from_json_on_bad_numbers(tick: float) -> None:
    """Issue 18: huge, infinite and NaN times, absurd deltas: both paths reject (EventError, never OverflowError)
    or accept alike."""
    parse = make_event_parser(tick)
    for ts in BAD_NUMBERS:
        for delta in [*BAD_NUMBERS, -1, None]:
            obj = {"type": "T", "ts": ts, "k": 1}
            if delta is not None:
                obj["delta"] = delta
            try:
                want = event_from_json(obj, 0, tick)
            except EventError:
                with pytest.raises(EventError):
                    parse(obj)
                continue
            _same(parse(obj), want)


def test_offer_point_equals_offer_without_keeping() -> None:
    rng = random.Random(5)
    a, b = Watermark(bound=30), Watermark(bound=30)
    for w in (a, b):
        w.add("p", 0, 0, 0, float("-inf"), 0.0)
    released_at = 60
    for offset in range(3000):
        t = offset * 0.5 + rng.uniform(-40, 10)
        thi = int(t) + rng.randint(0, 75)
        ev = Event("T", t / 10, {}, tick=0.1)
        ev.t, ev.thi = t, thi
        floor = (200.0, 0, 0, 0, 0) if offset % 7 == 0 else None
        got = b.offer_point("p", offset, 0, t, thi, 1.0, floor)
        assert a.offer("p", offset, 0, ev, 1.0, keep=False, floor=floor) == got
        if offset == released_at:  # from now on keys at or below the released one are behind the watermark
            for w in (a, b):
                w.released = (150.0, 0, 0, 0, 0)
    assert a.parts["p"].newest == b.parts["p"].newest
    assert a.tracker("p").rebuild_point(500) == b.tracker("p").rebuild_point(500)
    assert list(a.tracker("p").entries) == list(b.tracker("p").entries)
    assert a.heap == b.heap == []
