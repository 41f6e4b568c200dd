"""YAML query packs (semantics section 6): valid packs load with their defaults; invalid ones name file, query, line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine.language.packs import Pack, PackError, QuerySpec, load_pack, parse_pack
from engine.language.parser import parse_query

HADOOP_PACK = """\
pack: hadoop
tick: 0.1
description: Hadoop cluster monitoring (SASE++ case study)
settings:
  imbalance_threshold: 0.5
  webhooks: {ops: "http://localhost:9000/hook"}
queries:
  - name: Q1
    description: mapper periods per job
    strategy: skip_till_any_match
    output: collapsed
    query: |
      PATTERN SEQ(JobStart a, Mapper+ b[], JobEnd c)
      WHERE [job_id]
      WITHIN 1 day
      RETURN a.job_id AS job_id, avg(b[].period) AS avg_period, max(b[].period) AS max_period
  - name: Q2
    output: collapsed
    query: >
      PATTERN SEQ(JobStart a, Reducer+ b[], JobEnd c) WHERE [job_id] WITHIN 1 day
      RETURN a.job_id AS job_id, avg(b[].period) AS avg_period, max(b[].period) AS max_period
  - name: Q3
    strategy: skip_till_next_match
    query: |
      PATTERN SEQ(ReducerStart a, DataPull+ b[], DataPull c)
      WHERE [task_id] AND c.period > 2 * avg(b[].period)
      WITHIN 10 minutes
      RETURN a.task_id AS task_id, c.period AS period
  - name: Q4
    strategy: skip_till_next_match
    enabled: false
    query: "PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 1 day
      RETURN a.job_id AS job_id, a.ts AS start, b[b.len].ts AS last, sum(b[].size) AS queued"
  - name: Q5
    output: distinct
    confidence: 0.5
    query: |
      PATTERN SEQ(Balance a, ReducerStart b, Imbalance+ c[], ReducerEnd d, Balance e)
      WHERE [task_id]
      WITHIN 10 minutes
      RETURN b.task_id AS task_id
  - name: Q6
    description: reducers during which cluster load imbalance keeps rising
    strategy: skip_till_any_match
    confidence: 0.5
    output: distinct
    alert: {severity: warning, webhook: ops, summary: "load imbalance rising during a reducer"}
    query: |
      PATTERN SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c)
      WHERE [task_id] AND b[i].val >= b[i-1].val
      WITHIN 10 minutes
      RETURN a.task_id AS task_id
"""


def pack_error(text: str, source: str = "packs/p.yaml") -> PackError:
    with pytest.raises(PackError) as info:
        parse_pack(textwrap.dedent(text), source)
    return info.value


def one_query(extra: str = "", query: str = "PATTERN SEQ(A a, B b) WHERE [id]") -> str:
    """A one-query pack with ``extra`` lines (indented 4) added to the query entry."""
    lines = ["pack: p", "queries:", "  - name: Q", f"    query: {query}"]
    lines += ["    " + line for line in textwrap.dedent(extra).splitlines() if line.strip()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- valid packs


def test_hadoop_pack_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "hadoop.yaml"
    path.write_text(HADOOP_PACK, encoding="utf-8")
    pack = load_pack(path)
    assert isinstance(pack, Pack)
    assert (pack.name, pack.tick, pack.source) == ("hadoop", 0.1, str(path))
    assert pack.description == "Hadoop cluster monitoring (SASE++ case study)"
    assert pack.settings == {"imbalance_threshold": 0.5, "webhooks": {"ops": "http://localhost:9000/hook"}}
    assert [q.name for q in pack.queries] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    table = {q.name: (q.strategy, q.output, q.confidence, q.enabled) for q in pack.queries}
    assert table == {
        "Q1": ("skip_till_any_match", "collapsed", 0.0, True),
        "Q2": ("skip_till_any_match", "collapsed", 0.0, True),
        "Q3": ("skip_till_next_match", "all", 0.0, True),
        "Q4": ("skip_till_next_match", "all", 0.0, False),
        "Q5": ("skip_till_any_match", "distinct", 0.5, True),
        "Q6": ("skip_till_any_match", "distinct", 0.5, True),
    }
    q6 = pack.get("Q6")
    assert isinstance(q6, QuerySpec)
    assert q6.description == "reducers during which cluster load imbalance keeps rising"
    assert q6.alert == {"severity": "warning", "webhook": "ops", "summary": "load imbalance rising during a reducer"}
    assert pack.get("Q1").alert is None and pack.get("Q1").description == "mapper periods per job"
    text = "PATTERN SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c)\nWHERE [task_id] AND b[i].val >= b[i-1].val\n"
    text += "WITHIN 10 minutes\nRETURN a.task_id AS task_id\n"
    assert q6.query == parse_query(text, "Q6")
    assert q6.query.text == text and q6.query.name == "Q6"
    # Folded and quoted scalars parse too; every RETURN name of docs/semantics.md section 7 is there.
    names = {q.name: [r.name for r in q.query.returns] for q in pack.queries}
    assert names == {
        "Q1": ["job_id", "avg_period", "max_period"],
        "Q2": ["job_id", "avg_period", "max_period"],
        "Q3": ["task_id", "period"],
        "Q4": ["job_id", "start", "last", "queued"],
        "Q5": ["task_id"],
        "Q6": ["task_id"],
    }
    with pytest.raises(KeyError, match="Q7"):
        pack.get("Q7")


def test_defaults_and_string_source() -> None:
    pack = parse_pack(one_query())
    assert pack.source == "<string>" and pack.tick == 0.1 and pack.description == "" and pack.settings == {}
    (spec,) = pack.queries
    assert spec == QuerySpec(name="Q", query=parse_query("PATTERN SEQ(A a, B b) WHERE [id]", "Q"))
    assert (spec.strategy, spec.confidence, spec.output, spec.description, spec.alert, spec.enabled) == (
        "skip_till_any_match",
        0.0,
        "all",
        "",
        None,
        True,
    )


def test_strategy_from_the_query_text() -> None:
    text = "PATTERN SEQ(A a, B b) WHERE skip_till_next_match(a, b) { [id] }"
    assert parse_pack(one_query(query=text)).queries[0].strategy == "skip_till_next_match"
    # The same strategy in the pack is fine.
    same = parse_pack(one_query("strategy: skip_till_next_match", query=text)).queries[0]
    assert same.strategy == "skip_till_next_match" and same.query.strategy == "skip_till_next_match"


def test_integer_values_and_null_alert() -> None:
    pack = parse_pack(one_query("confidence: 1\nalert:\n") + "tick: 1\n")
    assert pack.tick == 1.0 and isinstance(pack.tick, float)
    assert pack.queries[0].confidence == 1.0 and pack.queries[0].alert is None


# --------------------------------------------------------------------------- errors


def test_pack_error_format() -> None:
    err = pack_error(one_query("colour: red"), "queries/x.yaml")
    assert isinstance(err, ValueError)
    assert (err.source, err.query, err.line, err.column) == ("queries/x.yaml", "Q", 5, 5)
    assert str(err) == (
        "queries/x.yaml: query Q, line 5, column 5: unknown key 'colour' "
        "(allowed: name, description, strategy, confidence, output, alert, enabled, query)"
    )


@pytest.mark.parametrize(
    ("text", "query", "line", "column", "words"),
    [
        # top level
        ("pack: p\nqueries: [{name: Q, query: PATTERN A a}]\nfoo: 1\n", "", 3, 1, ["unknown key 'foo'"]),
        ("queries: [{name: Q, query: PATTERN A a}]\n", "", 1, 1, ["'pack'", "required"]),
        ("pack: ''\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 1, 7, ["'pack'"]),
        ("pack: p\n", "", 1, 1, ["'queries' is required"]),
        ("pack: p\nqueries: []\n", "", 2, 10, ["non-empty list"]),
        ("pack: p\nqueries: {Q: 1}\n", "", 2, 10, ["non-empty list"]),
        ("pack: p\ntick: 0\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 7, ["'tick' must be a number > 0"]),
        ("pack: p\ntick: fast\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 7, ["'tick'"]),
        ("pack: p\ntick: true\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 7, ["'tick'"]),
        ("pack: p\ndescription: [1]\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 14, ["'description'"]),
        ("pack: p\nsettings: [1]\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 11, ["'settings'"]),
        ("pack: p\npack: q\nqueries: [{name: Q, query: PATTERN A a}]\n", "", 2, 1, ["duplicate key 'pack'"]),
        # query entries
        ("pack: p\nqueries:\n  - just a string\n", "#1", 3, 5, ["must be a mapping"]),
        ("pack: p\nqueries:\n  - query: PATTERN A a\n", "#1", 3, 5, ["'name' is required"]),
        ("pack: p\nqueries:\n  - {name: 7, query: PATTERN A a}\n", "#1", 3, 12, ["'name'"]),
        ("pack: p\nqueries:\n  - name: Q\n", "Q", 3, 5, ["'query'", "required"]),
        ("pack: p\nqueries:\n  - {name: Q, query: [1]}\n", "Q", 3, 22, ["'query'"]),
        (one_query("name: R"), "#1", 5, 5, ["duplicate key 'name'"]),
        (
            "pack: p\nqueries:\n  - {name: Q, query: PATTERN A a}\n  - {name: R, query: PATTERN A a}\n"
            "  - {name: Q, query: PATTERN A a}\n",
            "Q",
            5,
            12,
            ["duplicate query name (also query #1)"],
        ),
        (one_query("strategy: fastest"), "Q", 5, 15, ["'strategy' must be one of", "skip_till_any_match"]),
        (
            one_query("strategy: skip_till_any_match", query="PATTERN SEQ(A a, B b) WHERE strict_contiguity(a, b) {}"),
            "Q",
            5,
            15,
            ["'strategy' skip_till_any_match conflicts with the query text's strict_contiguity"],
        ),
        (one_query("output: some"), "Q", 5, 13, ["'output' must be one of all, distinct, collapsed"]),
        (one_query("confidence: 1.5"), "Q", 5, 17, ["'confidence' must be a number between 0 and 1"]),
        (one_query("confidence: -0.1"), "Q", 5, 17, ["'confidence'"]),
        (one_query("confidence: high"), "Q", 5, 17, ["'confidence'"]),
        (one_query("confidence: true"), "Q", 5, 17, ["'confidence'"]),
        (one_query("enabled: maybe"), "Q", 5, 14, ["'enabled' must be true or false"]),
        (one_query("description: 3"), "Q", 5, 18, ["'description' must be a string"]),
        # alerts
        (one_query("alert: loud"), "Q", 5, 12, ["'alert' must be a mapping"]),
        (
            one_query("alert: {severity: warning, webhook: ops, colour: red}"),
            "Q",
            5,
            46,
            ["unknown alert key 'colour'"],
        ),
        (
            one_query("alert: {severity: huge, webhook: ops}"),
            "Q",
            5,
            23,
            ["alert 'severity' must be one of info, warning, critical"],
        ),
        (one_query("alert: {webhook: ops}"), "Q", 5, 12, ["alert 'severity'"]),
        (one_query("alert: {severity: info}"), "Q", 5, 12, ["alert 'webhook'"]),
        (one_query("alert: {severity: info, webhook: ops, summary: [1]}"), "Q", 5, 52, ["alert 'summary'"]),
    ],
)
def test_pack_errors(text: str, query: str, line: int, column: int, words: list[str]) -> None:
    err = pack_error(text)
    assert (err.source, err.query, err.line, err.column) == ("packs/p.yaml", query, line, column), str(err)
    for word in words:
        assert word in err.reason, err.reason
    assert str(err).startswith("packs/p.yaml: ")


def test_non_mapping_documents() -> None:
    for text in ("", "# only a comment\n", "- 1\n- 2\n", "just text\n"):
        err = pack_error(text)
        assert "a pack must be a YAML mapping" in err.reason and err.query == ""


def test_yaml_syntax_error_has_its_line() -> None:
    err = pack_error("pack: p\nqueries:\n  - name: Q\n    query: [unclosed\n  - name: R\n")
    assert err.reason.startswith("invalid YAML")
    assert err.line in (4, 5, 6) and err.column > 0
    err = pack_error("pack: p\n  bad: indentation\n")
    assert err.reason.startswith("invalid YAML") and err.line == 2


def test_unsafe_yaml_tags_are_rejected() -> None:
    err = pack_error("pack: !!python/object/apply:os.system ['true']\nqueries: []\n")
    assert err.reason.startswith("invalid YAML") and err.line == 1


# --------------------------------------------------------------------------- query errors at their place in the file

BLOCK = """\
pack: p
queries:
  - name: Q1
    query: PATTERN SEQ(A a, B b)
  - name: Q6
    description: the bad one
    query: |
      PATTERN SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c)
      WHERE [task_id]
        AND b[i].val >= x.val
      WITHIN 10 minutes
"""


def test_invalid_query_in_a_block_scalar_points_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "queries" / "hadoop.yaml"
    path.parent.mkdir()
    path.write_text(BLOCK, encoding="utf-8")
    with pytest.raises(PackError) as info:
        load_pack(path)
    err = info.value
    # Line 10 of the file is "        AND b[i].val >= x.val": 'x' is in column 25.
    assert (err.query, err.line, err.column) == ("Q6", 10, 25)
    assert str(err) == f"{path}: query Q6, line 10, column 25: unknown variable 'x'"


@pytest.mark.parametrize(
    ("scalar", "line", "column"),
    [
        # plain one-line scalar: 'z' after "    query: PATTERN SEQ(A a, B b) WHERE a.x > "
        ("    query: PATTERN SEQ(A a, B b) WHERE a.x > z.y\n", 4, 46),
        # double-quoted with escapes before the error
        ('    query: "PATTERN SEQ(A a, B b) WHERE a.s = \\"k\\" AND z.y"\n', 4, 57),
        # single-quoted with a doubled quote
        ("    query: 'PATTERN SEQ(A a, B b) WHERE a.s = ''k'' AND z.y'\n", 4, 57),
        # folded block: the text is one line, the file has three
        ("    query: >-\n      PATTERN SEQ(A a, B b)\n      WHERE a.x > 1\n        AND z.y\n", 7, 13),
        # plain multi-line scalar
        ("    query: PATTERN SEQ(A a, B b)\n      WHERE a.x > 1 AND z.y\n", 5, 25),
        # block with indentation indicator and keep chomping
        ("    query: |2+\n        PATTERN SEQ(A a, B b)\n        WHERE z.y\n", 6, 15),
    ],
)
def test_query_error_positions_for_every_scalar_style(scalar: str, line: int, column: int) -> None:
    err = pack_error("pack: p\nqueries:\n  - name: Q\n" + scalar)
    assert err.reason == "unknown variable 'z'"
    assert (err.line, err.column) == (line, column), str(err)


def test_syntax_error_at_the_end_of_a_block_query() -> None:
    err = pack_error("pack: p\nqueries:\n  - name: Q\n    query: |\n      PATTERN SEQ(A a, B b)\n      WHERE a.x >\n\n")
    assert err.reason.startswith("syntax error: expected an expression")
    assert (err.line, err.column) == (6, 18)  # just after '>'


def test_load_pack_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="cannot read the pack"):
        load_pack(tmp_path / "nope.yaml")
