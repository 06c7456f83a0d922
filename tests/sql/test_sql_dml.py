"""INSERT/UPSERT/REPLACE/UPDATE/DELETE/TRUNCATE: results checked against sqlite3 where shared."""

from __future__ import annotations

import sqlite3

import pytest

from sqlkv.errors import DataError, IntegrityError, NotSupportedError, ProgrammingError
from sqlkv.sql import Database, Session
from tests.sql.core_support import ENGINES, open_db, rows


@pytest.fixture(params=ENGINES)
def s(request, tmp_path):
    db = open_db(request.param, tmp_path)
    session = Session(db)
    session.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name TEXT NOT NULL, email VARCHAR(20) UNIQUE, "
        "age INT CHECK (age >= 0), CONSTRAINT adult CHECK (age < 200))"
    )
    yield session
    session.close()
    db.close()


def test_multirow_insert_and_column_list(s):
    r = s.execute("INSERT INTO users VALUES (1, 'ann', 'a@x', 30), (2, 'bob', NULL, NULL)")
    assert r.rowcount == 2
    s.execute("INSERT INTO users (name, id) VALUES ('cy', 3)")
    assert rows(s, "SELECT * FROM users ORDER BY id") == [
        (1, "ann", "a@x", 30),
        (2, "bob", None, None),
        (3, "cy", None, None),
    ]


def test_insert_select_and_default_values(s):
    s.execute("CREATE TABLE d (k INTEGER PRIMARY KEY, v INT DEFAULT 7, t TEXT DEFAULT 'x')")
    s.execute("INSERT INTO d DEFAULT VALUES")
    s.execute("INSERT INTO d (v) VALUES (DEFAULT), (1)")
    s.execute("INSERT INTO users VALUES (1, 'ann', 'a@x', 30), (2, 'bob', 'b@x', 40)")
    r = s.execute("INSERT INTO d (v, t) SELECT age, name FROM users WHERE age > 35")
    assert r.rowcount == 1
    assert rows(s, "SELECT * FROM d ORDER BY k") == [(1, 7, "x"), (2, 7, "x"), (3, 1, "x"), (4, 40, "bob")]
    assert r.lastrowid == 4


def test_integer_primary_key_auto_assigns_like_sqlite(s):
    s.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    for sql in ["INSERT INTO a (v) VALUES ('x')", "INSERT INTO a VALUES (10, 'y')", "INSERT INTO a (v) VALUES ('z')",
                "INSERT INTO a VALUES (NULL, 'w')"]:
        r = s.execute(sql)
        cur = lite.execute(sql)
        assert r.lastrowid == cur.lastrowid
    assert rows(s, "SELECT * FROM a ORDER BY id") == lite.execute("SELECT * FROM a ORDER BY id").fetchall()


def test_constraint_errors_name_the_constraint(s):
    s.execute("INSERT INTO users VALUES (1, 'ann', 'a@x', 30)")
    with pytest.raises(IntegrityError, match='duplicate key value violates unique constraint "users_pkey"'):
        s.execute("INSERT INTO users VALUES (1, 'x', 'other', 1)")
    with pytest.raises(IntegrityError, match='unique constraint "users_email_key"'):
        s.execute("INSERT INTO users VALUES (2, 'x', 'a@x', 1)")
    with pytest.raises(IntegrityError, match='null value in column "name" of relation "users" violates not-null'):
        s.execute("INSERT INTO users VALUES (3, NULL, NULL, 1)")
    with pytest.raises(IntegrityError, match='violates check constraint "users_age_check"'):
        s.execute("INSERT INTO users VALUES (4, 'x', NULL, -1)")
    with pytest.raises(IntegrityError, match='violates check constraint "adult"'):
        s.execute("UPDATE users SET age = 500 WHERE id = 1")
    with pytest.raises(DataError, match='column "id"'):
        s.execute("INSERT INTO users VALUES ('abc', 'x', NULL, 1)")
    with pytest.raises(DataError, match='column "email"'):
        s.execute("INSERT INTO users VALUES (5, 'x', 'a-very-long-email-address@x', 1)")
    with pytest.raises(ProgrammingError, match='relation "nope" does not exist'):
        s.execute("INSERT INTO nope VALUES (1)")
    with pytest.raises(ProgrammingError, match='column "nope"'):
        s.execute("UPDATE users SET nope = 1")
    with pytest.raises(ProgrammingError, match="more expressions than target columns"):
        s.execute("INSERT INTO users (id, name) VALUES (1, 'a', 'b')")
    # NULL in a CHECK passes (only FALSE fails), NULLs in a unique column never conflict
    s.execute("INSERT INTO users VALUES (6, 'n1', NULL, NULL), (7, 'n2', NULL, NULL)")
    assert rows(s, "SELECT count(*) FROM users") == [(3,)]


def test_failed_multirow_insert_inserts_nothing(s):
    s.execute("INSERT INTO users VALUES (1, 'ann', 'a@x', 30)")
    with pytest.raises(IntegrityError):
        s.execute("INSERT INTO users VALUES (2, 'b', 'b@x', 1), (3, 'c', 'c@x', 1), (4, 'd', 'a@x', 1)")
    assert rows(s, "SELECT id FROM users") == [(1,)]
    assert rows(s, "SELECT id FROM users WHERE email = 'b@x'") == []
    assert rows(s, "CHECK DATABASE") == []


def test_update_primary_key_shift_and_swap(s):
    s.execute("INSERT INTO users VALUES (1, 'a', 'a@x', 1), (2, 'b', 'b@x', 2), (3, 'c', 'c@x', 3)")
    r = s.execute("UPDATE users SET id = id + 1")
    assert r.rowcount == 3
    assert rows(s, "SELECT id, name FROM users ORDER BY id") == [(2, "a"), (3, "b"), (4, "c")]
    s.execute("UPDATE users SET email = CASE WHEN id = 2 THEN 'b@x' WHEN id = 3 THEN 'a@x' ELSE email END")
    assert rows(s, "SELECT id FROM users WHERE email = 'a@x'") == [(3,)]
    with pytest.raises(IntegrityError, match="users_pkey"):
        s.execute("UPDATE users SET id = 4 WHERE id = 2")
    assert rows(s, "CHECK DATABASE") == []


def test_update_set_references_old_values_and_returning(s):
    s.execute("INSERT INTO users VALUES (1, 'a', NULL, 10), (2, 'b', NULL, 20)")
    r = s.execute("UPDATE users SET age = age * 2, name = name || '!' WHERE age > ? RETURNING id, age, name", (5,))
    assert sorted(r.fetchall()) == [(1, 20, "a!"), (2, 40, "b!")]
    assert r.rowcount == 2
    assert [c.name for c in r.columns] == ["id", "age", "name"]


def test_delete_with_where_and_returning(s):
    s.execute("INSERT INTO users VALUES (1, 'a', 'a', 1), (2, 'b', 'b', 2), (3, 'c', 'c', 3)")
    r = s.execute("DELETE FROM users WHERE id IN (1, 3) RETURNING name")
    assert sorted(r.fetchall()) == [("a",), ("c",)]
    assert rows(s, "SELECT id FROM users") == [(2,)]
    assert s.execute("DELETE FROM users").rowcount == 1
    assert rows(s, "CHECK DATABASE") == []


def test_truncate(s):
    s.execute("INSERT INTO users VALUES (1, 'a', 'a', 1), (2, 'b', 'b', 2)")
    s.execute("TRUNCATE TABLE users")
    assert rows(s, "SELECT count(*) FROM users") == [(0,)]
    s.execute("INSERT INTO users VALUES (1, 'a', 'a', 1)")  # index entries are gone too
    assert rows(s, "SELECT name FROM users WHERE email = 'a'") == [("a",)]


def test_on_conflict_do_nothing_and_do_update(s):
    s.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INT, u INT UNIQUE)")
    s.execute("INSERT INTO kv VALUES ('a', 1, 1)")
    assert s.execute("INSERT INTO kv VALUES ('a', 2, 2) ON CONFLICT DO NOTHING").rowcount == 0
    assert s.execute("INSERT INTO kv VALUES ('b', 2, 1) ON CONFLICT DO NOTHING").rowcount == 0
    with pytest.raises(IntegrityError, match="kv_u_key"):
        s.execute("INSERT INTO kv VALUES ('b', 2, 1) ON CONFLICT (k) DO NOTHING")
    r = s.execute("INSERT INTO kv VALUES ('a', 5, 9) ON CONFLICT (k) DO UPDATE SET v = kv.v + excluded.v RETURNING k, v, u")
    assert r.fetchall() == [("a", 6, 1)]
    s.execute("INSERT INTO kv VALUES ('z', 0, 1) ON CONFLICT (u) DO UPDATE SET v = 100 WHERE kv.v > 1000")
    assert rows(s, "SELECT * FROM kv") == [("a", 6, 1)]
    with pytest.raises(ProgrammingError, match="no unique or exclusion constraint"):
        s.execute("INSERT INTO kv VALUES ('a', 1, 1) ON CONFLICT (v) DO NOTHING")


def test_upsert_and_replace(s):
    s.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INT, w INT DEFAULT 5, u INT UNIQUE)")
    s.execute("UPSERT INTO kv (k, v) VALUES ('a', 1), ('b', 2)")
    s.execute("UPDATE kv SET w = 9 WHERE k = 'a'")
    r = s.execute("UPSERT INTO kv (k, v) VALUES ('a', 10)")
    assert r.rowcount == 1 and r.kind == "UPSERT"
    assert rows(s, "SELECT * FROM kv ORDER BY k") == [("a", 10, 9, None), ("b", 2, 5, None)]
    s.execute("UPDATE kv SET u = 1 WHERE k = 'b'")
    # REPLACE removes every row conflicting on any unique constraint, then inserts
    s.execute("REPLACE INTO kv VALUES ('a', 0, 0, 1)")
    assert rows(s, "SELECT * FROM kv ORDER BY k") == [("a", 0, 0, 1)]
    s.execute("INSERT OR REPLACE INTO kv VALUES ('c', 3, 3, 1)")
    s.execute("INSERT OR IGNORE INTO kv VALUES ('c', 4, 4, 2)")
    assert rows(s, "SELECT * FROM kv ORDER BY k") == [("c", 3, 3, 1)]
    assert rows(s, "CHECK DATABASE") == []


def test_parameters(s):
    s.execute("INSERT INTO users VALUES (?, ?, ?, ?)", (1, "a", None, 3))
    assert rows(s, "SELECT name FROM users WHERE id = ? AND age = ?", [1, 3]) == [("a",)]
    with pytest.raises(ProgrammingError, match="1 parameter"):
        s.execute("SELECT * FROM users WHERE id = ?", (1, 2))
    r = s.executemany("INSERT INTO users (id, name) VALUES (?, ?)", [(i, f"n{i}") for i in range(10, 20)])
    assert r.rowcount == 10
    with pytest.raises(IntegrityError):
        s.executemany("INSERT INTO users (id, name) VALUES (?, ?)", [(30, "x"), (10, "dup")])
    assert rows(s, "SELECT count(*) FROM users WHERE id = 30") == [(0,)]


def test_float_decimal_date_columns_roundtrip(s):
    s.execute("CREATE TABLE m (id INT PRIMARY KEY, f FLOAT, d DECIMAL(10,2), dt DATE, ts TIMESTAMP, b BOOLEAN, by BYTES)")
    s.execute("INSERT INTO m VALUES (1, 2, 3.5, '2024-01-31', '2024-01-31 12:00:00', TRUE, ?)", (b"\x00\x01",))
    import datetime
    from decimal import Decimal

    assert rows(s, "SELECT * FROM m") == [
        (1, 2.0, Decimal("3.50"), datetime.date(2024, 1, 31), datetime.datetime(2024, 1, 31, 12), True, b"\x00\x01")
    ]
    assert rows(s, "SELECT id FROM m WHERE dt = '2024-01-31'") == [(1,)]


def test_auto_ids_follow_sqlite_within_one_transaction(s):
    s.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    lite = sqlite3.connect(":memory:", isolation_level=None)
    lite.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    script = [
        "BEGIN",
        "INSERT INTO a (v) VALUES ('a')",
        "INSERT INTO a (v) VALUES ('b')",  # another statement text, same table
        "INSERT INTO a (v) VALUES ('a')",
        "UPDATE a SET id = 10 WHERE id = 3",
        "INSERT INTO a (v) VALUES ('a')",
        "DELETE FROM a WHERE id = 11",
        "INSERT INTO a (v) VALUES ('b')",
        "COMMIT",
    ]
    for sql in script:
        s.execute(sql)
        lite.execute(sql)
    assert rows(s, "SELECT * FROM a ORDER BY id") == lite.execute("SELECT * FROM a ORDER BY id").fetchall()


def test_insert_with_cte_and_unsupported_dml_forms(s):
    from sqlkv.errors import NotSupportedError

    s.execute("WITH x AS (SELECT 7 AS id, 'w' AS name) INSERT INTO users (id, name) SELECT id, name FROM x")
    assert rows(s, "SELECT id, name FROM users") == [(7, "w")]
    with pytest.raises(NotSupportedError, match="LIMIT"):
        s.execute("DELETE FROM users WHERE id = 7 LIMIT 1")
    # UPDATE ... FROM is supported now (tests/statements): each target row is updated once
    assert s.execute("UPDATE users SET name = 'x' FROM users AS u2").rowcount == 1
    assert rows(s, "SELECT id, name FROM users") == [(7, "x")]


def test_with_before_update_or_delete_is_refused_not_dropped(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1), (2)")
    for sql in ("WITH x AS (SELECT 1 AS a) DELETE FROM t WHERE a IN (SELECT a FROM x)",
                "WITH x AS (SELECT 1 AS a) UPDATE t SET a = 5 WHERE a IN (SELECT a FROM x)"):
        with pytest.raises(NotSupportedError, match="WITH before UPDATE/DELETE"):
            s.execute(sql)
    assert rows(s, "SELECT a FROM t ORDER BY a") == [(1,), (2,)]


def test_update_casts_what_it_assigns_and_checks_the_whole_row(s):
    """UPDATE casts only the columns it sets (the others are the stored row's, cast when
    written), yet NOT NULL and CHECK still see the whole new row."""
    s.execute("CREATE TABLE u (id INT PRIMARY KEY, code VARCHAR(3) NOT NULL, n NUMERIC(6, 2), "
              "q SMALLINT, CHECK (q IS NULL OR q < 100 OR code = 'big'))")
    s.execute("INSERT INTO u VALUES (1, 'abc', 1.5, 7), (2, 'big', 2, 200)")
    s.execute("UPDATE u SET n = 3 WHERE id = 1")
    s.execute("UPDATE u SET q = 150 WHERE id = 2")  # CHECK passes through the unassigned code
    assert rows(s, "SELECT id, code, n, q FROM u ORDER BY id") == [(1, "abc", 3, 7), (2, "big", 2, 150)]
    assert type(rows(s, "SELECT n FROM u WHERE id = 1")[0][0]).__name__ == "Decimal"
    with pytest.raises(DataError):
        s.execute("UPDATE u SET code = 'abcd' WHERE id = 1")  # the assigned value's width
    with pytest.raises(DataError):
        s.execute("UPDATE u SET q = 40000 WHERE id = 1")  # SMALLINT's range
    with pytest.raises(IntegrityError, match="check constraint"):
        s.execute("UPDATE u SET q = 150 WHERE id = 1")  # code is 'abc': the CHECK reads it
    with pytest.raises(IntegrityError, match="not-null"):
        s.execute("UPDATE u SET code = NULL WHERE id = 2")
    assert rows(s, "SELECT id, code, n, q FROM u ORDER BY id") == [(1, "abc", 3, 7), (2, "big", 2, 150)]
