"""The alert transitions ``hcep run`` would decide for a file of events, without a broker: what ``hcep match
--alerts`` prints and the demo's replay, the detection benchmark and the tests judge."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from app.matching.packs import pack_tick

if TYPE_CHECKING:
    from contracts.alerts import Alert
    from engine.events import Event, Stamp
    from engine.language.packs import Pack
    from engine.limits import Limits

#: The widest half-interval ``hcep run`` accepts by default (ServiceConfig.max_delta): it fixes the imprecise
#: evaluators' uncertainty bound, and so the moment each record comes out, which ``--alerts`` must reproduce.
RUN_MAX_DELTA = 7.5


def judge(
    pack: Pack, events: Sequence[Event | Stamp], max_delta: float = RUN_MAX_DELTA, limits: Limits | None = None
) -> Iterator[Alert]:
    """The alert transitions ``hcep run`` decides for ``events``: the pack as the service runs it (its own
    strategies, outputs and thresholds, the service's uncertainty bound ``max_delta``, no flush at the end: a live
    stream has no end), the records judged by the pack's alert rules in stream time (the largest event point fed, in
    seconds: events of one tick share it, so the order of ties cannot move an alert)."""
    import math

    from app.alerts.rules import AlertEngine
    from engine.evaluate import PackRunner
    from engine.runtime.matcher import sort_events

    tick = pack_tick(pack)
    umax = math.ceil(2 * max_delta / tick) + 1
    runner = PackRunner(pack, umax, shedding=False, limits=limits, lazy_ids=True, increments=True)
    engine = AlertEngine(pack)
    now = -math.inf
    # Only the types the pack needs, as the service feeds them (app.stream.loop: an event of another type, and a
    # stamp, only moves the watermark): fed, they would move the imprecise evaluators' clock and release a record
    # at an earlier event than hcep run does, so that an alert would start or resolve at another stream time.
    types = runner.types
    for ev in sort_events(events):
        if types is not None and ev.type not in types:
            continue
        t = ev.t * tick  # stream time: the event's point in seconds, as the service counts it
        if t > now:
            now = t
        yield from engine.advance(now)
        for _spec, record in runner.feed(ev):
            yield from engine.observe(record, now)
