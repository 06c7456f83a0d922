"""The single-table planner's choices with and without statistics (each index's candidate is
built once; statistics only redo its estimate), its EXPLAIN text before parameters are bound,
and the one walk that tells whether a query can aggregate or window. Rows match sqlite3."""

from __future__ import annotations

import sqlite3

import pytest
import sqlglot
from sqlglot import exp

from sqlkv.sql import Database, Session
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.plan.access import plan_table_access
from sqlkv.sql.plan.names import query_facts, split_conjuncts
from tests.sql.core_support import rows

SCHEMA = [
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, c TEXT)",
    "CREATE INDEX t_a ON t (a)",  # two values: a poor index once statistics show it
    "CREATE INDEX t_b ON t (b)",  # one row per value
]
DATA = [(i, i % 2, i, f"c{i % 5}") for i in range(1, 301)]


@pytest.fixture
def pair():
    session = Session(Database.open())
    conn = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        session.execute(sql)
        conn.execute(sql)
    session.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", DATA)
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", DATA)
    return session, conn


def _scan_line(session: Session, sql: str) -> str:
    return [r[0].strip() for r in session.execute("EXPLAIN " + sql)][-1]


QUERIES = [
    "SELECT id, c FROM t WHERE a = 1 AND b = 7",
    "SELECT id FROM t WHERE a = 0 AND b BETWEEN 10 AND 20 ORDER BY b",
    "SELECT id, b FROM t WHERE a = 1 ORDER BY b DESC LIMIT 3",
    "SELECT id FROM t WHERE b > 290 ORDER BY a, id LIMIT 4",
]


def test_statistics_change_the_index_chosen_and_never_the_rows(pair) -> None:
    session, conn = pair
    # without statistics both indexes look alike and the first one wins the tie
    assert _scan_line(session, QUERIES[0]).startswith("scan t@t_a ")
    before = [sorted(rows(session, q)) for q in QUERIES]
    session.execute("ANALYZE")
    # statistics: 150 rows per value of a, 1 per value of b
    assert _scan_line(session, QUERIES[0]).startswith("scan t@t_b ")
    after = [sorted(rows(session, q)) for q in QUERIES]
    for q, b, a in zip(QUERIES, before, after):
        want = sorted(conn.execute(q).fetchall())
        assert b == want and a == want and want, q


def test_an_ordered_index_with_a_pushed_limit_is_kept_with_statistics(pair) -> None:
    session, conn = pair
    sql = "SELECT id, b FROM t ORDER BY b LIMIT 5"
    session.execute("ANALYZE")
    line = _scan_line(session, sql)
    assert line.startswith("scan t@t_b ") and line.endswith("limit 5")
    assert rows(session, sql) == conn.execute(sql).fetchall()


def test_a_scan_described_before_its_parameters_shows_the_filters_it_uses(pair) -> None:
    session, _conn = pair
    cat = session.catalog()
    table = cat.get_table("t")
    scope = Scope(table_scope(table, "t"))
    ast = sqlglot.parse_one("SELECT id FROM t WHERE b BETWEEN ? AND ? AND c = 'x'")
    filters = split_conjuncts(ast.args["where"].this)
    ap = plan_table_access(table, "t", filters, scope, session._new_env(cat), needed={0})
    # no describe context: the spans cannot be computed, their SQL is shown instead
    assert ap.operator.describe() == "scan t@t_b (index-only) spans: b BETWEEN ? AND ?"
    assert [f.sql() for f in ap.remaining] == ["c = 'x'"]


@pytest.mark.parametrize("sql, calls, windows, names", [
    ("SELECT id, b FROM t WHERE a = 1 AND b > 2 OR c = 'x'", False, False, {"id", "a", "b", "c"}),
    ("SELECT count(*) FROM t", True, False, set()),
    ("SELECT * FROM t WHERE a = 1", False, False, None),
    ("SELECT x.id, t.* FROM t JOIN t AS x ON x.id = t.b", False, False, None),
    ("SELECT x.c FROM t JOIN t AS x USING (id, b) WHERE x.a = 1", False, False, {"c", "id", "b", "a"}),
    ("SELECT id FROM t WHERE a IN (SELECT max(b) FROM t)", True, False, {"id", "a", "b"}),
    ("SELECT row_number() OVER (ORDER BY b) FROM t", True, True, {"b"}),
])
def test_query_facts_of_one_walk(sql, calls, windows, names) -> None:
    facts = query_facts(sqlglot.parse_one(sql))
    assert (facts.calls, facts.windows) == (calls, windows)
    assert (None if facts.names is None else set(facts.names)) == names
    if names is not None:  # with the qualifiers each name is written with
        want: dict[str, set[str | None]] = {}
        for col in sqlglot.parse_one(sql).find_all(exp.Column):
            want.setdefault(col.name.lower(), set()).add(col.table.lower() or None)
        for join in sqlglot.parse_one(sql).find_all(exp.Join):
            for ident in join.args.get("using") or ():
                want.setdefault(ident.name.lower(), set()).add(None)
        assert facts.names == want


@pytest.mark.parametrize("sql", [
    "SELECT a, count(*) FROM t GROUP BY a ORDER BY a",
    "SELECT a FROM t GROUP BY a ORDER BY sum(b) DESC",
    "SELECT sum(b) FROM t WHERE a = 1 AND b > 100",
    "SELECT id, sum(b) OVER (ORDER BY id) FROM t WHERE b < 6 ORDER BY id",
    "SELECT id FROM t WHERE b IN (SELECT max(b) FROM t WHERE a = 0) ORDER BY id",
    "SELECT a, b FROM t WHERE b < 4 ORDER BY 2",
])
def test_aggregates_and_windows_are_still_found_where_calls_are(pair, sql) -> None:
    session, conn = pair
    assert rows(session, sql) == conn.execute(sql).fetchall()


@pytest.mark.parametrize("analyzed", [False, True])
def test_each_source_of_a_join_is_read_once_in_the_plan(pair, analyzed) -> None:
    """The join order asks each source's estimate before its operator is placed: one operator
    per source still ends in the plan, its filters applied, with or without statistics."""
    session, conn = pair
    sql = ("SELECT x.id, y.id, z.c FROM t x JOIN t y ON y.b = x.id JOIN t z ON z.id = y.a + 1 "
           "WHERE x.a = 1 AND x.b < 40 AND y.c <> 'c3' AND z.c <> 'c0'")
    if analyzed:
        session.execute("ANALYZE")
    lines = [r[0].strip() for r in session.execute("EXPLAIN " + sql)]
    reads = [line for line in lines if line.startswith(("scan t@", "get t@")) or "lookup" in line]
    assert len(reads) == 3, lines
    assert sorted(rows(session, sql)) == sorted(conn.execute(sql).fetchall())
