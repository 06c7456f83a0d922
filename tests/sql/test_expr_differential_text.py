"""Differential test for TEXT expressions against sqlite3.

Strings are drawn from a small lower-case alphabet (SQLite's LIKE folds ASCII case, sqlkv's does
not: with lower-case data and patterns the two agree). Functions are used where the two engines
define them the same way: || lower upper length substr (positive start) replace trim instr,
comparisons, LIKE, COALESCE, NULLIF, CASE.
"""

from __future__ import annotations

import sqlite3

import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.expr import CompileEnv, compile_expr
from sqlkv.sql.types import TEXT

SCOPE = Scope([Column("s", "t", TEXT), Column("u", "t", TEXT)])
words = st.text(alphabet="ab_% ", max_size=5)
values = st.one_of(st.none(), st.text(alphabet="abc ", max_size=6))
rows = st.lists(st.tuples(values, values), min_size=1, max_size=6)


def quote(w: str) -> str:
    return "'" + w.replace("'", "''") + "'"


leaf = st.one_of(st.sampled_from(["s", "u", "NULL"]), st.text(alphabet="abc ", max_size=3).map(quote))


def text_level(sub: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    small = st.integers(1, 4)
    return st.one_of(
        sub,
        st.tuples(sub, sub).map(lambda t: f"({t[0]} || {t[1]})"),
        sub.map(lambda e: f"lower({e})"),
        sub.map(lambda e: f"upper({e})"),
        sub.map(lambda e: f"trim({e})"),
        st.tuples(sub, small, st.integers(0, 4)).map(lambda t: f"substr({t[0]}, {t[1]}, {t[2]})"),
        # (SQLite's replace() returns the input for an empty pattern even with a NULL
        # replacement; sqlkv's is strict: patterns here are non-empty literals)
        st.tuples(sub, st.text(alphabet="abc ", min_size=1, max_size=2).map(quote), sub).map(
            lambda t: f"replace({t[0]}, {t[1]}, {t[2]})"
        ),
        st.tuples(sub, sub).map(lambda t: f"COALESCE({t[0]}, {t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"NULLIF({t[0]}, {t[1]})"),
        st.tuples(sub, sub, sub, sub).map(lambda t: f"(CASE WHEN {t[0]} < {t[1]} THEN {t[2]} ELSE {t[3]} END)"),
    )


TEXT1 = text_level(leaf)
TEXT2 = text_level(TEXT1)
SCALARS = st.one_of(
    TEXT2,
    TEXT1.map(lambda e: f"length({e})"),
    st.tuples(TEXT1, TEXT1).map(lambda t: f"instr({t[0]}, {t[1]})"),
    st.tuples(TEXT1, st.sampled_from(["=", "<>", "<", ">="]), TEXT1).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
    # lower(): the subject may contain upper() of the data, where the two LIKEs differ on purpose.
    st.tuples(TEXT1, words.map(quote)).map(lambda t: f"(lower({t[0]}) LIKE {t[1]})"),
)


def sqlite_eval(expr: str, data: list[tuple]) -> list:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (s TEXT, u TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", data)
    return [r[0] for r in con.execute(f"SELECT {expr} FROM t ORDER BY rowid")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=SCALARS, data=rows)
def test_text_expressions_match_sqlite(expr, data):
    node = sqlglot.parse_one(f"SELECT {expr}").expressions[0]
    fn = compile_expr(node, SCOPE, CompileEnv(ExecContext()))
    got = [fn(r) for r in data]
    got = [int(v) if isinstance(v, bool) else v for v in got]
    assert got == sqlite_eval(expr, data)
