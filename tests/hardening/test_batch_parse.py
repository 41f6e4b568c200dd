"""``hcep batch`` parses events in the executors with the rules of ``hcep match``: bad numbers and events wider than
``--max-delta`` are error rows naming the line (the driver reports the first one, exit 2), never a crashed task."""

from __future__ import annotations

import pandas as pd

from app.spark.events import _parse_lines, parse_event
from engine.events import max_width_ticks


def _rows(lines: list[str], max_width: int | None) -> list[dict]:
    frame = pd.DataFrame({"pid": [0] * len(lines), "value": lines})
    out = list(_parse_lines(iter([frame]), {0: ("ev.jsonl", 0, 0, True)}, 0.1, (), max_width))
    return out[0].to_dict("records") if out else []


def test_bad_numbers_and_wide_events_are_error_rows_naming_the_line() -> None:
    lines = [
        '{"type": "A", "ts": 1, "delta": 0.5}',
        '{"type": "A", "ts": 1e308}',
        '{"type": "A", "ts": NaN}',
        '{"type": "A", "ts": 1' + "0" * 5000 + "}",
        "[" * 100_000,
        '{"type": "A", "ts": 5, "delta": 8}',
    ]
    rows = _rows(lines, max_width_ticks(7.5, 0.1))
    assert rows[0]["error"] is None and rows[0]["tlo"] == 5 and rows[0]["thi"] == 15
    errors = [r["error"] for r in rows[1:]]
    assert errors[0].startswith("ev.jsonl:2: invalid event: 'ts' is out of range")
    assert errors[1].startswith("ev.jsonl:3: invalid event: 'ts' must be a finite number")
    assert errors[2].startswith("ev.jsonl:4: invalid JSON")
    assert errors[3].startswith("ev.jsonl:5: invalid JSON")
    assert errors[4].startswith("ev.jsonl:6: event wider than --max-delta 7.5 s")
    assert _rows(lines[-1:], None)[0]["error"] is None  # no bound: accepted


def test_parse_event_max_width_is_the_run_rule() -> None:
    ok = parse_event({"type": "G", "ts": 100.0, "delta": 7.5}, "", 0, 0.1, (), "f:1", max_width_ticks(7.5, 0.1))
    assert ok[6] is None
    wide = parse_event({"type": "G", "ts": 100.0, "delta": 7.7}, "", 0, 0.1, (), "f:1", max_width_ticks(7.5, 0.1))
    assert wide[6].startswith("f:1: event wider than --max-delta")
