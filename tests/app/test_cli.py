"""The ``hcep`` command line, run for real in a subprocess (docs/semantics.md section 8).

Each test runs ``python -m app.cli``; the CLI-shape tests also run the installed ``hcep`` console script when it sits
next to this interpreter (``.venv/bin/hcep`` after ``deploy/install.sh``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.queries.test_hadoop_pack import EXPECTED, assert_same_records

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "queries" / "hadoop.yaml"
HANDCHECK = ROOT / "tests" / "data" / "hadoop_handcheck.jsonl"
SAMPLE = ROOT / "queries" / "samples" / "hadoop_sample.jsonl"

MODULE = [sys.executable, "-m", "app.cli"]
SCRIPT = Path(sys.executable).parent / "hcep"
RUNNERS = [pytest.param(MODULE, id="python-m-app.cli")]
if SCRIPT.exists():
    RUNNERS.append(pytest.param([str(SCRIPT)], id="hcep-script"))


def hcep(*args: str, stdin: str | None = None, runner: list[str] = MODULE, cwd: Path = ROOT):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [*runner, *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def records(stdout: str) -> list[dict]:
    """The records printed, a growing run's chain of increments (Q4, docs/semantics.md section 5) rebuilt into whole
    records (:func:`contracts.records.rebuild`): what the hand-checked expectations list."""
    from contracts.records import rebuild

    return rebuild(json.loads(line) for line in stdout.splitlines())


def one_line_error(proc, *needles: str) -> str:
    """Exit 2, nothing on stdout, exactly one line on stderr containing every needle."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# --------------------------------------------------------------------------- shape of the command line


@pytest.mark.parametrize("runner", RUNNERS)
def test_help_is_fast_and_lists_the_commands(runner, capsys):
    hcep("--help", runner=runner)  # warm the file cache
    started = time.perf_counter()
    proc = hcep("--help", runner=runner)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    for word in ("match", "demo", "--version"):
        assert word in proc.stdout
    with capsys.disabled():
        print(f"\n[timing] {' '.join(Path(r).name for r in runner)} --help: {elapsed * 1000:.0f} ms")


@pytest.mark.parametrize("runner", RUNNERS)
def test_version(runner):
    from app import __version__

    proc = hcep("--version", runner=runner)
    assert proc.returncode == 0
    text = proc.stdout.strip()
    assert text.startswith(f"hcep {__version__} (engine hot path ") and text.endswith(")")
    assert text.split("engine hot path ", 1)[1].startswith(("compiled: ", "pure: "))


def test_no_command_prints_help_and_exits_2():
    proc = hcep()
    assert proc.returncode == 2
    assert "match" in proc.stderr


def test_match_help():
    proc = hcep("match", "--help")
    assert proc.returncode == 0
    for word in ("--pack", "--query", "--query-text", "--strategy", "--confidence", "--output", "--tick"):
        assert word in proc.stdout


def test_cli_module_imports_no_engine():
    code = "import sys, app.cli; print(sorted(m for m in ('engine', 'lark', 'yaml', 'json') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_every_command_is_registered_one_way():
    """Each command is one row of app.cli.COMMANDS naming a module with configure(parser) and run(args); building the
    parser for it configures that module's options and nothing else's (start-up imports only the invoked one)."""
    import importlib

    from app.cli import COMMANDS, build_parser

    invocations = []
    for name, module, _help, children in COMMANDS:
        assert (module is None) == bool(children), name
        invocations += [([name], module)] if module else [([name, child], mod) for child, mod, _ in children]
    assert {words[0] for words, _ in invocations} >= {"match", "demo", "run", "batch", "stream", "collect"}
    for words, module in invocations:
        mod = importlib.import_module(f"app.commands.{module}")
        assert callable(mod.configure) and callable(mod.run), module
        parser = build_parser(words)
        sub = parser._subparsers._group_actions[0].choices[words[0]]
        if len(words) > 1:
            sub = sub._subparsers._group_actions[0].choices[words[1]]
        assert sub.get_default("func") is mod.run, words
        others = [n for n, m, _, _ in COMMANDS if m and n != words[0]]
        for other in others:  # not configured: no options beyond --help
            leaf = parser._subparsers._group_actions[0].choices[other]
            assert leaf.get_default("func") is None and len(leaf._actions) == 1, other


def test_choices_agree_with_the_engine():
    from app.cli import OUTPUT_MODES, STRATEGIES
    from engine.language import ast

    assert STRATEGIES == ast.STRATEGIES
    assert OUTPUT_MODES == ast.OUTPUT_MODES


# --------------------------------------------------------------------------- hcep match


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("name", ["Q1", "Q2", "Q3", "Q4"])
def test_match_one_query_of_the_pack(runner, name):
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", name, runner=runner)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert_same_records(records(proc.stdout), EXPECTED[name])


def test_match_whole_pack_interleaves_in_completion_order():
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK))
    assert proc.returncode == 0, proc.stderr
    got = records(proc.stdout)
    assert_same_records(got, [r for name in EXPECTED for r in EXPECTED[name]])
    # Every record here completes on its last event, so completion order is end-time order.
    ends = [r["end"] for r in got]
    assert ends == sorted(ends)


def test_match_relative_paths_from_the_repository():
    proc = hcep("match", "tests/data/hadoop_handcheck.jsonl", "--pack", "queries/hadoop.yaml", "--query", "Q2")
    assert proc.returncode == 0, proc.stderr
    assert_same_records(records(proc.stdout), EXPECTED["Q2"])


def test_match_stdin():
    proc = hcep("match", "-", "--pack", str(PACK), "--query", "Q4", stdin=HANDCHECK.read_text())
    assert proc.returncode == 0, proc.stderr
    assert_same_records(records(proc.stdout), EXPECTED["Q4"])


def test_match_writes_growing_runs_as_increments():
    """Q4 as printed: a chain per job (each record the DataIO events since the previous one, named in ``extends``);
    ``--full-matches`` prints the whole records instead."""
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q4")
    raw = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and all("id" in r for r in raw) and any("extends" in r for r in raw)
    assert all(len(r["match"]["b"]) == 1 for r in raw)
    full = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q4", "--full-matches")
    assert full.returncode == 0, full.stderr
    whole = [json.loads(line) for line in full.stdout.splitlines()]
    assert_same_records(whole, EXPECTED["Q4"])


def test_match_query_text():
    text = (
        "PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 1 day "
        "RETURN a.job_id AS job_id, a.ts AS start, b[b.len].ts AS last, sum(b[].size) AS queued"
    )
    proc = hcep("match", str(HANDCHECK), "--query-text", text, "--strategy", "skip_till_next_match")
    assert proc.returncode == 0, proc.stderr
    want = [
        {**r, "query": "query", "return": {k: v for k, v in r["return"].items() if k != "change"}}
        for r in EXPECTED["Q4"]
    ]
    assert_same_records(records(proc.stdout), want)


def test_match_query_text_defaults_to_any_match_and_all():
    # Trailing Kleene under skip_till_any_match: every non-empty subset of a job's DataIO events after its start.
    # jA: {d1, d2, d3} -> 7 subsets, jB: 1, jC: 1 (dC2 is out of the window).
    proc = hcep(
        "match",
        str(HANDCHECK),
        "--query-text",
        "PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 1 day RETURN sum(b[].size) AS queued",
    )
    assert proc.returncode == 0, proc.stderr
    got = records(proc.stdout)
    assert len(got) == 9
    assert {r["query"] for r in got} == {"query"}
    assert sorted(r["return"]["queued"] for r in got) == sorted([100, 200, -150, 300, -50, 50, 150, 50, 10])


def test_match_overrides_strategy_and_output():
    # Q4 under skip_till_any_match: the 9 subsets above instead of 5 prefixes.
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q4", "--strategy", "skip_till_any_match")
    assert proc.returncode == 0, proc.stderr
    assert len(records(proc.stdout)) == 9
    # Q1 with output all: every non-empty subset of jA's three mappers (7) and jB's one.
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q1", "--output", "all")
    assert proc.returncode == 0, proc.stderr
    got = records(proc.stdout)
    assert len(got) == 8
    assert max(len(r["match"]["b"]) for r in got) == 3


def test_match_overrides_confidence_and_tick():
    # Precise events: confidence 1, so a threshold of 1 keeps everything.  With whole-second ticks the hand-checked
    # Q1 trace (integer times) is unchanged.
    for extra in (["--confidence", "1"], ["--tick", "1"]):
        proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q1", *extra)
        assert proc.returncode == 0, proc.stderr
        assert_same_records(records(proc.stdout), EXPECTED["Q1"])
    # A 1000 s tick puts sA (10 s), mA1..mA3 and eA (60 s) all on tick 0: nothing can follow anything.
    proc = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q1", "--tick", "1000")
    assert proc.returncode == 0, proc.stderr
    assert [r["return"]["job_id"] for r in records(proc.stdout)] == []


def test_match_disabled_queries_are_skipped_unless_named(tmp_path):
    pack = tmp_path / "p.yaml"
    pack.write_text(
        "pack: t\nqueries:\n"
        "  - name: pairs\n    query: PATTERN SEQ(JobStart a, JobEnd c) WHERE [job_id] WITHIN 1 day\n"
        "  - name: spare\n    enabled: false\n    query: PATTERN SEQ(JobStart a, JobEnd c) WITHIN 1 day\n"
    )
    proc = hcep("match", str(HANDCHECK), "--pack", str(pack))
    assert proc.returncode == 0, proc.stderr
    got = records(proc.stdout)
    assert {r["query"] for r in got} == {"pairs"}
    assert sorted(r["match"]["a"][0] for r in got) == ["sA", "sB"]  # sC..eC is exactly a day: outside the window
    proc = hcep("match", str(HANDCHECK), "--pack", str(pack), "--query", "spare")
    assert proc.returncode == 0, proc.stderr
    assert {r["query"] for r in records(proc.stdout)} == {"spare"}


def test_match_empty_input_prints_nothing():
    proc = hcep("match", "-", "--pack", str(PACK), stdin="")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_match_sample_trace():
    proc = hcep("match", str(SAMPLE), "--pack", str(PACK))
    assert proc.returncode == 0, proc.stderr
    assert {r["query"] for r in records(proc.stdout)} == {"Q1", "Q2", "Q3", "Q4", "Q5", "Q6"}


# --------------------------------------------------------------------------- hcep match: exit 2, one line


def test_bad_json_line(tmp_path):
    events = tmp_path / "ev.jsonl"
    lines = HANDCHECK.read_text().splitlines()
    events.write_text("\n".join([*lines[:2], "", '{"type": "JobStart", "ts": 1', *lines[2:]]) + "\n")
    line = one_line_error(hcep("match", str(events), "--pack", str(PACK)))
    assert line.startswith(f"{events}:4: invalid JSON")


def test_invalid_event(tmp_path):
    events = tmp_path / "ev.jsonl"
    events.write_text('{"type": "JobStart", "ts": 1}\n{"type": "JobEnd", "job_id": "j"}\n')
    line = one_line_error(hcep("match", str(events), "--pack", str(PACK)))
    assert line.startswith(f"{events}:2: ") and "ts" in line


@pytest.mark.parametrize(
    "bad",
    [
        "[1, 2]",
        '{"type": "", "ts": 1}',
        '{"type": "X", "ts": "soon"}',
        '{"type": "X", "ts": 5, "lo": 6, "hi": 4}',
        '{"type": "X", "ts": 5, "delta": -1}',
    ],
)
def test_invalid_events_on_stdin(bad):
    line = one_line_error(hcep("match", "-", "--pack", str(PACK), stdin='{"type": "X", "ts": 0}\n' + bad + "\n"))
    assert line.startswith("<stdin>:2: ")


@pytest.mark.parametrize(
    "bad, needle",
    [
        ('{"type": "A", "ts": 1e308}', "'ts' is out of range"),
        ('{"type": "A", "ts": NaN}', "'ts' must be a finite number"),
        ('{"type": "A", "ts": Infinity}', "'ts' must be a finite number"),
        ('{"type": "A", "ts": -Infinity}', "'ts' must be a finite number"),
        ('{"type": "A", "ts": 1e400}', "'ts' must be a finite number"),  # the JSON decoder makes it inf
        ('{"type": "A", "ts": ' + "9" * 400 + "}", "'ts' is out of range"),
        ('{"type": "A", "ts": 5, "lo": 6, "hi": 4}', "empty"),
        ('{"type": "A", "ts": 5, "lo": NaN, "hi": 4}', "'lo' must be a finite number"),
        ('{"type": "A", "ts": 5, "hi": 1e300}', "'hi' is out of range"),
        ('{"type": "A", "ts": 5, "delta": -1}', "'delta' must be >= 0"),
        ('{"type": "A", "ts": 5, "delta": 1e300}', "'delta' is out of range"),
        ('{"type": "A", "ts": 5, "delta": NaN}', "'delta' must be a finite number"),
        ('{"type": "A", "ts": 99999999999.9, "delta": 0.5}', "out of range"),
        ('{"type": "A", "ts": 5, "id": ' + "7" * 5000 + "}", "invalid JSON"),  # more digits than int() takes
        ("[" * 100_000 + "]" * 100_000, "invalid JSON"),  # deeper than the decoder recurses
    ],
)
def test_bad_numbers_are_one_line_errors_naming_the_line(bad, needle):
    """Issue 18: these ended in an OverflowError (or ValueError, RecursionError) traceback with exit 1."""
    line = one_line_error(
        hcep("match", "-", "--query-text", "PATTERN SEQ(A a, A b)", stdin='{"type": "A", "ts": 0}\n' + bad + "\n"),
        needle,
    )
    assert line.startswith("<stdin>:2: ")


def test_tick_index_out_of_range(tmp_path):
    """A tiny tick makes an ordinary epoch time an absurd tick index: an error, not an overflow."""
    events = tmp_path / "ev.jsonl"
    events.write_text('{"type": "A", "ts": 1700000000}\n')
    one_line_error(
        hcep("match", str(events), "--query-text", "PATTERN SEQ(A a, A b)", "--tick", "1e-9"),
        f"{events}:1: ",
        "out of range",
    )


def test_max_delta_rejects_wide_events_naming_the_line(tmp_path):
    events = tmp_path / "ev.jsonl"
    events.write_text('{"type": "A", "ts": 0, "delta": 7.5}\n{"type": "B", "ts": 100000, "delta": 100000}\n')
    query = ["--query-text", "PATTERN SEQ(A a, B b)"]
    one_line_error(hcep("match", str(events), *query), f"{events}:2: ", "--max-delta 7.5")
    one_line_error(hcep("match", str(events), *query, "--max-delta", "1"), f"{events}:1: ", "--max-delta 1")
    proc = hcep("match", str(events), *query, "--max-delta", "1e5")
    assert proc.returncode == 0, proc.stderr
    assert len(records(proc.stdout)) == 1
    # The pack's settings.max_delta is the default, as for hcep run; the option overrides it.
    pack = tmp_path / "p.yaml"
    pack.write_text("pack: t\nsettings: {max_delta: 200000}\nqueries:\n  - name: q\n    query: PATTERN SEQ(A a, B b)\n")
    assert hcep("match", str(events), "--pack", str(pack)).returncode == 0
    one_line_error(hcep("match", str(events), "--pack", str(pack), "--max-delta", "7.5"), f"{events}:2: ")
    one_line_error(hcep("match", str(events), *query, "--max-delta", "-1"), "--max-delta")


def test_max_delta_in_help():
    proc = hcep("match", "--help")
    assert "--max-delta" in proc.stdout and "7.5" in proc.stdout


def test_memory_limits_drop_and_report_on_one_stderr_line(tmp_path):
    events = tmp_path / "ev.jsonl"
    lines = [
        {"type": "A", "ts": 0, "k": 1},
        *({"type": "B", "ts": i, "k": 1} for i in range(1, 13)),
        {"type": "C", "ts": 20, "k": 1},
    ]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines))
    query = ["--query-text", "PATTERN SEQ(A a, B+ b[], C c) WHERE [k] WITHIN 1 minute"]
    proc = hcep("match", str(events), *query)
    assert proc.returncode == 0 and proc.stderr == "" and len(records(proc.stdout)) == 2**12 - 1
    proc = hcep("match", str(events), *query, "--max-runs-per-key", "100")
    assert proc.returncode == 0 and len(records(proc.stdout)) == 100
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "memory limits dropped partial matches" in lines[0] and "query 1" in lines[0]
    one_line_error(hcep("match", str(events), *query, "--max-runs", "-1"), "--max-runs")
    assert "--max-runs-per-key" in hcep("match", "--help").stdout


def test_missing_events_file(tmp_path):
    one_line_error(hcep("match", str(tmp_path / "nope.jsonl"), "--pack", str(PACK)), "nope.jsonl")


def test_unknown_query_name():
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q9"), "Q9", "Q1")


def test_unknown_query_name_is_one_error_with_or_without_alerts():
    """``--query`` is picked from a pack one way (app.matching.packs.named_queries), records or alerts."""
    plain = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q9")
    judged = hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q9", "--alerts")
    assert one_line_error(judged, "Q9", "Q1") == one_line_error(plain, "Q9", "Q1")


def test_pack_errors(tmp_path):
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(tmp_path / "missing.yaml")), "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("pack: t\ncolour: blue\nqueries:\n  - name: q\n    query: PATTERN SEQ(A a, B b)\n")
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(bad)), "bad.yaml", "colour")
    bad.write_text("pack: t\nqueries:\n  - name: q\n    query: PATTERN SEQ(A a, B b) WHERE a.x > zz.y\n")
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(bad)), "bad.yaml", "zz")
    bad.write_text("pack: t\nqueries: [\n")
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(bad)), "bad.yaml")


def test_query_text_errors():
    one_line_error(hcep("match", str(HANDCHECK), "--query-text", "PATTERN SEQ(A a, B b) WHERE"), "query")
    one_line_error(hcep("match", str(HANDCHECK), "--query-text", "PATTERN SEQ(A a, B+ b[]) WHERE b.x > 1"), "query")


def test_compile_errors_from_overrides():
    # Q6's b[i].val >= b[i-1].val is not true-false consistent: output collapsed is a compile error.
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(PACK), "--query", "Q6", "--output", "collapsed"), "Q6")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--strategy", "fastest"], "--strategy"),
        (["--output", "some"], "--output"),
        (["--confidence", "1.5"], "--confidence"),
        (["--confidence", "high"], "--confidence"),
        (["--tick", "0"], "--tick"),
        (["--tick", "-0.1"], "--tick"),
        (["--tick", "nan"], "--tick"),
        (["--query-text", "PATTERN SEQ(A a, B b)"], "--query-text"),  # with --pack: mutually exclusive
        (["--bogus"], "--bogus"),
    ],
)
def test_bad_option_values(args, needle):
    one_line_error(hcep("match", str(HANDCHECK), "--pack", str(PACK), *args), needle)


def test_pack_or_query_text_is_required():
    one_line_error(hcep("match", str(HANDCHECK)), "--pack")
    one_line_error(hcep("match", str(HANDCHECK), "--query", "Q1", "--query-text", "PATTERN SEQ(A a, B b)"), "--pack")


# --------------------------------------------------------------------------- hcep demo


@pytest.mark.parametrize("runner", RUNNERS)
def test_demo_replay_summarises_the_sample(runner, tmp_path):
    proc = hcep("demo", "--replay", runner=runner, cwd=tmp_path)  # from elsewhere: finds the installed pack and sample
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6"):
        assert f"\n{name}  " in out
    assert "job_1700000000000_0001" in out and "skewed" in out
    assert "task_1700000000000_0001_r_000001: a pull took 5.60 s" in out
    assert "task_1700000000000_0002_r_000001" in out
    assert "a replay of a recorded file" in out and "plain `hcep demo`" in out


def test_demo_other_pack_and_events(tmp_path):
    pack = tmp_path / "p.yaml"
    pack.write_text(
        "pack: t\nqueries:\n  - name: jobs\n    description: job start to end\n"
        "    query: PATTERN SEQ(JobStart a, JobEnd c) WHERE [job_id] WITHIN 1 day RETURN a.job_id AS job, c.ts AS end\n"
    )
    proc = hcep("demo", "--replay", "--pack", str(pack), "--events", str(HANDCHECK))
    assert proc.returncode == 0, proc.stderr
    assert "jobs  job start to end" in proc.stdout and "2 records" in proc.stdout


def test_demo_bad_events(tmp_path):
    events = tmp_path / "ev.jsonl"
    events.write_text("not json\n")
    one_line_error(hcep("demo", "--replay", "--events", str(events)), f"{events}:1:")


def test_demo_live_option_errors(tmp_path):
    """The live demo's options are checked before anything starts."""
    one_line_error(hcep("demo", "--events", str(SAMPLE)), "--events needs --replay")
    one_line_error(hcep("demo", "--kafka-port", "8649"), "every port must differ")
    one_line_error(hcep("demo", "--duration", "0"), "--duration")
    one_line_error(hcep("demo", "--nodes", "1"), "--nodes")
    one_line_error(hcep("demo", "--pack", str(tmp_path / "missing.yaml")), "no such file")
