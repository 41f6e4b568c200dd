"""The SASE+ front end: text -> AST for every construct of docs/semantics.md section 2, and every compile error with
its position."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.language import ast as A
from engine.language.parser import parse_query

# Node equality ignores line/column, so expected trees are written without positions.


def ref(var: str, attr: str, index: A.Index = None) -> A.AttrRef:
    return A.AttrRef(var, index, attr)


def where_of(text: str) -> tuple[A.Expr, ...]:
    return parse_query(text).where


def one(expr: str, pattern: str = "SEQ(A a, B+ b[], C c)") -> A.Expr:
    """The single WHERE conjunct of ``expr`` over a small pattern."""
    (conjunct,) = where_of(f"PATTERN {pattern} WHERE {expr}")
    return conjunct


def ret(expr: str, pattern: str = "SEQ(A a, B+ b[], C c)") -> A.ReturnItem:
    (item,) = parse_query(f"PATTERN {pattern} RETURN {expr}").returns
    return item


def error(text: str, name: str = "Q") -> A.QueryError:
    with pytest.raises(A.QueryError) as info:
        parse_query(text, name)
    return info.value


def col(text: str, snippet: str, nth: int = 0) -> int:
    """1-based column of the ``nth`` occurrence of ``snippet`` in a one-line ``text``."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(snippet, pos + 1)
    return pos + 1


# --------------------------------------------------------------------------- PATTERN


def test_components_of_every_kind() -> None:
    q = parse_query("PATTERN SEQ(A a, B+ b[], ~C c, !D d, ~(E e), F f)")
    assert q.components == (
        A.Component("A", "a"),
        A.Component("B", "b", kleene=True),
        A.Component("C", "c", negated=True),
        A.Component("D", "d", negated=True),
        A.Component("E", "e", negated=True),
        A.Component("F", "f"),
    )
    assert q.where == () and q.equivalence == () and q.within is None and q.returns == () and q.strategy is None


def test_single_component_without_seq_and_lowercase_keywords() -> None:
    assert parse_query("PATTERN JobStart a").components == (A.Component("JobStart", "a"),)
    assert parse_query("pattern Mapper+ b[]").components == (A.Component("Mapper", "b", kleene=True),)
    assert parse_query("pattern seq(A a, B b)").components == parse_query("PATTERN SEQ(A a, B b)").components


def test_keywords_are_case_insensitive_and_not_prefixes() -> None:
    upper = parse_query("PATTERN SEQ(A a, B b) WHERE a.x > 1 AND NOT b.y = TRUE OR FALSE WITHIN 1 HOUR RETURN a.x AS n")
    mixed = parse_query("Pattern Seq(A a, B b) Where a.x > 1 And Not b.y = true oR false within 1 Hour return a.x as n")
    assert upper.where == mixed.where and upper.within == mixed.within == 3600.0
    assert upper.returns == mixed.returns
    # Words that start with a keyword, and keywords where only a name fits, are names.
    q = parse_query("PATTERN SEQ(Return notable, Sequence orders) WHERE notable.andx = orders.not RETURN orders.as")
    assert q.components == (A.Component("Return", "notable"), A.Component("Sequence", "orders"))
    assert q.where == (A.Compare("=", ref("notable", "andx"), ref("orders", "not")),)
    assert q.returns == (A.ReturnItem(ref("orders", "as"), "orders.as"),)


def test_text_name_and_positions_are_kept() -> None:
    text = "  -- header comment\n  PATTERN SEQ(A a,\n    B+ b[])\nWHERE b[i].x > a.x\nRETURN a.x"
    q = parse_query(text, "Q9")
    assert q.text == text and q.name == "Q9"
    assert (q.line, q.column) == (2, 3)
    assert [(c.line, c.column) for c in q.components] == [(2, 15), (3, 5)]
    (cmp,) = q.where
    assert (cmp.line, cmp.column) == (4, 7)
    assert (cmp.left.line, cmp.left.column) == (4, 7)
    assert (cmp.right.line, cmp.right.column) == (4, 16)
    (item,) = q.returns
    assert (item.line, item.column) == (5, 8)


# --------------------------------------------------------------------------- WHERE


def test_where_splits_top_level_and_and_collects_equivalence() -> None:
    q = parse_query("PATTERN SEQ(A a, B b) WHERE [job_id] AND a.x > 1 AND [task_id, job_id] AND (b.y < 2 AND b.z = 3)")
    assert q.equivalence == ("job_id", "task_id")
    assert q.where == (
        A.Compare(">", ref("a", "x"), A.Number(1)),
        A.Compare("<", ref("b", "y"), A.Number(2)),
        A.Compare("=", ref("b", "z"), A.Number(3)),
    )


def test_where_with_only_an_equivalence_test() -> None:
    q = parse_query("PATTERN SEQ(A a, B b) WHERE [job_id]")
    assert q.where == () and q.equivalence == ("job_id",)


def test_attribute_references() -> None:
    assert one("a.ts > 0") == A.Compare(">", ref("a", "ts"), A.Number(0))
    assert one("b[i].x >= b[i-1].x") == A.Compare(">=", ref("b", "x", "i"), ref("b", "x", "prev"))
    assert one("b[ i - 1 ].x = 1") == A.Compare("=", ref("b", "x", "prev"), A.Number(1))
    assert one("b[1].x < b[b.len].x") == A.Compare("<", ref("b", "x", "first"), ref("b", "x", "last"))
    assert one("b[b.LEN].x < b.LEN") == A.Compare("<", ref("b", "x", "last"), A.KleeneLen("b"))
    assert one("b.len > 3") == A.Compare(">", A.KleeneLen("b"), A.Number(3))


@pytest.mark.parametrize("func", ["avg", "min", "max", "sum", "count", "AVG", "Max"])
def test_aggregates(func: str) -> None:
    f = func.lower()
    assert one(f"{func}(b[].x) > 1") == A.Compare(">", A.Aggregate(f, "b", "all", "x"), A.Number(1))
    assert one(f"b[i].x > {func}(b[..i-1].x)") == A.Compare(">", ref("b", "x", "i"), A.Aggregate(f, "b", "before", "x"))
    assert one(f"b[i].x > {func}(b[1..i-1].x)") == one(f"b[i].x > {func}(b[..i-1].x)")


def test_arithmetic_precedence_and_numbers() -> None:
    assert one("a.x + 2 * a.y - -3 % 2 > 0.5") == A.Compare(
        ">",
        A.BinOp(
            "-",
            A.BinOp("+", ref("a", "x"), A.BinOp("*", A.Number(2), ref("a", "y"))),
            A.BinOp("%", A.Neg(A.Number(3)), A.Number(2)),
        ),
        A.Number(0.5),
    )
    assert one("(a.x + 2) × a.y / 4 = 1e3") == A.Compare(
        "=",
        A.BinOp("/", A.BinOp("*", A.BinOp("+", ref("a", "x"), A.Number(2)), ref("a", "y")), A.Number(4)),
        A.Number(1000.0),
    )
    n = one("a.x = 7").right
    assert isinstance(n, A.Number) and type(n.value) is int
    f = one("a.x = 7.25").right
    assert isinstance(f, A.Number) and f.value == 7.25 and type(f.value) is float


@pytest.mark.parametrize(
    ("op", "norm"),
    [
        ("<", "<"),
        ("<=", "<="),
        (">", ">"),
        (">=", ">="),
        ("=", "="),
        ("==", "="),
        ("!=", "!="),
        ("<>", "!="),
        ("≥", ">="),
        ("≤", "<="),
        ("≠", "!="),
    ],
)
def test_comparison_operators(op: str, norm: str) -> None:
    assert one(f"a.x {op} c.x") == A.Compare(norm, ref("a", "x"), ref("c", "x"))


def test_boolean_operators_precedence_and_symbols() -> None:
    x, y, z = (A.Compare(">", ref("a", k), A.Number(0)) for k in "xyz")
    assert one("a.x > 0 OR a.y > 0 AND NOT a.z > 0") == A.Or((x, A.And((y, A.Not(z)))))
    assert one("a.x > 0 ∨ a.y > 0 ∧ ¬ a.z > 0") == A.Or((x, A.And((y, A.Not(z)))))
    assert one("(a.x > 0 OR a.y > 0) AND a.z > 0 OR a.x > 0") == A.Or((A.And((A.Or((x, y)), z)), x))
    # A top-level ∧ is split like AND.
    assert where_of("PATTERN SEQ(A a, B b) WHERE a.x > 0 ∧ a.y > 0") == (x, y)


def test_literals() -> None:
    assert one("a.s = 'it\\'s'") == A.Compare("=", ref("a", "s"), A.String("it's"))
    assert one('a.s = "x \\"q\\" y"') == A.Compare("=", ref("a", "s"), A.String('x "q" y'))
    assert one("a.s != 'a\\\\b'") == A.Compare("!=", ref("a", "s"), A.String("a\\b"))
    assert one("a.ok = TRUE") == A.Compare("=", ref("a", "ok"), A.Bool(True))
    assert one("a.ok = false") == A.Compare("=", ref("a", "ok"), A.Bool(False))
    assert where_of("PATTERN SEQ(A a) WHERE TRUE") == (A.Bool(True),)
    assert where_of("PATTERN SEQ(A a) WHERE a.flag") == (ref("a", "flag"),)


def test_comments() -> None:
    q = parse_query("PATTERN SEQ(A a, B b) -- the pattern\nWHERE a.x - -1 > 0 -- a comment\n-- RETURN a.x")
    assert q.where == (A.Compare(">", A.BinOp("-", ref("a", "x"), A.Neg(A.Number(1))), A.Number(0)),)
    assert q.returns == ()


def test_papers_strategy_form() -> None:
    shoplifting = parse_query(
        "PATTERN SEQ(Shelf a, ~(Register b), Exit c) WHERE skip_till_next_match(a,b,c){[tag_id]} WITHIN 12 hours"
    )
    assert shoplifting == A.Query(
        name="",
        components=(A.Component("Shelf", "a"), A.Component("Register", "b", negated=True), A.Component("Exit", "c")),
        equivalence=("tag_id",),
        within=43200.0,
        strategy="skip_till_next_match",
        text=shoplifting.text,
    )
    text = (
        "PATTERN SEQ(Stock+ a[], Stock b) WHERE skip_till_next_match(a[], b) { [symbol] ∧ a[1].volume > 1000 "
        "∧ a[i].price > avg(a[..i-1].price) ∧ b.volume < 0.8 * a[a.len].volume } WITHIN 1 hour"
    )
    assert parse_query(text, "stock") == A.Query(
        name="stock",
        components=(A.Component("Stock", "a", kleene=True), A.Component("Stock", "b")),
        where=(
            A.Compare(">", ref("a", "volume", "first"), A.Number(1000)),
            A.Compare(">", ref("a", "price", "i"), A.Aggregate("avg", "a", "before", "price")),
            A.Compare("<", ref("b", "volume"), A.BinOp("*", A.Number(0.8), ref("a", "volume", "last"))),
        ),
        equivalence=("symbol",),
        within=3600.0,
        strategy="skip_till_next_match",
        text=text,
    )


@pytest.mark.parametrize("strategy", A.STRATEGIES)
def test_every_strategy_name_and_empty_braces(strategy: str) -> None:
    q = parse_query(f"PATTERN SEQ(A a, B+ b[]) WHERE {strategy.upper()}(a, b[]) {{ }}")
    assert q.strategy == strategy and q.where == () and q.equivalence == ()


# --------------------------------------------------------------------------- WITHIN / RETURN


@pytest.mark.parametrize(
    ("within", "seconds"),
    [
        ("500 ms", 0.5),
        ("3 s", 3.0),
        ("3 sec", 3.0),
        ("1 second", 1.0),
        ("3 seconds", 3.0),
        ("2 min", 120.0),
        ("1 minute", 60.0),
        ("10 minutes", 600.0),
        ("2 h", 7200.0),
        ("1 hour", 3600.0),
        ("1.5 HOURS", 5400.0),
        ("1 day", 86400.0),
        ("2 Days", 172800.0),
        ("10minutes", 600.0),
        ("30", 30.0),
    ],
)
def test_within_units(within: str, seconds: float) -> None:
    q = parse_query(f"PATTERN SEQ(A a, B b) WITHIN {within}")
    assert q.within == seconds and isinstance(q.within, float)


def test_return_names() -> None:
    q = parse_query(
        "PATTERN SEQ(A a, B+ b[]) RETURN a.task_id, max( b[].val ) AS peak, b[b.len].ts - a.ts, "
        "max(  b[ ].val  ), b.len, b[1].x AS 'first x', a.x   *\n  2"
    )
    assert [item.name for item in q.returns] == [
        "a.task_id",
        "peak",
        "b[b.len].ts - a.ts",
        "max(b[].val)",
        "b.len",
        "first x",
        "a.x * 2",
    ]
    assert q.returns[1].expr == A.Aggregate("max", "b", "all", "val")
    assert q.returns[2].expr == A.BinOp("-", ref("b", "ts", "last"), ref("a", "ts"))
    assert ret("(a.x + 1) * 2").name == "(a.x + 1) * 2"
    assert ret("a.x > 1 AND c.x < 2").expr == A.And(
        (A.Compare(">", ref("a", "x"), A.Number(1)), A.Compare("<", ref("c", "x"), A.Number(2)))
    )


# --------------------------------------------------------------------------- the Hadoop pack and the paper queries

HADOOP = {
    "Q1": "PATTERN SEQ(JobStart a, Mapper+ b[], JobEnd c) WHERE [job_id] WITHIN 1 day RETURN a.job_id AS job_id, "
    "avg(b[].period) AS avg_period, max(b[].period) AS max_period",
    "Q2": "PATTERN SEQ(JobStart a, Reducer+ b[], JobEnd c) WHERE [job_id] WITHIN 1 day RETURN a.job_id AS job_id, "
    "avg(b[].period) AS avg_period, max(b[].period) AS max_period",
    "Q3": "PATTERN SEQ(ReducerStart a, DataPull+ b[], DataPull c) WHERE [task_id] AND c.period > 2 * avg(b[].period) "
    "WITHIN 10 minutes RETURN a.task_id AS task_id, c.period AS period",
    "Q4": "PATTERN SEQ(JobStart a, DataIO+ b[]) WHERE [job_id] WITHIN 1 day RETURN a.job_id AS job_id, a.ts AS start, "
    "b[b.len].ts AS last, sum(b[].size) AS queued",
    "Q5": "PATTERN SEQ(Balance a, ReducerStart b, Imbalance+ c[], ReducerEnd d, Balance e) WHERE [task_id] "
    "WITHIN 10 minutes RETURN b.task_id AS task_id",
    "Q6": "PATTERN SEQ(ReducerStart a, LoadStd+ b[], ReducerEnd c) WHERE [task_id] AND b[i].val >= b[i-1].val "
    "WITHIN 10 minutes RETURN a.task_id AS task_id",
}


@pytest.mark.parametrize("name", sorted(HADOOP))
def test_hadoop_queries_parse(name: str) -> None:
    q = parse_query(HADOOP[name], name)
    assert q.name == name and q.text == HADOOP[name] and q.strategy is None
    assert q.within == (86400.0 if name in ("Q1", "Q2", "Q4") else 600.0)
    assert q.equivalence == (("job_id",) if name in ("Q1", "Q2", "Q4") else ("task_id",))


def test_hadoop_q1_q3_q4_q6_in_full() -> None:
    jobs = ("job_id", "avg_period", "max_period")
    q1 = parse_query(HADOOP["Q1"], "Q1")
    assert q1.components == (
        A.Component("JobStart", "a"),
        A.Component("Mapper", "b", kleene=True),
        A.Component("JobEnd", "c"),
    )
    assert q1.where == ()
    assert q1.returns == tuple(
        A.ReturnItem(e, n)
        for e, n in zip(
            (ref("a", "job_id"), A.Aggregate("avg", "b", "all", "period"), A.Aggregate("max", "b", "all", "period")),
            jobs,
            strict=True,
        )
    )
    q3 = parse_query(HADOOP["Q3"], "Q3")
    assert q3.where == (
        A.Compare(">", ref("c", "period"), A.BinOp("*", A.Number(2), A.Aggregate("avg", "b", "all", "period"))),
    )
    assert q3.returns == (A.ReturnItem(ref("a", "task_id"), "task_id"), A.ReturnItem(ref("c", "period"), "period"))
    q4 = parse_query(HADOOP["Q4"], "Q4")
    assert q4.returns == (
        A.ReturnItem(ref("a", "job_id"), "job_id"),
        A.ReturnItem(ref("a", "ts"), "start"),
        A.ReturnItem(ref("b", "ts", "last"), "last"),
        A.ReturnItem(A.Aggregate("sum", "b", "all", "size"), "queued"),
    )
    q6 = parse_query(HADOOP["Q6"], "Q6")
    assert q6 == A.Query(
        name="Q6",
        components=(
            A.Component("ReducerStart", "a"),
            A.Component("LoadStd", "b", kleene=True),
            A.Component("ReducerEnd", "c"),
        ),
        where=(A.Compare(">=", ref("b", "val", "i"), ref("b", "val", "prev")),),
        equivalence=("task_id",),
        within=600.0,
        returns=(A.ReturnItem(ref("a", "task_id"), "task_id"),),
        text=HADOOP["Q6"],
    )


def test_more_paper_queries() -> None:
    q = parse_query(
        "PATTERN SEQ(Alert a, Shipment+ b[]) WHERE skip_till_any_match(a, b[]) { a.type = 'contaminated' ∧ "
        "b[1].from = a.site ∧ b[i].from = b[i-1].to } WITHIN 3 hours"
    )
    assert q.strategy == "skip_till_any_match" and len(q.where) == 3
    q = parse_query(
        "pattern seq(ReducerStart a, LoadStd+ b[], ReducerEnd c) WHERE [task_id] ∧ b[i].val ≥ max(b[1..i-1].val) "
        "WITHIN 10 minutes RETURN a.task_id"
    )
    assert q.where == (A.Compare(">=", ref("b", "val", "i"), A.Aggregate("max", "b", "before", "val")),)


def test_parse_is_fast() -> None:
    parse_query(HADOOP["Q3"])  # builds the parser
    start = time.perf_counter()
    for _ in range(100):
        parse_query(HADOOP["Q3"])
    assert (time.perf_counter() - start) / 100 < 0.01  # ~1 ms expected; generous for slow CI machines


# --------------------------------------------------------------------------- errors


def test_query_error_carries_name_line_column_and_reason() -> None:
    err = error("PATTERN SEQ(A a, B b)\nWHERE a.x > x.y", "Q7")
    assert (err.query, err.line, err.column) == ("Q7", 2, 13)
    assert err.reason == "unknown variable 'x'"
    assert str(err) == "query Q7, line 2, column 13: unknown variable 'x'"


SYNTAX_ERRORS = [
    # (text, line, column, words in the message)
    ("", 1, 1, ["expected PATTERN", "the end of the query"]),
    ("SEQ(A a)", 1, 1, ["expected PATTERN", "got 'SEQ'"]),
    ("PATTERN SEQ(A a, B b", 1, 21, ["expected ')' or ','", "the end of the query"]),
    ("PATTERN SEQ(A a B b)", 1, 17, ["expected ')' or ','", "got 'B'"]),
    ("PATTERN SEQ(A+ a, B b)", 1, 17, ["expected '['", "got ','"]),
    ("PATTERN SEQ(A a, B b)\nWHERE a.x >", 2, 12, ["expected an expression", "the end of the query"]),
    ("PATTERN SEQ(A a, B b)\n  WHERE a.x > 1 b.y", 2, 17, ["expected", "AND", "got 'b'"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x # 1", 1, 33, ["unexpected character '#'"]),
    ("PATTERN SEQ(A a, B b) WHERE (a.x > 1", 1, 37, ["expected ')'"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x > 1 WITHIN", 1, 43, ["expected a number"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x > 1 < 2", 1, 37, ["got '<'"]),
    ("PATTERN SEQ(A a) WHERE skip_till_next_match(a) a.x > 1", 1, 48, ["expected '{'"]),
    ("PATTERN SEQ(A a) RETURN a.x AS", 1, 31, ["expected a name or a string"]),
]


@pytest.mark.parametrize(("text", "line", "column", "words"), SYNTAX_ERRORS)
def test_syntax_errors(text: str, line: int, column: int, words: list[str]) -> None:
    err = error(text)
    assert (err.line, err.column) == (line, column), str(err)
    assert err.reason.startswith("syntax error: ")
    for word in words:
        assert word in err.reason


# (text, snippet whose first character the error points at (0: its nth occurrence), words in the message)
SEMANTIC_ERRORS = [
    # variables
    ("PATTERN SEQ(A a, B a)", ("B a", 0), ["duplicate variable 'a'"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x = z.x", ("z.x", 0), ["unknown variable 'z'"]),
    ("PATTERN SEQ(A a, B b) RETURN zz.x", ("zz.x", 0), ["unknown variable 'zz'"]),
    ("PATTERN SEQ(A a, B b) WHERE avg(q[].x) > 1", ("avg", 0), ["unknown variable 'q'"]),
    (
        "PATTERN SEQ(A a, B+ b[]) WHERE b.x > 1",
        ("b.x", 0),
        ["b is a Kleene variable: use b[i].attr, b[1].attr, b[b.len].attr or an aggregate over b[]"],
    ),
    ("PATTERN SEQ(A a, B+ b[]) RETURN b.x", ("b.x", 0), ["b is a Kleene variable"]),
    ("PATTERN SEQ(A a, B b) WHERE a[i].x > 1", ("a[i]", 0), ["a is not a Kleene variable"]),
    ("PATTERN SEQ(A a, B b) WHERE a[1].x > 1", ("a[1]", 0), ["a is not a Kleene variable"]),
    ("PATTERN SEQ(A a, B b) WHERE max(a[].x) > 1", ("max", 0), ["a is not a Kleene variable"]),
    ("PATTERN SEQ(A a, B b) RETURN a.len", ("a.len", 0), ["a is not a Kleene variable", "a.len"]),
    ("PATTERN SEQ(A a, B b) WHERE skip_till_any_match(a, x) { }", ("x)", 0), ["unknown variable 'x'"]),
    ("PATTERN SEQ(A a, B b) WHERE skip_till_any_match(a[], b) { }", ("a[]", 0), ["a is not a Kleene variable"]),
    # pattern shape and negation
    ("PATTERN ~A a", ("~A", 0), ["at least one positive"]),
    ("PATTERN SEQ(~A a, B b)", ("~A", 0), ["cannot start with a negated component"]),
    ("PATTERN SEQ(A a, !B b)", ("!B", 0), ["cannot end with a negated component"]),
    ("PATTERN SEQ(A a, ~(N n), B b) RETURN n.x", ("n.x", 0), ["n is a negated variable", "RETURN"]),
    ("PATTERN SEQ(A+ a[], ~N n, B b) WHERE n.x > a[i].x", ("a[i]", 0), ["negated variable n", "a[i].x"]),
    ("PATTERN SEQ(A+ a[], ~N n, B b) WHERE n.x > avg(a[..i-1].x)", ("avg", 0), ["negated variable n"]),
    ("PATTERN SEQ(A a, ~N n, ~M m, B b) WHERE n.x = m.x", ("m.x", 0), ["two negated variables (n and m)"]),
    # iterator forms
    ("PATTERN SEQ(A a, B+ b[]) RETURN b[i].x", ("b[i]", 0), ["b[i].x can only be used in WHERE"]),
    ("PATTERN SEQ(A a, B+ b[]) RETURN b[i-1].x", ("b[i-1]", 0), ["b[i-1].x can only be used in WHERE"]),
    ("PATTERN SEQ(A a, B+ b[]) RETURN avg(b[..i-1].x)", ("avg", 0), ["can only be used in WHERE"]),
    (
        "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[b.len].x",
        ("b[b.len]", 0),
        ["b[b.len].x cannot be used in an iterator predicate"],
    ),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > avg(b[].x)", ("avg", 0), ["cannot be used in an iterator predicate"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b.len < b[i-1].x", ("b.len", 0), ["b.len cannot be used in an iterator"]),
    ("PATTERN SEQ(A+ a[], B+ b[]) WHERE a[i].x < b[i].x", ("b[i]", 0), ["iterator forms of two Kleene variables"]),
    # types
    ("PATTERN SEQ(A a, B b) WHERE a.x + 'k' > 1", ("'k'", 0), ["arithmetic on a string"]),
    ("PATTERN SEQ(A a, B b) WHERE -'k' = a.x", ("'k'", 0), ["arithmetic on a string"]),
    ("PATTERN SEQ(A a, B b) WHERE (a.x > 1) * 2 = a.y", ("a.x", 0), ["arithmetic on a boolean"]),
    ("PATTERN SEQ(A a, B b) WHERE 'k' = 1", ("'k'", 0), ["cannot compare a string with a number"]),
    ("PATTERN SEQ(A a, B b) WHERE a.s = 'k' AND 'k' < a.x + 1", ("'k' <", 0), ["cannot compare a string"]),
    ("PATTERN SEQ(A a, B b) WHERE TRUE < a.x", ("TRUE", 0), ["cannot order booleans"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x > 1 OR 3", ("3", 0), ["OR needs boolean operands, not a number"]),
    ("PATTERN SEQ(A a, B b) WHERE NOT 'k'", ("'k'", 0), ["NOT needs boolean operands, not a string"]),
    ("PATTERN SEQ(A a, B b) WHERE a.x > 1 AND a.x + 1", ("a.x + 1", 0), ["WHERE condition must be boolean"]),
    ("PATTERN SEQ(A a, B b) WHERE 'yes'", ("'yes'", 0), ["WHERE condition must be boolean, not a string"]),
    # equivalence, RETURN, WITHIN, indexes
    ("PATTERN SEQ(A a, B b) WHERE a.x > 1 OR [id]", ("[id]", 0), ["[id] may only appear as a top-level conjunct"]),
    ("PATTERN SEQ(A a, B b) WHERE NOT [id, k]", ("[id, k]", 0), ["top-level conjunct"]),
    ("PATTERN SEQ(A a, B b) RETURN [id]", ("[id]", 0), ["top-level conjunct"]),
    ("PATTERN SEQ(A a, B b) RETURN a.x AS n, b.x AS n", ("n", 1), ["duplicate RETURN name 'n'"]),
    ("PATTERN SEQ(A a, B b) RETURN a.x, b.y AS 'a.x'", ("'a.x'", 0), ["duplicate RETURN name 'a.x'"]),
    ("PATTERN SEQ(A a, B b) RETURN a.x, a.x", ("a.x", 1), ["duplicate RETURN name 'a.x'"]),
    ("PATTERN SEQ(A a, B b) WITHIN 3 fortnights", ("fortnights", 0), ["unknown time unit 'fortnights'"]),
    ("PATTERN SEQ(A a, B b) WITHIN 0 s", ("0 s", 0), ["WITHIN must be a positive, finite duration"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[2].x > 1", ("2]", 0), ["unsupported index", "b[1]"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[j].x > 1", ("j]", 0), ["unsupported index"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[i-2].x > 1", ("i-2", 0), ["unsupported index"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[a.len].x > 1", ("a.len", 0), ["unsupported index", "b[b.len]"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > avg(b[..i-2].x)", ("..i-2", 0), ["unsupported aggregate range"]),
    ("PATTERN SEQ(A a, B+ b[]) WHERE mode(b[].x) > 1", ("mode", 0), ["unknown aggregate 'mode'"]),
]


@pytest.mark.parametrize(("text", "at", "words"), SEMANTIC_ERRORS)
def test_semantic_errors(text: str, at: tuple[str, int], words: list[str]) -> None:
    err = error(text)
    assert (err.query, err.line, err.column) == ("Q", 1, col(text, *at)), str(err)
    for word in words:
        assert word in err.reason, err.reason


def test_error_positions_on_later_lines() -> None:
    text = "PATTERN SEQ(A a,\n            B+ b[])\nWHERE [id]\n  AND b[i].x > b.len\nRETURN a.x"
    err = error(text)
    assert (err.line, err.column) == (4, 16) and "b.len cannot be used in an iterator predicate" in err.reason
    err = error("PATTERN SEQ(A a,\n   ~B b)")
    assert (err.line, err.column) == (2, 4)


def test_allowed_forms_do_not_raise() -> None:
    ok = [
        # iterator predicate with b[1] and singleton variables
        "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > b[1].x + a.x AND b[i].y < avg(b[..i-1].y) + c.z",
        # whole-sequence forms outside iterator predicates
        "PATTERN SEQ(A a, B+ b[], C c) WHERE c.x > b[b.len].x AND b.len >= 3 AND count(b[].x) = b.len",
        # negation predicate with whole-sequence forms of a Kleene variable and with a singleton
        "PATTERN SEQ(A+ a[], ~N n, B b) WHERE n.x > a[a.len].x AND n.y = b.y AND n.z < max(a[].z)",
        # two negations in a row; predicates with a string attribute and boolean operators on attributes
        "PATTERN SEQ(A a, ~N n, ~M m, B b) WHERE n.host = 'h1' AND (a.flag OR NOT b.flag) AND m.x != a.x",
        # RETURN may use any positive form
        "PATTERN SEQ(A a, B+ b[]) RETURN a.x, b[1].x, b[b.len].x, avg(b[].x), b.len, b[b.len].ts - a.ts, a.x > 1",
        # min/max may be strings; sum over ts
        "PATTERN SEQ(A a, B+ b[]) WHERE min(b[].host) = 'h1' AND sum(b[].ts) > 0",
    ]
    for text in ok:
        parse_query(text)


_PIECES = [
    "PATTERN",
    "SEQ",
    "(",
    ")",
    "A a",
    "B+ b[]",
    "~C c",
    ",",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "[id]",
    "a.x",
    "b[i].x",
    "b[i-1].x",
    "b[1].x",
    "b[b.len].x",
    "b.len",
    "avg(b[].x)",
    "max(b[..i-1].x)",
    "c.x",
    ">",
    "=",
    "+",
    "*",
    "-",
    "1",
    "2.5",
    "'s'",
    "TRUE",
    "WITHIN",
    "10 minutes",
    "RETURN",
    "AS n",
    "skip_till_next_match(a, b[])",
    "{",
    "}",
    "\n",
    "--",
    "#",
    "∧",
    "≥",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25), st.text(max_size=5))
def test_any_text_gives_a_query_or_a_query_error(pieces: list[str], noise: str) -> None:
    """The front end never fails with anything but QueryError, and errors always have a position."""
    text = "PATTERN SEQ(A a, B+ b[], C c) " * (len(pieces) % 2) + " ".join(pieces) + noise
    try:
        parse_query(text, "fuzz")
    except A.QueryError as err:
        assert err.query == "fuzz" and err.line >= 1 and err.column >= 1
