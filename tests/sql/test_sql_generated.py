"""Generated columns, STORED and VIRTUAL, and indexes on them, against sqlite3 (which has both).

A STORED column's value is computed by the row writer and stored; a VIRTUAL one is never
stored (checked in sqlkv_internal.kv) and computed when a row is decoded. Both can be indexed,
and a query on the column uses the index (EXPLAIN). Writing either is refused (428C9).
"""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.errors import DatatypeMismatch, GeneratedAlways, InvalidForeignKey, NotSupportedError, ProgrammingError
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import open_db, rows, same_write_outcome

SCHEMA = [
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT,"
    " s INT GENERATED ALWAYS AS (a * 2 + 1) STORED,"
    " v TEXT GENERATED ALWAYS AS (upper(b) || 'x') VIRTUAL)",
    "CREATE INDEX t_s ON t (s)",
    "CREATE INDEX t_v ON t (v)",
]


@pytest.fixture
def s():
    db = Database.open(":memory:")
    yield Session(db)
    db.close()


def _statement(rng: random.Random) -> str:
    k = rng.randrange(30)
    a = rng.choice(["NULL", str(rng.randrange(-5, 20))])
    b = rng.choice(["NULL", f"'{rng.choice('abcde')}{rng.randrange(3)}'"])
    return rng.choice([
        f"INSERT INTO t (id, a, b) VALUES ({k}, {a}, {b})",
        f"INSERT INTO t VALUES ({k}, {a}, {b})",
        f"UPDATE t SET a = {a} WHERE id = {k}",
        f"UPDATE t SET b = {b}, a = a + 1 WHERE id < {k}",
        f"DELETE FROM t WHERE id = {k}",
        f"DELETE FROM t WHERE s > {rng.randrange(40)}",
    ])


QUERIES = [
    "SELECT id, s, v FROM t WHERE v = ?",
    "SELECT id, s FROM t WHERE s BETWEEN ? AND ? + 10",
    "SELECT * FROM t WHERE v LIKE 'A%' ORDER BY id",
    "SELECT count(*), sum(s) FROM t",
]


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_and_reads_match_sqlite(s, seed):
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        lite.execute(sql)
        s.execute(sql)
    rng = random.Random(seed)
    for _ in range(200):
        sql = _statement(rng)
        same_write_outcome(s, lite, sql)
        q = rng.choice(QUERIES)
        params = {QUERIES[0]: (f"{rng.choice('ABCDE')}{rng.randrange(3)}x",),
                  QUERIES[1]: (rng.randrange(-10, 40),) * 2}.get(q, ())
        assert sorted(rows(s, q, params)) == sorted(lite.execute(q, params).fetchall()), (sql, q, params)
    assert rows(s, "CHECK DATABASE") == []


def test_virtual_is_not_stored_stored_is_and_indexes_are_used(s):
    for sql in SCHEMA:
        s.execute(sql)
    s.execute("INSERT INTO t (id, a, b) VALUES (1, 4, 'ann')")
    values = [r[0] for r in rows(s, "SELECT value FROM sqlkv_internal.kv WHERE table_name = 't' AND index_name = 't_pkey'")]
    assert values == ["{a: 4, b: 'ann', s: 9}"]  # v is computed on read, s is stored
    assert rows(s, "SELECT key FROM sqlkv_internal.kv WHERE index_name = 't_v'") == [('/t/t_v/"ANNx"/1',)]
    assert rows(s, "EXPLAIN SELECT id FROM t WHERE v = 'ANNx'")[-1][0] == '  scan t@t_v (index-only) /Table/100/3/"ANNx"'
    assert rows(s, "EXPLAIN SELECT id FROM t WHERE s = 9")[-1][0] == "  scan t@t_s (index-only) /Table/100/2/9"
    s.execute("UPDATE t SET b = 'bo'")  # the index entry of v moves with b
    assert rows(s, "SELECT id, v FROM t WHERE v = 'BOx'") == [(1, "BOx")]
    assert rows(s, "SELECT id FROM t WHERE v = 'ANNx'") == []
    assert rows(s, "CHECK DATABASE") == []
    assert rows(s, "SELECT column_name, is_generated, generation_expression FROM information_schema.columns "
                   "WHERE table_name = 't' AND NOT is_hidden") == [
        ("id", "NEVER", None), ("a", "NEVER", None), ("b", "NEVER", None), ("s", "ALWAYS", "a * 2 + 1"),
        ("v", "ALWAYS", "UPPER(b) || 'x'")]


def test_writes_to_generated_columns_are_refused(s):
    for sql in SCHEMA:
        s.execute(sql)
    for sql in ["INSERT INTO t (id, s) VALUES (1, 5)", "INSERT INTO t (id, v) SELECT 1, 'x'", "UPDATE t SET v = 'x'"]:
        with pytest.raises(GeneratedAlways) as e:
            s.execute(sql)
        assert e.value.sqlstate == "428C9"
    s.execute("INSERT INTO t (id, a, s) VALUES (1, 1, DEFAULT)")
    s.execute("UPDATE t SET s = DEFAULT, a = 2")
    assert rows(s, "SELECT s FROM t") == [(5,)]


def test_declaration_rules(s):
    for sql, cls, match in [
        ("CREATE TABLE x (a INT, b INT AS (a + 1), c INT AS (b + 1))", ProgrammingError, 'generated column "b"'),
        ("CREATE TABLE x (a INT, b FLOAT AS (random()))", ProgrammingError, "immutable"),
        ("CREATE TABLE x (a INT, b INT AS (nope))", ProgrammingError, '"nope"'),
        ("CREATE TABLE x (a INT, b INT AS ((SELECT 1)))", NotSupportedError, "subquery"),
        ("CREATE TABLE x (a INT, b INT AS (a), PRIMARY KEY (b))", NotSupportedError, "primary key"),
        # the expression's type must fit the column at CREATE, not fail at the first INSERT
        ("CREATE TABLE x (a INT, b TEXT AS (a + 1) STORED)", DatatypeMismatch, "TEXT but its generation expression is of type INT"),
        ("CREATE TABLE x (a INT, b INT AS (a || 'x') VIRTUAL)", DatatypeMismatch, "INT but .* TEXT"),
    ]:
        with pytest.raises(cls, match=match):
            s.execute(sql)
    s.execute("CREATE TABLE g (id INT PRIMARY KEY, a INT, d INT AS (a * 10) STORED)")
    s.execute("INSERT INTO g (id, a) VALUES (1, 1)")
    with pytest.raises(ProgrammingError, match='generated column "d" uses it'):
        s.execute("ALTER TABLE g DROP COLUMN a")
    with pytest.raises(NotSupportedError, match="STORED"):
        s.execute("ALTER TABLE g ADD COLUMN e INT AS (a + 1) STORED")
    s.execute("ALTER TABLE g ADD COLUMN e INT AS (a + 1) VIRTUAL")  # computed for existing rows on read
    s.execute("ALTER TABLE g RENAME COLUMN a TO alpha")
    s.execute("UPDATE g SET alpha = 3")
    assert rows(s, "SELECT * FROM g") == [(1, 3, 30, 4)]
    with pytest.raises(NotSupportedError, match="generated"):
        s.execute("ALTER TABLE g ALTER COLUMN d TYPE FLOAT")
    s.execute("CREATE TABLE p (k INT PRIMARY KEY)")
    with pytest.raises(InvalidForeignKey, match="generated column"):
        s.execute("CREATE TABLE c (a INT, k INT AS (a) STORED REFERENCES p ON UPDATE CASCADE)")


def test_survive_reopen(tmp_path):
    db = open_db("lsm", tmp_path)
    s = Session(db)
    for sql in SCHEMA:
        s.execute(sql)
    s.execute("INSERT INTO t (id, a, b) VALUES (1, 2, 'q')")
    db.close()
    db = open_db("lsm", tmp_path)
    s = Session(db)
    assert rows(s, "SELECT s, v FROM t WHERE v = 'Qx'") == [(5, "Qx")]
    db.close()
