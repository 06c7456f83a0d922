"""Partial indexes (``CREATE [UNIQUE] INDEX ... WHERE pred``) against sqlite3, which has them.

Before, the WHERE was ignored: the index held every row and a unique partial index rejected
rows outside its predicate. Now only rows satisfying the predicate have an entry (insert,
update in and out of the predicate, delete, INSERT OR REPLACE, ON CONFLICT DO NOTHING,
backfill); the planner uses the index only when the query's conjuncts include the predicate's;
the predicate survives reopen and shows in EXPLAIN, information_schema and the dump text.
"""

from __future__ import annotations

import os
import random
import sqlite3

import pytest

from sqlkv.errors import IntegrityError, ProgrammingError
from sqlkv.sql import Database, Session
from tests.sql.core_support import rows

SCHEMA = [
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, k INT)",
    "CREATE UNIQUE INDEX t_a_live ON t (a) WHERE k > 0",
    "CREATE INDEX t_b_one ON t (b) WHERE k = 1 AND b IS NOT NULL",
]
OPS = int(os.environ.get("SQLKV_PARTIAL_OPS", "400"))


def _open(path) -> tuple[Database, Session]:
    db = Database.open(str(path))
    return db, Session(db)


def _explain(s: Session, sql: str) -> str:
    return "\n".join(r[0] for r in rows(s, "EXPLAIN " + sql))


def _both_refuse(s: Session, lite: sqlite3.Connection, sql: str, lite_error: type, error: type, match: str | None = None) -> None:
    """sqlite3 and sqlkv both refuse ``sql`` (with the PEP 249 class each uses)."""
    with pytest.raises(lite_error):
        lite.execute(sql)
    with pytest.raises(error, match=match):
        s.execute(sql)


def _random_statement(rng: random.Random) -> tuple[str, tuple]:
    i, a, b, k = rng.randint(1, 30), rng.randint(1, 6), rng.choice([None, 1, 2, 3]), rng.randint(-1, 2)
    kind = rng.randrange(6)
    if kind == 0:
        return "INSERT INTO t VALUES (?, ?, ?, ?)", (i, a, b, k)
    if kind == 1:
        return "INSERT INTO t VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", (i, a, b, k)
    if kind == 2:
        return "INSERT OR REPLACE INTO t VALUES (?, ?, ?, ?)", (i, a, b, k)
    if kind == 3:
        return "UPDATE t SET k = ? WHERE id = ?", (k, i)
    if kind == 4:
        return "UPDATE t SET a = ?, b = ? WHERE id = ?", (a, b, i)
    return "DELETE FROM t WHERE id = ?", (i,)


QUERIES = [
    ("SELECT id FROM t WHERE a = ? AND k > 0 ORDER BY id", "t_a_live"),
    ("SELECT id, a FROM t WHERE k > 0 AND a >= ? ORDER BY id", "t_a_live"),
    ("SELECT id FROM t WHERE b = ? AND k = 1 AND b IS NOT NULL ORDER BY id", "t_b_one"),
    ("SELECT id FROM t WHERE a = ? ORDER BY id", None),  # predicate not implied: no partial index
    ("SELECT id FROM t WHERE b = ? AND k = 1 ORDER BY id", None),  # only one of two conjuncts
]


def test_random_workload_matches_sqlite3(tmp_path):
    rng = random.Random(1234)
    lite = sqlite3.connect(":memory:", isolation_level=None)
    db, s = _open(tmp_path / "db")
    for stmt in SCHEMA:
        s.execute(stmt)
        lite.execute(stmt)
    for n in range(OPS):
        sql, params = _random_statement(rng)
        try:
            lite.execute(sql, params)
            expected_error = None
        except sqlite3.IntegrityError as exc:
            expected_error = exc
        if expected_error is None:
            s.execute(sql, params)
        else:
            with pytest.raises(IntegrityError):
                s.execute(sql, params)
        if n % 20 == 0:
            v = rng.randint(1, 6)
            for q, _ in QUERIES:
                assert rows(s, q, (v,)) == lite.execute(q, (v,)).fetchall(), (n, sql, params, q)
    assert rows(s, "SELECT * FROM t ORDER BY id") == lite.execute("SELECT * FROM t ORDER BY id").fetchall()
    assert rows(s, "CHECK DATABASE") == []
    s.close()
    db.close()
    # the predicate persists: after reopen the index still holds and constrains only its rows
    db, s = _open(tmp_path / "db")
    for q, index in QUERIES:
        plan = _explain(s, q.replace("?", "3"))
        if index is None:
            assert "t_a_live" not in plan and "t_b_one" not in plan, plan
        else:
            assert f"t@{index} (partial: WHERE" in plan, plan
        assert rows(s, q, (3,)) == lite.execute(q, (3,)).fetchall()
    assert rows(s, "CHECK DATABASE") == []
    s.close()
    db.close()


def test_backfill_unique_partial_and_reopen(tmp_path):
    lite = sqlite3.connect(":memory:", isolation_level=None)
    db, s = _open(tmp_path / "db")
    for conn in (s, lite):
        conn.execute("CREATE TABLE u (id INT PRIMARY KEY, email TEXT, deleted INT)")
        conn.execute("INSERT INTO u VALUES (1, 'a', 1), (2, 'a', 0), (3, 'a', 1), (4, 'b', 0)")
    # duplicates outside the predicate do not stop the unique backfill
    s.execute("CREATE UNIQUE INDEX u_email ON u (email) WHERE deleted = 0")
    lite.execute("CREATE UNIQUE INDEX u_email ON u (email) WHERE deleted = 0")
    entries = rows(s, "SELECT count(*) FROM \"sqlkv_internal.kv\" WHERE index_name = 'u_email'")
    assert entries == [(2,)]  # rows 2 and 4 only
    _both_refuse(s, lite, "INSERT INTO u VALUES (5, 'a', 0)", sqlite3.IntegrityError, IntegrityError, "u_email")
    # a unique backfill that does violate inside the predicate fails and leaves nothing
    with pytest.raises(IntegrityError, match="u_bad"):
        s.execute("CREATE UNIQUE INDEX u_bad ON u (email) WHERE deleted = 1")
    assert rows(s, "SELECT count(*) FROM information_schema.indexes WHERE index_name = 'u_bad'") == [(0,)]
    s.close()
    db.close()
    db, s = _open(tmp_path / "db")
    assert rows(s, "SELECT predicate FROM information_schema.indexes WHERE index_name = 'u_email'") == [
        ("deleted = 0",)
    ]
    s.execute("INSERT INTO u VALUES (5, 'a', 1)")
    lite.execute("INSERT INTO u VALUES (5, 'a', 1)")
    _both_refuse(s, lite, "UPDATE u SET deleted = 0 WHERE id = 5", sqlite3.IntegrityError, IntegrityError)
    q = "SELECT * FROM u ORDER BY id"
    assert rows(s, q) == lite.execute(q).fetchall()
    assert rows(s, "CHECK DATABASE") == []
    s.close()
    db.close()


def test_on_conflict_target_must_not_pick_a_partial_index(tmp_path):
    lite = sqlite3.connect(":memory:", isolation_level=None)
    db, s = _open(tmp_path / "db")
    for conn in (s, lite):
        conn.execute("CREATE TABLE u (id INT PRIMARY KEY, email TEXT, deleted INT)")
        conn.execute("CREATE UNIQUE INDEX u_email ON u (email) WHERE deleted = 0")
        conn.execute("INSERT INTO u VALUES (1, 'a', 0)")
    # PostgreSQL and sqlite3: without a matching WHERE the target names no constraint
    target = "INSERT INTO u VALUES (2, 'a', 0) ON CONFLICT (email) DO NOTHING"
    _both_refuse(s, lite, target, sqlite3.OperationalError, ProgrammingError, "partial")
    with pytest.raises(ProgrammingError, match="partial"):
        s.execute("INSERT INTO u VALUES (2, 'a', 0) ON CONFLICT ON CONSTRAINT u_email DO NOTHING")
    # without a target every unique index arbitrates, a partial one only inside its predicate
    for conn in (s, lite):
        conn.execute("INSERT INTO u VALUES (2, 'a', 0) ON CONFLICT DO NOTHING")
        conn.execute("INSERT INTO u VALUES (3, 'a', 1) ON CONFLICT DO NOTHING")
    q = "SELECT * FROM u ORDER BY id"
    assert rows(s, q) == lite.execute(q).fetchall() == [(1, "a", 0), (3, "a", 1)]
    s.close()
    db.close()


@pytest.mark.parametrize(
    "pred, error",
    [
        ("a > now()", "immutable"),
        ("a > random()", "immutable"),
        ("a IN (SELECT 1)", "subquery"),
        ("zz > 1", 'column "zz"'),
        ("a > ?", "parameters"),
    ],
)
def test_bad_predicates_are_refused(tmp_path, pred, error):
    db, s = _open(tmp_path / "db")
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)")
    with pytest.raises(Exception, match=error) as info:
        s.execute(f"CREATE INDEX i ON t (a) WHERE {pred}", (1,) if "?" in pred else ())
    assert type(info.value).__module__ == "sqlkv.errors"
    assert rows(s, "SELECT count(*) FROM information_schema.indexes WHERE index_name = 'i'") == [(0,)]
    s.close()
    db.close()


def test_dump_text_keeps_the_predicate():
    from sqlkv.catalog.descriptors import ColumnDescriptor, IndexDescriptor, TableDescriptor
    from sqlkv.dbapi.schema import create_index_sql
    from sqlkv.sql.types import INT

    cols = [ColumnDescriptor(1, "id", INT), ColumnDescriptor(2, "a", INT)]
    table = TableDescriptor(100, "t", cols, IndexDescriptor(1, "t_pkey", [1], [False]))
    idx = IndexDescriptor(2, "i", [2], [False], True, [], "a > 0")
    assert create_index_sql(table, idx) == 'CREATE UNIQUE INDEX i ON t (a) WHERE a > 0;'


def test_alter_column_keeps_the_predicate_consistent(tmp_path):
    db, s = _open(tmp_path / "db")
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, k INT)")
    s.execute("CREATE UNIQUE INDEX t_a ON t (a) WHERE k > 0")
    s.execute("INSERT INTO t VALUES (1, 5, 1), (2, 5, 0)")
    with pytest.raises(ProgrammingError, match='index "t_a" uses it'):
        s.execute("ALTER TABLE t DROP COLUMN k")
    s.execute("ALTER TABLE t RENAME COLUMN k TO live")
    assert rows(s, "SELECT predicate FROM information_schema.indexes WHERE index_name = 't_a'") == [("live > 0",)]
    with pytest.raises(IntegrityError):
        s.execute("INSERT INTO t VALUES (3, 5, 2)")
    s.execute("INSERT INTO t VALUES (3, 5, 0)")
    assert "t@t_a (partial: WHERE live > 0)" in _explain(s, "SELECT id FROM t WHERE a = 5 AND live > 0")
    assert rows(s, "SELECT id FROM t WHERE a = 5 AND live > 0") == [(1,)]
    assert rows(s, "CHECK DATABASE") == []
    s.close()
    db.close()
