"""Fixes from the interfaces review: error positions, read-only refusal, interleaved results,
DESC LIKE spans, SERIAL/TIMESTAMPTZ, executemany after DDL."""

from __future__ import annotations

import sqlite3

import pytest

from sqlkv.errors import OperationalError, ProgrammingError
from sqlkv.sql import session as session_module
from sqlkv.sql import Database, Session


@pytest.fixture
def session():
    db = Database.open(":memory:")
    s = Session(db)
    yield s
    s.close()
    db.close()


def _syntax_error(session, sql, params=()):
    with pytest.raises(ProgrammingError) as info:
        session.execute(sql, params)
    return info.value


def test_syntax_error_position_is_in_the_users_text_despite_placeholders(session):
    sql = "SELECT * FROM t WHERE a = ? AND b = ? AND"
    err = _syntax_error(session, sql, (1, 2))
    assert err.line == 1
    # sqlglot points at the last character of the offending token; "?" -> ":__pN" is undone
    assert err.col == sql.rindex("AND") + 3
    assert f"line 1, column {err.col}" in str(err)


def test_syntax_error_position_on_later_line_and_after_leading_space(session):
    sql = "  \nSELECT ?,\n  ? FROM"
    err = _syntax_error(session, sql, (1, 2))
    assert (err.line, err.col) == (3, len("  ? FROM"))


def test_syntax_error_position_inside_explain(session):
    sql = "EXPLAIN SELECT ? FROM"
    err = _syntax_error(session, sql, (1,))
    assert (err.line, err.col) == (1, len(sql))


def test_read_only_database_refuses_writes_when_executed(tmp_path):
    path = str(tmp_path / "db")
    db = Database.open(path)
    s = Session(db)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1)")
    s.close()
    db.close()
    db = Database.open(path, read_only=True)
    try:
        s = Session(db, autocommit=False)
        for sql in ("INSERT INTO t VALUES (2)", "UPDATE t SET a = 3", "DELETE FROM t",
                    "CREATE TABLE u (a INT)", "EXPLAIN ANALYZE DELETE FROM t"):
            with pytest.raises(OperationalError, match="database is read-only"):
                s.execute(sql)
        with pytest.raises(OperationalError, match="database is read-only"):
            s.executemany("INSERT INTO t VALUES (?)", [(5,)])
        assert s.execute("SELECT a FROM t").fetchall() == [(1,)]
        assert s.execute("EXPLAIN SELECT a FROM t").fetchall()
        s.commit()
        s.close()
    finally:
        db.close()


def test_executemany_after_ddl_in_the_same_transaction_plans_once(session, monkeypatch):
    session.autocommit = False
    session.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    calls = []
    original = session_module.plan_statement

    def counting(stmt, catalog, env):
        calls.append(stmt.sql)
        return original(stmt, catalog, env)

    monkeypatch.setattr(session_module, "plan_statement", counting)
    session.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(50)])
    assert len(calls) == 1
    assert session.execute("SELECT count(*), sum(a) FROM t").fetchall() == [(50, sum(range(50)))]
    session.commit()


def test_serial_primary_key_is_assigned_and_timestamptz_is_naive_utc(session):
    import datetime as dt

    session.execute("CREATE TABLE ev (id SERIAL PRIMARY KEY, at TIMESTAMPTZ, at2 TIMESTAMP WITH TIME ZONE)")
    session.execute("INSERT INTO ev (at, at2) VALUES ('2024-01-01 12:00:00+02:00', ?)",
                    (dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-1))),))
    res = session.execute("INSERT INTO ev (at) VALUES (NULL)")
    assert res.lastrowid == 2
    assert session.execute("SELECT id, at, at2 FROM ev ORDER BY id").fetchall() == [
        (1, dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 13)),
        (2, None, None),
    ]
    cols = session.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'ev'").fetchall()
    assert [c[0] for c in cols][:2] == ["INT", "TIMESTAMP"]


def test_serial_outside_the_primary_key_is_refused(session):
    from sqlkv.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match='SERIAL column "n"'):
        session.execute("CREATE TABLE t (id INT PRIMARY KEY, n SERIAL)")


def test_like_prefix_over_a_descending_index_matches_sqlite(session):
    words = ["a", "ab", "abc", "abd", "ab\x01", "ac", "b", "aa", "abz", "", "AB", "ab%"]
    lite = sqlite3.connect(":memory:")
    lite.execute("PRAGMA case_sensitive_like = ON")
    for db in (session, lite):
        db.execute("CREATE TABLE w (id INT PRIMARY KEY, k TEXT)")
        db.execute("CREATE INDEX w_k_desc ON w (k DESC)")
    for i, w in enumerate(words):
        session.execute("INSERT INTO w VALUES (?, ?)", (i, w))
        lite.execute("INSERT INTO w VALUES (?, ?)", (i, w))
    for pattern in ("ab%", "a%", "abc%", "b%", "%", "ab_"):
        q = f"SELECT id, k FROM w WHERE k LIKE '{pattern}' ORDER BY k DESC, id"
        assert session.execute(q).fetchall() == lite.execute(q).fetchall(), pattern


@pytest.mark.parametrize("sql", ["SELECT", "SELECT * FROM t GROUP BY", "select from t"])
def test_truncated_statements_are_syntax_errors(sql):
    from sqlkv.sql import Database, Session

    session = Session(Database.open(":memory:"))
    session.execute("CREATE TABLE t (a INT)")
    with pytest.raises(ProgrammingError, match="syntax error"):
        session.execute(sql)
