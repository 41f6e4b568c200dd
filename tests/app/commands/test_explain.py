"""``hcep explain`` (app/commands/explain.py): the evaluator chosen per query and its plan, GRETA's template graph."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.commands import CommandError
from app.commands import explain as explain_cmd

ROOT = Path(__file__).resolve().parents[3]
TRENDS = ROOT / "queries" / "trends.yaml"
HADOOP = ROOT / "queries" / "hadoop.yaml"


def explain(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hcep explain")
    explain_cmd.configure(parser)
    return parser.parse_args(list(argv))


def output(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert explain_cmd.run(explain(*argv)) == 0
    return capsys.readouterr().out


def test_greta_query_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(
        capsys,
        "--query-text",
        "PATTERN SEQ(ReducerStart a, LoadStd+ b[]) WHERE [host] AND b[i].val > b[i-1].val "
        "WITHIN 10 minutes SLIDE 1 minute RETURN COUNT(*) AS trends, SUM(b.cpu) AS cpu",
    )
    assert out.startswith("query query: strategy skip_till_any_match")
    assert "evaluator: greta" in out
    assert "windows [k*60 s, k*60 s + 600 s), up to 10 per event" in out
    assert "groups: [host]" in out
    assert "a: ReducerStart a (START)" in out and "b: LoadStd+ b[] (END)" in out
    assert "a -> b (SEQ): true -- running total, O(1)" in out
    assert "b -> b (+): b[i].val > b[i-1].val -- Fenwick tree on b[i-1].val, O(log n)" in out
    assert "aggregates: trends = COUNT(*), cpu = SUM(b.cpu)" in out
    assert "imprecise intervals is out of scope" in out


def test_general_path_and_negation(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(
        capsys,
        "--query-text",
        "PATTERN SEQ(A a, ~N n, B+ b[], C c) WHERE [k] AND n.x > 1 AND b[i].v + b[i-1].v > 3 "
        "AND c.v < b[b.len].v WITHIN 5 s RETURN COUNT(*)",
    )
    assert "evaluator: greta" in out
    assert "a -> b (SEQ): true -- scan of the predecessors (the negation is checked per edge, per group)" in out
    assert "not across: ~N n where n.x > 1" in out
    assert "b -> b (+): (b[i].v + b[i-1].v) > 3 -- scan of the predecessors, O(n)" in out
    assert "b -> c (SEQ): c.v < b[b.len].v -- Fenwick tree on b[b.len].v" in out
    assert "tumbling (SLIDE = WITHIN)" in out


def test_enumerated_trend_query_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(capsys, "--query-text", "PATTERN SEQ(A a, B+ b[])\nWHERE b[i].x > avg(b[..i-1].x) RETURN COUNT(*)")
    assert "evaluator: enumerate" in out
    assert "line 2, column 7" in out and "exponential" in out
    out = output(
        capsys,
        "--query-text",
        "PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*)",
        "--strategy",
        "skip_till_next_match",
        "--output",
        "distinct",
    )
    assert "evaluator: enumerate" in out and "output mode 'distinct' does not apply" in out


def test_per_match_queries(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(capsys, "--pack", str(HADOOP))
    for name in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6"):
        assert f"query {name}:" in out
    # Q1, Q2, Q5, Q6, Q7 and the rules' queries but SlowHost are imprecise; Q3, Q4, SlowHost run on the NFA.
    assert out.count("evaluator: imprecise") == 14 and out.count("evaluator: nfa") == 3
    assert "query SlowHost:" in out and "query RunawayHost:" in out
    out = output(capsys, "--pack", str(HADOOP), "--query", "Q3", "--strategy", "strict_contiguity")
    assert "query Q3: strategy strict_contiguity" in out and "evaluator: nfa" in out and "query Q1" not in out


def test_trends_pack(capsys: pytest.CaptureFixture[str]) -> None:
    out = output(capsys, "--pack", str(TRENDS))
    assert out.count("evaluator: greta") == out.count("\nquery ") + 1 >= 5
    assert "emptied by each negated event" in out  # T6: ~Balance between two Imbalance components
    assert "tick 0.1s" in output(capsys, "--pack", str(TRENDS), "--query", "T3")
    assert "tick 1.0s" in output(capsys, "--pack", str(TRENDS), "--query", "T3", "--tick", "1")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--query-text", "PATTERN SEQ(A a, B+ b[])\nRETURN COUNT(*), a.x"],
            "hcep explain: --query-text, line 2, column 18: cannot mix trend aggregates",
        ),
        (["--pack", str(TRENDS), "--query", "nope"], "no query named 'nope'"),
        (["--pack", "/nonexistent/pack.yaml"], "pack.yaml"),
    ],
)
def test_errors(argv: list[str], message: str) -> None:
    with pytest.raises(CommandError) as info:
        explain_cmd.run(explain(*argv))
    assert message in str(info.value)


def test_options_are_checked() -> None:
    with pytest.raises(SystemExit):
        explain("--query-text", "PATTERN A a", "--strategy", "sometimes")
    with pytest.raises(SystemExit):
        explain()  # --pack or --query-text is required


def test_through_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["explain", "--pack", str(TRENDS), "--query", "T1"]) == 0
    out = capsys.readouterr().out
    assert "query T1:" in out and "evaluator: greta" in out
    with pytest.raises(SystemExit) as info:
        main(["explain", "--pack", str(TRENDS), "--query-text", "x"])  # not both
    assert info.value.code == 2
    assert main(["explain", "--query-text", "PATTERN SEQ(A a, B+ b[]) RETURN COUNT(*), a.x"]) == 2
    assert "cannot mix trend aggregates" in capsys.readouterr().err
