"""``hcep run``'s loop: the service wired from its parts, one thread, one turn at a time.

A turn (:meth:`Service.step`): poll the :class:`~app.stream.source.Source` -> decode (:mod:`app.stream.decode`) ->
the epoch's watermark merge (:mod:`app.stream.epochs`) -> the engine (:class:`app.pack_runner.PackRunner`) -> match
records -> the pack's alert rules (:class:`app.alerts.rules.AlertEngine`, in stream time) -> pending outputs
(:mod:`app.stream.outputs`) -> maybe a checkpoint (:mod:`app.stream.checkpointer`: one SQLite transaction) -> the
webhook outbox (:class:`app.alerts.webhook.AlertSender`), Alertmanager and the matches topic
(:mod:`app.stream.publisher`), each on a thread of its own.  Gauges: :mod:`app.stream.metrics`.

The parts are given or made here: Kafka by default, or an in-memory source and sink (:mod:`app.stream.memory`) so
that a whole flow, a crash included (:meth:`Service.crash`), runs inside a test.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import logging
import math
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from app.alerts.rules import AlertEngine
from app.alerts.webhook import AlertSender
from app.metrics import MetricsServer, Registry
from app.pack_runner import PackRunner
from app.store import Store, store_path, unwritable
from app.stream import epochs
from app.stream.checkpointer import Checkpointer
from app.stream.config import GC_THRESHOLD, POLL_EVENTS, ServiceConfig, Tp
from app.stream.decode import MessageDecoder, Refused
from app.stream.epochs import Epoch
from app.stream.metrics import Gauges
from app.stream.outputs import Outputs
from app.stream.publisher import KafkaRecordSink, MatchPublisher, RecordSink
from app.stream.source import KafkaSource, Message, Source
from app.watermark import NEG_INF, Watermark
from contracts.alerts import Alert
from engine.events import max_width_ticks

log = logging.getLogger("hcep.run")

#: Seconds between attempts to commit a checkpoint while the store cannot be written: the first wait, doubling up to
#: the last (a full disk: the service resumes within this long of space coming back).
STORE_RETRY_BASE = 0.5
STORE_RETRY_MAX = 5.0


class Sink(Protocol):
    """Where committed outputs go when not to Kafka and HTTP (:class:`app.stream.memory.MemorySink`)."""

    def record_sink(self) -> RecordSink: ...
    def deliver(
        self, hook: Any, alerts: list[dict[str, Any]], timeout: float = 5.0, ids: list[str] | None = None
    ) -> None: ...


class _Stop:
    requested = False


@contextlib.contextmanager
def _process_settings() -> Iterator[None]:
    """SIGTERM/SIGINT ask for a clean stop; a short GIL switch interval and rare young collections while running."""
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
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
        sys.setswitchinterval(old_switch)
        gc.set_threshold(*old_gc)


class Service:
    """The streaming service.  ``source``/``sink``: in-memory ones for tests (default: Kafka, webhooks over HTTP)."""

    def __init__(
        self, cfg: ServiceConfig, pack: Any, *, source: Source | None = None, sink: Sink | None = None
    ) -> None:
        self.cfg = cfg
        self.pack = pack
        self.tick = float(pack.tick)
        self.umax = max_width_ticks(cfg.max_delta, self.tick)
        self.bound = (cfg.max_delta + cfg.allowed_lateness) / self.tick
        self.ranks = {t: i for i, t in enumerate(cfg.topics)}
        self.shared = set(cfg.shared_topics)
        self.store = Store(store_path(cfg.data_dir))
        self.store.events_keep_seconds = cfg.store_events_keep
        self.store.events_max_rows = cfg.store_events_max
        self.metrics = Registry()
        self.outputs = Outputs(cfg, self.metrics)
        self.checkpointer = Checkpointer(cfg, self.store, self.metrics)
        self.gauges = Gauges(self.metrics, self.store, cfg.instance, self.tick)
        self.alert_engine = AlertEngine(pack)
        self.source = source
        self.sink = sink
        self.sender: AlertSender | None = None
        self.am_sender: Any = None
        self.publisher: MatchPublisher | None = None
        self.metrics_server: MetricsServer | None = None
        self.stream_now = NEG_INF  # the alert rules' clock: the largest event time fed
        self.epoch = self._new_epoch()
        types = self.epoch.runner.types
        store_types = self.outputs.store_types
        # Types whose events are built: what the queries read and what the store keeps.  The others only move their
        # partition's watermark and rebuild point, which needs their time alone.
        built = None if types is None else frozenset(types) | (store_types or frozenset())
        self.decoder = MessageDecoder(self.tick, cfg.max_delta, built)
        self._per_message = 1.0  # events per message, a moving average
        now = time.monotonic()
        self.started = self.last_data = self.last_checkpoint = self.last_stats = now
        self._watchdog_at = now
        self._empty_since: float | None = None
        self._rejoined_at = -math.inf
        self._store_failures = 0  # checkpoints failed in a row for want of space (0: the store takes them)
        self._store_down_since = self._store_logged = 0.0

    # ------------------------------------------------------------------ the current epoch, for tools and tests
    @property
    def runner(self) -> PackRunner:
        return self.epoch.runner

    @property
    def epoch_active(self) -> bool:
        return self.epoch.active

    def _new_epoch(self) -> Epoch:
        old = getattr(self, "epoch", None)
        if old is not None:  # keep the shed counters cumulative over the process's epochs
            self.gauges.retire(old.runner)
        # Growing runs (Q4) as increments (docs/semantics.md section 5): the store and the matches topic hold chains.
        runner = PackRunner(self.pack, self.umax, shedding=self.cfg.shedding, limits=self.cfg.limits, increments=True)
        self.outputs.clear()
        self.stream_now = NEG_INF
        return Epoch(runner, Watermark(self.bound, self.cfg.idle_timeout, self.tick))

    # ------------------------------------------------------------------ set-up and tear-down
    def start(self) -> None:
        cfg = self.cfg
        if self.source is None:
            self.source = KafkaSource(cfg)
        if cfg.metrics_port is not None:
            self.metrics_server = MetricsServer(self.metrics, cfg.metrics_port).start()
            log.info("metrics on http://127.0.0.1:%d/metrics", self.metrics_server.port)
        self.sender = AlertSender(
            self.store.path,
            cfg.instance,
            cfg.webhooks,
            max_delay=cfg.alert_max_backoff,
            orphan_after=cfg.alert_orphan_after,
            on_result=self._delivery,
            deliver=None if self.sink is None else self.sink.deliver,
        )
        self.sender.start()
        if cfg.alertmanager:
            from app.alerts.alertmanager import AlertmanagerSender

            self.am_sender = AlertmanagerSender(
                cfg.alertmanager, max_delay=cfg.alert_max_backoff, on_result=self._am_delivery
            )
            self.am_sender.start()
            log.info("alerts to Alertmanager at %s", cfg.alertmanager)
        self.source.open(self._on_assign, self._on_revoke)
        if cfg.matches_topic:
            topic = cfg.matches_topic
            connect: Callable[[], RecordSink]
            if self.sink is not None:
                connect = self.sink.record_sink
            else:

                def connect() -> RecordSink:
                    return KafkaRecordSink(cfg.bootstrap, topic, f"hcep-run-{cfg.instance}")

            self.publisher = MatchPublisher(self.store.path, cfg.instance, connect, topic)
            self.publisher.start()
        names = self.epoch.runner.unpartitioned()
        if names and cfg.shared_topics:
            log.warning(
                "queries %s have no [job_id]/[task_id] equivalence: with several processes in group %s "
                "each sees only the jobs of its own partitions",
                ", ".join(names),
                cfg.group,
            )
        self.gauges.rate(time.monotonic())

    def _delivery(self, status: str, n: int) -> None:
        self.metrics.inc("hcep_alert_deliveries_total", n, {"result": status})

    def _am_delivery(self, status: str, n: int) -> None:
        self.metrics.inc("hcep_alertmanager_deliveries_total", n, {"result": status})

    def close(self) -> None:
        """A clean stop's tear-down: deliver what is committed (up to ``drain_timeout``), stop the threads."""
        if self.source is not None:
            self.source.close()
        if self.sender is not None:
            self.sender.drain(self.cfg.drain_timeout)
            self.sender.stop()
            self.sender.join(timeout=10)
        if self.am_sender is not None:
            left = self.am_sender.finish(self.cfg.drain_timeout)
            if left:
                log.warning(
                    "%d alert transition(s) not delivered to Alertmanager in %.0f s (%s)",
                    left,
                    self.cfg.drain_timeout,
                    self.am_sender.last_error or "no answer",
                )
        if self.publisher is not None:
            self.publisher.stop()
            self.publisher.join(timeout=10)
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None

    def crash(self) -> None:
        """Abandon the service as kill -9 would (tests): no checkpoint, no drain, no goodbye to the group (an
        in-memory source's member dies holding its partitions); the threads stop after their current step."""
        crash = getattr(self.source, "crash", None)
        if crash is not None:
            crash()
        for thread in (self.sender, self.publisher):
            if thread is not None:
                thread.stop()
                thread.join(timeout=10)
        if self.am_sender is not None:
            self.am_sender.stop()
        if self.metrics_server is not None:
            self.metrics_server.stop()
            self.metrics_server = None
        self.store.close()

    # ------------------------------------------------------------------ epochs (assignment changes)
    def _on_revoke(self, revoked: set[Tp]) -> None:
        try:
            if self.epoch.active:
                self.checkpoint(force=True)
        finally:
            self.epoch.active = False

    def _on_assign(self, assigned: set[Tp]) -> None:
        self._begin_epoch(assigned)

    def _begin_epoch(self, shared_parts: set[Tp]) -> None:
        """Rebuild the engine for a (new) assignment from the store's checkpoints."""
        assert self.source is not None
        self.epoch = epoch = self._new_epoch()
        parts = set(shared_parts) | self.source.broadcast_partitions()
        self.checkpointer.seq = epochs.begin(self.cfg, epoch, parts, self.store, self.source, self.ranks)
        # The rules' state of the last checkpoint: the alerts open then, and the holds under way.  (After a
        # rebalance the replayed records meet it again; a transition decided twice has the same id and is stored
        # once.)
        self.alert_engine.restore(self.store.alert_state(epochs.instance_scope(self.cfg)))
        self.stream_now = self.alert_engine.now
        if self.am_sender is not None:  # an Alertmanager that restarted meanwhile learns the open alerts again
            self.am_sender.submit(self.alert_engine.firing())
        self.metrics.set("hcep_assigned_partitions", len(parts))
        self.metrics.set("hcep_replaying", 1 if epoch.replaying else 0)
        self.last_data = time.monotonic()  # idleness counts from the assignment (README: --exit-when-idle)

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        """Run until SIGTERM/SIGINT (or ``max_seconds``, or idle with ``exit_when_idle``); a clean stop commits a
        last checkpoint and delivers what it can."""
        with _process_settings():
            try:
                self.start()
                while not _Stop.requested:
                    if self.step():
                        break
                self.finish()
                return 0
            finally:
                self.close()

    def step(self) -> bool:
        """One turn of the loop; True when the service should stop (``max_seconds`` passed, or idle)."""
        assert self.source is not None
        cfg = self.cfg
        # Small polls keep each loop turn short, so a match waits little for its checkpoint and webhook.
        got = self._ingest(self.source.poll(max(1, int(POLL_EVENTS / self._per_message))))
        now = time.monotonic()
        if got:
            self.last_data = now
        epoch = self.epoch
        if epoch.active:
            self._release(now)
            if self.checkpointer.due(epoch, self.outputs, now, self.last_checkpoint):
                self.checkpoint()
                self.last_checkpoint = time.monotonic()
        if cfg.shared_topics and now - self._watchdog_at >= 5.0:
            self._watchdog(now)
        if now - self.last_stats >= 1.0:
            self.gauges.rate(now)
            self.last_stats = now
            self.gauges.sample(self.epoch, self.source)
        if cfg.max_seconds is not None and now - self.started > cfg.max_seconds:
            return True
        return cfg.exit_when_idle is not None and self.idle(now, cfg.exit_when_idle)

    def idle(self, now: float, seconds: float) -> bool:
        """Assigned (an assignment in force: a restarted member waits while the group still gives its partitions to
        the dead one), caught up to the end offsets with nothing left to release, and nothing new for ``seconds``
        since the assignment."""
        epoch = self.epoch
        return (
            epoch.active
            and not epoch.replaying
            and now - self.last_data > seconds
            and self.source is not None
            and epoch.caught_up(self.source)
        )

    def finish(self) -> None:
        """A clean stop: the last statistics and checkpoint."""
        if self.epoch.active:
            self.gauges.sample(self.epoch, self.source, stats_now=True)
            self.checkpoint(force=True)

    # ------------------------------------------------------------------ ingest: messages -> the merge buffer
    def _ingest(self, records: Sequence[Message]) -> int:
        epoch = self.epoch
        if not records or not epoch.active:
            return 0
        now = time.monotonic()
        wm = epoch.wm
        decode = self.decoder.decode
        lines_of = self.decoder.lines
        outputs = self.outputs
        dead = outputs.dead_letter
        types = epoch.runner.types
        floor = tuple(epoch.exact_until) if epoch.exact_until is not None else None
        assignment, position, replayed_until, skips = epoch.assignment, epoch.position, epoch.replayed_until, epoch.skip
        arrivals = epoch.arrivals
        hold = self.bound * self.tick  # the watermark's deliberate delay, in seconds
        store_types = outputs.store_types
        new_events = 0
        for rec in records:
            tp = (rec.topic, rec.partition)
            if tp not in assignment:
                continue
            offset = rec.offset
            if offset < position.get(tp, 0):
                continue  # a fetch that raced a seek
            position[tp] = offset + 1
            replayed = offset < replayed_until[tp]  # decided (and recorded) before the checkpoint
            skip = skips[tp] if replayed else None
            fl = None if replayed else floor
            base = None  # the default id's prefix, made once per message
            for idx, line in enumerate(lines_of(rec.value)):
                if skip and (offset, idx) in skip:
                    continue
                if not line or line.isspace():
                    continue  # a trailing newline of a JSON-lines message
                if not replayed:
                    new_events += 1
                try:
                    obj, ev, t, thi = decode(line)
                except Refused as refused:
                    if not replayed:
                        dead(tp, offset, idx, refused.reason, refused.shown)
                    continue
                if ev is None:  # a type nobody reads: its clock only
                    reason = wm.offer_point(tp, offset, idx, t, thi, now, fl)
                    if reason is not None and not replayed:
                        dead(tp, offset, idx, reason, obj)
                    continue
                if obj.get("id") is None:
                    if base is None:
                        base = f"{tp[0]}/{tp[1]}/{offset}"
                    ev.id = f"{base}/{idx}" if idx else base
                keep = types is None or ev.type in types
                reason = wm.offer(tp, offset, idx, ev, now, keep=keep, floor=fl)
                if reason is not None:
                    if not replayed:
                        dead(tp, offset, idx, reason, obj)
                    continue
                if replayed:
                    continue
                if arrivals is not None and keep:
                    arrivals[id(ev)] = rec.timestamp / 1000.0 + hold
                if store_types is not None and ev.type in store_types:
                    outputs.keep_event(ev, obj, line)
        if new_events:
            self.metrics.inc("hcep_events_total", new_events)
            self._per_message = 0.8 * self._per_message + 0.2 * max(1.0, new_events / len(records))
        return len(records)

    # ------------------------------------------------------------------ release: the merge buffer -> the engine
    def _release(self, now: float) -> None:
        epoch = self.epoch
        if epoch.replaying:
            out, replayed, done = epoch.replay()
            for ev in replayed:
                self._feed(ev, True)
            if out:
                self.metrics.inc("hcep_engine_events_total", len(out))
            if done:
                self.metrics.set("hcep_replaying", 0)
            return
        source = self.source
        assert source is not None
        position = epoch.position
        out = epoch.live(now, lambda tp: source.caught_up(tp, position.get(tp, 0)))
        if not out:
            return
        delay = self.cfg.alert_delay
        feed = self._feed
        outputs = self.outputs
        for entry in out:
            feed(entry[5], False)
            # A long batch must not hold its alerts back: commit as soon as the first one has waited enough.
            if outputs.first_alert_at is not None and time.monotonic() - outputs.first_alert_at >= delay:
                epoch.fed_key = entry[:5]
                self.checkpoint()
        epoch.fed_key = out[-1][:5]
        self.metrics.inc("hcep_engine_events_total", len(out))

    def _feed(self, ev: Any, discard: bool) -> None:
        epoch = self.epoch
        epoch.seq += 1
        ev.seq = epoch.seq
        epoch.last_t = ev.t
        arrivals = epoch.arrivals
        out = epoch.runner.feed(ev, None if arrivals is None else arrivals.pop(id(ev), None))
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
        outputs = self.outputs
        for spec, record in out:
            # The engine's record is the JSON object MatchRecord types (semantics section 5): stored and judged as
            # it comes, not copied.
            outputs.record(record, spec.output, pack, now)
            if spec.name in rules.queries:
                alerts.extend(rules.observe(record, now_s))
        for alert in alerts:
            self._queue_alert(alert, now)

    def _queue_alert(self, alert: Alert, now: float) -> None:
        rule = self.alert_engine.rules.get(alert.labels.get("alertname", ""))
        hook = (rule.spec.webhook if rule is not None else None) or ""
        self.outputs.alert(alert, hook, now, self.am_sender is not None)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self, force: bool = False) -> None:
        """Commit outputs + offsets + rebuild points in one transaction, then hand the committed outputs on.

        While the store cannot be written (a full disk: :func:`app.store.unwritable`) the transaction is rolled back
        whole and this waits and tries again (:meth:`_store_wait`), the outputs kept pending: the loop, and so
        consumption, pauses, and it resumes where it was once the store takes the checkpoint.  Nothing is lost, even
        if the process is stopped or killed meanwhile: a restart replays from the last committed checkpoint."""
        assert self.source is not None
        while True:
            try:
                done = self.checkpointer.commit(
                    self.epoch, self.outputs, self.alert_engine.snapshot, self.source, force
                )
                break
            except (sqlite3.Error, OSError) as err:
                cause = unwritable(err)
                if cause is None:
                    raise
                if not self._store_wait(cause, err):
                    return
        if self._store_failures:
            log.warning(
                "store %s: writable again after %.0f s and %d failed attempt(s); resuming",
                self.store.path,
                time.monotonic() - self._store_down_since,
                self._store_failures,
            )
            self._store_failures = 0
            self.metrics.set("hcep_store_writable", 1)
        if done is None:
            return
        if done.alertmanager and self.am_sender is not None:
            self.am_sender.submit(done.alertmanager)
        if done.new_alerts and self.sender is not None:
            self.sender.wake.set()
        if done.records and self.publisher is not None:
            self.publisher.wake.set()

    def _store_wait(self, cause: str, err: BaseException) -> bool:
        """A checkpoint failed for want of space: log (one line naming the store and the cause, the first time and
        once a minute after), count, and wait before the next try (``STORE_RETRY_BASE`` doubling up to
        ``STORE_RETRY_MAX`` seconds).  False when a stop was requested meanwhile: the stop goes ahead without the
        checkpoint (the next start replays what it would have held)."""
        self._store_failures += 1
        self.metrics.inc("hcep_store_write_errors_total", 1, {"cause": cause, "what": "checkpoint"})
        self.metrics.set("hcep_store_writable", 0)
        now = time.monotonic()
        path = self.store.path
        if self._store_failures == 1:
            self._store_down_since = self._store_logged = now
            log.error(
                "store %s: checkpoint not committed: %s (%s); rolled back, its outputs stay pending and consumption "
                "waits; retrying until the store can be written",
                path,
                cause,
                err,
            )
        elif now - self._store_logged >= 60.0:
            self._store_logged = now
            log.error(
                "store %s: still not writable after %.0f s (%d attempts): %s",
                path,
                now - self._store_down_since,
                self._store_failures,
                cause,
            )
        deadline = now + min(STORE_RETRY_MAX, STORE_RETRY_BASE * 2 ** min(self._store_failures - 1, 16))
        while time.monotonic() < deadline:
            if _Stop.requested:
                log.error(
                    "store %s: stopping while it cannot be written (%s): the last outputs are not committed; the "
                    "next start replays them from the last checkpoint",
                    path,
                    cause,
                )
                return False
            time.sleep(0.05)
        return True

    # ------------------------------------------------------------------ group health, orphans
    def _watchdog(self, now: float) -> None:
        """After a broker restart kafka-python can end up holding no partition for good (an assignment made while
        the topics' partitions were unknown, or a join that never completes).  Holding no partition of topics that
        have some for 15 s asks for a new assignment, at most once a minute (with more processes than partitions one
        of them rightly holds none: it then costs the group one rebalance a minute)."""
        assert self.source is not None
        self._watchdog_at = now
        self._adopt_alert_states()
        if any(tp[0] in self.shared for tp in self.epoch.assignment):
            self._empty_since = None
            return
        if not self.source.group_has_partitions():
            return
        if self._empty_since is None:
            self._empty_since = now
        elif now - self._empty_since >= 15.0 and now - self._rejoined_at >= 60.0:
            log.warning(
                "this process holds no partition of %s: asking the group for a new assignment",
                ", ".join(self.cfg.shared_topics),
            )
            self.source.rejoin()
            self._rejoined_at = now
            self._empty_since = None

    def _adopt_alert_states(self) -> None:
        """Open alerts and holds of a process that died take their course here: their resolution by time (and a hold
        about to fire) would otherwise be lost with it.  Checkpointed at once, so they outlive this process too."""
        epoch = self.epoch
        if not epoch.active or epoch.replaying:
            return
        try:
            states = self.store.adopt_alert_states(self.cfg.instance, time.time(), self.cfg.alert_orphan_after)
        except (sqlite3.Error, OSError) as err:
            if unwritable(err) is None:
                raise
            return  # the store is full: the checkpoints report it; adoption waits for the next watchdog turn
        if not states:
            return
        before = len(self.alert_engine.groups)
        for state in states:
            self.alert_engine.merge(state)
        log.warning(
            "adopted %d open alert group(s) of %d silent process(es)",
            len(self.alert_engine.groups) - before,
            len(states),
        )
        if self.am_sender is not None:
            self.am_sender.submit(self.alert_engine.firing())
        self.outputs.dirty = True
        self.checkpoint(force=True)


def run_service(cfg: ServiceConfig, pack: Any, on_ready: Callable[[Service], None] | None = None) -> int:
    service = Service(cfg, pack)
    if on_ready is not None:
        on_ready(service)
    return service.run()
