"""The ground truth's anomaly definitions: each on hand-built attempts, pulls, queues and load rounds at its
boundaries; and on simulated clusters, every planted anomaly listed as planted while natural ones stay rare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator import SimConfig, detect, simulate
from simulator.definitions import GIB, KINDS, SkewedMapper, SkewedReducer, texts
from simulator.detect import Round, Run

S = 1000  # ms per second


# ---------------------------------------------------------------------------------------------------- skewed tasks
def _job(longest_s: float, median_s: float, n: int = 5, status: str = "SUCCEEDED") -> list[Run]:
    """``n`` attempts: n-1 of ``median_s`` seconds (all successful) and one of ``longest_s`` ending last."""
    runs = [Run(i, 0, int(median_s * S), "SUCCEEDED") for i in range(n - 1)]
    return [*runs, Run("slow", 10 * S, 10 * S + int(longest_s * S), status)]


@pytest.mark.parametrize(
    ("longest", "median", "n", "ok"),
    [
        (160.0, 40.0, 5, True),  # exactly 4x and 120 s more
        (159.6, 40.0, 5, False),  # 3.99x
        (158.0, 39.0, 5, False),  # 4.05x but only 119 s more
        (159.0, 39.0, 5, True),  # 120 s more
        (400.0, 40.0, 4, False),  # 4 attempts
        (400.0, 40.0, 5, True),
    ],
)
def test_skew_boundaries(longest: float, median: float, n: int, ok: bool) -> None:
    for rule in (SkewedMapper, SkewedReducer):
        found = detect.skew(_job(longest, median, n), rule)
        assert found is not None and found.qualifies is ok, found
        assert found.longest.key == "slow" and found.attempts == n


def test_a_killed_straggler_counts_and_only_successes_make_the_median() -> None:
    runs = _job(300.0, 40.0, 6, status="KILLED")
    runs.append(Run("failed", 0, 5 * S, "FAILED"))  # short failures do not pull the median down
    found = detect.skew(runs)
    assert found is not None and found.qualifies and found.longest.status == "KILLED"
    assert found.median_ms == 40 * S and found.ratio == pytest.approx(7.5) and found.excess_ms == 260 * S


def test_skew_median_of_an_even_count_and_knowable_at() -> None:
    runs = [Run(i, 0, d * S, "SUCCEEDED") for i, d in enumerate((10, 20, 30, 40, 50))]
    runs.append(Run("slow", 0, 200 * S, "SUCCEEDED"))
    found = detect.skew(runs)
    assert found is not None and found.median_ms == 35 * S and found.qualifies  # 200 / 35 = 5.7x, 165 s more
    assert found.knowable_ms == 200 * S  # the longest ends after the 5th attempt to finish
    early = [
        Run("slow", 0, 200 * S, "KILLED"),
        *(Run(i, 300 * S, 300 * S + 20 * S * (i + 1), "SUCCEEDED") for i in range(5)),
    ]
    found = detect.skew(early)
    assert found is not None and found.knowable_ms == 300 * S + 80 * S  # the 5th attempt to finish comes later


# ------------------------------------------------------------------------------------------------------ slow pulls
def _pulls(*durations_s: float) -> list[tuple[int, int]]:
    """Fetches one after the other, each starting when the previous ended (+1 ms)."""
    out, t = [], 0
    for d in durations_s:
        out.append((t, t + int(round(d * S))))
        t += int(round(d * S)) + 1
    return out


@pytest.mark.parametrize(
    ("durations", "slow"),
    [
        ((1.0, 1.0, 30.0), [2]),  # 30 s and 30x
        ((1.0, 1.0, 29.9), []),  # 29.9 s
        ((3.1, 3.1, 30.0), []),  # 30 s but 9.7x the mean before
        ((3.0, 3.0, 30.0), [2]),  # exactly 10x
        ((1.0, 30.0), []),  # one fetch before it
        ((1.0, 1.0, 30.0, 1.0, 400.0), [2, 4]),  # two in one reducer: separate entries
    ],
)
def test_slow_pull_boundaries(durations: tuple[float, ...], slow: list[int]) -> None:
    found, _ = detect.slow_pulls(_pulls(*durations))
    assert [c.index for c in found] == slow


def test_fetches_ending_in_the_same_millisecond_do_not_precede_each_other() -> None:
    pulls = [(0, 1000), (0, 1000), (1000, 1500), (0, 31_000)]
    found, watched = detect.slow_pulls(pulls, watch=3)
    assert [c.index for c in found] == [3] and watched is found[0]
    assert watched.pulls_before == 3 and watched.mean_before_ms == pytest.approx(2500 / 3)
    tie = [(0, 1000), (0, 1000), (1000, 31_000), (1000, 31_000)]  # two slow ones ending together: neither before
    found, watched = detect.slow_pulls(tie, watch=2)
    assert [c.index for c in found] == [2, 3] and watched is not None and watched.pulls_before == 2


# --------------------------------------------------------------------------------------------------- queued output
HALF = GIB // 2


@pytest.mark.parametrize(("fetch_s", "ok"), [(189.0, False), (190.0, True)])
def test_queued_output_hold_boundary(fetch_s: float, ok: bool) -> None:
    """1 GiB is reached at 10 s; the first fetch 179 s or 180 s later."""
    found = detect.queued([(0, HALF), (10 * S, HALF)], [(int(fetch_s * S), GIB)], 10**9)
    assert found.qualifies is ok and found.held_ms == int(fetch_s * S) - 10 * S and found.peak_bytes == GIB
    assert found.start_ms == (10 * S if ok else None)


def test_queued_output_intervals_restart_at_each_fetch() -> None:
    writes = [(0, 2 * GIB)]
    fetches = [(100 * S, HALF), (279 * S, HALF // 2), (500 * S, HALF)]  # 1.5 GiB left from 100 s, 1.25 from 279 s
    found = detect.queued(writes, fetches, 10**9)
    assert found.qualifies and found.start_ms == 279 * S and found.held_ms == 221 * S  # 279 -> 500 s
    found = detect.queued(writes, fetches[:2] + [(458 * S, 2 * GIB - HALF - HALF // 2)], 10**9)
    assert not found.qualifies and found.held_ms == 179 * S  # 100 -> 279 s and 279 -> 458 s: 179 s each
    assert not detect.queued([(0, GIB - 1)], [(10**6, GIB - 1)], 10**9).qualifies  # never 1 GiB
    never = detect.queued([(0, GIB)], [], 200 * S)  # never fetched: held until the end of the window
    assert never.qualifies and never.held_ms == 200 * S


# --------------------------------------------------------------------------------------------- unbalancing reducer
def _rounds(stds: list[float], host_above: list[float]) -> list[Round]:
    """Rounds every 15 s from 0; host 0 is ``host_above`` over the round mean (mean 1.0)."""
    return [
        Round(k * 15 * S, std, 1.0, [1.0 + above, 1.0])
        for k, (std, above) in enumerate(zip(stds, host_above, strict=True))
    ]


@pytest.mark.parametrize(("contribution", "ok"), [(7.9, False), (8.0, True)])
def test_unbalancing_contribution_boundary(contribution: float, ok: bool) -> None:
    rounds = _rounds([0.5, 1.5, 2.0, 0.5], [0.0, 5.0, 12.0, 0.0])
    found = detect.unbalancing(contribution, 0, 45 * S, 0, rounds, 1.0)
    assert found.qualifies is ok and found.max_std == 2.0


def test_unbalancing_needs_an_imbalanced_round_during_it_and_knows_when() -> None:
    rounds = _rounds([0.5, 1.5, 2.0, 0.9, 3.0], [0.0, 5.0, 12.0, 0.0, 20.0])
    assert detect.unbalancing(9.0, 0, 45 * S, 0, rounds, 1.0).knowable_ms == 30 * S  # host 10 over the mean
    assert detect.unbalancing(9.0, 0, 20 * S, 0, rounds, 1.0).knowable_ms == 15 * S  # none: first round over
    assert detect.unbalancing(9.0, 45 * S, 50 * S, 0, rounds, 1.0).qualifies is False  # std 0.9 only
    assert detect.unbalancing(9.0, 45 * S, 60 * S, 0, rounds, 1.0).knowable_ms == 60 * S  # rounds at the ends count
    assert detect.unbalancing(9.0, 0, 45 * S, 0, rounds, 2.0).qualifies is False  # std must exceed the threshold


def test_definitions_name_their_constants() -> None:
    text = texts(1.5)
    assert set(text) == set(KINDS)
    assert ">= 5 map attempts" in text["skewed_mapper"] and ">= 4x" in text["skewed_mapper"]
    assert ">= 30 s" in text["slow_pull"] and ">= 1 GiB" in text["queued_output"] and "(1.5)" in text[KINDS[-1]]


# ------------------------------------------------------------------------------------------------ simulated clusters
CLUSTERS = [(trace, nodes, seed) for trace in ("fb2009", "fb2010") for nodes in (20, 200) for seed in (1, 2, 3)]


@pytest.mark.parametrize(("trace", "nodes", "seed"), CLUSTERS)
def test_every_planted_anomaly_is_listed_and_natural_ones_are_rare(
    tmp_path: Path, trace: str, nodes: int, seed: int
) -> None:
    simulate(SimConfig(nodes=nodes, seed=seed, trace=trace), str(tmp_path), ganglia="none")
    truth = json.loads((tmp_path / "ground_truth.json").read_text())
    anomalies = truth["anomalies"]
    assert set(anomalies) == set(truth["definitions"]) == set(KINDS)
    listed = {k: sum(e["planted"] for e in v) for k, v in anomalies.items()}
    print(f"\n{trace} {nodes} nodes seed {seed}: planted {truth['planted_per_kind']}, natural {truth['natural']}")
    assert listed == truth["planted_per_kind"]
    assert not any(truth["planted_not_anomalous"].values()), truth["planted_not_anomalous"]
    assert truth["planted_per_kind"]["unbalancing_reducer"] >= 3
    if trace == "fb2010":  # enough eligible jobs for every kind
        assert all(n >= 3 for n in truth["planted_per_kind"].values()), truth["planted_per_kind"]
    assert sum(truth["natural"].values()) <= 2
    for entries in anomalies.values():
        assert [e["knowable_at"] for e in entries] == sorted(e["knowable_at"] for e in entries)
        assert all(truth["window"]["start"] <= e["knowable_at"] <= truth["window"]["end"] for e in entries)


def test_the_truth_is_deterministic(tmp_path: Path) -> None:
    cfg = {"nodes": 20, "hours": 0.3, "seed": 4, "trace": "fb2010"}
    for name in "ab":
        simulate(SimConfig(**cfg), str(tmp_path / name), ganglia="none")
    a, b = ((tmp_path / n / "ground_truth.json").read_text() for n in "ab")
    assert a == b and json.loads(a)["anomalies"]
