"""``hcep run``: consume events from Kafka, merge the sources under a watermark, run a pack, commit the outputs.

One loop on one thread: poll -> parse -> :class:`app.watermark.Watermark` -> engine (:class:`PackRunner`) -> match
records -> the pack's alert rules (:class:`app.alerts.rules.AlertEngine`, in stream time) -> pending outputs ->
checkpoint (:mod:`app.checkpoint`, one SQLite transaction holding records, alert transitions and the rules' state) ->
webhook outbox (:mod:`app.alerts.webhook`, its own thread), Alertmanager (:mod:`app.alerts.alertmanager`, its own
thread) and the matches topic.  Partitions of the *shared* topics (Hadoop, keyed by job) are spread over the consumer
group; the *broadcast* topics (Ganglia's cluster-wide events) are read in full by every process, outside the group.
Any change of the group's assignment starts a new *epoch*: the engine is rebuilt from the checkpoint for the new set.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import json
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.alerts.rules import AlertEngine
from app.alerts.webhook import AlertSender, Webhook
from app.checkpoint import offset_metadata, parse_offset_metadata, record_id
from app.metrics import MetricsServer, Registry
from app.pack_runner import PackRunner
from app.store import Batch, CheckpointRow, OffsetRow, Store, store_path
from app.watermark import INF, NEG_INF, Watermark
from engine.events import max_width_ticks, seconds_limit

try:  # a C JSON decoder: ~4x the standard library's speed on small objects, the service's largest per-event cost
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still works
    _loads = json.loads

log = logging.getLogger("hcep.run")

Tp = tuple[str, int]

#: Events per loop turn (poll, merge, engine, maybe a checkpoint); the records per poll follow the observed number of
#: events per message (packed messages carry several).
POLL_EVENTS = 2000
#: Garbage-collector thresholds while the service runs (Python's default: 700, 10, 10), as benchmarked.
GC_THRESHOLD = (100_000, 50, 100)
#: Seconds between the ``query_stats`` rows (runs alive, partial matches shed per query) written for the dashboard.
STATS_EVERY = 5.0
#: At most this many events go to the store's ``events`` table per checkpoint (the rest are counted, not stored).
STORE_EVENTS_PER_CHECKPOINT = 5000


@dataclass
class ServiceConfig:
    pack: str
    bootstrap: str
    group: str = "hcep"
    instance: str = "0"
    shared_topics: list[str] = field(default_factory=lambda: ["hcep.events.hadoop"])
    broadcast_topics: list[str] = field(default_factory=lambda: ["hcep.events.ganglia"])
    matches_topic: str | None = "hcep.matches"
    data_dir: str = ".run/hcep"
    metrics_port: int | None = 0
    allowed_lateness: float = 2.0  # seconds, on top of the largest delta
    max_delta: float = 7.5  # seconds: the widest half-interval accepted (Ganglia's)
    idle_timeout: float = 5.0
    checkpoint_interval: float = 1.0
    alert_delay: float = 0.02  # alerts wait at most this long for the checkpoint that commits them
    webhooks: dict[str, Webhook] = field(default_factory=dict)
    alertmanager: str | None = None  # base URL of an Alertmanager to deliver every alert to (v2 API)
    topic_partitions: int = 4  # partitions of topics this service creates when missing
    start_from: str = "earliest"  # where a partition without any checkpoint starts
    exit_when_idle: float | None = None  # stop after this many seconds with nothing to read (benchmarks, tools)
    session_timeout: float = 10.0  # a killed member's partitions move (or come back to it) after this long
    alert_max_backoff: float = 30.0
    alert_orphan_after: float = 30.0  # adopt undelivered alerts of a process silent this long (shared store)
    drain_timeout: float = 5.0  # at a clean stop, how long to keep delivering committed alerts
    max_seconds: float | None = None
    shedding: bool = True  # apply the pack's settings.shedding (pSPICE); False: never shed
    limits: Any = None  # engine.runtime.limits.Limits; None: the pack's settings.limits
    # Events kept in the store's ``events`` table for the dashboard: these types, plus ``Metric`` samples of
    # ``store_metric`` at most one per host every ``store_metric_every`` seconds of event time (None: none).
    store_event_types: tuple[str, ...] = ("LoadStd", "Balance", "Imbalance")
    store_metric: str | None = "load_one"
    store_metric_every: float = 60.0
    store_events_keep: float = 86400.0  # seconds of event time kept
    store_events_max: int = 200_000  # rows kept


# ------------------------------------------------------------------------------------------------------ events
#: The layout of ``engine.events.Event`` that :func:`make_event_parser`'s direct path fills in (any other layout: the
#: constructor is used).
_EVENT_SLOTS = ("type", "ts", "id", "lo", "hi", "attrs", "seq", "tlo", "thi", "t")


def make_event_parser(tick: float) -> Callable[[Any], Any]:
    """``obj -> Event``: a fast path for the common shape (``type``, numeric ``ts``, optional ``delta`` and ``id``),
    identical in result to :func:`engine.events.event_from_json`, which handles (and reports) everything else.

    The fast path fills the event's slots directly (what ``Event.__init__`` computes, without its keyword handling and
    second copy of the attributes): a third of the per-event cost of decoding.  ``obj`` is not modified."""
    from engine.events import Event, event_from_json, seconds_limit

    direct = getattr(Event, "__slots__", None) == _EVENT_SLOTS
    new = Event.__new__
    lim = seconds_limit(tick)  # NaN, infinities and absurd times fail these bounds: event_from_json reports them

    def parse(obj: Any) -> Any:
        if type(obj) is dict and "lo" not in obj and "hi" not in obj:
            etype = obj.get("type")
            ts = obj.get("ts")
            delta = obj.get("delta", 0.0)
            eid = obj.get("id")
            if (type(etype) is str and etype and type(ts) in (float, int) and type(delta) in (float, int)
                    and 0 <= delta <= lim and -lim <= ts <= lim and -lim <= ts - delta and ts + delta <= lim
                    and (eid is None or type(eid) is str)):
                ts = float(ts)
                attrs = obj.copy()
                del attrs["type"], attrs["ts"]
                if "delta" in attrs:
                    del attrs["delta"]
                if eid is not None:
                    del attrs["id"]
                if not direct:
                    return Event(etype, ts, attrs, id=eid, seq=0, lo=ts - delta, hi=ts + delta, tick=tick)
                ev = new(Event)
                ev.type = etype
                ev.ts = ts
                ev.seq = 0
                ev.id = "0" if eid is None else eid
                ev.lo = lo = ts - delta
                ev.hi = hi = ts + delta
                ev.attrs = attrs
                ev.tlo = tlo = round(lo / tick)
                ev.thi = thi = round(hi / tick)
                mid2 = tlo + thi
                ev.t = mid2 // 2 if mid2 % 2 == 0 else mid2 / 2
                return ev
        return event_from_json(obj, 0, tick)

    return parse


# ------------------------------------------------------------------------------------------------------ the service
class _Stop:
    requested = False


class Service:
    def __init__(self, cfg: ServiceConfig, pack: Any) -> None:
        self.cfg = cfg
        self.pack = pack
        self.tick = float(pack.tick)
        self.umax = max_width_ticks(cfg.max_delta, self.tick)
        self.seconds_limit = seconds_limit(self.tick)  # beyond: dead-lettered as invalid, not a crash
        self.bound = (cfg.max_delta + cfg.allowed_lateness) / self.tick
        self.topics = list(cfg.shared_topics) + [t for t in cfg.broadcast_topics if t not in cfg.shared_topics]
        self.ranks = {t: i for i, t in enumerate(self.topics)}
        self.shared = set(cfg.shared_topics)
        self.scope_group = f"group:{cfg.group}"
        self.scope_instance = f"instance:{cfg.group}/{cfg.instance}"
        self.store = Store(store_path(cfg.data_dir))
        self.store.events_keep_seconds = cfg.store_events_keep
        self.store.events_max_rows = cfg.store_events_max
        kept = set(cfg.store_event_types) | ({"Metric"} if cfg.store_metric else set())
        self.store_types: frozenset[str] | None = frozenset(kept) if kept else None
        self._metric_last: dict[Any, float] = {}  # host -> event time of its last stored load sample
        self.metrics = Registry()
        self.parse = make_event_parser(self.tick)
        self.deadletter_path = f"{cfg.data_dir}/deadletter.jsonl"
        self.group: Any = None
        self.bcast: Any = None
        self.publisher: MatchPublisher | None = None
        self.sender: AlertSender | None = None
        self.am_sender: Any = None
        self.alert_engine = AlertEngine(pack)
        self.metrics_server: MetricsServer | None = None
        self.epoch_active = False
        self.runner: PackRunner | None = None
        self.ckpt_seq = 0
        self._kafka_commit_at = 0.0
        self._per_message = 1.0  # events per Kafka message, a moving average
        self._unreachable_at = -math.inf  # when a partition's leader was last found unreachable
        self._watchdog_at = time.monotonic()
        self._empty_since: float | None = None
        self._rejoined_at = -math.inf
        self._shed_base: dict[str, tuple[int, int]] = {}  # shed counts of earlier epochs' runners
        self._stats_at = -math.inf
        self._ends: dict[Tp, tuple[int | None, float]] = {}  # end offsets asked of the broker: (offset, when)
        self._reset_epoch_state()

    def _reset_epoch_state(self) -> None:
        if self.runner is not None:  # keep the shed counters cumulative over the process's epochs
            for name, (runs, events) in self.runner.shed_counts().items():
                b = self._shed_base.get(name, (0, 0))
                self._shed_base[name] = (b[0] + runs, b[1] + events)
        self.runner = PackRunner(self.pack, self.umax, shedding=self.cfg.shedding, limits=self.cfg.limits)
        self.wm = Watermark(self.bound, self.cfg.idle_timeout, self.tick)
        # id(event) -> when it could first be processed (see app.pack_runner), kept only while shedding is on
        self.arrivals: dict[int, float] | None = {} if self.runner.shedder is not None else None
        self.assignment: set[Tp] = set()
        self.position: dict[Tp, int] = {}
        self.replayed_until: dict[Tp, int] = {}  # P: offsets below were read before the checkpoint
        self.skip: dict[Tp, set[tuple[int, int]]] = {}
        self.exact_until: list | None = None  # K while an exact replay runs
        self.horizon_replay = NEG_INF
        self.seq = 0
        self.last_t = NEG_INF
        self.fed_key: tuple | None = None  # release key of the last event fed: the checkpoint's K
        self.pending_matches: list[tuple] = []
        self.pending_alerts: list[tuple] = []
        self.pending_am: list[Any] = []  # alert transitions for Alertmanager, submitted once committed
        self.stream_now = NEG_INF  # the alert rules' clock: the largest event time fed
        self.pending_dead: list[tuple] = []
        self.pending_events: list[tuple] = []
        self.dead_lines: list[str] = []
        self.first_alert_at: float | None = None
        self.dirty = False

    # ------------------------------------------------------------------ set-up
    def start(self) -> None:
        from app import kafka_io

        cfg = self.cfg
        kafka_io.wait_for_broker(cfg.bootstrap, timeout=60)
        want = {t: cfg.topic_partitions for t in self.topics}
        if cfg.matches_topic:
            want[cfg.matches_topic] = cfg.topic_partitions
        kafka_io.ensure_topics(cfg.bootstrap, want)
        if cfg.metrics_port is not None:
            self.metrics_server = MetricsServer(self.metrics, cfg.metrics_port).start()
            log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_server.port)
        self.sender = AlertSender(self.store.path, cfg.instance, cfg.webhooks, max_delay=cfg.alert_max_backoff,
                                  orphan_after=cfg.alert_orphan_after, on_result=self._delivery)
        self.sender.start()
        if cfg.alertmanager:
            from app.alerts.alertmanager import AlertmanagerSender

            self.am_sender = AlertmanagerSender(cfg.alertmanager, max_delay=cfg.alert_max_backoff,
                                                on_result=self._am_delivery)
            self.am_sender.start()
            log.info("alerts to Alertmanager at %s", cfg.alertmanager)
        if cfg.matches_topic:
            self.publisher = MatchPublisher(self.store.path, cfg.instance, cfg.bootstrap, cfg.matches_topic)
            self.publisher.start()
        client = f"hcep-run-{cfg.instance}"
        if cfg.broadcast_topics:
            self.bcast = kafka_io.AssignedConsumer(cfg.bootstrap, [t for t in self.topics if t not in self.shared],
                                                   client_id=client)
        if cfg.shared_topics:
            timeout_ms = int(cfg.session_timeout * 1000)
            self.group = kafka_io.GroupConsumer(cfg.bootstrap, cfg.shared_topics, cfg.group, client_id=client,
                                                on_revoke=self._on_revoke, on_assign=self._on_assign,
                                                session_timeout_ms=timeout_ms,
                                                heartbeat_interval_ms=max(100, timeout_ms // 3))
        else:
            self._begin_epoch(set())
        names = self.runner.unpartitioned() if self.runner else []
        if names and cfg.shared_topics:
            log.warning("queries %s have no [job_id]/[task_id] equivalence: with several processes in group %s "
                        "each sees only the jobs of its own partitions", ", ".join(names), cfg.group)

    def _delivery(self, status: str, n: int) -> None:
        self.metrics.inc("hcep_alert_deliveries_total", n, {"result": status})

    def _am_delivery(self, status: str, n: int) -> None:
        self.metrics.inc("hcep_alertmanager_deliveries_total", n, {"result": status})

    # ------------------------------------------------------------------ epochs (rebalances)
    def _on_revoke(self, revoked: set[Any]) -> None:
        try:
            if self.epoch_active:
                self.checkpoint(force=True)
        finally:
            self.epoch_active = False

    def _on_assign(self, assigned: set[Any]) -> None:
        self._begin_epoch({(tp.topic, tp.partition) for tp in assigned})

    def _consumer(self, tp: Tp) -> Any:
        return self.group if tp[0] in self.shared else self.bcast

    def _begin_epoch(self, shared_parts: set[Tp]) -> None:
        """Rebuild the engine for a (new) assignment from the store's checkpoints."""
        from app.kafka_io import TP

        self._reset_epoch_state()
        parts = set(shared_parts)
        if self.bcast is not None:
            parts |= {(tp.topic, tp.partition) for tp in self.bcast.assignment()}
        self.assignment = parts
        ckpt = self.store.checkpoint(self.scope_instance)
        self.ckpt_seq = ckpt.seq if ckpt else 0
        rows = {tp: self.store.offset(self._scope(tp), *tp) for tp in parts}
        exact = (ckpt is not None and ckpt.released is not None
                 and {tuple(a) for a in ckpt.assignment} == parts
                 and all(r is not None and r.writer == self.cfg.instance and r.seq == ckpt.seq
                         for r in rows.values()))
        now = time.monotonic()
        need_reset = [tp for tp in parts if rows[tp] is None]
        resets = self._reset_offsets(need_reset)
        # Shared partitions taken over from another process are rebuilt from its horizon, which may be older than
        # ours: the broadcast events (Ganglia) its open runs join with must then be replayed from its rebuild points
        # for them too, or those runs would miss them.
        writers = {r.writer for tp, r in rows.items() if tp[0] in self.shared and r is not None and r.writer
                   and r.writer != self.cfg.instance}
        for tp in sorted(parts):
            row = rows[tp]
            start, position, newest = resets.get(tp, (0, 0, NEG_INF))
            if row is not None:
                start, position, newest = row.rebuild_from, row.position, NEG_INF if row.newest is None else row.newest
            if tp[0] not in self.shared:
                for writer in sorted(writers):
                    other = self.store.offset(f"instance:{self.cfg.group}/{writer}", *tp)
                    if other is not None and other.rebuild_from < start:
                        start = other.rebuild_from
                        newest = NEG_INF if other.newest is None else other.newest
            self._consumer(tp).seek(TP(*tp), start)
            self.position[tp] = start
            self.replayed_until[tp] = position
            self.skip[tp] = self.store.deadletter_offsets(tp[0], tp[1], start, position) if position > start else set()
            self.wm.add(tp, self.ranks[tp[0]], tp[1], start, newest, now)
        if exact:
            self.exact_until = list(ckpt.released)
            self.horizon_replay = NEG_INF if ckpt.horizon is None else ckpt.horizon
        # The rules' state of the last checkpoint: the alerts open then, and the holds under way.  (After a
        # rebalance the replayed records meet it again; a transition decided twice has the same id and is stored
        # once.)
        self.alert_engine.restore(self.store.alert_state(self.scope_instance))
        self.stream_now = self.alert_engine.now
        if self.am_sender is not None:  # an Alertmanager that restarted meanwhile learns the open alerts again
            self.am_sender.submit(self.alert_engine.firing())
        self.metrics.set("hcep_assigned_partitions", len(parts))
        self.metrics.set("hcep_replaying", 1 if exact else 0)
        self.epoch_active = True
        log.info("epoch: %d partitions (%s), %s", len(parts), ", ".join(f"{t}[{p}]" for t, p in sorted(parts)),
                 f"exact replay up to {self.exact_until}" if exact else "replay with id de-duplication")

    def _scope(self, tp: Tp) -> str:
        return self.scope_group if tp[0] in self.shared else self.scope_instance

    def _reset_offsets(self, tps: list[Tp]) -> dict[Tp, tuple[int, int, float]]:
        """Start points of partitions without a local checkpoint: a Kafka commit with our metadata (another host
        had them), else the configured end of the log."""
        from app.kafka_io import TP

        out: dict[Tp, tuple[int, int, float]] = {}
        rest: list[Tp] = []
        for tp in tps:
            got = self.group.committed(TP(*tp)) if (self.group is not None and tp[0] in self.shared) else None
            meta = parse_offset_metadata(got[1]) if got else None
            if got and meta:
                out[tp] = (meta[0], got[0], meta[1])
            else:
                rest.append(tp)
        by_consumer: dict[int, list[Tp]] = {}
        for tp in rest:
            by_consumer.setdefault(id(self._consumer(tp)), []).append(tp)
        for group in by_consumer.values():
            consumer = self._consumer(group[0])
            tps_ = [TP(*tp) for tp in group]
            ends = (consumer.beginning_offsets(tps_) if self.cfg.start_from == "earliest"
                    else consumer.end_offsets(tps_))
            for tp in group:
                off = ends[TP(*tp)]
                out[tp] = (off, off, NEG_INF)
        return out

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        _Stop.requested = False

        def stop(_signum: int, _frame: Any) -> None:
            _Stop.requested = True

        old_term = signal.signal(signal.SIGTERM, stop)
        old_int = signal.signal(signal.SIGINT, stop)
        # The engine loop holds the GIL; the webhook thread needs it for every step of an HTTP call.  A 1 ms switch
        # interval (default 5 ms) cuts alert latency under load several-fold for a few percent of throughput.
        old_switch = sys.getswitchinterval()
        sys.setswitchinterval(0.001)
        # The engine holds millions of long-lived partial-match cells that every young collection re-examines
        # (benchmarks/README.md: a third of the time on Q3+Q4); collect far less often.
        old_gc = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLD)
        with contextlib.suppress(AttributeError, ValueError):  # kill -USR1 PID: every thread's stack, to the log
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        started = time.monotonic()
        last_data = started
        last_ckpt = started
        last_stats = started
        events_at_stats = 0.0
        try:
            self.start()
            while not _Stop.requested:
                got = 0
                # Small polls keep each loop turn short, so a match waits little for its checkpoint and webhook.
                limit = max(1, int(POLL_EVENTS / self._per_message))
                if self.group is not None:
                    got += self._ingest(self.group.poll(0.05 if self.bcast is None else 0.02, limit))
                if self.bcast is not None and self.epoch_active:
                    got += self._ingest(self.bcast.poll(0.0 if got else 0.03, limit))
                now = time.monotonic()
                if got:
                    last_data = now
                if self.epoch_active:
                    self._release(now)
                    if self._checkpoint_due(now, last_ckpt):
                        self.checkpoint()
                        last_ckpt = time.monotonic()
                if self.group is not None and now - self._watchdog_at >= 5.0:
                    self._watchdog(now)
                if now - last_stats >= 1.0:
                    total = self.metrics.get("hcep_events_total")
                    self.metrics.set("hcep_events_per_second", (total - events_at_stats) / (now - last_stats))
                    events_at_stats, last_stats = total, now
                    self._gauges()
                if self.cfg.max_seconds is not None and now - started > self.cfg.max_seconds:
                    break
                if (self.cfg.exit_when_idle is not None and now - last_data > self.cfg.exit_when_idle
                        and self.exact_until is None and self._caught_up_all()):
                    break
            if self.epoch_active:
                self._stats_at = -math.inf  # the last statistics row, whatever its period
                self._gauges()
                self.checkpoint(force=True)
            return 0
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)
            sys.setswitchinterval(old_switch)
            gc.set_threshold(*old_gc)
            self.close()

    def _watchdog(self, now: float) -> None:
        """After a broker restart kafka-python can end up holding no partition for good (an assignment made while
        the topics' partitions were unknown, or a join that never completes).  Holding no partition of topics that
        have some for 15 s asks for a new assignment, at most once a minute (with more processes than partitions one
        of them rightly holds none: it then costs the group one rebalance a minute)."""
        self._watchdog_at = now
        self._adopt_alert_states()
        if any(tp[0] in self.shared for tp in self.assignment):
            self._empty_since = None
            return
        if not any(self.group.partitions(t) for t in self.cfg.shared_topics):
            return
        if self._empty_since is None:
            self._empty_since = now
        elif now - self._empty_since >= 15.0 and now - self._rejoined_at >= 60.0:
            log.warning("this process holds no partition of %s: asking the group for a new assignment",
                        ", ".join(self.cfg.shared_topics))
            self.group.rejoin()
            self._rejoined_at = now
            self._empty_since = None

    def _adopt_alert_states(self) -> None:
        """Open alerts and holds of a process that died take their course here: their resolution by time (and a hold
        about to fire) would otherwise be lost with it.  Checkpointed at once, so they outlive this process too."""
        if not self.epoch_active or self.exact_until is not None:
            return
        states = self.store.adopt_alert_states(self.cfg.instance, time.time(), self.cfg.alert_orphan_after)
        if not states:
            return
        before = len(self.alert_engine.groups)
        for state in states:
            self.alert_engine.merge(state)
        log.warning("adopted %d open alert group(s) of %d silent process(es)", len(self.alert_engine.groups) - before,
                    len(states))
        if self.am_sender is not None:
            self.am_sender.submit(self.alert_engine.firing())
        self.dirty = True
        self.checkpoint(force=True)

    def close(self) -> None:
        for c in (self.group, self.bcast):
            if c is not None:
                c.close()
        self.group = self.bcast = None
        if self.sender is not None:
            self.sender.drain(self.cfg.drain_timeout)
            self.sender.stop()
            self.sender.join(timeout=10)
        if self.am_sender is not None:
            self.am_sender.drain(self.cfg.drain_timeout)
            self.am_sender.stop()
        if self.publisher is not None:
            self.publisher.stop()
            self.publisher.join(timeout=10)
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None

    def _caught_up(self, tp: Tp) -> bool:
        """Read up to the end as far as we know: a partition must be this (and silent) to count as idle.  Not while
        the broker is unreachable, nor within ``idle_timeout`` after: the end offsets we know may be stale then."""
        from app.kafka_io import TP

        consumer = self._consumer(tp)
        now = time.monotonic()
        if not consumer.connected(TP(*tp)):
            self._unreachable_at = now
            return False
        if now - self._unreachable_at < self.cfg.idle_timeout:
            return False
        hw = consumer.highwater(TP(*tp))
        if hw is None:
            hw = self._end_offset(tp, consumer, now)
        return hw is not None and self.position.get(tp, 0) >= hw  # unknown until a fetch answered: not idle

    def _end_offset(self, tp: Tp, consumer: Any, now: float) -> int | None:
        """The partition's end offset, asked of the broker (at most once per idle timeout) while no fetch response
        has told it: a partition resumed exactly at its end (nothing to replay after a rebalance) gets no records,
        and kafka-python may then never report its high watermark, so it would hold the watermark for good."""
        from app.kafka_io import TP

        known = self._ends.get(tp)
        if known is not None and now - known[1] < self.cfg.idle_timeout:
            return known[0]
        try:
            end = consumer.end_offsets([TP(*tp)]).get(TP(*tp))
        except Exception as err:  # noqa: BLE001 - a broker away: not caught up, ask again later
            log.debug("end offset of %s[%d] not known (%s)", tp[0], tp[1], err)
            end = None
        self._ends[tp] = (end, now)
        return end

    def _caught_up_all(self) -> bool:
        return all(self._caught_up(tp) for tp in self.assignment) and self.wm.pending() == 0

    # ------------------------------------------------------------------ ingest
    def _ingest(self, records: list[Any]) -> int:
        from engine.events import EventError

        if not records or not self.epoch_active:
            return 0
        now = time.monotonic()
        wm = self.wm
        parse = self.parse
        umax = self.umax
        types = self.runner.types
        exact = self.exact_until
        floor = tuple(exact) if exact is not None else None
        new_events = 0
        loads = _loads
        arrivals = self.arrivals
        hold = self.bound * self.tick  # the watermark's deliberate delay, in seconds
        store_types = self.store_types
        # Types whose events are built: what the queries read and what the store keeps.  The others only move their
        # partition's watermark and rebuild point, which needs their time alone.
        built = None if types is None else frozenset(types) | (store_types or frozenset())
        tick = self.tick
        lim = self.seconds_limit
        for rec in records:
            tp = (rec.topic, rec.partition)
            if tp not in self.assignment:
                continue
            offset = rec.offset
            if offset < self.position.get(tp, 0):
                continue  # a fetch that raced a seek
            self.position[tp] = offset + 1
            replayed = offset < self.replayed_until[tp]
            value = rec.value or b""
            lines = value.split(b"\n") if b"\n" in value else (value,)
            skip = self.skip[tp] if replayed else None
            fl = None if replayed else floor
            base = None  # the default id's prefix, made once per message
            for idx, line in enumerate(lines):
                if skip and (offset, idx) in skip:
                    continue
                if not line or line.isspace():
                    continue  # a trailing newline of a JSON-lines message
                if not replayed:
                    new_events += 1
                try:
                    obj = loads(line)
                    if built is not None and type(obj) is dict and (type(obj.get("type")) is not str
                                                                    or obj.get("type") not in built):
                        etype = obj.get("type")
                        ts = obj.get("ts")
                        delta = obj.get("delta", 0.0)
                        eid = obj.get("id")
                        if (type(etype) is str and etype and type(ts) in (float, int) and type(delta) in (float, int)
                                and 0 <= delta <= lim and -lim <= ts <= lim and -lim <= ts - delta and ts + delta <= lim
                                and (eid is None or type(eid) is str) and "lo" not in obj and "hi" not in obj):
                            tlo = round((ts - delta) / tick)
                            thi = round((ts + delta) / tick)
                            if thi - tlo > umax:
                                self._dead(tp, offset, idx, "too_wide", obj, replayed)
                                continue
                            mid2 = tlo + thi
                            reason = wm.offer_point(tp, offset, idx, mid2 // 2 if mid2 % 2 == 0 else mid2 / 2, thi,
                                                    now, fl)
                            if reason is not None:
                                self._dead(tp, offset, idx, reason, obj, replayed)
                            continue
                    ev = parse(obj)
                except (ValueError, EventError) as err:
                    self._dead(tp, offset, idx, f"invalid: {err}", line.decode("utf-8", "replace"), replayed)
                    continue
                if obj.get("id") is None:
                    if base is None:
                        base = f"{tp[0]}/{tp[1]}/{offset}"
                    ev.id = f"{base}/{idx}" if idx else base
                if ev.thi - ev.tlo > umax:
                    self._dead(tp, offset, idx, "too_wide", obj, replayed)
                    continue
                keep = types is None or ev.type in types
                reason = wm.offer(tp, offset, idx, ev, now, keep=keep, floor=fl)
                if reason is not None:
                    self._dead(tp, offset, idx, reason, obj, replayed)
                else:
                    if arrivals is not None and keep and not replayed:
                        arrivals[id(ev)] = rec.timestamp / 1000.0 + hold
                    if store_types is not None and ev.type in store_types and not replayed:
                        self._keep_event(ev, obj, line)
        if new_events:
            self.metrics.inc("hcep_events_total", new_events)
            self._per_message = 0.8 * self._per_message + 0.2 * max(1.0, new_events / len(records))
        return len(records)

    def _keep_event(self, ev: Any, obj: dict, line: bytes) -> None:
        """Queue an event for the store's ``events`` table (committed with the next checkpoint)."""
        cfg = self.cfg
        if ev.type == "Metric" and ev.type not in cfg.store_event_types:
            if obj.get("metric") != cfg.store_metric:
                return
            host = obj.get("host")
            last = self._metric_last.get(host)
            if last is not None and last <= ev.ts < last + cfg.store_metric_every:
                return  # downsampled
            self._metric_last[host] = ev.ts
        if len(self.pending_events) >= STORE_EVENTS_PER_CHECKPOINT:
            self.metrics.inc("hcep_store_events_dropped_total")
            return
        host = obj.get("host")
        self.pending_events.append((ev.id, ev.type, ev.ts, None if host is None else str(host),
                                    line.decode("utf-8", "replace"), cfg.instance))

    def _dead(self, tp: Tp, offset: int, idx: int, reason: str, obj: Any, replayed: bool) -> None:
        if replayed:
            return  # decided (and recorded) before the checkpoint
        kind = reason.split(":")[0]
        self.metrics.inc("hcep_deadletter_total", 1, {"reason": kind})
        if kind in ("late", "behind_watermark"):
            self.metrics.inc("hcep_late_events_total")
        text = obj if isinstance(obj, str) else json.dumps(obj, default=str)
        at = time.time()
        self.pending_dead.append((tp[0], tp[1], offset, idx, reason, text, at))
        self.dead_lines.append(json.dumps({"topic": tp[0], "partition": tp[1], "offset": offset, "index": idx,
                                           "reason": reason, "event": text, "at": at}))
        self.dirty = True

    # ------------------------------------------------------------------ release and engine
    def _release(self, now: float) -> None:
        wm = self.wm
        if self.exact_until is not None:
            until = tuple(self.exact_until)
            pending = {tp for tp in self.assignment if self.position[tp] < self.replayed_until[tp]}
            frontier = wm.frontier(lambda tp, _p: tp in pending)
            out = wm.release(frontier, until=until)
            h = self.horizon_replay
            for entry in out:
                ev = entry[5]
                if ev.thi >= h:
                    self._feed(ev, discard=True)
            if out:
                self.metrics.inc("hcep_engine_events_total", len(out))
            if not pending and (not wm.heap or tuple(wm.heap[0][:5]) > until):
                wm.released = until if wm.released is None or wm.released < until else wm.released
                self.fed_key = until  # the rebuilt engine stands where the checkpointed one stood at K
                self.exact_until = None
                self.metrics.set("hcep_replaying", 0)
                log.info("replay done: engine rebuilt up to %s", list(until))
            return
        frontier = wm.live_frontier(now, self._caught_up)
        out = wm.release(frontier)
        if not out:
            return
        delay = self.cfg.alert_delay
        feed = self._feed
        for entry in out:
            feed(entry[5], False)
            # A long batch must not hold its alerts back: commit as soon as the first one has waited enough.
            if self.first_alert_at is not None and time.monotonic() - self.first_alert_at >= delay:
                self.fed_key = entry[:5]
                self.checkpoint()
        self.fed_key = out[-1][:5]
        self.metrics.inc("hcep_engine_events_total", len(out))

    def _feed(self, ev: Any, discard: bool) -> None:
        self.seq += 1
        ev.seq = self.seq
        self.last_t = ev.t
        arrivals = self.arrivals
        out = self.runner.feed(ev, None if arrivals is None else arrivals.pop(id(ev), None))
        if discard:
            return
        rules = self.alert_engine
        now_s = ev.t * self.tick  # stream time: the event's point in seconds (ties of one tick share it)
        alerts = rules.advance(now_s) if now_s > self.stream_now else []
        if now_s > self.stream_now:
            self.stream_now = now_s
        if not out and not alerts:
            return
        now = time.time()
        pack = self.pack.name
        for spec, record in out:
            rid = record_id(record, spec.output)
            text = json.dumps(record, default=str)
            self.pending_matches.append((rid, spec.name, pack, record.get("confidence"), record.get("start"),
                                         record.get("end"), text, now, self.cfg.instance))
            if spec.name in rules.queries:
                alerts.extend(rules.observe(record, now_s))
        for alert in alerts:
            self._queue_alert(alert, now)
        self.dirty = True

    def _queue_alert(self, alert: Any, now: float) -> None:
        """One alert transition into the outbox (committed with the next checkpoint) and, once committed, to
        Alertmanager."""
        name = alert.labels.get("alertname", "")
        rule = self.alert_engine.rules.get(name)
        hook = (rule.spec.webhook if rule is not None else None) or ""
        status = "pending" if hook in self.cfg.webhooks else "unrouted"
        self.pending_alerts.append((alert.transition_id, name, hook, alert.severity, json.dumps(alert.to_webhook()),
                                    status, now, now, self.cfg.instance, alert.fingerprint, alert.status,
                                    alert.starts_at, alert.ends_at))
        if self.am_sender is not None:
            self.pending_am.append(alert)
        if self.first_alert_at is None:
            self.first_alert_at = time.monotonic()

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_due(self, now: float, last: float) -> bool:
        if self.exact_until is not None:
            return False
        if self.first_alert_at is not None and now - self.first_alert_at >= self.cfg.alert_delay:
            return True
        if len(self.pending_matches) >= 20000:
            return True
        return now - last >= self.cfg.checkpoint_interval and (self.dirty or self._moved())

    def _moved(self) -> bool:
        return any(self.position[tp] != self._last_positions.get(tp) for tp in self.assignment) \
            if hasattr(self, "_last_positions") else True

    def checkpoint(self, force: bool = False) -> None:
        """Commit outputs + offsets + rebuild points in one transaction (see :mod:`app.checkpoint`)."""
        if self.exact_until is not None:
            return  # mid-replay: the previous checkpoint still describes this state
        if self.seq == 0 and not (self.pending_matches or self.pending_dead):
            return  # this epoch fed nothing yet: the previous checkpoint is worth more than one of a fresh engine
        t0 = time.monotonic()
        runner = self.runner
        h = runner.horizon(self.last_t)
        self.ckpt_seq += 1
        rows: list[OffsetRow] = []
        commits: dict[Any, tuple[int, str]] = {}
        from app.kafka_io import TP

        for tp in sorted(self.assignment):
            start, newest = self.wm.tracker(tp).rebuild_point(h)
            pos = self.position[tp]
            rows.append(OffsetRow(self._scope(tp), tp[0], tp[1], pos, start, newest, self.cfg.instance,
                                  self.ckpt_seq))
            if tp[0] in self.shared:
                commits[TP(*tp)] = (pos, offset_metadata(start, newest))
        released = list(self.fed_key) if self.fed_key is not None else None
        batch = Batch(self.pending_matches, self.pending_alerts, self.pending_dead, rows,
                      CheckpointRow(self.scope_instance, self.ckpt_seq, released, h,
                                    [list(tp) for tp in sorted(self.assignment)]), self.pending_events,
                      alert_state=(self.scope_instance, json.dumps(self.alert_engine.snapshot(), default=str),
                                   self.cfg.instance))
        new_alerts = self.store.commit(batch)
        if self.pending_am:
            self.am_sender.submit(self.pending_am)
            self.pending_am = []
        if self.dead_lines:
            with open(self.deadletter_path, "a", encoding="utf-8") as f:
                f.write("\n".join(self.dead_lines) + "\n")
        for m in self.pending_matches:
            self.metrics.inc("hcep_matches_total", 1, {"query": m[1]})
        for a in self.pending_alerts:
            self.metrics.inc("hcep_alerts_total", 1, {"rule": a[1], "severity": a[3] or "", "state": a[10]})
        if new_alerts and self.sender is not None:
            self.sender.wake.set()
        if self.pending_matches and self.publisher is not None:
            self.publisher.wake.set()
        self.pending_matches, self.pending_alerts, self.pending_dead, self.dead_lines = [], [], [], []
        self.pending_events = []
        self.first_alert_at = None
        self.dirty = False
        self._last_positions = dict(self.position)
        # Kafka's copy of the offsets serves lag monitoring and hand-over to another host: once a second is plenty.
        if self.group is not None and commits and (force or time.monotonic() - self._kafka_commit_at >= 1.0):
            self.group.commit(commits)
            self._kafka_commit_at = time.monotonic()
        self.metrics.inc("hcep_checkpoints_total")
        self.metrics.set("hcep_checkpoint_duration_seconds", time.monotonic() - t0)

    # ------------------------------------------------------------------ gauges
    def _gauges(self) -> None:
        from app.kafka_io import TP

        m = self.metrics
        lag: dict[str, int] = {}
        for tp in self.assignment:
            hw = self._consumer(tp).highwater(TP(*tp))
            if hw is not None:
                lag[tp[0]] = lag.get(tp[0], 0) + max(0, hw - self.position.get(tp, 0))
        for topic, value in lag.items():
            m.set("hcep_consumer_lag_messages", value, {"topic": topic})
        wmv = self.wm.value
        newest = self.wm.newest()
        if wmv not in (NEG_INF, INF):
            m.set("hcep_watermark_seconds", wmv * self.tick)
            m.set("hcep_watermark_wallclock_delay_seconds", time.time() - wmv * self.tick)
            if newest != NEG_INF:
                m.set("hcep_watermark_delay_seconds", max(0.0, (newest - wmv) * self.tick))
        m.set("hcep_buffered_events", self.wm.pending())
        if self.runner is not None:
            alive = self.runner.runs_alive()
            for name, n in alive.items():
                m.set("hcep_runs_alive", n, {"query": name})
            for name, n in self.runner.limit_drops().items():  # memory bounds, since the engine was (re)built
                m.set("hcep_limit_dropped", n, {"query": name})
            self._shed_metrics(alive)

    def _shed_metrics(self, alive: dict[str, int]) -> None:
        """Shed counters (cumulative over the process's epochs) and, for the dashboard, one ``query_stats`` row per
        query: runs alive and partial matches shed."""
        runner = self.runner
        if runner is None:
            return
        counts = runner.shed_counts() or {name: (0, 0) for name in alive}
        m = self.metrics
        base = self._shed_base
        rows = []
        now = time.time()
        for name, (runs, events) in counts.items():
            b = base.get(name, (0, 0))
            if runner.shedder is not None:
                m.set("hcep_shed_runs_total", b[0] + runs, {"query": name})
                m.set("hcep_shed_events_total", b[1] + events, {"query": name})
            rows.append((now, name, alive.get(name, 0), b[0] + runs))
        if runner.shedder is not None:
            info = runner.shedder.metrics()
            m.set("hcep_shed_latency_estimate_seconds", info["latency_estimate_ms"] / 1000.0)
            m.set("hcep_shed_latency_bound_seconds", info["latency_bound_ms"] / 1000.0)
        if now - self._stats_at >= STATS_EVERY:
            self._stats_at = now
            self.store.add_query_stats(rows, self.cfg.instance)


class MatchPublisher(threading.Thread):
    """Sends committed match records to the matches topic (keyed by record id) and marks them published.

    A thread of its own so that a broker outage never stalls the engine; at least once: a record sent but not yet
    marked when the process dies is sent again at the next start (consumers de-duplicate by key).
    """

    def __init__(self, store_file: str, instance: str, bootstrap: str, topic: str) -> None:
        super().__init__(name="hcep-matches", daemon=True)
        self.store_file = store_file
        self.instance = instance
        self.bootstrap = bootstrap
        self.topic = topic
        self.wake = threading.Event()
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()

    def run(self) -> None:
        from app.kafka_io import Producer

        store = Store(self.store_file)
        producer = None
        failing = False
        try:
            while not self.stopping.is_set():
                rows = store.unpublished(self.instance, limit=5000)
                if rows:
                    try:
                        if producer is None:
                            producer = Producer(self.bootstrap, linger_ms=5, client_id=f"hcep-run-{self.instance}")
                        for rid, _query, text in rows:
                            producer.send(self.topic, text.encode(), key=rid.encode())
                        producer.flush(timeout=30)
                        store.mark_published([r[0] for r in rows])
                        if failing:
                            log.info("publishing match records to %s again", self.topic)
                        failing = False
                        continue
                    except Exception as err:  # noqa: BLE001 - broker away: keep the rows, try again later
                        (log.debug if failing else log.warning)(
                            "publishing %d match record(s) to %s failed (%s); retrying", len(rows), self.topic, err)
                        failing = True
                self.wake.wait(1.0)
                self.wake.clear()
        finally:
            if producer is not None:
                with contextlib.suppress(Exception):
                    producer.close(timeout=5)
            store.close()


def run_service(cfg: ServiceConfig, pack: Any, on_ready: Callable[[Service], None] | None = None) -> int:
    service = Service(cfg, pack)
    if on_ready is not None:
        on_ready(service)
    return service.run()
