"""The NFA^b runtime's periodic sweep drops every run past its window, also when it skips the pools because no run
can be that old yet (``Matcher.oldest``), and after a restore (whose runs' starts it does not know)."""

from __future__ import annotations

from engine.events import Event
from engine.plan.compiler import compile_query
from engine.runtime.matcher import SWEEP_EVERY, Matcher

QUERY = "PATTERN SEQ(A a, B+ b[]) WHERE [k] WITHIN {w} s"


def _matcher(window: float) -> Matcher:
    cq = compile_query(QUERY.format(w=window), name="q", strategy="skip_till_next_match", output="all", tick=1.0)
    return Matcher(cq)


def _stream(n: int, start: int = 0) -> list[Event]:
    """One new partition every 50 events (its A), then B events of the partitions started lately."""
    out = []
    for i in range(start, start + n):
        key = i // 50
        etype = "A" if i % 50 == 0 else "B"
        out.append(Event(etype, float(i), {"k": key if etype == "A" else key - i % 3}, seq=i, tick=1.0))
    return out


def _expired(m: Matcher, window: float) -> int:
    return sum(1 for runs in m.pools.values() for r in runs if r.t_first <= m.now - window)


def test_sweep_drops_every_run_past_its_window() -> None:
    m = _matcher(500)
    for ev in _stream(3 * SWEEP_EVERY):  # ends right after a sweep
        m.feed(ev)
    assert m.fed % SWEEP_EVERY == 0
    assert _expired(m, 500) == 0
    assert 0 < m.runs_alive() == m.alive <= 500 // 50 + 1


def test_a_long_window_keeps_its_runs_and_a_later_sweep_still_drops_them() -> None:
    m = _matcher(2 * SWEEP_EVERY + 100)
    evs = _stream(5 * SWEEP_EVERY)
    for ev in evs[: 2 * SWEEP_EVERY]:  # the sweeps so far skip the pools: nothing is that old
        m.feed(ev)
    assert m.runs_alive() == 2 * SWEEP_EVERY // 50 + 1
    for ev in evs[2 * SWEEP_EVERY :]:
        m.feed(ev)
    assert _expired(m, 2 * SWEEP_EVERY + 100) == 0
    assert m.runs_alive() == m.alive < 5 * SWEEP_EVERY // 50


def test_a_restored_matcher_sweeps_its_restored_runs() -> None:
    window = 300
    m = _matcher(window)
    evs = _stream(4 * SWEEP_EVERY)
    for ev in evs[: SWEEP_EVERY + 10]:
        m.feed(ev)
    fresh = _matcher(window)
    fresh.restore(m.snapshot())
    for ev in evs[SWEEP_EVERY + 10 :]:
        m.feed(ev)
        fresh.feed(ev)
    assert _expired(fresh, window) == 0
    assert fresh.runs_alive() == m.runs_alive() > 0
