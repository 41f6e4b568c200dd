"""The service's engine wrapper (:class:`app.pack_runner.PackRunner`): the pack's shedding settings switch pSPICE on,
``--no-shedding`` switches it off, and without an arrival time (replays) nothing is ever shed."""

from __future__ import annotations

import argparse
import random

from app.commands.run import build_config, configure
from app.pack_runner import PackRunner
from engine.events import Event
from engine.language.packs import parse_pack

PACK = """
pack: p
tick: 0.01
settings:
  shedding: {enabled: true, latency_bound_ms: 1, min_observations: 10}
queries:
  - name: S
    strategy: skip_till_next_match
    query: PATTERN SEQ(A a, B+ b[], C c) WHERE [k] AND c.v > 2 * avg(b[].v) WITHIN 60 s
  - name: N
    strategy: skip_till_next_match
    query: PATTERN SEQ(A a, !D d, C c) WHERE [k] WITHIN 60 s
"""


def _events(n: int) -> list[Event]:
    rng = random.Random(5)
    out = []
    for i in range(n):
        etype = rng.choice("AABBBBBBCD")
        v = rng.uniform(1, 10) if etype != "C" else rng.uniform(5, 40)
        out.append(Event(etype, i * 0.01, {"k": rng.randrange(4), "v": v}, id=f"e{i}", seq=i + 1, tick=0.01))
    return out


def _signatures(pairs: list) -> set:
    return {(spec.name, tuple(sorted((k, tuple(v)) for k, v in rec["match"].items()))) for spec, rec in pairs}


def test_shedding_follows_the_pack_and_never_adds_a_match() -> None:
    pack = parse_pack(PACK)
    events = _events(3000)
    plain = PackRunner(pack, 0, shedding=False)
    assert plain.shedder is None and plain.shed_counts() == {}
    full = [p for ev in events for p in plain.feed(ev)]
    # Without arrival times (a replay) the shedder is on but drops nothing.
    replay = PackRunner(pack, 0)
    assert replay.shedder is not None
    assert _signatures([p for ev in events for p in replay.feed(ev)]) == _signatures(full)
    assert replay.shed_counts() == {"S": (0, 0), "N": (0, 0)}
    # Every event 1 s late against a 1 ms bound: runs are shed, and what is left is a subset of the full output.
    late = PackRunner(pack, 0)
    shed = [p for ev in events for p in late.feed(ev, arrival=0.0)]
    counts = late.shed_counts()
    assert counts["S"][0] + counts["N"][0] > 0
    assert _signatures(shed) <= _signatures(full)


def test_no_shedding_option() -> None:
    pack = parse_pack(PACK)
    parser = argparse.ArgumentParser()
    configure(parser)
    assert build_config(parser.parse_args(["--pack", "x"]), pack).shedding is True
    assert build_config(parser.parse_args(["--pack", "x", "--no-shedding"]), pack).shedding is False


def test_one_pass_feeding_gives_the_records_of_feeding_every_query() -> None:
    """The runner feeds the pack through PackFeeder (shedding off) or the shedder's one-pass mode (shedding on, no
    arrival): both must give the records, in order, of feeding every query every event (Hadoop sample + hand check)."""
    from engine.evaluate import make_matcher
    from engine.language.packs import load_pack
    from engine.runtime.matcher import sort_events
    from tests.queries.test_hadoop_pack import HANDCHECK, PACK, SAMPLE, compiled, read_events

    pack = load_pack(PACK)
    for path in (SAMPLE, HANDCHECK):
        events = sort_events(read_events(path, pack.tick))
        umax = max(e.thi - e.tlo for e in events)
        naive = [make_matcher(cq, umax) for cq in compiled(pack)]
        expected = [r for ev in events for m in naive for r in m.feed(ev)]
        for shedding in (False, True):
            runner = PackRunner(pack, umax, shedding=shedding)
            assert (runner.shedder is not None) == shedding
            got = [r for ev in events for _, r in runner.feed(ev)]
            assert got == expected, (path.name, shedding)
