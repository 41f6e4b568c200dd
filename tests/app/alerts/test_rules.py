"""Alert rules (app.alerts.rules, the pack's ``alerts:``): grouping, tiers, gates, hold, resolution, checkpoints."""

from __future__ import annotations

import json

import pytest

from app.alerts.rules import AlertEngine, compile_condition, format_summary
from engine.language.packs import PackError, load_pack, parse_pack
from engine.language.parser import parse_condition

PACK = """\
pack: p
queries:
  - name: Q
    query: |
      PATTERN SEQ(A a, B b) WITHIN 1 day
      RETURN a.job_id AS job_id, b.slow AS slow, b.typical AS typical, b.n AS n, b.queued AS queued
alerts:
  - name: Skew
    query: Q
    group_by: [job_id]
    value: slow / typical
    tiers: {low: 2, moderate: 4, severe: 8, critical: 16}
    when: n >= 5 AND slow - typical >= 120
    resolve: {after: 1 hour}
    summary: "job {job_id}: {slow:.0f} s vs {typical:.1f} s ({value:.1f}x, {tier})"
  - name: Held
    query: Q
    group_by: [job_id]
    when: queued >= 100
    for: 3 minutes
    resolve: {when: "queued < 10"}
"""


def rec(job: str, **ret) -> dict:
    return {
        "query": "Q",
        "match": {"a": [f"{job}-a"], "b": [f"{job}-b{len(ret)}"]},
        "confidence": 1.0,
        "start": 0.0,
        "end": 1.0,
        "return": {"job_id": job, **ret},
    }


def engine(text: str = PACK) -> AlertEngine:
    return AlertEngine(parse_pack(text))


def skew(job: str, slow: float, typical: float = 10.0, n: int = 20) -> dict:
    return rec(job, slow=slow, typical=typical, n=n)


def names(alerts) -> list[tuple[str, str, str, str]]:
    return [(a.labels["alertname"], a.labels.get("job_id", ""), a.labels["severity"], a.status) for a in alerts]


def test_one_alert_per_group_updated_never_one_per_record() -> None:
    e = engine()
    out = e.observe(skew("j1", 500.0), 100.0)  # 50x: critical
    assert names(out) == [("Skew", "j1", "critical", "firing")]
    assert e.observe(skew("j1", 510.0), 110.0) == []  # same job, same severity: no new alert
    assert e.observe(skew("j1", 300.0), 120.0) == []  # weaker evidence never downgrades a firing alert
    assert names(e.observe(skew("j2", 500.0), 130.0)) == [("Skew", "j2", "critical", "firing")]


def test_tiers_map_to_severities_and_carry_the_tier_label() -> None:
    e = engine()
    got = {
        job: e.observe(skew(job, slow, typical), 1.0)
        for job, slow, typical in (
            ("low", 250.0, 100.0),
            ("moderate", 200.0, 40.0),
            ("severe", 400.0, 40.0),
            ("critical", 700.0, 10.0),
        )
    }
    assert got["low"][0].labels["severity"] == "info" and got["low"][0].labels["tier"] == "low"
    assert got["moderate"][0].labels["severity"] == "warning" and got["moderate"][0].labels["tier"] == "moderate"
    assert got["severe"][0].labels["severity"] == "critical" and got["severe"][0].labels["tier"] == "severe"
    assert got["critical"][0].labels["severity"] == "critical" and "tier" not in got["critical"][0].labels
    summary = got["moderate"][0].annotations["summary"]
    assert summary == "job moderate: 200 s vs 40.0 s (5.0x, moderate)"


@pytest.mark.parametrize(("slow", "typical", "n"), [(400.0, 10.0, 3), (12.0, 2.0, 50), (1.0, 0.1, 100)])
def test_gates_keep_small_jobs_and_second_long_differences_quiet(slow: float, typical: float, n: int) -> None:
    """A 3-task job or a 2-second difference never warns, whatever the ratio (Dr. Elephant's gating)."""
    assert engine().observe(skew("j", slow, typical, n), 1.0) == []


def test_escalation_resolves_the_old_severity_at_the_same_moment() -> None:
    e2 = engine()
    first = e2.observe(skew("j", 200.0, 40.0), 10.0)  # 5x: moderate (warning)
    second = e2.observe(skew("j", 400.0, 40.0), 20.0)  # 10x: severe (critical)
    assert names(first) == [("Skew", "j", "warning", "firing")]
    assert names(second) == [("Skew", "j", "warning", "resolved"), ("Skew", "j", "critical", "firing")]
    assert second[0].ends_at == 20.0 and second[1].starts_at == 20.0
    assert second[0].fingerprint == first[0].fingerprint  # it resolves exactly the alert that fired


def test_for_holds_in_stream_time_and_a_false_record_resets_it() -> None:
    e = engine()
    assert e.observe(rec("j", queued=150), 0.0) == []  # pending
    assert e.advance(179.0) == []
    fired = e.advance(200.0)
    assert names(fired) == [("Held", "j", "warning", "firing")] and fired[0].starts_at == 180.0
    e = engine()
    e.observe(rec("j", queued=150), 0.0)
    e.observe(rec("j", queued=50), 100.0)  # condition false while pending: the hold starts over
    e.observe(rec("j", queued=150), 120.0)
    assert e.advance(250.0) == []
    assert names(e.advance(300.0)) == [("Held", "j", "warning", "firing")]


def test_resolve_when_is_hysteresis_and_resolve_after_is_staleness() -> None:
    e = engine()
    e.observe(rec("j", queued=150), 0.0)
    e.advance(180.0)
    assert e.observe(rec("j", queued=50), 200.0) == []  # below the condition, not drained: still firing
    out = e.observe(rec("j", queued=5), 210.0)
    assert names(out) == [("Held", "j", "warning", "resolved")] and out[0].ends_at == 210.0
    e = engine()
    e.observe(skew("j", 500.0), 100.0)
    assert e.advance(100.0 + 3599.0) == []
    out = e.advance(100.0 + 3700.0)
    assert names(out) == [("Skew", "j", "critical", "resolved")] and out[0].ends_at == 3700.0


def test_evidence_confidence_and_labels() -> None:
    e = engine()
    (alert,) = e.observe(skew("j", 500.0), 100.0)
    assert alert.labels == {"alertname": "Skew", "severity": "critical", "pack": "p", "query": "Q", "job_id": "j"}
    evidence = json.loads(alert.annotations["evidence"])
    assert evidence["query"] == "Q" and evidence["return"]["slow"] == 500.0 and len(evidence["record_id"]) == 64
    assert evidence["match"] == {"a": ["j-a"], "b": ["j-b3"]}
    assert alert.annotations["confidence"] == "1.0" and alert.annotations["value"] == "50.0"
    obj = alert.to_json()
    assert set(obj) == {"labels", "annotations", "startsAt", "generatorURL"}  # endsAt only once resolved


def test_snapshot_restore_at_every_point_equals_an_uninterrupted_run() -> None:
    stream = [
        (skew("a", 200.0, 40.0), 10.0),
        (rec("b", queued=150), 20.0),
        (skew("a", 400.0, 40.0), 30.0),
        (rec("b", queued=120), 100.0),
        (None, 250.0),
        (rec("b", queued=1), 300.0),
        (skew("c", 900.0), 400.0),
        (None, 5000.0),
    ]

    def run(cut: int | None) -> list[dict]:
        e = engine()
        out = []
        for i, (record, now) in enumerate(stream):
            if cut == i:
                state = json.loads(json.dumps(e.snapshot()))
                e = engine()
                e.restore(state)
            out += e.advance(now) if record is None else e.observe(record, now)
        return [a.to_json() for a in out]

    whole = run(None)
    assert len(whole) >= 6
    for cut in range(len(stream)):
        assert run(cut) == whole, cut


def test_conditions_are_three_valued_and_never_evaluated_as_code() -> None:
    f = compile_condition(parse_condition("a > 1 AND b = 'x'"))
    assert f({"a": 2, "b": "x"}) is True
    assert f({"a": 2}) is None and f({"a": 0}) is False  # unknown AND false is false
    g = compile_condition(parse_condition("a / b > 1 OR c"))
    assert g({"a": 1, "b": 0, "c": True}) is True and g({"a": 1, "b": 0}) is None
    h = compile_condition(parse_condition('name = \'__import__("os").system("false")\''))
    assert h({"name": "x"}) is False
    assert format_summary("{missing} {v:.1f} {s:.1f}", {"v": 2, "s": None}) == "{missing} 2.0 None"


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        ("    colour: red\n", ["rule Skew", "unknown key 'colour'"]),
        ("    when: n >=\n", ["rule Skew", "syntax error"]),
        ("    when: n > 1 AND nope > 2\n", ["rule Skew", "'nope' is not a RETURN name of query Q"]),
        ("    when: a.n > 1\n", ["rule Skew", "only RETURN names"]),
        ("    for: soon\n", ["rule Skew", "'for' must be a duration"]),
    ],
)
def test_rule_errors_name_the_file_the_rule_and_the_position(patch: str, words: list[str]) -> None:
    text = (
        PACK.replace("    when: n >= 5 AND slow - typical >= 120\n", patch + "    when: n >= 5\n")
        if "when" not in patch
        else PACK.replace("    when: n >= 5 AND slow - typical >= 120\n", patch)
    )
    with pytest.raises(PackError) as err:
        parse_pack(text, "pack.yaml")
    message = str(err.value)
    assert message.startswith("pack.yaml: rule Skew")
    for w in words:
        assert w in message
    assert "line " in message


def test_rule_structure_errors() -> None:
    bad = PACK.replace("    value: slow / typical\n", "")
    with pytest.raises(PackError, match="'tiers' grade a 'value'"):
        parse_pack(bad)
    with pytest.raises(PackError, match="'query' must name a query of this pack"):
        parse_pack(
            PACK.replace(
                "    query: Q\n    group_by: [job_id]\n    value", "    query: Z\n    group_by: [job_id]\n    value"
            )
        )
    with pytest.raises(PackError, match="tier thresholds must rise"):
        parse_pack(PACK.replace("{low: 2, moderate: 4, severe: 8, critical: 16}", "{low: 4, moderate: 2}"))
    with pytest.raises(PackError, match="duplicate alert rule name"):
        parse_pack(PACK.replace("  - name: Held", "  - name: Skew"))


def test_the_hadoop_pack_rules_load() -> None:
    from app.matching.packs import data_path

    pack = load_pack(data_path("hadoop.yaml"))
    rules = {r.name: r for r in pack.rules()}
    kinds = {name: r.labels.get("kind") for name, r in rules.items()}
    assert kinds == {  # every rule names the fault kind (semantics section 9) it finds; none judges time skew alone
        "MapDataSkew": "map_data_skew",
        "MapDataSkewDone": "map_data_skew",
        "ReduceDataSkew": "reduce_data_skew",
        "SlowNode": "slow_node",
        "SlowNodeKills": "slow_node",
        "HungFetch": "hung_fetch",
        "HeldMapOutput": "held_output",
        "HeldMapOutputEarly": "held_output",
        "HeldMapOutputLate": "held_output",
        "RunawayReducer": "runaway_reducer",
    }
    assert all("anomaly" not in r.labels for r in rules.values())  # the old anomaly kinds are gone
    entity = {"map_data_skew": "job_id", "reduce_data_skew": "job_id", "held_output": "job_id", "slow_node": "host"}
    for name, r in rules.items():
        assert r.group_by[0] == entity.get(str(kinds[name]), "task_id"), name  # the label the fault's entity is in
    assert all(not q.alert for q in pack.queries)  # records are facts: no query alerts on every record any more


def test_a_late_record_is_judged_at_its_own_time() -> None:
    """A process that took over another's partitions replays their older records after its clock moved on: each is
    judged at the time it came out, so its staleness counts from there and a deadline already passed is met at once."""
    e = engine()
    e.advance(10_000.0)
    out = e.observe(skew("late", 500.0), 100.0)  # an hour and more behind the clock
    assert names(out) == [("Skew", "late", "critical", "firing"), ("Skew", "late", "critical", "resolved")]
    assert out[0].starts_at == 100.0 and out[1].ends_at == 3700.0


def test_a_resolution_keeps_the_firing_summary_and_says_what_cleared_it() -> None:
    e = engine()
    e.observe(rec("j", queued=150), 0.0)
    (fired,) = e.advance(180.0)
    (done,) = e.observe(rec("j", queued=5), 210.0)
    assert done.annotations["summary"] == fired.annotations["summary"]
    assert json.loads(done.annotations["resolved_by"])["queued"] == 5
