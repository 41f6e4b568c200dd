"""The checkpoint: one SQLite transaction holding the pending outputs, the offsets and the rebuild points.

What it writes and why a kill -9 at any moment then loses no record or alert transition and repeats none is
:mod:`app.checkpoint`'s subject; this module builds the :class:`app.store.Batch` from an :class:`~app.stream.epochs.
Epoch` and the :class:`~app.stream.outputs.Outputs`, commits it, and copies the offsets to the group (once a second:
they serve lag monitoring and hand-over to another host, the local store is what a restart trusts).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.checkpoint import offset_metadata
from app.metrics import Registry
from app.store import Batch, Store, unwritable
from app.stream.config import RECORDS_PER_CHECKPOINT, ServiceConfig, Tp
from app.stream.epochs import Epoch, instance_scope, scope
from app.stream.outputs import Outputs
from app.stream.source import Source
from app.testhooks import crash_point
from contracts.schema import AlertStateRow, CheckpointRow, OffsetRow

log = logging.getLogger("hcep.run")


@dataclass(frozen=True, slots=True)
class Committed:
    """What a checkpoint committed: how many alert transitions were new to the outbox, records, Alertmanager's."""

    new_alerts: int
    records: int
    alertmanager: list[Any]


class Checkpointer:
    def __init__(self, cfg: ServiceConfig, store: Store, metrics: Registry) -> None:
        self.cfg = cfg
        self.store = store
        self.metrics = metrics
        self.seq = 0  # the last checkpoint's number (per process; an exact replay needs every row to carry it)
        self.deadletter_path = f"{cfg.data_dir}/deadletter.jsonl"
        self._kafka_commit_at = 0.0
        self._last_positions: dict[Tp, int] | None = None

    def due(self, epoch: Epoch, outputs: Outputs, now: float, last: float) -> bool:
        """An alert waited ``alert_delay``, many records wait, or the interval passed with something to write."""
        if epoch.replaying:
            return False
        if outputs.first_alert_at is not None and now - outputs.first_alert_at >= self.cfg.alert_delay:
            return True
        if len(outputs.records) >= RECORDS_PER_CHECKPOINT:
            return True
        return now - last >= self.cfg.checkpoint_interval and (outputs.dirty or self._moved(epoch))

    def _moved(self, epoch: Epoch) -> bool:
        last = self._last_positions
        return last is None or any(epoch.position[tp] != last.get(tp) for tp in epoch.assignment)

    def commit(
        self,
        epoch: Epoch,
        outputs: Outputs,
        alert_state: Callable[[], dict[str, Any]],
        source: Source,
        force: bool = False,
    ) -> Committed | None:
        """Commit (None when there is nothing worth a checkpoint: mid-replay, or a fresh epoch that fed nothing,
        whose predecessor's checkpoint is worth more than one of a fresh engine).  Clears ``outputs``.
        ``alert_state``: the alert rules' snapshot, taken only when a checkpoint is written."""
        if epoch.replaying:
            return None
        if epoch.seq == 0 and not (outputs.records or outputs.dead):
            return None
        t0 = time.monotonic()
        cfg = self.cfg
        h = epoch.runner.horizon(epoch.last_t)
        self.seq += 1
        rows: list[OffsetRow] = []
        commits: dict[Tp, tuple[int, str]] = {}
        shared = set(cfg.shared_topics)
        for tp in sorted(epoch.assignment):
            start, newest = epoch.wm.tracker(tp).rebuild_point(h)
            pos = epoch.position[tp]
            rows.append(OffsetRow(scope(cfg, tp), tp[0], tp[1], pos, start, newest, cfg.instance, self.seq))
            if tp[0] in shared:
                commits[tp] = (pos, offset_metadata(start, newest))
        released = list(epoch.fed_key) if epoch.fed_key is not None else None
        me = instance_scope(cfg)
        batch = Batch(
            outputs.records,
            outputs.alerts,
            outputs.dead,
            rows,
            CheckpointRow(me, self.seq, released, h, [list(tp) for tp in sorted(epoch.assignment)]),
            outputs.events,
            alert_state=AlertStateRow(me, json.dumps(alert_state(), default=str), cfg.instance),
        )
        new_alerts = self.store.commit(batch)
        crash_point("checkpoint", "committed, outputs not yet handed on")
        if outputs.dead_lines:
            self._write_dead_lines(outputs.dead_lines)
        m = self.metrics
        for r in outputs.records:
            m.inc("hcep_matches_total", 1, {"query": r.query})
        for a in outputs.alerts:
            m.inc("hcep_alerts_total", 1, {"rule": a.rule, "severity": a.severity or "", "state": a.state})
        done = Committed(new_alerts, len(outputs.records), outputs.for_alertmanager)
        outputs.clear()
        self._last_positions = dict(epoch.position)
        if commits and (force or time.monotonic() - self._kafka_commit_at >= 1.0):
            source.commit(commits)
            self._kafka_commit_at = time.monotonic()
        m.inc("hcep_checkpoints_total")
        m.set("hcep_checkpoint_duration_seconds", time.monotonic() - t0)
        return done

    def _write_dead_lines(self, lines: list[str]) -> None:
        """Append to ``deadletter.jsonl``, a copy for people: the store's ``deadletter`` table (committed) is what
        counts, so a full disk here costs the copy its lines (logged and counted), never the checkpoint."""
        try:
            with open(self.deadletter_path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        except OSError as err:
            cause = unwritable(err)
            if cause is None:
                raise
            self.metrics.inc("hcep_store_write_errors_total", 1, {"cause": cause, "what": "deadletter.jsonl"})
            log.error(
                "%s: %d dead letter line(s) not written (%s); the store's deadletter table has them",
                self.deadletter_path,
                len(lines),
                cause,
            )
