"""The score of docs/semantics.md section 9 on hand-made truths: each case is a sentence of its "Score" part, not the
rules."""

from __future__ import annotations

from typing import Any

from benchmarks.detection_score import GRACE_S, merge, quantile, score

T0 = 1_700_000_000.0


def fault(kind: str, entity: dict[str, str], onset: float, end: float, *, actionable: bool = True, **affected: Any):
    return {
        "kind": kind,
        "at": 0,
        "severity": 5.0,
        "entity": entity,
        "onset": T0 + onset,
        "end": T0 + end,
        "actionable": actionable,
        "affected": {k: list(v) for k, v in affected.items()},
    }


def alert(name: str, starts: float, severity: str = "warning", ends: float | None = None, **labels: str):
    a: dict[str, Any] = {"labels": {"alertname": name, "severity": severity, **labels}, "startsAt": T0 + starts}
    if ends is not None:
        a["endsAt"] = T0 + ends
    return a


def truth(*faults: dict[str, Any], natural: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"window": {"start": T0, "end": T0 + 3600}, "faults": list(faults), "natural": list(natural)}


def test_a_warning_naming_the_entity_inside_the_window_detects() -> None:
    t = truth(fault("hung_fetch", {"task_id": "r1"}, 100, 200))
    s = score(t, [alert("Hung", 150, task_id="r1", job_id="j1")], {"Hung": "hung_fetch"})
    k = s.kinds["hung_fetch"]
    assert (k.actionable, k.detected, k.recall, k.delays) == (1, 1, 1.0, [50.0])
    assert (s.warnings, s.true_warnings, s.false_warnings, s.precision) == (1, 1, 0, 1.0)


def test_the_window_is_onset_to_end_plus_ten_minutes() -> None:
    t = truth(fault("held_output", {"job_id": "j1"}, 100, 200))
    early = score(t, [alert("H", 99, job_id="j1")])
    late = score(t, [alert("H", 200 + GRACE_S + 1, job_id="j1")])
    edge = score(t, [alert("H", 200 + GRACE_S, job_id="j1")])
    assert early.kinds["held_output"].detected == 0 and early.false_warnings == 1
    assert late.kinds["held_output"].detected == 0 and late.false_warnings == 1
    assert edge.kinds["held_output"].detected == 1


def test_info_alerts_do_not_count_and_resolutions_fold_into_their_alert() -> None:
    t = truth(fault("map_data_skew", {"job_id": "j1"}, 0, 100))
    alerts = [
        alert("S", 10, job_id="j1"),
        alert("S", 10, ends=400, job_id="j1"),  # its resolution: the same alert
        alert("S", 20, severity="info", job_id="j2"),
    ]
    s = score(t, alerts)
    assert s.warnings == 1 and s.false_warnings == 0


def test_affected_entities_natural_entries_and_below_floor_faults_only_touch() -> None:
    slow = fault("slow_node", {"host": "h1"}, 0, 600, job_id=["j9"], task_id=["t9"])
    below = fault("map_data_skew", {"job_id": "j5"}, 0, 100, actionable=False)
    natural = {"kind": "held_output", "entity": {"job_id": "j7"}, "onset": T0, "end": T0 + 300}
    t = truth(slow, below, natural=(natural,))
    alerts = [
        alert("A", 30, job_id="j9"),  # a job that ran on the slow host: touches
        alert("B", 30, job_id="j5"),  # a below-floor fault's entity: touches
        alert("C", 30, job_id="j7"),  # a natural entry: touches
        alert("D", 30, job_id="j8"),  # nothing: false
        alert("E", 30, host="h1"),  # detects the slow node
    ]
    s = score(t, alerts)
    assert (s.warnings, s.true_warnings, s.touch_only, s.false_warnings) == (5, 1, 3, 1)
    assert s.precision == 0.5  # 1 / (5 - 3)
    assert s.kinds["map_data_skew"].actionable == 0 and s.kinds["map_data_skew"].recall is None
    assert s.kinds["slow_node"].recall == 1.0


def test_per_kind_precision_counts_the_warnings_of_that_kinds_rules() -> None:
    t = truth(fault("reduce_data_skew", {"job_id": "j1"}, 0, 100))
    alerts = [alert("R", 50, job_id="j1"), alert("R", 50, job_id="j2"), alert("X", 50, job_id="j1")]
    s = score(t, alerts, {"R": "reduce_data_skew"})
    k = s.kinds["reduce_data_skew"]
    assert (k.warnings, k.true_warnings, k.false_warnings) == (2, 1, 1)
    assert k.precision == 0.5 and k.f1 == 2 * 0.5 * 1.0 / 1.5


def test_a_missed_fault_is_named_and_scores_merge() -> None:
    a = score(truth(fault("runaway_reducer", {"task_id": "r1"}, 0, 300)), [])
    b = score(truth(fault("runaway_reducer", {"task_id": "r2"}, 0, 300)), [alert("U", 70, task_id="r2")])
    m = merge([a, b])
    k = m.kinds["runaway_reducer"]
    assert (k.actionable, k.detected, k.missed) == (2, 1, ["task_id=r1"])
    assert [d for _, d in k.by_severity] == [False, True]
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0 and quantile([], 0.9) is None


def test_a_fault_without_a_target_is_never_detected() -> None:
    """The simulator lists a fault it found no target for with a null entity, onset and end (FILE's order kept)."""
    lost = {"kind": "hung_fetch", "at": 3000, "severity": 90.0, "entity": None, "onset": None, "end": None}
    lost |= {"actionable": False, "affected": {}}
    s = score(truth(lost), [alert("Hung", 3100, task_id="r1")])
    k = s.kinds["hung_fetch"]
    assert (k.actionable, k.detected) == (0, 0) and s.false_warnings == 1
