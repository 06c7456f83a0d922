"""Randomized differential test: generated data and queries, sqlkv vs sqlite3.

The generator sticks to semantics both engines share: integer columns with NULLs, text without
collation surprises, comparisons, AND/OR/NOT, IS NULL, IN lists, BETWEEN, + and -, the common
aggregates, inner/left joins on equalities. Results compare as multisets unless the query has
an ORDER BY over every output column.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.query.oracle import Pair

small = st.one_of(st.none(), st.integers(-5, 5))
T1_ROWS = st.lists(st.tuples(small, small, st.sampled_from([None, "x", "y", "zz", ""])), max_size=12)
T2_ROWS = st.lists(st.tuples(small, small), max_size=12)

COLS1 = ["t1.a", "t1.b"]
COLS2 = ["t2.a", "t2.d"]


@st.composite
def predicates(draw, cols, depth=0):
    kind = draw(st.integers(0, 6 if depth < 2 else 4))
    c = draw(st.sampled_from(cols))
    k = draw(st.integers(-4, 4))
    if kind == 0:
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {k}"
    if kind == 1:
        return f"{c} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 2:
        vals = draw(st.lists(st.integers(-4, 4), min_size=1, max_size=3))
        return f"{c} {draw(st.sampled_from(['IN', 'NOT IN']))} ({', '.join(map(str, vals))})"
    if kind == 3:
        return f"{c} BETWEEN {k} AND {k + draw(st.integers(0, 4))}"
    if kind == 4:
        c2 = draw(st.sampled_from(cols))
        return f"{c} + {k} > {c2}"
    left = draw(predicates(cols, depth + 1))
    right = draw(predicates(cols, depth + 1))
    if kind == 5:
        return f"({left} {draw(st.sampled_from(['AND', 'OR']))} {right})"
    return f"NOT ({left})"


@st.composite
def queries(draw):
    join = draw(st.sampled_from(["", "JOIN", "LEFT JOIN", ","]))
    if join == ",":
        source = "t1, t2"
        cols = COLS1 + COLS2
        where_extra = ["t1.a = t2.a"]
    elif join:
        source = f"t1 {join} t2 ON t1.{draw(st.sampled_from(['a', 'b']))} = t2.a"
        cols = COLS1 + COLS2
        where_extra = []
    else:
        source = "t1"
        cols = COLS1
        where_extra = []
    conds = where_extra + draw(st.lists(predicates(cols), max_size=2))
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    if draw(st.booleans()):
        key = draw(st.sampled_from(cols))
        agg_col = draw(st.sampled_from(cols))
        aggs = draw(st.lists(st.sampled_from([
            "count(*)", f"count({agg_col})", f"sum({agg_col})", f"min({agg_col})",
            f"max({agg_col})", f"count(DISTINCT {agg_col})", f"total({agg_col})"]), min_size=1, max_size=3))
        having = f" HAVING count(*) > {draw(st.integers(0, 2))}" if draw(st.booleans()) else ""
        return f"SELECT {key}, {', '.join(aggs)} FROM {source}{where} GROUP BY {key}{having}"
    out = draw(st.lists(st.sampled_from(cols + [f"{cols[0]} - {cols[-1]}", "t1.c"]), min_size=1, max_size=3))
    distinct = "DISTINCT " if draw(st.booleans()) else ""
    sql = f"SELECT {distinct}{', '.join(out)} FROM {source}{where}"
    if draw(st.booleans()):
        n = len(out)
        order = ", ".join(f"{i + 1} {draw(st.sampled_from(['ASC', 'DESC']))}" for i in range(n))
        sql += f" ORDER BY {order}"
        if draw(st.booleans()):
            sql += f" LIMIT {draw(st.integers(0, 5))} OFFSET {draw(st.integers(0, 3))}"
    return sql


@st.composite
def compound_queries(draw):
    """Subqueries, set operations and deterministic window functions over t1/t2."""
    kind = draw(st.integers(0, 4))
    pred = draw(predicates(COLS2))
    if kind == 0:
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"SELECT t1.a, t1.b FROM t1 WHERE {neg}EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a AND {pred})"
    if kind == 1:
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"SELECT t1.b FROM t1 WHERE t1.a {neg}IN (SELECT t2.a FROM t2 WHERE {pred})"
    if kind == 2:
        op = draw(st.sampled_from(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"]))
        return f"SELECT t1.a FROM t1 WHERE {draw(predicates(COLS1))} {op} SELECT t2.a FROM t2 WHERE {pred}"
    if kind == 3:
        return (f"SELECT t1.a, (SELECT count(*) FROM t2 WHERE t2.a = t1.a), "
                f"(SELECT max(t2.d) FROM t2 WHERE t2.a <= t1.b) FROM t1")
    func = draw(st.sampled_from(["sum(t1.b)", "count(*)", "rank()", "dense_rank()", "max(t1.b)"]))
    part = draw(st.sampled_from(["", "PARTITION BY t1.c "]))
    return f"SELECT t1.a, t1.b, {func} OVER ({part}ORDER BY t1.a) FROM t1"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t1=T1_ROWS, t2=T2_ROWS, index=st.booleans(),
       sqls=st.lists(compound_queries(), min_size=1, max_size=4))
def test_random_subqueries_setops_windows_match_sqlite(t1, t2, index, sqls):
    pair = Pair()
    try:
        pair.both("CREATE TABLE t1 (a INTEGER, b INTEGER, c TEXT)")
        pair.both("CREATE TABLE t2 (a INTEGER, d INTEGER)")
        if index:
            pair.both("CREATE INDEX t2_a ON t2 (a)")
        if t1:
            pair.many("INSERT INTO t1 VALUES (?, ?, ?)", t1)
        if t2:
            pair.many("INSERT INTO t2 VALUES (?, ?)", t2)
        for sql in sqls:
            pair.check(sql)
    finally:
        pair.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t1=T1_ROWS, t2=T2_ROWS, index=st.booleans(), sqls=st.lists(queries(), min_size=1, max_size=4))
def test_random_queries_match_sqlite(t1, t2, index, sqls):
    pair = Pair()
    try:
        pair.both("CREATE TABLE t1 (a INTEGER, b INTEGER, c TEXT)")
        pair.both("CREATE TABLE t2 (a INTEGER, d INTEGER)")
        if index:
            pair.both("CREATE INDEX t2_a ON t2 (a)")
            pair.both("CREATE INDEX t1_b ON t1 (b)")
        if t1:
            pair.many("INSERT INTO t1 VALUES (?, ?, ?)", t1)
        if t2:
            pair.many("INSERT INTO t2 VALUES (?, ?)", t2)
        for sql in sqls:
            pair.check(sql)
    finally:
        pair.close()
