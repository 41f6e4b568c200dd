"""Issue 18's case through the public API: two events far apart with an uncertainty of that size.  The tick DP took
9 s at 1e5 s and more than a minute at 1e6 s; the segment sweep takes milliseconds whatever the width.  The bound
here is generous (the figures are in benchmarks/README.md); an alarm stops the old behaviour instead of waiting."""

from __future__ import annotations

import math
import signal
import time

import pytest

from engine import Event, compile_query, match_events


@pytest.mark.parametrize("delta", [1e5, 1e6])
@pytest.mark.parametrize("within", ["", " WITHIN 1 hour", " WITHIN 2 days"])
def test_two_wide_events_match_in_bounded_time(delta: float, within: str) -> None:
    events = [
        Event("A", 0.0, {}, id="a", seq=0, lo=-delta, hi=delta),
        Event("B", delta, {}, id="b", seq=1, lo=0.0, hi=2 * delta),
    ]
    cq = compile_query(f"PATTERN SEQ(A a, B b){within}")

    def stop(_signum: int, _frame: object) -> None:
        raise TimeoutError("the confidence walked the ticks of the intervals")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    try:
        start = time.process_time()
        (record,) = match_events(cq, events)
        assert time.process_time() - start < 5.0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    n = int(2 * delta / 0.1) + 1  # points per interval
    if not within:  # P(t_a < t_b) for the two intervals, counted in closed form
        shift = int(delta / 0.1)
        below = n * n - (n - shift) * (n - shift + 1) // 2  # pairs with t_b - t_a >= 1 ... by complement
        assert math.isclose(record["confidence"], below / (n * n), rel_tol=1e-12)
    assert 0.0 < record["confidence"] <= 1.0
