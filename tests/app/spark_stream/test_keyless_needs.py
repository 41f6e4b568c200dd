"""Keyless events reach a keyed group only where a match could hold them (``FamilyPlan.useful``): a LoadStd closes
the Hadoop pack's day-long skew queries only after a JobInput/MapSplit or DataIO/ShuffleDone of the job, so a job
without those is not fed a day of LoadStd.  The records stay ``hcep match``'s; the engine is fed less."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.app.spark.helpers import assert_same_records
from tests.app.spark_stream.conftest import GANGLIA, match, stream_plan, write_events
from tests.app.spark_stream.simulate import run_batches


def _lines(events: list[dict[str, Any]], n: int) -> list[list[tuple[str, int, str]]]:
    lines = [("f.jsonl", i, json.dumps(e)) for i, e in enumerate(events)]
    size = max(len(lines) // n, 1)
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def test_needs_name_the_keyed_types_before_each_place() -> None:
    from app.spark.stream.plan import FamilyPlan, keyless_needs

    plan = stream_plan(keyless=GANGLIA)
    for fam in plan.families:
        for etype, places in fam.needs.items():
            assert etype in GANGLIA and places and all(p and not (p & GANGLIA) for p in places)
        # A type some pattern opens with (Balance in Q5: nothing keyed before it) is never narrowed.
        assert "Balance" not in fam.needs
    fam = FamilyPlan(0, "job_id", (), (), (), None, frozenset(), {}, 10, {"LoadStd": (frozenset({"A", "B"}),)})
    assert not fam.useful("LoadStd", 100, {"A": 5})  # B never came
    assert not fam.useful("LoadStd", 100, {"A": 5, "B": 101})  # B only after it
    assert fam.useful("LoadStd", 100, {"A": 5, "B": 100})
    assert fam.useful("LoadStd", 100, None)  # not known (a snapshot from before): always
    assert fam.useful("Balance", 100, {})  # not narrowed
    assert keyless_needs([], [], frozenset()) == {}


_TYPES = st.sampled_from(["A", "B", "C"])


@given(
    places=st.lists(st.frozensets(_TYPES, max_size=3), max_size=3),
    first=st.none() | st.dictionaries(_TYPES, st.integers(-5, 5)),
    thi=st.integers(-6, 6),
)
def test_thresholds_say_what_useful_says(places: list[frozenset[str]], first: dict[str, int] | None, thi: int) -> None:
    """The bucket filters by ``useful_from``'s thresholds (one comparison an event); ``useful`` is the definition."""
    from app.spark.stream.plan import FamilyPlan

    fam = FamilyPlan(0, "job_id", (), (), (), None, frozenset(), {}, 10, {"LoadStd": tuple(places)})
    limits = fam.useful_from(first)
    for etype in ("LoadStd", "Balance"):
        assert (thi >= limits.get(etype, float("-inf"))) == fam.useful(etype, thi, first)


def test_the_same_records_with_less_fed(
    sample_events: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.evaluate
    from app.spark.stream.plan import FamilyPlan

    want = match(write_events(sample_events, tmp_path / "s.jsonl"))
    fed = [0]
    feed = engine.evaluate.PackFeeder.feed

    def counted(self: Any, ev: Any) -> Any:
        fed[0] += 1
        return feed(self, ev)

    monkeypatch.setattr(engine.evaluate.PackFeeder, "feed", counted)
    counts = []
    for narrowed in (True, False):
        if not narrowed:
            monkeypatch.setattr(FamilyPlan, "useful_from", lambda self, first: {})  # every keyless event useful
        for n in (1, 7):
            fed[0] = 0
            got, dead = run_batches(stream_plan(buckets=3, keyless=GANGLIA), _lines(sample_events, n))
            assert not dead
            assert_same_records(got, want)
            counts.append(fed[0])
    assert counts[0] < counts[2] and counts[1] < counts[3], counts
