"""Operator-level tests with fake leaf operators: sorting order, top-N, joins, set operations."""

from __future__ import annotations

import sqlite3
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.join import HashJoin, NestedLoopJoin
from sqlkv.sql.exec.relational import Distinct, Limit, RowsOperator, Sort, SortKey, sort_rows, top_n
from sqlkv.sql.exec.setops import SetOp
from sqlkv.sql.plan.select import plan_query

values = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b", ""]), st.floats(-2, 2, allow_nan=False))
rows2 = st.lists(st.tuples(values, values), max_size=15)
keys2 = st.lists(st.tuples(st.integers(0, 1), st.booleans(), st.sampled_from([None, True, False])),
                 min_size=1, max_size=2)


def leaf(rows, width=2):
    cols = [Column(f"c{i}") for i in range(width)]
    return RowsOperator(cols, lambda ctx: iter(rows))


def sqlite_order(rows, keys):
    """The order sqlite3 gives the same rows for the same ORDER BY (the oracle)."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (i INTEGER, c0, c1)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, *r) for i, r in enumerate(rows)])
    terms = []
    for col, desc, nulls_first in keys:
        term = f"c{col} {'DESC' if desc else 'ASC'}"
        if nulls_first is not None:
            term += " NULLS FIRST" if nulls_first else " NULLS LAST"
        terms.append(term)
    got = con.execute(f"SELECT c0, c1 FROM t ORDER BY {', '.join(terms)}, i").fetchall()
    con.close()
    return got


@settings(max_examples=150, deadline=None)
@given(rows=rows2, keys=keys2)
def test_sort_matches_sqlite_order(rows, keys):
    sort_keys = [SortKey(c, d, nf) for c, d, nf in keys]
    assert sort_rows(list(rows), sort_keys) == sqlite_order(rows, keys)


@settings(max_examples=150, deadline=None)
@given(rows=rows2, keys=keys2, n=st.integers(0, 6))
def test_top_n_equals_prefix_of_full_sort(rows, keys, n):
    sort_keys = [SortKey(c, d, nf) for c, d, nf in keys]
    full = sort_rows(list(rows), sort_keys)
    top = top_n(iter(rows), sort_keys, n)
    # equal keys may come in any order: compare the key columns
    cols = [k.index for k in sort_keys]
    assert [tuple(r[c] for c in cols) for r in top] == [tuple(r[c] for c in cols) for r in full[:n]]


def test_sort_operator_top_n_and_limit():
    rows = [(i % 4, i) for i in range(20)]
    op = Limit(Sort(leaf(rows), [SortKey(0, True), SortKey(1)], ["c0 DESC", "c1"], lambda ctx: 5),
               lambda ctx: 3, lambda ctx: 2, "3 offset 2")
    got = list(op.rows(ExecContext()))
    assert got == sorted(rows, key=lambda r: (-r[0], r[1]))[2:5]


@settings(max_examples=100, deadline=None)
@given(left=rows2, right=rows2, kind=st.sampled_from(["inner", "left", "right", "full"]))
def test_hash_join_equals_nested_loop(left, right, kind):
    def pred(row):
        return row[0] is not None and row[2] is not None and row[0] == row[2]
    hj = HashJoin(leaf(left), leaf(right), kind, [lambda r: r[0]], [lambda r: r[0]], None, "c0 = c0")
    nl = NestedLoopJoin(leaf(left), leaf(right), kind, pred, "c0 = c0")
    ctx = ExecContext()
    assert Counter(hj.rows(ctx)) == Counter(nl.rows(ctx))
    if kind == "inner":
        hl = HashJoin(leaf(left), leaf(right), kind, [lambda r: r[0]], [lambda r: r[0]], None, "",
                      build_left=True)
        assert Counter(hl.rows(ctx)) == Counter(nl.rows(ctx))


def test_null_keys_never_match():
    hj = HashJoin(leaf([(None, 1)]), leaf([(None, 2)]), "full", [lambda r: r[0]], [lambda r: r[0]], None, "")
    assert sorted(hj.rows(ExecContext()), key=repr) == sorted([(None, 1, None, None), (None, None, None, 2)], key=repr)


@settings(max_examples=100, deadline=None)
@given(left=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3))), max_size=10),
       right=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3))), max_size=10),
       kind=st.sampled_from(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]))
def test_set_operations_match_sqlite(left, right, kind):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE l (a)")
    con.execute("CREATE TABLE r (a)")
    con.executemany("INSERT INTO l VALUES (?)", left)
    con.executemany("INSERT INTO r VALUES (?)", right)
    want = Counter(con.execute(f"SELECT a FROM l {kind} SELECT a FROM r").fetchall())
    con.close()
    op = SetOp(kind.split()[0].lower(), kind != "UNION ALL", leaf(left, 1), leaf(right, 1), [Column("a")])
    assert Counter(op.rows(ExecContext())) == want


def test_distinct_keeps_first_occurrence_of_prefix():
    op = Distinct(leaf([(1, "x"), (1, "y"), (2, "z")]), width=1)
    assert list(op.rows(ExecContext())) == [(1, "x"), (2, "z")]


def test_subquery_planner_marks_correlation():
    import sqlglot

    from sqlkv.sql.context import Scope
    from sqlkv.sql.expr import CompileEnv

    class NoTables:
        def find_table(self, name):
            return None

        def get_view(self, name):
            return None

        def get_table(self, name):
            raise AssertionError(name)

    env = CompileEnv(ExecContext())
    plan_query(sqlglot.parse_one("SELECT 1"), NoTables(), env)
    outer = Scope([Column("k", "o")])
    correlated = env.subqueries.plan_subquery(sqlglot.parse_one("SELECT o.k + 1"), outer)
    plain = env.subqueries.plan_subquery(sqlglot.parse_one("SELECT 2"), outer)
    assert correlated.correlated is True
    assert plain.correlated is False
