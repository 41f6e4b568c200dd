"""Checkpoints and recovery: why a kill -9 at any moment loses no alert and sends none twice.

**What a checkpoint is.**  The engine's state (runs, buffers; compiled predicate closures) is not pickled.  Instead one
SQLite transaction (:meth:`app.store.Store.commit`) writes, together:

1. every match record and alert the engine produced since the previous checkpoint (the alert rows are the webhook
   outbox: nothing is sent before it is committed);
2. the events dead-lettered since then, by ``(topic, partition, offset, index)``;
3. per partition: ``position`` (the next offset to read), ``rebuild_from`` and ``newest`` (below);
4. per process: ``released`` = K, the release key of the last event fed to the engine, and ``horizon`` = H.

**Determinism.**  The engine's input is a deterministic function of the partitions' contents: the lateness rule of
:mod:`app.watermark` looks only at a partition's own history (``newest``), events are released in the total key
order ``(t, source, partition, offset, index)``, the evaluators get a fixed maximum uncertainty (wider events are
dead-lettered), and ``seq`` is assigned in release order.  The only decisions that depend on timing (an idle
partition that speaks again behind the watermark) are recorded as dead letters, and a replay re-applies the recorded
decisions for the offsets it had read.  So the events fed up to K are the same on every run; call them E.

**Horizon.**  Every output the engine can still produce after K depends only on events whose latest possible tick
``thi`` is >= H (:func:`horizon`): a run or signature still open at K started less than a window W before the newest
fed time (plus the uncertainty U on each side for the imprecise evaluator's safe-emit delay), and a held ``distinct``
record keeps its best signature, whose start H also covers.  ``rebuild_from`` is the smallest offset of the partition
whose event has ``thi >= H`` (:class:`app.watermark.RebuildTracker`), and ``newest`` the newest time before it.

**Restart** (same process, same assignment: the checkpoint's seq matches every partition's row): seek every
partition to ``rebuild_from``, set its ``newest``, skip the recorded dead letters, feed in key order the events with
key <= K and ``thi >= H`` while *discarding* their outputs, then continue live.  The engine fed ``E ∩ {thi >= H}``
reaches, at K, a state whose future outputs equal those of the engine fed all of E (horizon property), and the
events after K are read from the same offsets as before.  Hence the outputs after K equal those the killed process
would have produced after K; the outputs up to K were committed by the checkpoint (discarded on replay, so the
truncated history cannot create a record the first run did not have).  Outputs the killed process produced after K
were never committed, hence never sent.  Committed alerts are sent from the outbox until a receiver acknowledges
them (at least once per receiver call; each entry carries its transition id, and a re-sent POST the same entries
under the same ``Idempotency-Key``, so a receiver that drops repeats gets each transition exactly once).

**Ids.**  :func:`record_id` is a hash of the query and the signature (the event ids bound to each variable; for
``distinct`` output the RETURN value, which is what that mode makes unique).  Rows are inserted with
``INSERT OR IGNORE``, a second line of defence: after a rebalance (the assignment changed, so the exact replay above
does not apply) the new owner replays from each partition's ``rebuild_from`` without discarding, and the ids suppress
what the previous owner already committed -- when the processes share one store (one data dir on one host).  That
replay feeds the events the discarding replay would have filtered, so the engine still rebuilds every open run; a
query whose *first* component is a Kleene set in ``collapsed`` mode could then emit one shorter record for a match
its previous owner had already reported (not the case in the Hadoop pack, whose collapsed queries start with a
singleton).  Across hosts (separate stores) a rebalance hands over the offsets through Kafka's commit metadata, and
records the previous owner committed may be alerted again (at least once).

**A full disk** is not a crash: the checkpoint transaction fails whole (SQLite rolls it back), nothing after it runs
(no Kafka commit, no hand-over to the senders), its outputs stay pending, and the loop retries it until the store
takes it (:meth:`app.stream.loop.Service.checkpoint`).  Stopped or killed meanwhile, the process restarts from the
previous checkpoint, as above.  The kill -9 points of the tests (``HCEP_TEST_CRASH_AT``, :mod:`app.testhooks`) lie
between the transaction's statements.

**Load shedding** (a pack's ``settings.shedding``, :mod:`app.pack_runner`) is the one deliberate exception to "no
lost alerts": past the latency bound, partial matches are dropped.  Replays never shed, so a rebuilt engine may hold a
run the killed process had shed and report its (true) match.  ``hcep run --no-shedding`` catches up without loss.

Cost: a restart replays about ``2 W + 4 U`` of event time; queries with a one-day window make that a day of events.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from contracts.records import record_id

if TYPE_CHECKING:
    from engine.evaluator import Evaluator

__all__ = ["horizon", "offset_metadata", "parse_offset_metadata", "record_id"]

NEG_INF = -math.inf


def horizon(
    last_t: float, windows: Iterable[int | None], umax: int, matchers: Iterable[Evaluator], tick: float
) -> float:
    """H (ticks): events with ``thi < H`` can no longer change any output after the last fed time ``last_t``.

    The window rule above, and each evaluator's own :meth:`engine.evaluator.Evaluator.horizon` (a held ``distinct``
    record, say): nothing but the evaluator contract is read.  ``tick`` is the evaluators' own business now; the
    argument stays for callers."""
    from engine.evaluate import pack_horizon

    return pack_horizon(last_t, windows, umax, matchers)


def offset_metadata(rebuild_from: int, newest: float) -> str:
    """What goes with a Kafka offset commit, so that a process on another host can take the partition over."""
    return json.dumps({"rebuild_from": rebuild_from, "newest": None if newest == NEG_INF else newest})


def parse_offset_metadata(text: str) -> tuple[int, float] | None:
    try:
        meta = json.loads(text)
        newest = meta.get("newest")
        return int(meta["rebuild_from"]), NEG_INF if newest is None else float(newest)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
