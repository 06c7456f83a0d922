"""Differential test: random well-typed expressions over INT columns with NULLs, against sqlite3.

Only constructs whose semantics SQLite and sqlkv share are generated: + - * / % (both truncate
toward zero and give NULL for a zero divisor), comparisons, AND/OR/NOT, CASE, COALESCE, NULLIF,
BETWEEN, IN, IS NULL. SQLite turns an integer overflow into a
REAL while sqlkv raises DataError; such cases are checked to be overflows on the SQLite side.
"""

from __future__ import annotations

import math
import sqlite3

import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.errors import DataError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.expr import CompileEnv, compile_expr, compile_predicate, infer_type
from sqlkv.sql.types import FLOAT, INT, value_type

COLS = ["a", "b", "c"]
SCOPE = Scope([Column(n, "t", INT) for n in COLS])
ints = st.one_of(st.none(), st.integers(-20, 20))
rows = st.lists(st.tuples(ints, ints, ints), min_size=1, max_size=8)

int_leaf = st.one_of(
    st.sampled_from(COLS),
    st.integers(-9, 9).map(lambda v: f"({v})"),
    st.just("NULL"),
)


def _int_level(sub: st.SearchStrategy[str], cond: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        int_leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda e: f"(- {e})"),
        st.tuples(cond, sub, sub).map(lambda t: f"(CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END)"),
        st.tuples(sub, sub, sub).map(lambda t: f"(CASE {t[0]} WHEN {t[1]} THEN {t[2]} END)"),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: f"COALESCE({', '.join(xs)})"),
        st.tuples(sub, sub).map(lambda t: f"NULLIF({t[0]}, {t[1]})"),
    )


def _bool_level(leaf_int: st.SearchStrategy[str], sub: st.SearchStrategy[str] | None) -> st.SearchStrategy[str]:
    comparisons = st.tuples(leaf_int, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), leaf_int).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    )
    basic = st.one_of(
        comparisons,
        st.tuples(leaf_int, leaf_int, leaf_int, st.booleans()).map(
            lambda t: f"({t[0]} {'NOT ' if t[3] else ''}BETWEEN {t[1]} AND {t[2]})"
        ),
        st.tuples(leaf_int, st.lists(leaf_int, min_size=1, max_size=4), st.booleans()).map(
            lambda t: f"({t[0]} {'NOT ' if t[2] else ''}IN ({', '.join(t[1])}))"
        ),
        st.tuples(leaf_int, st.booleans()).map(lambda t: f"({t[0]} IS {'NOT ' if t[1] else ''}NULL)"),
    )
    if sub is None:
        return basic
    return st.one_of(
        basic,
        st.tuples(sub, st.sampled_from(["AND", "OR"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda e: f"(NOT {e})"),
    )


# Strategies by nesting depth, built once (level n uses level n-1).
INT_LEVELS = [int_leaf]
BOOL_LEVELS = [_bool_level(int_leaf, None)]
for _ in range(3):
    INT_LEVELS.append(_int_level(INT_LEVELS[-1], BOOL_LEVELS[-1]))
    BOOL_LEVELS.append(_bool_level(INT_LEVELS[-2], BOOL_LEVELS[-1]))


def sqlite_eval(expr: str, data: list[tuple]) -> list:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", data)
    return [r[0] for r in con.execute(f"SELECT {expr} FROM t ORDER BY rowid")]


def ours(expr: str, data: list[tuple], predicate: bool = False) -> list:
    node = sqlglot.parse_one(f"SELECT {expr}").expressions[0]
    env = CompileEnv(ExecContext())
    fn = compile_predicate(node, SCOPE, env) if predicate else compile_expr(node, SCOPE, env)
    out = []
    for row in data:
        try:
            out.append(fn(row))
        except DataError as e:
            assert "integer out of range" in str(e)
            out.append(OverflowError)
    return out


def assert_same(expected: list, got: list) -> None:
    for e, g in zip(expected, got, strict=True):
        if g is OverflowError:
            assert isinstance(e, float) and abs(e) >= 2**63 - 1024, (e, g)
            continue
        if isinstance(g, bool):
            g = int(g)
        assert e == g and type(e) is type(g), (e, g)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(expr=INT_LEVELS[3], data=rows)
def test_int_expressions_match_sqlite(expr, data):
    assert_same(sqlite_eval(expr, data), ours(expr, data))


@SETTINGS
@given(expr=BOOL_LEVELS[3], data=rows)
def test_bool_expressions_match_sqlite(expr, data):
    expected = sqlite_eval(expr, data)
    got = ours(expr, data)
    if OverflowError in got:
        return  # an overflow inside a comparison: SQLite compares REALs, we raise
    assert_same(expected, got)
    # The predicate form is TRUE-only, like WHERE.
    assert ours(expr, data, predicate=True) == [e == 1 for e in expected]


# ---------------------------------------------------------------- INT mixed with FLOAT

NUM_SCOPE = Scope([Column("a", "t", INT), Column("b", "t", INT), Column("f", "t", FLOAT)])
floats = st.one_of(st.none(), st.floats(-20, 20, allow_nan=False).map(lambda v: round(v, 2)))
num_rows = st.lists(st.tuples(ints, ints, floats), min_size=1, max_size=8)
num_leaf = st.one_of(
    st.sampled_from(["a", "b", "f"]),
    st.integers(-9, 9).map(lambda v: f"({v})"),
    st.floats(-9, 9, allow_nan=False).map(lambda v: f"({round(v, 2)!r})"),
    st.just("NULL"),
)


def _num_level(sub: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        sub,
        # No "/": SQLite types per value, so 1 / COALESCE(NULL-float, 2) divides integers there,
        # while sqlkv (like PostgreSQL) gives COALESCE(FLOAT, INT) the type FLOAT.
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, sub).map(lambda t: f"COALESCE({t[0]}, {t[1]})"),
        st.tuples(sub, st.sampled_from(["<", "=", ">="]), sub, sub, sub).map(
            lambda t: f"(CASE WHEN {t[0]} {t[1]} {t[2]} THEN {t[3]} ELSE {t[4]} END)"
        ),
    )


NUM_EXPR = _num_level(_num_level(num_leaf))
NUM_BOOL = st.tuples(NUM_EXPR, st.sampled_from(["=", "<>", "<", ">="]), NUM_EXPR).map(
    lambda t: f"({t[0]} {t[1]} {t[2]})"
)


def _close(e: object, g: object) -> bool:
    if e is None or g is None:
        return e is None and g is None
    if isinstance(g, bool):
        g = int(g)
    return math.isclose(e, g, rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(expr=st.one_of(NUM_EXPR, NUM_BOOL), data=num_rows)
def test_mixed_numeric_expressions_match_sqlite(expr, data):
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER, f REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", data)
    expected = [r[0] for r in con.execute(f"SELECT {expr} FROM t ORDER BY rowid")]
    node = sqlglot.parse_one(f"SELECT {expr}").expressions[0]
    fn = compile_expr(node, NUM_SCOPE, CompileEnv(ExecContext()))
    got = [fn(r) for r in data]
    assert all(_close(e, g) for e, g in zip(expected, got, strict=True)), (expected, got)
    static = infer_type(node, NUM_SCOPE)  # every value has the statically inferred type
    assert all(value_type(g).kind == static.kind for g in got if g is not None), (static, got)
