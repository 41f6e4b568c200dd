"""A progress bar for long Spark jobs: Spark tasks done / seen, polled from the status tracker.

Why not Spark's console progress: it draws on stdout (which carries match records) and cannot be themed; this bar
goes to stderr through tqdm when it is installed (plain lines every few seconds otherwise) and only when asked or when
stderr is a terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def wanted(flag: bool | None) -> bool:
    """``--progress`` / ``--no-progress`` / default: on for a terminal."""
    return sys.stderr.isatty() if flag is None else flag


class _Plain:
    """tqdm's interface, as a line every 5 s."""

    def __init__(self, desc: str) -> None:
        self.desc = desc
        self.total = 0
        self.n = 0
        self._last = 0.0

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self._last >= 5:
            self._last = now
            print(f"{self.desc}: {self.n}/{self.total} Spark tasks", file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        print(f"{self.desc}: {self.n}/{self.total} Spark tasks, done", file=sys.stderr, flush=True)


def _bar(desc: str) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return _Plain(desc)
    return tqdm(total=0, desc=desc, unit="task", file=sys.stderr, leave=True, dynamic_ncols=True)


@contextmanager
def spark_progress(spark: Any, desc: str, enabled: bool = True, interval: float = 0.5) -> Iterator[None]:
    """Show the tasks of every stage that runs inside the block (all stages of this session's jobs)."""
    if not enabled:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    bar = _bar(desc)
    stop = threading.Event()
    seen: dict[int, tuple[int, int]] = {}

    def poll() -> None:
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                seen[stage_id] = (info.numTasks, info.numCompletedTasks)
        bar.total = sum(t for t, _ in seen.values())
        bar.n = sum(min(d, t) for t, d in seen.values())
        bar.set_postfix_str(f"{len(seen)} stages")
        bar.refresh()

    def loop() -> None:
        while not stop.wait(interval):
            try:
                poll()
            except Exception:  # noqa: BLE001 - the bar must never break the job (e.g. the JVM is stopping)
                return

    thread = threading.Thread(target=loop, name="hcep-spark-progress", daemon=True)
    thread.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        stop.set()
        thread.join()
        if ok:  # stages that finished between two polls still count as done
            bar.total = sum(t for t, _ in seen.values())
            bar.n = bar.total
            bar.refresh()
        bar.close()
