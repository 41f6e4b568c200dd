"""``hcep demo --replay``: run a query pack (default: the Hadoop pack) over a recorded trace (default: the shipped
sample) and print a readable summary of what each query found, then the alerts the pack's rules give on it -- exactly
what ``hcep match --alerts`` prints (records are facts, alerts are judgements).

This replays a file through the engine; plain ``hcep demo`` runs the live system instead (:mod:`app.demo.live`).
The summary picks a layout by the shape of each query's RETURN clause (job skew, slow pulls, queued bytes, a list of
tasks), so other packs with the same shapes read well too; anything else is shown as raw records.
"""

from __future__ import annotations

import argparse
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.matching.judge import judge
from app.matching.packs import compile_spec, data_path, load_pack, pack_tick
from app.matching.read import read_events

#: The demo flags a job whose slowest task took more than this many times the average (a display heuristic; the
#: queries themselves only return the average and the maximum).
SKEW_FLAG = 1.5
#: Raw records shown for a query whose RETURN shape the demo does not know.
GENERIC_SHOWN = 5
#: Wrap descriptions at this width.
WIDTH = 110


def run(args: argparse.Namespace) -> int:
    from engine.evaluate import StreamedMatch
    from engine.limits import from_settings

    pack_path = Path(args.pack) if args.pack else data_path("hadoop.yaml")
    events_path = Path(args.events) if args.events else data_path("samples", "hadoop_sample.jsonl")
    pack = load_pack(pack_path)
    tick = pack_tick(pack)
    events: list[Any] = read_events(events_path, tick)  # events, and the stamps of types no query reads
    specs = [spec for spec in pack.queries if spec.enabled]
    compiled = [
        compile_spec(
            spec.query, spec.name, strategy=spec.strategy, output=spec.output, confidence=spec.confidence, tick=tick
        )
        for spec in specs
    ]
    started = time.perf_counter()
    # The driver of hcep match, under the pack's memory bounds (settings.limits); whole signatures, as shown below.
    matched = StreamedMatch(compiled, events, from_settings(getattr(pack, "settings", None)))
    records = list(matched)
    elapsed = time.perf_counter() - started

    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[record["query"]].append(record)
    by_id = {event.id: event for event in events}

    out: list[str] = []
    out.append(f"hcep demo: query pack '{pack.name}' over a recorded trace")
    out.append("")
    out.append(f"  pack    {_show_path(pack_path)}: {len(specs)} enabled queries, tick {tick:g} s")
    out.append(f"  events  {_show_path(events_path)}: {len(events)} events{_span(events)}")
    counts = Counter(event.type for event in events)
    out.extend(_wrap_items([f"{n} {t}" for t, n in sorted(counts.items())], indent=10))
    out.append(f"  result  {len(records)} match records in {elapsed:.2f} s")
    drops = matched.dropped()
    if drops:
        per = ", ".join(f"{name} {n:,}" for name, n in drops.items())
        out.append(f"          the pack's memory bounds dropped partial matches: {per} (some matches may be missing)")
    for spec in specs:
        out.append("")
        out.extend(_section(spec, grouped.get(spec.name, []), by_id))
    out.append("")
    out.extend(_alerts(pack, events))
    out.append("")
    out.append("What this was: a replay of a recorded file through the engine, nothing live.  The raw match records")
    out.append("and the alerts, as JSON lines:")
    out.append(f"  hcep match {_show_path(events_path)} --pack {_show_path(pack_path)}")
    out.append(f"  hcep match {_show_path(events_path)} --pack {_show_path(pack_path)} --alerts")
    out.append("The live system -- a simulated cluster, collectors, Kafka, the streaming service with its alerts, and")
    out.append("the dashboard -- starts with plain `hcep demo` (Ctrl-C stops it).")
    print("\n".join(out))
    return 0


# --------------------------------------------------------------------------- sections


def _alerts(pack: Any, events: list[Any]) -> list[str]:
    """The alert transitions of the pack's rules on ``events`` (as ``hcep match --alerts`` decides them), one line
    each; or why there are none."""
    rules = list(pack.rules())
    lines = [f"Alerts  what the pack's {len(rules)} alert rule(s) judge of these records (hcep match --alerts)"]
    if not rules:
        return [*lines, "    the pack has no alert rules (`alerts:`)"]
    transitions = list(judge(pack, events))
    if not transitions:
        names = ", ".join(rule.name for rule in rules)
        text = (
            f"none: no record passes the gates of {names} (set for real clusters: enough tasks, minutes of "
            "excess time, gigabytes held; a short trace rarely reaches them)"
        )
        return [*lines, *textwrap.wrap(text, WIDTH, initial_indent="    ", subsequent_indent="    ")]
    latest = {}
    for alert in transitions:
        latest[alert.fingerprint] = alert
        labels = alert.labels
        grade = labels.get("severity", "?") + (f"/{labels['tier']}" if labels.get("tier") else "")
        state = "FIRING  " if alert.ends_at is None else "resolved"
        text = f"{state} {_when(alert.at)}  {labels.get('alertname')} ({grade}): {alert.annotations.get('summary')}"
        lines.extend(textwrap.wrap(text, WIDTH, initial_indent="    ", subsequent_indent=" " * 8))
    still = sum(1 for a in latest.values() if a.ends_at is None)
    lines.append(f"    {len(transitions)} transition(s); {still} alert(s) still open at the end of the trace")
    return lines


def _section(spec: Any, records: list[Mapping[str, Any]], by_id: dict[str, Any]) -> list[str]:
    names = [item.name for item in spec.query.returns]
    kleene = next((c.var for c in spec.query.components if c.kleene), None)
    about = " ".join(spec.description.split()) or " ".join(spec.query.text.split())
    lines = textwrap.wrap(f"{spec.name}  {about}", WIDTH, subsequent_indent=" " * 4)
    lines.append(f"    [{spec.strategy}, output {spec.output}, confidence >= {spec.confidence:g}]")
    if not records:
        return [*lines, "    nothing found"]
    if {"job_id", "avg_period", "max_period"} <= set(names):
        body = _skew(records, kleene)
    elif {"task_id", "period"} <= set(names):
        body = _slow_pulls(records, kleene, by_id)
    elif {"job_id", "queued"} <= set(names):
        body = _queued(records)
    elif len(names) == 1:
        body = _values(records, names[0])
    else:
        body = _generic(records)
    return lines + ["    " + line for line in body]


def _skew(records: list[Mapping[str, Any]], kleene: str | None) -> list[str]:
    rows = [f"{'job':<28} {'tasks':>5} {'avg':>9} {'max':>9} {'max/avg':>8}"]
    for r in records:
        ret = r["return"]
        avg, mx = ret.get("avg_period"), ret.get("max_period")
        n = len(r["match"].get(kleene, [])) if kleene else 0
        ratio = mx / avg if _num(avg) and _num(mx) and avg > 0 else None
        flag = f"  <- skewed (max > {SKEW_FLAG:g}x avg)" if ratio is not None and ratio > SKEW_FLAG else ""
        rows.append(
            f"{ret.get('job_id', '?')!s:<28} {n:>5} {_secs(avg):>9} {_secs(mx):>9} "
            f"{'-' if ratio is None else f'{ratio:.2f}x':>8}{flag}"
        )
    return rows


def _slow_pulls(records: list[Mapping[str, Any]], kleene: str | None, by_id: dict[str, Any]) -> list[str]:
    rows = []
    for r in records:
        ret = r["return"]
        before = [by_id[i].get("period") for i in r["match"].get(kleene, [])] if kleene else []
        before = [p for p in before if _num(p)]
        context = f" (its {len(before)} earlier pulls averaged {_secs(sum(before) / len(before), 2)})" if before else ""
        rows.append(f"{ret.get('task_id')}: a pull took {_secs(ret.get('period'), 2)} at {_when(r['end'])}{context}")
    return rows


def _queued(records: list[Mapping[str, Any]]) -> list[str]:
    per_job: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        per_job[str(r["return"].get("job_id"))].append(r["return"])
    rows = [f"{'job':<28} {'updates':>7} {'peak queued':>12}  {'at':<10} {'at the last update':>18}"]
    for job, rets in per_job.items():
        numeric = [x for x in rets if _num(x.get("queued"))]
        if not numeric:
            rows.append(f"{job:<28} {len(rets):>7}")
            continue
        peak = max(numeric, key=lambda x: x["queued"])
        last = max(numeric, key=lambda x: float(x["last"]) if _num(x.get("last")) else float("-inf"))
        rows.append(
            f"{job:<28} {len(rets):>7} {_bytes(peak['queued']):>12}  {_when(peak.get('last')):<10} "
            f"{_bytes(last['queued']):>18}"
        )
    return rows


def _values(records: list[Mapping[str, Any]], name: str) -> list[str]:
    best: dict[str, float] = {}
    for r in records:
        value = str(r["return"].get(name))
        best[value] = max(best.get(value, 0.0), r.get("confidence", 0.0))
    return [f"{value}  (confidence {conf:.2f})" for value, conf in best.items()]


def _generic(records: list[Mapping[str, Any]]) -> list[str]:
    rows = [f"{len(records)} records; the first {min(len(records), GENERIC_SHOWN)}:"]
    for r in records[:GENERIC_SHOWN]:
        rows.append(f"{_when(r.get('end'))}  {r['return']}  (confidence {r.get('confidence', 0.0):.2f})")
    return rows


# --------------------------------------------------------------------------- formatting


def _wrap_items(items: list[str], indent: int) -> list[str]:
    """Comma-separated ``items`` in lines of at most WIDTH characters, never splitting an item."""
    lines: list[str] = []
    line = ""
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if line and indent + len(line) + 1 + len(piece) > WIDTH:
            lines.append(" " * indent + line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(" " * indent + line)
    return lines


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _secs(value: Any, digits: int = 1) -> str:
    return f"{value:.{digits}f} s" if _num(value) else "-"


def _bytes(value: Any) -> str:
    if not _num(value):
        return "-"
    if abs(value) < 1000:
        return f"{value:g} B"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def _when(seconds: Any) -> str:
    """Epoch seconds as UTC time of day; small numbers (relative traces) as seconds."""
    if not _num(seconds):
        return "-"
    if seconds > 1e9:
        return datetime.fromtimestamp(seconds, UTC).strftime("%H:%M:%S")
    return f"t={seconds:g}s"


def _span(events: list[Any]) -> str:
    if not events:
        return ""
    lo, hi = min(e.ts for e in events), max(e.ts for e in events)
    if lo > 1e9:
        day = datetime.fromtimestamp(lo, UTC).strftime("%Y-%m-%d")
        return f", {day} {_when(lo)} to {_when(hi)} UTC ({hi - lo:.0f} s)"
    return f", t={lo:g}s to t={hi:g}s"


def _show_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
