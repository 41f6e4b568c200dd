"""Alert evidence of a growing run (semantics section 5): the annotation shows the whole signature's first ids and
count, followed through the chain of increments, also across a snapshot and restore of the rules' state."""

from __future__ import annotations

import json
from pathlib import Path

from app.alerts.rules import EVIDENCE_IDS, AlertEngine
from engine.evaluate import StreamedMatch
from engine.events import decoder_for
from engine.language.packs import load_pack
from engine.plan.compiler import compile_spec

PACK = """
pack: growing
tick: 0.1
queries:
  - name: Q4
    strategy: skip_till_next_match
    output: all
    query: |
      PATTERN SEQ(JobStart a, DataIO+ b[])
      WHERE   [job_id]
      WITHIN  1 day
      RETURN  a.job_id AS job_id, b.len AS ios
alerts:
  - name: Busy
    query: Q4
    when: ios >= 15
    group_by: [job_id]
    value: ios
    tiers: {warning: 15, critical: 25}
"""


def _records(pack, n: int, increments: bool) -> list[dict]:
    dec = decoder_for(0.1)
    objs = [{"type": "JobStart", "ts": 0, "job_id": "j", "id": "s"}]
    objs += [{"type": "DataIO", "ts": 1 + i, "job_id": "j", "size": 1, "id": f"d{i:03d}"} for i in range(n)]
    evs = [dec.event(o, i) for i, o in enumerate(objs)]
    return list(StreamedMatch([compile_spec(pack.queries[0], 0.1)], evs, increments=increments))


def _evidence(alerts) -> list[dict]:
    return [json.loads(a.annotations["evidence"]) for a in alerts]


def test_evidence_is_the_whole_signature(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PACK)
    pack = load_pack(str(tmp_path / "p.yaml"))
    inc, full = _records(pack, 30, True), _records(pack, 30, False)
    got = [a for i, r in enumerate(inc) for a in AlertEngine(pack).observe_many(inc[: i + 1], 0.0)[-1:]]
    want = [a for i, r in enumerate(full) for a in AlertEngine(pack).observe_many(full[: i + 1], 0.0)[-1:]]
    a, b = _evidence(got), _evidence(want)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert x["match"] == y["match"]  # the first ids and "... N more" of the whole signature
        assert x["return"] == y["return"]
    assert a[-1]["match"]["b"][-1] == f"... {25 - EVIDENCE_IDS} more"  # the escalation to critical, at 25 ids


def test_a_restored_engine_goes_on_with_the_chain(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PACK)
    pack = load_pack(str(tmp_path / "p.yaml"))
    inc = _records(pack, 30, True)
    first = AlertEngine(pack)
    first.observe_many(inc[:20], 0.0)
    second = AlertEngine(pack)
    second.restore(json.loads(json.dumps(first.snapshot())))
    alerts = second.observe_many(inc[20:], 0.0)
    whole = AlertEngine(pack)
    want = [a for a in whole.observe_many(inc, 0.0) if a.annotations["evidence"]]
    assert _evidence(alerts)[-1] == _evidence(want)[-1]
    assert _evidence(alerts)[-1]["match"]["b"][-1] == f"... {25 - EVIDENCE_IDS} more"
