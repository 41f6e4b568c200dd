"""Shared benchmark helpers: deterministic stream generators, a time-boxed runner and table printing.

Streams are generated lazily and cached (:class:`LazyStream`), so a configuration that stops early on its time budget
never pays for events it did not use, and event construction is never part of a measured time: only
:meth:`engine.runtime.matcher.Matcher.feed` is timed, in CPU time of this process (:func:`clock`), so that other jobs
on a shared machine disturb the figures less than they would wall-clock time.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from engine.events import Event
from engine.plan.compiler import CompiledQuery
from engine.runtime.matcher import Matcher

#: The benchmark clock: CPU seconds of this process (wall time would count the time other processes hold the CPU).
clock = time.process_time

STRATEGY_SHORT = {
    "skip_till_any_match": "any",
    "skip_till_next_match": "next",
    "partition_contiguity": "part",
    "strict_contiguity": "strict",
}

# ---------------------------------------------------------------------------------------------------- streams


def stock_stream(
    seed: int = 1, symbols: int = 2, p_up: float = 0.7, price_range: tuple[int, int] = (1, 1000), tick: float = 1.0
) -> Iterator[Event]:
    """The SASE+ paper's stock ticker (digest-nfab section 11): endless ``Stock`` events one tick apart.

    Each event picks a symbol uniformly; that symbol's price moves up with probability ``p_up``, down or stays with
    ``(1 - p_up) / 2`` each, wrapping around the range (a clamped walk with upward drift would sit at the top forever);
    ``volume`` is uniform over 1..1000.  Starting prices are uniform over the range.
    """
    rng = random.Random(seed)
    lo, hi = price_range
    span = hi - lo + 1
    prices = [rng.randint(lo, hi) for _ in range(symbols)]
    p_down = p_up + (1.0 - p_up) / 2
    i = 0
    while True:
        s = rng.randrange(symbols)
        u = rng.random()
        if u < p_up:
            prices[s] = lo + (prices[s] - lo + 1) % span
        elif u < p_down:
            prices[s] = lo + (prices[s] - lo - 1) % span
        yield Event(
            "Stock", i * tick, {"symbol": s, "price": prices[s], "volume": rng.randint(1, 1000)}, seq=i, tick=tick
        )
        i += 1


def abc_stream(
    seed: int = 1,
    partitions: int = 10,
    mix: tuple[float, float, float] = (0.2, 0.6, 0.2),
    v_range: int = 100,
    dt: float = 1.0,
    tick: float = 1.0,
) -> Iterator[Event]:
    """Endless ``A``/``B``/``C`` events ``dt`` seconds apart, type drawn from ``mix``, key ``k`` uniform over
    ``partitions`` values, ``v`` uniform over ``0..v_range-1`` (so ``b[i].v < X`` has selectivity ``X / v_range``)."""
    rng = random.Random(seed)
    pa, pb, _ = mix
    pab = pa + pb
    rand, randrange = rng.random, rng.randrange
    i = 0
    while True:
        u = rand()
        etype = "A" if u < pa else "B" if u < pab else "C"
        yield Event(etype, i * dt, {"k": randrange(partitions), "v": randrange(v_range)}, seq=i, tick=tick)
        i += 1


class LazyStream:
    """A generator's events, materialised on demand and kept, so several configurations share one stream.

    After each extension the cached events are moved out of the garbage collector's reach (:func:`gc.freeze`): a big
    cache would otherwise make every full collection during a measurement slower, an artefact of the benchmark.
    """

    def __init__(self, source: Iterator[Event], block: int = 20_000) -> None:
        self.source = source
        self.block = block  # events generated at a time (the source is endless)
        self.events: list[Event] = []

    def slice(self, start: int, size: int) -> list[Event]:
        """Events ``start .. start+size-1`` of the stream."""
        need = start + size - len(self.events)
        if need > 0:
            nxt = self.source.__next__
            self.events.extend(nxt() for _ in range(max(need, self.block)))
            gc.collect()
            gc.freeze()
        return self.events[start : start + size]


# ---------------------------------------------------------------------------------------------------- runner


@dataclass
class RunResult:
    """What one configuration did: events fed, matcher time, matches, runs alive (sampled), why it stopped."""

    events: int
    seconds: float
    matches: int
    runs_mean: float
    runs_max: int
    match_len: float  # mean number of events per match (all components), 0 when there were none
    stopped: str  # "" (ran to the end), "time" (budget), "runs" (runs-alive cap)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def run_config(
    cq: CompiledQuery,
    stream: LazyStream,
    limit: int,
    budget: float,
    sample_every: int = 1000,
    max_runs: int | None = None,
    on_records: Callable[[list[dict]], None] | None = None,
) -> RunResult:
    """Feed up to ``limit`` events of ``stream`` to a fresh matcher, stopping after ``budget`` CPU seconds of matcher
    time or once more than ``max_runs`` runs are alive.  Runs alive are sampled after every ``sample_every`` events
    (the chunk size; use 1 for configurations that can blow up within a chunk)."""
    m = Matcher(cq)
    feed = m.feed
    pos = 0
    elapsed = 0.0
    matches = 0
    length = 0
    samples: list[int] = []
    stopped = ""
    while pos < limit:
        chunk = stream.slice(pos, min(sample_every, limit - pos))
        out: list[dict] = []
        extend = out.extend
        t0 = clock()
        for ev in chunk:
            extend(feed(ev))
        elapsed += clock() - t0
        pos += len(chunk)
        matches += len(out)
        for rec in out:
            length += sum(len(ids) for ids in rec["match"].values())
        if on_records is not None:
            on_records(out)
        alive = m.runs_alive()
        samples.append(alive)
        if max_runs is not None and alive > max_runs:
            stopped = "runs"
            break
        if elapsed >= budget and pos < limit:
            stopped = "time"
            break
    return RunResult(
        events=pos,
        seconds=elapsed,
        matches=matches,
        runs_mean=sum(samples) / len(samples) if samples else 0.0,
        runs_max=max(samples, default=0),
        match_len=length / matches if matches else 0.0,
        stopped=stopped,
    )


# ---------------------------------------------------------------------------------------------------- formatting


def fmt_int(n: float) -> str:
    """A count with thousands separators."""
    return f"{int(round(n)):,}"


def fmt_rate(r: float) -> str:
    """Events/s with three significant figures."""
    if r >= 100:
        return f"{int(round(r, -len(str(int(r))) + 3)):,}"
    return f"{r:.3g}"


def fmt_float(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f}"


def have_rich() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    plain: bool = False,
    file: TextIO | None = None,
) -> None:
    """Print a table: with ``rich`` when it is installed (and ``plain`` is false), else as a Markdown pipe table
    (what benchmarks/README.md embeds).  Numeric-looking cells are right-aligned."""
    out = file if file is not None else sys.stdout
    cells = [[str(c) for c in row] for row in rows]
    right = [_numeric_column([row[j] for row in cells]) for j in range(len(columns))]
    if not plain and have_rich():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for col, r in zip(columns, right, strict=True):
            table.add_column(col, justify="right" if r else "left")
        for row in cells:
            table.add_row(*row)
        Console(file=out).print(table)
        return
    widths = [max([len(col)] + [len(row[j]) for row in cells]) for j, col in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True)]
        return "| " + " | ".join(parts) + " |"

    print(f"\n**{title}**\n", file=out)
    print(line(list(columns)), file=out)
    print(
        "|"
        + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right, strict=True))
        + "|",
        file=out,
    )
    for row in cells:
        print(line(row), file=out)
    out.flush()


def _numeric_column(cells: list[str]) -> bool:
    """Right-align a column whose cells are all numbers (ignoring ``,%*`` and blank or ``-`` cells)."""
    values = [c.replace(",", "").replace("%", "").replace("*", "").strip() for c in cells]
    values = [v for v in values if v not in ("", "-")]
    if not values:
        return False
    try:
        for v in values:
            float(v)
    except ValueError:
        return False
    return True
