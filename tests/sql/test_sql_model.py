"""Index maintenance under random INSERT/UPDATE/DELETE (hypothesis), checked two ways: the
consistency checker (every index entry matches its row) and SELECT results against sqlite3."""

from __future__ import annotations

import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.errors import IntegrityError
from sqlkv.sql.session import Database, Session

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
