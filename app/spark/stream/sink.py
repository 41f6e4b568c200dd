"""What a micro-batch leaves behind, written once whatever restarts happen (``foreachBatch`` with the batch id).

Layout under ``--output`` (the archive's, so ``hcep history``, ``hcep batch`` and the dashboard read it)::

    OUT/matches/date=D/query=Q/part-stream-<batch>-<i>.parquet   records (app.spark.archive.MATCH_SCHEMA)
    OUT/alerts/alerts-<batch>.jsonl                                alert transitions (Alertmanager v2 objects)
    OUT/dead_letters/dead-<batch>.jsonl                            late and invalid events, with the reason
    OUT/_stream/commits/<batch>.json                               the batch's counts and the alert rules' state

Why it cannot duplicate: every file name is a function of the batch id and the batch's content is a function of
its input offsets and the state before it (both in Spark's checkpoint), so a batch Spark runs again after a crash
rewrites the same files; files are written aside and renamed in, and the commit file, renamed in last, makes a
batch that Spark replays once more after it was committed here a no-op (the batch still runs, into Spark's
``noop`` sink, so that its state is committed).  The alert rules' state is carried from
commit to commit, so alerts are judged once per record, in record order.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.spark.archive import MATCH_PARTITIONS, MATCH_SCHEMA, MATCHES_DIR, _write, match_row, record_from_row
from app.spark.record_columns import record_of_row
from contracts.records import MatchRecord

STREAM_DIR = "_stream"
ALERTS_DIR = "alerts"
DEAD_DIR = "dead_letters"
#: Completion order of records within a batch (as ``hcep batch`` merges its groups').
ORDER = ("emit_mid2", "emit_seq", "qidx", "emit_idx", "gkey")
END = 2**62


class StopRequested(RuntimeError):
    """Raised by the sink for a batch that reaches it after a stop was asked for: Spark then commits nothing of
    that batch, and the next run on the checkpoint runs it again (see :meth:`StreamSink.close_gate`)."""


#: How :class:`StopRequested`'s message begins (Spark's log shows it for a batch refused at the stop).
STOP_MARK = "hcep stream: stop requested"


@dataclass
class Totals:
    """Counts since the stream began (carried in the commits)."""

    records: int = 0
    alerts: int = 0
    late: int = 0
    invalid: int = 0
    fed: int = 0
    batches: int = 0
    busy_ms: float = 0.0  # the operator's Python time (all workers), and its state share (snapshots, restores)
    state_ms: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)
    #: per query: partial matches the memory bounds (settings.limits) dropped, as ``hcep match`` reports them
    dropped: dict[str, int] = field(default_factory=dict)


def atomic_text(path: Path, text: str) -> None:
    """Write ``text`` aside, then rename it in: a reader sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, path)


class StreamSink:
    """The ``foreachBatch`` function (see the module doc).  ``pack``: the loaded pack (its alert rules);
    ``deliver``: called with each committed batch's alert transitions (Alertmanager, after the commit)."""

    def __init__(
        self,
        out: str,
        pack: Any,
        tick: float,
        *,
        publish: Callable[[list[MatchRecord]], None] | None = None,
        deliver: Callable[[list[Any]], None] | None = None,
    ) -> None:
        from app.alerts.rules import AlertEngine

        self.out = Path(out)
        self.tick = tick
        self.alerts = AlertEngine(pack)
        self.publish = publish
        self.deliver = deliver
        self.commits = self.out / STREAM_DIR / "commits"
        self.progress_log = self.out / STREAM_DIR / "progress.jsonl"
        self.totals = Totals()
        self.last_batch = -1
        self._gate = threading.Condition()
        self._busy = False
        self._closed = False
        self._load()

    def _load(self) -> None:
        done = sorted(int(p.stem) for p in self.commits.glob("*.json")) if self.commits.is_dir() else []
        if not done:
            return
        data = json.loads((self.commits / f"{done[-1]:012d}.json").read_text())
        self.last_batch = done[-1]
        self.alerts.restore(data.get("alerts_state"))
        self.totals = Totals(**data.get("totals", {}))

    def committed(self, batch_id: int) -> bool:
        return (self.commits / f"{batch_id:012d}.json").exists()

    def __call__(self, frame: Any, batch_id: int) -> None:
        with self._gate:
            if self._closed:
                raise StopRequested(f"{STOP_MARK} before batch {batch_id} (it runs again at the next start)")
            self._busy = True
        try:
            if self.committed(batch_id):
                # Spark runs again a batch this sink committed before a stop or crash: its outputs are here, but
                # the batch must still run, so that the state operator commits its state for it (Spark checks
                # that every partition did: STATE_STORE_COMMIT_VALIDATION_FAILED otherwise).
                frame.write.format("noop").mode("overwrite").save()
                return
            rows = [r.asDict() for r in frame.collect()]  # runs the batch: the state operator's job
            self.write(rows, batch_id)
        finally:
            with self._gate:
                self._busy = False
                self._gate.notify_all()

    @property
    def busy(self) -> bool:
        """A batch is in the sink (and, since ``collect`` runs the batch's job, in the state operator)."""
        return self._busy

    def close_gate(self, timeout: float) -> bool:
        """Refuse batches from now on and wait up to ``timeout`` s for the one in the sink; True when none is.

        Why: stopping a query cancels its running job, and a cancel that lands inside ``foreachBatch`` comes back to
        Spark as a py4j error whose long text overflows the stack of Spark's own error matching, killing the
        stream thread before it cleans up.  A batch refused here raises :class:`StopRequested` before it starts;
        Spark commits nothing of it."""
        with self._gate:
            self._closed = True
            return self._gate.wait_for(lambda: not self._busy, timeout)

    def write(self, rows: list[dict[str, Any]], batch_id: int) -> None:
        """Commit one batch's operator output (plain dicts of :data:`app.spark.stream.state.OUT_SCHEMA`)."""
        records = sorted((r for r in rows if r["kind"] == "record"), key=lambda r: tuple(r[c] for c in ORDER))
        dead = sorted((r for r in rows if r["kind"] == "dead"), key=lambda r: (r["origin"] or "", r["pos"] or 0))
        clocks = [r for r in rows if r["kind"] == "clock"]
        wm_ms = max((r["wm"] for r in clocks), default=0)
        fed = sum(r["fed"] or 0 for r in clocks)
        name = f"{batch_id:012d}"
        dicts = [record_of_row(r) for r in records]
        transitions = self._judge(records, dicts, wm_ms)
        staging = self.out / STREAM_DIR / "staging" / name
        shutil.rmtree(staging, ignore_errors=True)
        if dicts:
            rows_out = [match_row(d, i) for i, d in enumerate(dicts)]
            _write(staging, rows_out, MATCH_SCHEMA, MATCH_PARTITIONS, f"stream-{name}")
            for file in sorted(staging.rglob("*.parquet")):
                final = self.out / MATCHES_DIR / file.relative_to(staging)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(file, final)
        shutil.rmtree(staging, ignore_errors=True)
        if transitions:
            text = "".join(json.dumps(a.to_json()) + "\n" for a in transitions)
            atomic_text(self.out / ALERTS_DIR / f"alerts-{name}.jsonl", text)
        if dead:
            text = "".join(
                json.dumps({"reason": d["reason"], "origin": d["origin"], "pos": d["pos"], "text": d["text"]}) + "\n"
                for d in dead
            )
            atomic_text(self.out / DEAD_DIR / f"dead-{name}.jsonl", text)
        t = self.totals
        t.records += len(dicts)
        t.alerts += len(transitions)
        t.fed += fed
        t.batches += 1
        t.busy_ms += sum(r.get("busy_ms") or 0.0 for r in clocks)
        t.state_ms += sum(r.get("state_ms") or 0.0 for r in clocks)
        for d in dead:
            reason = "late" if d["reason"] == "late" else "invalid"
            t.reasons[reason] = t.reasons.get(reason, 0) + 1
        for r in rows:
            if r["kind"] == "dropped" and r["emit_idx"]:  # app.spark.stream.state.drops_row
                t.dropped[r["query"]] = t.dropped.get(r["query"], 0) + int(r["emit_idx"])
        t.late = t.reasons.get("late", 0)
        t.invalid = t.reasons.get("invalid", 0)
        commit = {
            "batch": batch_id,
            "records": len(dicts),
            "alert_count": len(transitions),
            "dead": len(dead),
            "late": sum(1 for d in dead if d["reason"] == "late"),
            "watermark_ms": wm_ms,
            "totals": t.__dict__,
            "alerts_state": self.alerts.snapshot(),
        }
        atomic_text(self.commits / f"{name}.json", json.dumps(commit, default=str))
        self.last_batch = batch_id
        if self.publish is not None and dicts:
            self.publish(dicts)  # after the commit: at-least-once, keyed by record id
        if self.deliver is not None and transitions:
            self.deliver(transitions)

    def _judge(self, rows: list[dict[str, Any]], dicts: list[MatchRecord], wm_ms: int) -> list[Any]:
        """The alert rules over the batch's records in completion order, in stream time (the completing event's
        point; a record flushed at a group's expiry or the end counts at the watermark), then the watermark."""
        out: list[Any] = []
        engine = self.alerts
        wm = wm_ms / 1000.0 if wm_ms > 0 else -math.inf
        for row, record in zip(rows, dicts, strict=True):
            at = row["emit_mid2"] * self.tick / 2 if row["emit_mid2"] < END else max(engine.now, wm)
            out.extend(engine.observe(record, max(at, engine.now)))
        if wm > engine.now:
            out.extend(engine.advance(wm))
        return out


def read_records(out: str) -> list[MatchRecord]:
    """The records a stream wrote under ``out`` (docs/semantics.md section 5), in commit order."""
    from app.spark.archive import read_table

    table = read_table(out, MATCHES_DIR)
    return [record_from_row(r) for r in table.to_pylist()]


def read_jsonl_dir(base: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not base.is_dir():
        return out
    for path in sorted(base.glob("*.jsonl")):
        out.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return out


def read_alerts(out: str) -> list[dict[str, Any]]:
    return read_jsonl_dir(Path(out) / ALERTS_DIR)


def read_dead(out: str) -> list[dict[str, Any]]:
    return read_jsonl_dir(Path(out) / DEAD_DIR)


def totals(out: str) -> dict[str, Any]:
    """The newest commit's totals (what ``hcep stream`` prints at the end)."""
    base = Path(out) / STREAM_DIR / "commits"
    done = sorted(base.glob("*.json")) if base.is_dir() else []
    if not done:
        return Totals().__dict__
    return dict(json.loads(done[-1].read_text())["totals"])


def warn(text: str) -> None:
    print(f"hcep stream: {text}", file=sys.stderr, flush=True)
