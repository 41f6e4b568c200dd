"""The definitions of ``definitions.py`` as pure functions over plain values (millisecond times as the logs show
them), so the truth and the tests evaluate exactly the same thing.  Each returns its figures even when they fall short,
so a planted anomaly that misses can say why.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.definitions import QueuedOutput, SkewedMapper, SkewedReducer, SlowPull, UnbalancingReducer


# ------------------------------------------------------------------------------------------------ skewed tasks
@dataclass(frozen=True, slots=True)
class Run:
    """One task attempt: ``key`` is the caller's handle on it."""

    key: Any
    start_ms: int
    end_ms: int
    status: str

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True, slots=True)
class Skew:
    longest: Run
    duration_ms: int
    median_ms: float
    attempts: int
    knowable_ms: int
    qualifies: bool
    reason: str

    @property
    def ratio(self) -> float | None:
        return self.duration_ms / self.median_ms if self.median_ms > 0 else None

    @property
    def excess_ms(self) -> float:
        return self.duration_ms - self.median_ms


def skew(runs: Sequence[Run], rule: type[SkewedMapper | SkewedReducer] = SkewedMapper) -> Skew | None:
    """The job's longest attempt against the median of its successful ones (``rule``: SkewedMapper or SkewedReducer,
    same shape); None when the job has no attempt.  The first of equally long attempts counts as the longest."""
    if not runs:
        return None
    longest = max(runs, key=lambda r: r.duration_ms)
    ok = [r.duration_ms for r in runs if r.status == "SUCCEEDED"]
    median = float(statistics.median(ok)) if ok else 0.0
    ends = sorted(r.end_ms for r in runs)
    nth = ends[min(rule.MIN_ATTEMPTS, len(ends)) - 1]
    knowable = max(longest.end_ms, nth)
    d = longest.duration_ms
    if len(runs) < rule.MIN_ATTEMPTS:
        reason = f"{len(runs)} attempts (needs >= {rule.MIN_ATTEMPTS})"
    elif not ok:
        reason = "no successful attempt"
    elif d < rule.RATIO * median:
        reason = (
            f"longest {d / 1e3:.3f} s is {d / median:.2f}x the median {median / 1e3:.3f} s (needs >= {rule.RATIO:g}x)"
        )
    elif d - median < rule.MIN_EXCESS_S * 1000:
        reason = (
            f"longest {d / 1e3:.3f} s is only {(d - median) / 1e3:.3f} s over the median (needs >= "
            f"{rule.MIN_EXCESS_S:g} s)"
        )
    else:
        reason = ""
    return Skew(longest, d, median, len(runs), knowable, not reason, reason)


# -------------------------------------------------------------------------------------------------- slow pulls
@dataclass(frozen=True, slots=True)
class PullCheck:
    index: int  #: position in the caller's list
    duration_ms: int
    mean_before_ms: float
    pulls_before: int
    qualifies: bool
    reason: str


def _check(i: int, duration: int, total: int, n: int) -> PullCheck:
    mean = total / n if n else 0.0
    if n < SlowPull.MIN_BEFORE:
        reason = f"{n} fetches completed before it (needs >= {SlowPull.MIN_BEFORE})"
    elif duration < SlowPull.MIN_S * 1000:
        reason = f"took {duration / 1e3:.3f} s (needs >= {SlowPull.MIN_S:g} s)"
    elif duration * n < SlowPull.RATIO * total:
        reason = f"took {duration * n / total:.2f}x the mean before it (needs >= {SlowPull.RATIO:g}x)"
    else:
        reason = ""
    return PullCheck(i, duration, mean, n, not reason, reason)


def slow_pulls(pulls: Sequence[tuple[int, int]], watch: int | None = None) -> tuple[list[PullCheck], PullCheck | None]:
    """The fetches ``(start_ms, end_ms)`` of one reduce attempt that are slow pulls, and the figures of fetch number
    ``watch`` (the planted one) whether or not it is.  Fetches ending in the same millisecond do not precede each
    other."""
    longest = max((e - s for s, e in pulls), default=0)
    if longest < SlowPull.MIN_S * 1000 and watch is None:
        return [], None  # the common case: nothing long enough, no need to walk
    order = sorted(range(len(pulls)), key=lambda i: pulls[i][1])
    found: list[PullCheck] = []
    watched: PullCheck | None = None
    total = n = 0
    k, size = 0, len(order)
    while k < size:
        j, end = k, pulls[order[k]][1]
        while j < size and pulls[order[j]][1] == end:
            j += 1
        for i in order[k:j]:
            duration = pulls[i][1] - pulls[i][0]
            if duration >= SlowPull.MIN_S * 1000 or i == watch:
                check = _check(i, duration, total, n)
                if check.qualifies:
                    found.append(check)
                if i == watch:
                    watched = check
        for i in order[k:j]:
            total += pulls[i][1] - pulls[i][0]
            n += 1
        k = j
    return found, watched


# ---------------------------------------------------------------------------------------------- queued output
@dataclass(frozen=True, slots=True)
class Queue:
    start_ms: int | None  #: start of the first qualifying interval (None: none qualifies)
    held_ms: int  #: the longest interval with >= MIN_BYTES unfetched and no fetch completing (0: never that much)
    peak_bytes: int
    qualifies: bool
    reason: str


def queued(writes: Iterable[tuple[int, int]], fetches: Iterable[tuple[int, int]], end_ms: int) -> Queue:
    """A job's held map output from ``writes`` (map finish ms, materialized bytes) and ``fetches`` (fetch end ms,
    bytes); an interval still open at ``end_ms`` (output never fetched) ends there."""
    events = sorted([(t, b, False) for t, b in writes] + [(t, b, True) for t, b in fetches])
    need, hold = QueuedOutput.MIN_BYTES, int(QueuedOutput.MIN_HOLD_S * 1000)
    queue = peak = 0
    reach: int | None = None  # when the current fetch-free stretch first held >= need bytes
    first: int | None = None
    longest = 0

    def close(t: int) -> None:
        nonlocal first, longest
        if reach is not None:
            length = t - reach
            longest = max(longest, length)
            if first is None and length >= hold:
                first = reach

    k, size = 0, len(events)
    while k < size:
        t = events[k][0]
        j = k
        fetched = False
        while j < size and events[j][0] == t:
            _, nbytes, is_fetch = events[j]
            queue += -nbytes if is_fetch else nbytes
            fetched = fetched or is_fetch
            j += 1
        if fetched:
            close(t)
            reach = t if queue >= need else None
        elif reach is None and queue >= need:
            reach = t
        peak = max(peak, queue)
        k = j
    close(max(end_ms, events[-1][0]) if events else end_ms)
    if first is not None:
        reason = ""
    elif longest == 0:
        reason = f"at most {peak / (1 << 20):.0f} MiB unfetched at once (needs >= {need / (1 << 20):.0f} MiB)"
    else:
        reason = f"held >= {need >> 20} MiB for at most {longest / 1e3:.3f} s (needs >= {QueuedOutput.MIN_HOLD_S:g} s)"
    return Queue(first, longest, peak, first is not None, reason)


# ------------------------------------------------------------------------------------------ unbalancing reducers
@dataclass(frozen=True, slots=True)
class Round:
    """One Ganglia round: its time (ms), the population std and mean of load_one over the hosts, and the values."""

    ts_ms: int
    std: float
    mean: float
    values: Sequence[float]


def rounds_of(samples: Iterable[tuple[float, str, str, float]], hosts: Sequence[str]) -> list[Round]:
    """The rounds of ``(ts, host, metric, value)`` samples, values in ``hosts`` order (a missing host: NaN)."""
    index = {h: i for i, h in enumerate(hosts)}
    by_ts: dict[float, list[float]] = {}
    for ts, host, metric, value in samples:
        if metric == "load_one":
            by_ts.setdefault(ts, [float("nan")] * len(hosts))[index[host]] = value
    out = []
    for ts, values in sorted(by_ts.items()):
        present = [v for v in values if v == v]
        out.append(Round(int(round(ts * 1000)), statistics.pstdev(present), statistics.fmean(present), values))
    return out


@dataclass(frozen=True, slots=True)
class Unbalance:
    max_std: float | None  #: the largest round std during the attempt (None: no round during it)
    knowable_ms: int | None
    qualifies: bool
    reason: str


def unbalancing(
    contribution: float, start_ms: int, end_ms: int, node: int, rounds: Sequence[Round], threshold: float
) -> Unbalance:
    """Does a reduce attempt on host number ``node`` with this peak run-queue ``contribution`` meet the definition?"""
    during = [r for r in rounds if start_ms <= r.ts_ms <= end_ms]
    over = [r for r in during if r.std > threshold]
    max_std = max((r.std for r in during), default=None)
    host_high = next((r for r in over if r.values[node] - r.mean >= UnbalancingReducer.HOST_ABOVE_MEAN), None)
    knowable = (host_high or over[0]).ts_ms if over else None
    if contribution < UnbalancingReducer.MIN_CONTRIBUTION:
        reason = (
            f"adds at most {contribution:g} to its host's run queue (needs >= {UnbalancingReducer.MIN_CONTRIBUTION:g})"
        )
    elif not over:
        reason = f"load std-dev during it at most {max_std} (needs > {threshold:g} in one round)"
    else:
        reason = ""
    return Unbalance(max_std, knowable, not reason, reason)
