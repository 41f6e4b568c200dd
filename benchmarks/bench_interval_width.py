"""Time per match against the width of the events' uncertainty intervals (issue 18).

Events far apart carrying an uncertainty of that size, as in the issue ("two events 1e5 s apart with delta of that
size"): ``A`` at 0 and ``B`` at ``w``, each with ``delta = w``; longer patterns spread their events evenly over
``[0, w]`` (``C`` at ``w``, the three ``B`` of the Kleene shape in between); the default tick of 0.1 s, so an
interval has ``2w / 0.1 + 1`` points.  Each configuration is matched with
:func:`engine.match_events` (the whole evaluator: enumeration, confidence, records), timed in CPU seconds, once with
the default method (``auto``: the segment sweep where it pays, :mod:`engine.imprecise.segments`) and once with the
tick DP alone (``ticks``, what the engine did before), stopped by an alarm after ``--budget`` seconds (its
cost jumps from linear to quadratic in the width once the window binds, so it cannot be extrapolated): a run over
the budget is shown as ``> B s`` and the larger widths are skipped.  Target: flat from 1 s to 1e6 s.

    python -m benchmarks.bench_interval_width [--quick] [--budget S]
"""

from __future__ import annotations

import argparse
import signal
import time

from engine import Event, compile_query, match_events
from engine.imprecise import confidence

TICK = 0.1
WIDTHS = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]

SHAPES = {
    "SEQ(A,B)": ("PATTERN SEQ(A a, B b)", "AB"),
    "SEQ(A,B) WITHIN 1 h": ("PATTERN SEQ(A a, B b) WITHIN 1 hour", "AB"),
    "SEQ(A,B,C) WITHIN 1 day": ("PATTERN SEQ(A a, B b, C c) WITHIN 1 day", "ABC"),
    "SEQ(A,B+,C) rising, 1 h": ("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].v >= b[i-1].v WITHIN 1 hour", "ABBBC"),
}


def events_for(types: str, width: float) -> list[Event]:
    """One event per letter, spread evenly over ``[0, width]`` seconds, each with ``delta = width``; ``v`` rises."""
    step = width / (len(types) - 1)
    return [
        Event(t, k * step, {"v": k}, id=f"{t.lower()}{k}", seq=k, lo=k * step - width, hi=k * step + width, tick=TICK)
        for k, t in enumerate(types)
    ]


def time_match(query: str, types: str, width: float, method: str) -> tuple[float, int]:
    """CPU seconds per ``match_events`` call (repeated until 0.2 s have passed, so that short calls are measured
    well), and how many records one call gives."""
    cq = compile_query(query, tick=TICK)
    events = events_for(types, width)
    old = confidence.METHOD
    confidence.METHOD = method
    try:
        calls = 0
        start = time.process_time()
        while True:
            records = match_events(cq, events)
            calls += 1
            spent = time.process_time() - start
            if spent >= 0.2 or calls >= 1000:
                return spent / calls, len(records)
    finally:
        confidence.METHOD = old


class OverBudget(Exception):
    """A tick-DP run used up its CPU-time budget."""


def within_budget(shape: str, width: float, method: str, budget: float) -> tuple[float, int] | None:
    """:func:`time_match` stopped by an alarm (``ITIMER_REAL``; a CPU-time timer coarsened the CPU clock) after
    ``budget`` seconds; ``None`` then."""

    def stop(_signum: int, _frame: object) -> None:
        raise OverBudget

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        return time_match(*SHAPES[shape], width, method)
    except OverBudget:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="widths up to 1e4 s, tick DP budget 10 s")
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="CPU seconds allowed to one tick-DP run; larger widths are skipped after one that ran out",
    )
    args = parser.parse_args(argv)
    widths = WIDTHS[:5] if args.quick else WIDTHS
    budget = 10.0 if args.quick else args.budget
    print(
        f"time per match (ms, CPU) against the half-width delta of the intervals; tick {TICK} s; "
        "'ticks' = the tick DP alone (before issue 18), '-' = skipped after exceeding the budget"
    )
    time_match(*SHAPES["SEQ(A,B,C) WITHIN 1 day"], 1.0, "auto")  # warm-up: first calls, imports
    print(f"| {'query':<26} | {'method':<8} | " + " | ".join(f"{w:>9g} s" for w in widths) + " |")
    print("|" + "---|" * (2 + len(widths)))
    for name, (query, types) in SHAPES.items():
        for method in ("auto", "ticks"):
            cells = []
            over = False
            for w in widths:
                if over:
                    cells.append(f"{'-':>11}")
                    continue
                if method == "ticks":
                    got = within_budget(name, w, method, budget)
                    if got is None:
                        cells.append(f"{'> ' + format(budget, 'g') + ' s':>11}")
                        over = True
                        continue
                    seconds, n = got
                else:
                    seconds, n = time_match(query, types, w, method)
                if n == 0:
                    raise SystemExit(f"{name} at {w} s: no match (the benchmark expects one)")
                cells.append(f"{seconds * 1e3 / n:>11.2f}")
            print(f"| {name:<26} | {method:<8} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
