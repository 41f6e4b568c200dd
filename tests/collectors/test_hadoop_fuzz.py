"""Fuzzing every parser with mutated and random lines: nothing escapes, every line is accounted for exactly once,
every dead letter is counted, and lines that are bad by construction are dead-lettered where they are."""

from __future__ import annotations

import io
import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.hadoop.amlog import AmLogParser
from collectors.hadoop.common import Context, LineParser, run_lines
from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.jhist import JhistJsonParser, parse_jhist_binary
from collectors.hadoop.tasklog import ReduceLogParser
from tests.collectors.hadoop_testkit import json_jhist_to_binary, sample

#: HCEP_FUZZ_EXAMPLES=5000 for a deep run; the default keeps the suite fast.
FUZZ = settings(
    max_examples=int(os.environ.get("HCEP_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

JHIST = sample("jhist").read_text().split("\n")
AM = sample("am_syslog").read_text().splitlines()
REDUCE = sample("reduce_syslog").read_text().splitlines()
PARSERS = {"jhist": (JhistJsonParser, JHIST), "am": (AmLogParser, AM), "reduce": (ReduceLogParser, REDUCE)}

noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200).map(
    lambda s: s.replace("\n", " ").replace("\r", " ")
)


@st.composite
def mutated(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """The sample with some lines cut, spliced, garbled or replaced, and random lines inserted."""
    out = list(lines)
    for _ in range(draw(st.integers(0, 12))):
        i = draw(st.integers(0, len(out) - 1))
        line = out[i]
        kind = draw(st.sampled_from(["cut", "insert", "replace", "noise", "dup", "swapcase"]))
        pos = draw(st.integers(0, len(line)))
        if kind == "cut":
            out[i] = line[:pos]
        elif kind == "insert":
            out[i] = line[:pos] + draw(noise) + line[pos:]
        elif kind == "replace" and line:
            out[i] = line[: pos - 1] + draw(st.characters(blacklist_categories=("Cs",))).replace("\n", "") + line[pos:]
        elif kind == "noise":
            out.insert(i, draw(noise))
        elif kind == "dup":
            out.insert(i, line)
        else:
            out[i] = line.swapcase()
    return out


def _run(parser_cls: type[LineParser], lines: list[str]) -> tuple[list[dict], Context]:
    ctx = Context(source="fuzz", deadletter=DeadLetterSink.memory())
    events = list(run_lines(parser_cls(ctx), lines))  # must not raise
    return events, ctx


def _accounted(ctx: Context, lines: list[str]) -> None:
    s = ctx.stats
    assert s.lines == len(lines)
    assert s.used + s.ignored + s.continuation + s.dead == s.lines
    assert ctx.deadletter.count == s.dead == len(ctx.deadletter.records)
    for record in ctx.deadletter.records:
        assert set(record) == {"source", "location", "reason", "raw"} and record["reason"]
        lineno = int(record["location"].rsplit(":", 1)[1])
        assert record["raw"] == lines[lineno - 1][:16384] or record["raw"].startswith(lines[lineno - 1][:100])


def _events_are_well_formed(events: list[dict]) -> None:
    for ev in events:
        assert isinstance(ev["type"], str) and isinstance(ev["ts"], float) and isinstance(ev["id"], str)
        assert ev["delta"] == 0.5
        json.dumps(ev)


@FUZZ
@given(data=st.data(), which=st.sampled_from(sorted(PARSERS)))
def test_mutated_samples_never_raise_and_are_accounted(data: st.DataObject, which: str) -> None:
    parser_cls, lines = PARSERS[which]
    fuzzed = data.draw(mutated(lines))
    events, ctx = _run(parser_cls, fuzzed)
    _accounted(ctx, fuzzed)
    _events_are_well_formed(events)


@FUZZ
@given(lines=st.lists(noise, max_size=30), which=st.sampled_from(sorted(PARSERS)))
def test_random_lines(lines: list[str], which: str) -> None:
    events, ctx = _run(PARSERS[which][0], lines)
    _accounted(ctx, lines)
    _events_are_well_formed(events)


@FUZZ
@given(data=st.data())
def test_jhist_lines_that_are_not_json_objects_are_dead_lettered(data: st.DataObject) -> None:
    fuzzed = data.draw(mutated(JHIST))
    _, ctx = _run(JhistJsonParser, fuzzed)
    dead = {int(r["location"].rsplit(":", 1)[1]) for r in ctx.deadletter.records}
    for lineno, line in enumerate(fuzzed, 1):
        if lineno == 1 or not line.strip():
            continue
        try:
            ok = isinstance(json.loads(line), dict)
        except ValueError:
            ok = False
        if not ok:
            assert lineno in dead, (lineno, line[:80])


_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ")


def _break(line: str, how: str, where: int) -> str:
    """A header line made certainly bad: an impossible date or time, or a key line cut after its keyword."""
    if how == "month":
        return line[:5] + "13" + line[7:]
    if how == "hour":
        return line[:11] + "25" + line[13:]
    if how == "letter":
        return line[:17] + "x" + line[18:]
    if how == "level":
        return line[:24] + "NOTICE" + line[line.index(" ", 24) :]
    return line  # "cut" handled by the caller


_KEYWORDS = {
    "am": ("TaskAttempt Transitioned from ", "Job Transitioned from ", "using containerId: ["),
    "reduce": ("about to shuffle output of map ", "bytes from map-output for ", " freed by fetcher#"),
}


@FUZZ
@given(data=st.data(), which=st.sampled_from(["am", "reduce"]))
def test_log_lines_broken_on_purpose_are_dead_lettered(data: st.DataObject, which: str) -> None:
    parser_cls, lines = PARSERS[which]
    lines = list(lines)
    headers = [i for i, line in enumerate(lines) if _STAMP.match(line)]
    broken: set[int] = set()
    for i in data.draw(st.lists(st.sampled_from(headers), min_size=1, max_size=8, unique=True)):
        how = data.draw(st.sampled_from(["month", "hour", "letter", "level", "cut"]))
        if how == "cut":
            keyed = [k for k in _KEYWORDS[which] if k in lines[i]]
            if not keyed:
                continue
            at = lines[i].index(keyed[0]) + len(keyed[0])
            lines[i] = lines[i][: data.draw(st.integers(at, at + 3))].rstrip()
        else:
            lines[i] = _break(lines[i], how, 0)
        broken.add(i + 1)
    _, ctx = _run(parser_cls, lines)
    dead = {int(r["location"].rsplit(":", 1)[1]) for r in ctx.deadletter.records}
    assert broken <= dead
    _accounted(ctx, lines)


BINARY = json_jhist_to_binary(sample("jhist").read_text())


@FUZZ
@given(data=st.data())
def test_binary_jhist_with_corrupt_bytes(data: st.DataObject) -> None:
    raw = bytearray(BINARY)
    header = BINARY.index(b"\n", BINARY.index(b"\n") + 1) + 1
    for _ in range(data.draw(st.integers(1, 6))):
        pos = data.draw(st.integers(header, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(header, len(raw)))]
    ctx = Context(source="bin", deadletter=DeadLetterSink.memory())
    events = list(parse_jhist_binary(io.BytesIO(bytes(raw)), ctx))
    s = ctx.stats
    assert s.used + s.ignored + s.dead == s.lines
    assert ctx.deadletter.count == s.dead
    _events_are_well_formed(events)
