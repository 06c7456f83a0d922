"""Index maintenance under random INSERT/UPDATE/DELETE (hypothesis), checked two ways: the
consistency checker (every index entry matches its row) and SELECT results against sqlite3."""

from __future__ import annotations

import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.errors import IntegrityError
from sqlkv.sql import Database, Session

SCHEMA = [
    "CREATE TABLE t (id INT, k INT, name TEXT, score INT, PRIMARY KEY (id))",
    "CREATE UNIQUE INDEX t_k ON t (k)",
    "CREATE INDEX t_name_score ON t (name DESC, score)",
    "CREATE INDEX t_score ON t (score) STORING (name)",
]

ids = st.integers(0, 12)
small = st.one_of(st.none(), st.integers(0, 6))
names = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "ab"]))

insert = st.tuples(st.just("insert"), ids, small, names, small)
update_k = st.tuples(st.just("update_k"), ids, small)
update_id = st.tuples(st.just("update_id"), ids, ids)
update_many = st.tuples(st.just("update_many"), small, names)
delete = st.tuples(st.just("delete"), st.integers(0, 6))
ops = st.lists(st.one_of(insert, update_k, update_id, update_many, delete), min_size=1, max_size=25)

QUERIES = [
    "SELECT id, k, name, score FROM t ORDER BY id",
    "SELECT id FROM t WHERE k = 3",
    "SELECT id FROM t WHERE k IS NULL ORDER BY id",
    "SELECT id, name FROM t WHERE name = 'a' ORDER BY id",
    "SELECT id FROM t WHERE name >= 'ab' ORDER BY id",
    "SELECT id, score FROM t WHERE score BETWEEN 2 AND 4 ORDER BY id",
    "SELECT id FROM t WHERE score > 3 AND name = 'b' ORDER BY id",
    "SELECT id FROM t WHERE id IN (1, 5, 9) ORDER BY id",
]


def _apply(op, run):
    kind = op[0]
    if kind == "insert":
        return run("INSERT INTO t VALUES (?, ?, ?, ?)", op[1:])
    if kind == "update_k":
        return run("UPDATE t SET k = ? WHERE id = ?", (op[2], op[1]))
    if kind == "update_id":
        return run("UPDATE t SET id = ? WHERE id = ?", (op[2], op[1]))
    if kind == "update_many":
        if op[1] is None:
            return run("UPDATE t SET name = ? WHERE score IS NULL", (op[2],))
        return run("UPDATE t SET name = ?, score = score + 1 WHERE score >= ?", (op[2], op[1]))
    return run("DELETE FROM t WHERE score = ? OR k = ?", (op[1], op[1]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_random_dml_keeps_indexes_consistent_and_matches_sqlite(program):
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql.replace(" DESC", "").replace(" STORING (name)", ""))
    for op in program:
        ours_failed = lite_failed = False
        try:
            _apply(op, s.execute)
        except IntegrityError:
            ours_failed = True
        try:
            with lite:
                _apply(op, lite.execute)
        except sqlite3.IntegrityError:
            lite_failed = True
        assert ours_failed == lite_failed, op
    assert s.execute("CHECK DATABASE").fetchall() == []
    for q in QUERIES:
        assert s.execute(q).fetchall() == lite.execute(q).fetchall(), q


OPS = ["=", "<", "<=", ">", ">="]
col_preds = {
    "a": st.integers(-3, 8),
    "b": st.sampled_from(["", "a", "ab", "b", "ba", "z"]),
    "c": st.one_of(st.integers(-3, 3).map(lambda x: x / 2), st.integers(-3, 3)),
}


@st.composite
def predicate(draw):
    col = draw(st.sampled_from(sorted(col_preds)))
    kind = draw(st.sampled_from(["cmp", "cmp", "between", "in", "null"]))
    val = col_preds[col]
    lit = lambda v: repr(v) if not isinstance(v, str) else "'" + v + "'"  # noqa: E731
    if kind == "cmp":
        return f"{col} {draw(st.sampled_from(OPS))} {lit(draw(val))}"
    if kind == "between":
        return f"{col} BETWEEN {lit(draw(val))} AND {lit(draw(val))}"
    if kind == "in":
        return f"{col} IN ({', '.join(lit(v) for v in draw(st.lists(val, min_size=1, max_size=3)))})"
    return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"


table_rows = st.lists(
    st.tuples(st.integers(-3, 8), st.sampled_from(["", "a", "ab", "b", "ba", "z"]),
              st.one_of(st.none(), st.integers(-3, 3).map(lambda x: x / 2))),
    max_size=30,
    unique_by=lambda r: (r[0], r[1]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table_rows, st.lists(predicate(), min_size=1, max_size=3))
def test_spans_on_descending_and_composite_keys_match_sqlite(data, preds):
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    s.execute("CREATE TABLE k (a INT, b TEXT, c FLOAT, PRIMARY KEY (a DESC, b))")
    s.execute("CREATE INDEX k_c ON k (c DESC, b)")
    lite.execute("CREATE TABLE k (a INT, b TEXT, c REAL, PRIMARY KEY (a, b))")
    if data:
        s.executemany("INSERT INTO k VALUES (?, ?, ?)", data)
        lite.executemany("INSERT INTO k VALUES (?, ?, ?)", data)
    where = " AND ".join(preds)
    sql = f"SELECT a, b, c FROM k WHERE {where}"
    assert sorted(s.execute(sql).fetchall(), key=repr) == sorted(lite.execute(sql).fetchall(), key=repr), sql
    ordered = s.execute(sql + " ORDER BY a DESC, b").fetchall()
    assert ordered == sorted(ordered, key=lambda r: (-r[0], r[1]))
