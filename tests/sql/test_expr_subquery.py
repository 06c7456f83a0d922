"""Subqueries in expressions, through a small stand-in for the query planner.

`TablePlanner` plans ``SELECT <expr> FROM s [WHERE <pred>]`` over an in-memory table ``s(x)``,
compiling with the outer scope so correlated references work; results are checked against
sqlite3 running the same query.
"""

from __future__ import annotations

import sqlite3

import pytest
import sqlglot
from sqlglot import exp

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.expr import CompileEnv, compile_expr, compile_predicate
from sqlkv.sql.types import INT

S_ROWS = [(1,), (2,), (None,), (4,)]
T_ROWS = [(0,), (1,), (3,), (None,), (4,)]


class ListScan(Operator):
    """Rows of ``s`` filtered and projected by compiled closures; counts its executions."""

    def __init__(self, rows, project, where, correlated: bool | None) -> None:
        self.columns = [Column(f"c{i}", None, INT) for i in range(len(project))]
        self.source, self.project, self.where = rows, project, where
        self.runs = 0
        if correlated is not None:
            self.correlated = correlated

    def rows(self, ctx):
        self.runs += 1
        for row in self.source:
            if self.where is None or self.where(row):
                yield tuple(p(row) for p in self.project)


class TablePlanner:
    def __init__(self, env: CompileEnv, rows=S_ROWS, mark_uncorrelated: bool = False) -> None:
        self.env, self.rows, self.mark = env, rows, mark_uncorrelated
        self.planned: list[ListScan] = []

    def plan_subquery(self, query: exp.Expression, outer: Scope) -> Operator:
        scope = Scope([Column("x", "s", INT)], outer=outer)
        project = [compile_expr(e, scope, self.env) for e in query.expressions]
        where = query.args.get("where")
        pred = compile_predicate(where.this, scope, self.env) if where is not None else None
        correlated = any(c.table == "t" for c in query.find_all(exp.Column))
        op = ListScan(self.rows, project, pred, (correlated if self.mark else None))
        self.planned.append(op)
        return op


def run(expr: str, mark_uncorrelated: bool = False, s_rows=S_ROWS):
    env = CompileEnv(ExecContext())
    planner = TablePlanner(env, s_rows, mark_uncorrelated)
    env.subqueries = planner
    outer = Scope([Column("y", "t", INT)])
    node = sqlglot.parse_one(f"SELECT {expr}").expressions[0]
    fn = compile_expr(node, outer, env)
    return [fn(r) for r in T_ROWS], planner


def sqlite_run(expr: str, s_rows=S_ROWS):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE s (x INTEGER)")
    con.execute("CREATE TABLE t (y INTEGER)")
    con.executemany("INSERT INTO s VALUES (?)", s_rows)
    con.executemany("INSERT INTO t VALUES (?)", T_ROWS)
    return [r[0] for r in con.execute(f"SELECT {expr} FROM t ORDER BY rowid")]


def normalise(values):
    return [int(v) if isinstance(v, bool) else v for v in values]


@pytest.mark.parametrize(
    "expr",
    [
        "(SELECT max(x, 0) FROM s WHERE x = t.y)",
        "(SELECT x FROM s WHERE x > 3)",
        "(SELECT x FROM s WHERE x > 100)",
        "EXISTS (SELECT x FROM s WHERE x = t.y)",
        "NOT EXISTS (SELECT x FROM s WHERE x > t.y)",
        "y IN (SELECT x FROM s)",
        "y NOT IN (SELECT x FROM s)",
        "y IN (SELECT x FROM s WHERE x IS NOT NULL)",
        "y NOT IN (SELECT x FROM s WHERE x IS NOT NULL)",
        "y IN (SELECT x FROM s WHERE x > 100)",
        "y NOT IN (SELECT x FROM s WHERE x > 100)",
        "y IN (SELECT x FROM s WHERE x <> t.y)",
        "y + (SELECT x FROM s WHERE x = 4)",
    ],
)
def test_subqueries_match_sqlite(expr):
    got, _ = run(expr)
    assert normalise(got) == sqlite_run(expr)


def test_quantified_comparisons():
    got, _ = run("y > ANY (SELECT x FROM s)")
    # s = {1, 2, NULL, 4}: TRUE if some x < y, else NULL (a NULL might be smaller)
    assert got == [None, None, True, None, True]
    got, _ = run("y >= ALL (SELECT x FROM s WHERE x IS NOT NULL)")
    assert got == [False, False, False, None, True]
    got, _ = run("y < ALL (SELECT x FROM s WHERE x > 100)")
    assert got == [True] * 5  # ALL over no rows is TRUE, even for NULL y
    got, _ = run("y = ANY (SELECT x FROM s WHERE x > 100)")
    assert got == [False] * 5


def test_scalar_subquery_more_than_one_row():
    with pytest.raises(DataError, match="more than one row returned by a subquery"):
        run("(SELECT x FROM s)")


def test_scalar_subquery_one_column():
    env = CompileEnv(ExecContext())
    env.subqueries = TablePlanner(env)
    node = sqlglot.parse_one("SELECT (SELECT x, x FROM s)").expressions[0]
    with pytest.raises(ProgrammingError, match="one column"):
        compile_expr(node, Scope([Column("y", "t", INT)]), env)


def test_uncorrelated_result_is_cached_per_execution():
    got, planner = run("y IN (SELECT x FROM s)", mark_uncorrelated=True)
    assert normalise(got) == sqlite_run("y IN (SELECT x FROM s)")
    assert planner.planned[0].runs == 1
    _, planner = run("y IN (SELECT x FROM s)")  # no `correlated` attribute: re-run per row
    assert planner.planned[0].runs == len(T_ROWS)
    _, planner = run("EXISTS (SELECT x FROM s WHERE x = t.y)", mark_uncorrelated=True)
    assert planner.planned[0].runs == len(T_ROWS)


def test_cache_renewed_for_a_new_execution():
    env = CompileEnv(ExecContext(params=(1,)))
    rows = list(S_ROWS)
    planner = TablePlanner(env, rows, mark_uncorrelated=True)
    env.subqueries = planner
    node = sqlglot.parse_one("SELECT (SELECT x FROM s WHERE x = 4)").expressions[0]
    fn = compile_expr(node, Scope([Column("y", "t", INT)]), env)
    assert fn((0,)) == 4 and fn((1,)) == 4
    rows[3] = (5,)
    assert fn((0,)) == 4  # same execution: cached
    env.ctx.params = (2,)  # the session binds new parameters for the next execution
    assert fn((0,)) is None
    assert planner.planned[0].runs == 2


def test_in_subquery_type_mismatch():
    env = CompileEnv(ExecContext())
    env.subqueries = TablePlanner(env)
    node = sqlglot.parse_one("SELECT 'a' || '' IN (SELECT x FROM s)").expressions[0]
    with pytest.raises(ProgrammingError, match="operator does not exist"):
        compile_expr(node, Scope([Column("y", "t", INT)]), env)


def test_untyped_literal_takes_the_subquery_column_type():
    got, _ = run("'2' IN (SELECT x FROM s)")
    assert got == [True] * len(T_ROWS)
    got, _ = run("'3' = ANY (SELECT x FROM s WHERE x IS NOT NULL)")
    assert got == [False] * len(T_ROWS)


def test_unconvertible_literal_fails_only_when_rows_are_compared():
    got, _ = run("'hello' IN (SELECT x FROM s WHERE x > 100)")
    assert got == [False] * len(T_ROWS)  # no rows: nothing to compare (SQLite agrees)
    with pytest.raises(ProgrammingError, match="operator does not exist"):
        run("'hello' IN (SELECT x FROM s)")
