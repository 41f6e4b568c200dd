"""Deriving events from rounds: Metric, LoadStd (population std-dev of load_one), Balance/Imbalance, dedup."""

from __future__ import annotations

import math
import statistics

import pytest

from collectors.ganglia.derive import (
    Deduplicator,
    Round,
    Sample,
    load_std,
    round_events,
    rounds_from_document,
    rounds_from_samples,
)
from collectors.ganglia.xml import parse_document
from engine.events import event_from_json
from tests.collectors.ganglia.helpers import DATA


def _round(loads: dict[str, float], ts: float = 100.0, cluster: str = "c") -> Round:
    return Round(cluster, ts, [Sample(h, "load_one", v, ts - 1) for h, v in loads.items()])


def test_load_std_is_population_std_dev() -> None:
    values = [0.5, 2.5, 4.0, 4.41]
    std, mean = load_std(values)
    assert std == pytest.approx(statistics.pstdev(values)) and mean == pytest.approx(statistics.fmean(values))
    assert load_std([3.0]) == (0.0, 3.0)
    assert load_std([0.0, 0.0]) == (0.0, 0.0)


def test_load_std_does_not_overflow() -> None:
    # Found by fuzzing: gmetric accepts any double, and (v - mean) ** 2 overflowed.
    std, mean = load_std([1.0, 1.0, 1.8961503816218355e154, -1.7e308, 1.7e308])
    assert math.isfinite(std) and math.isfinite(mean) and std > 1e308


def test_round_events_shape() -> None:
    events = round_events(_round({"a": 1.0, "b": 3.0}), threshold=0.5)
    assert [e["type"] for e in events] == ["Metric", "Metric", "LoadStd", "Imbalance"]
    metric, _, std, imb = events
    assert metric == {
        "type": "Metric", "ts": 99.0, "id": "ganglia/c/a/load_one@99", "delta": 7.5,
        "host": "a", "metric": "load_one", "val": 1.0, "units": "", "cluster": "c",
        "cluster_mean": 2.0, "cluster_std": 1.0,  # the round's load statistics: is this host the outlier?
    }  # fmt: skip
    assert std == {
        "type": "LoadStd", "ts": 100.0, "id": "ganglia/c/LoadStd@100", "delta": 7.5,
        "val": 1.0, "mean": 2.0, "hosts": 2, "cluster": "c",
    }  # fmt: skip
    assert imb == {
        "type": "Imbalance", "ts": 100.0, "id": "ganglia/c/Imbalance@100", "delta": 7.5,
        "val": 1.0, "threshold": 0.5, "cluster": "c",
    }  # fmt: skip
    for i, e in enumerate(events):  # the engine reads them as they are (docs/semantics.md section 1)
        ev = event_from_json(e, i)
        assert ev.lo == e["ts"] - 7.5 and ev.hi == e["ts"] + 7.5


@pytest.mark.parametrize(("threshold", "kind"), [(0.99, "Imbalance"), (1.0, "Balance"), (1.01, "Balance")])
def test_threshold_boundary(threshold: float, kind: str) -> None:
    events = round_events(_round({"a": 1.0, "b": 3.0}), threshold=threshold, raw=False)  # std 1.0
    assert [e["type"] for e in events] == ["LoadStd", kind]


def test_options() -> None:
    rnd = Round("c", 10.0, [Sample("a", "load_one", 1.0, 10.0), Sample("a", "cpu_user", 50.0, 9.0, "%")])
    assert [e.get("metric") for e in round_events(rnd, metrics={"cpu_user"})] == ["cpu_user", None, None]
    assert "cluster_mean" not in round_events(rnd, metrics={"cpu_user"})[0]  # only the load metric carries them
    assert {e["delta"] for e in round_events(rnd, delta=2.0)} == {2.0}
    assert [e["type"] for e in round_events(Round("c", 1.0, [Sample("a", "cpu_user", 1.0, 1.0)]))] == ["Metric"]
    assert round_events(rnd, load_metric="cpu_user", raw=False)[0]["mean"] == 50.0


def test_rounds_from_gmond_dump_skip_down_hosts_and_text() -> None:
    doc = parse_document((DATA / "gmond_cluster.xml").read_bytes())
    (rnd,) = rounds_from_document(doc)
    hosts = {s.host for s in rnd.samples}
    assert hosts == {"localhost", "node-a", "node-b", "node-c"}  # fakeZ is down
    assert rnd.ts == 1795350229.0
    load = next(s for s in rnd.samples if s.host == "localhost" and s.metric == "load_one")
    assert load.ts == 1795350229.0 - 1  # LOCALTIME - TN
    assert not any(s.metric == "os_name" for s in rnd.samples)
    std = next(e for e in round_events(rnd) if e["type"] == "LoadStd")
    assert std["hosts"] == 4 and std["val"] == pytest.approx(statistics.pstdev([4.41, 0.5, 2.5, 4.0]))
    (with_down,) = rounds_from_document(doc, up_only=False)
    assert "fakeZ" in {s.host for s in with_down.samples}
    assert rounds_from_document(doc, cluster="other") == []


def test_rounds_from_gmetad_dump_and_unclustered_hosts() -> None:
    (rnd,) = rounds_from_document(parse_document((DATA / "gmetad_grid.xml").read_bytes()))
    assert rnd.cluster == "hcep" and rnd.ts == 1795350227.0
    loose = parse_document(
        b'<GANGLIA_XML><HOST NAME="h" REPORTED="50"><METRIC NAME="load_one" VAL="nan" TYPE="float"/>'
        b'<METRIC NAME="x" VAL="2" TYPE="float"/></HOST></GANGLIA_XML>'
    )
    (rnd,) = rounds_from_document(loose, default_cluster="mine")
    assert rnd.cluster == "mine" and rnd.ts == 50.0  # no LOCALTIME: the latest REPORTED
    assert [s.metric for s in rnd.samples] == ["x"]  # NaN is not an event value
    assert rounds_from_document(loose, now=70.0)[0].ts == 70.0


def test_rounds_from_samples_groups_by_cluster_and_time() -> None:
    rows = [
        (30.0, "c", "a", "load_one", 1.0),
        (15.0, "c", "a", "load_one", 2.0),
        (15.0, "c", "b", "load_one", 4.0),
        (15.0, "d", "a", "load_one", 9.0),
        (30.0, "c", "b", "load_one", float("nan")),
    ]
    rounds = rounds_from_samples(rows)
    assert [(r.cluster, r.ts, len(r.samples)) for r in rounds] == [("c", 15.0, 2), ("d", 15.0, 1), ("c", 30.0, 1)]


def test_deduplicator() -> None:
    dedup = Deduplicator()
    first = Round("c", 100.0, [Sample("a", "load_one", 1.0, 99.0), Sample("b", "load_one", 2.0, 99.0)])
    assert dedup.fresh(first) == first.samples
    assert dedup.fresh(Round("c", 100.0, first.samples)) is None  # same round again
    again = Round("c", 101.0, [Sample("a", "load_one", 1.0, 100.0), Sample("b", "load_one", 5.0, 100.0)])
    assert dedup.fresh(again) == [again.samples[1]]  # a: the same report seen a second later
    later = Round("c", 120.0, [Sample("a", "load_one", 1.0, 115.0), Sample("b", "load_one", 5.0, 99.0)])
    assert dedup.fresh(later) == [later.samples[0]]
    # LoadStd still uses every host of the round, only Metric events are filtered.
    events = round_events(later, fresh=[later.samples[0]])
    assert [e["type"] for e in events] == ["Metric", "LoadStd", "Imbalance"] and events[1]["hosts"] == 2
    assert dedup.fresh(Round("other", 1.0, [])) == []  # clusters are independent
