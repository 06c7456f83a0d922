"""Hypothesis: row comparisons, row IN lists/subqueries and FULL JOIN ... USING agree with
sqlite3 (which shares PostgreSQL's meaning for all three) on random small tables with NULLs."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.query.oracle import Pair, norm_rows

if sqlite3.sqlite_version_info < (3, 39):
    pytest.skip("sqlite3 before 3.39 has no FULL JOIN to compare with", allow_module_level=True)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])
cell = st.none() | st.integers(0, 3)
table = st.lists(st.tuples(cell, cell), max_size=6)
OPS = ["=", "<>", "<", "<=", ">", ">="]


def _load(p: Pair, name: str, rows: list[tuple]) -> None:
    p.both(f"CREATE TABLE {name} (id INT PRIMARY KEY, a INT, b INT)")
    if rows:
        p.many(f"INSERT INTO {name} VALUES (?, ?, ?)", [(i, a, b) for i, (a, b) in enumerate(rows)])


def _same(p: Pair, sql: str) -> None:
    got = norm_rows(p.ours(sql), False)
    want = norm_rows(p.lite.execute(sql).fetchall(), False)
    assert got == want, f"{sql}\n ours:   {got}\n sqlite: {want}"


@SETTINGS
@given(table, st.sampled_from(OPS), cell, cell)
def test_row_comparisons(rows, op, x, y):
    p = Pair()
    _load(p, "t", rows)
    lit = lambda v: "NULL" if v is None else str(v)  # noqa: E731
    _same(p, f"SELECT id, (a, b) {op} ({lit(x)}, {lit(y)}) FROM t")
    _same(p, f"SELECT id FROM t WHERE (a, b) {op} ({lit(x)}, {lit(y)})")


@SETTINGS
@given(table, table)
def test_row_in_lists_and_subqueries(rows, others):
    p = Pair()
    _load(p, "t", rows)
    _load(p, "u", others)
    items = ", ".join(f"({'NULL' if a is None else a}, {'NULL' if b is None else b})" for a, b in others) or "(9, 9)"
    _same(p, f"SELECT id, (a, b) IN ({items}), (a, b) NOT IN ({items}) FROM t")
    _same(p, "SELECT id, (a, b) IN (SELECT a, b FROM u), (a, b) NOT IN (SELECT a, b FROM u) FROM t")
    _same(p, "SELECT id FROM t WHERE (a, b) IN (SELECT a, b FROM u WHERE u.id <> t.id)")


@SETTINGS
@given(table, table)
def test_full_join_using(rows, others):
    p = Pair()
    _load(p, "t", rows)
    _load(p, "u", others)
    for sql in ("SELECT a, t.b, u.b FROM t FULL JOIN u USING (a)",
                "SELECT a, count(*) FROM t FULL JOIN u USING (a) GROUP BY a",
                "SELECT a FROM t FULL JOIN u USING (a) WHERE a >= 2",
                "SELECT * FROM t RIGHT JOIN u USING (a, b)"):
        _same(p, sql)
