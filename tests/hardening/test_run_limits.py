"""``hcep run`` takes the memory bounds from the pack's ``settings.limits`` under ``--max-runs-per-key`` /
``--max-runs``, and reports what they dropped as the ``hcep_limit_dropped`` metric (issue 18)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.commands import CommandError
from app.commands.run import build_config, configure
from app.stream import Service, ServiceConfig
from engine import Event
from engine.language.packs import parse_pack
from engine.runtime.limits import Limits

PACK = """
pack: p
tick: 1.0
settings: {limits: {runs_per_key: 40, runs: 60}}
queries:
  - name: T
    query: PATTERN SEQ(A a, B+ b[]) WHERE [k] AND b[i].v >= avg(b[..i-1].v) WITHIN 100 s RETURN count(*)
"""


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    return parser.parse_args(["--pack", "p.yaml", *extra])


def test_limits_from_the_pack_and_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HCEP_BOOTSTRAP", raising=False)
    pack = parse_pack(PACK, "p.yaml")
    assert build_config(_args(), pack).limits == Limits(40, 60)
    assert build_config(_args("--max-runs", "7"), pack).limits == Limits(40, 7)
    assert build_config(_args("--max-runs-per-key", "0"), pack).limits == Limits(None, 60)
    plain = parse_pack(PACK.replace("settings: {limits: {runs_per_key: 40, runs: 60}}", ""), "p.yaml")
    assert build_config(_args(), plain).limits == Limits()
    bad = parse_pack(PACK.replace("runs: 60", "runs: -1"), "p.yaml")
    with pytest.raises(CommandError, match="settings.limits.runs"):
        build_config(_args(), bad)


def test_dropped_partial_matches_are_a_metric(tmp_path: Path) -> None:
    pack = parse_pack(PACK, "p.yaml")
    cfg = ServiceConfig(
        pack="p.yaml",
        bootstrap="unused:9092",
        data_dir=str(tmp_path),
        metrics_port=None,
        shared_topics=["t"],
        broadcast_topics=[],
        matches_topic=None,
        shedding=False,
    )
    svc = Service(cfg, pack)
    for seq, (t, etype) in enumerate([(0, "A"), *((i, "B") for i in range(1, 13))]):
        svc.runner.feed(Event(etype, float(t), {"k": 1, "v": t}, id=f"e{seq}", seq=seq, tick=1.0))
    svc.gauges.sample(svc.epoch, None)
    assert svc.metrics.get("hcep_limit_dropped", {"query": "T"}) > 0
    assert svc.metrics.get("hcep_runs_alive", {"query": "T"}) <= 40
