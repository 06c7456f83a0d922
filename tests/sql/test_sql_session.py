"""The Session/Result/Database API used by the driver, the CLI and the slt runner."""

from __future__ import annotations

import pytest

from sqlkv.errors import InterfaceError, OperationalError, ProgrammingError
from sqlkv.sql import Database, Session
from sqlkv.sql import plancache as plancache_module
from tests.sql.core_support import rows


def test_result_shape():
    s = Session(Database.open())
    r = s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    assert (r.kind, r.columns, r.rowcount) == ("CREATE TABLE", None, -1)
    r = s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    assert (r.kind, r.columns, r.rowcount, r.lastrowid) == ("INSERT", None, 2, 2)
    r = s.execute("SELECT a, b AS bee FROM t")
    assert r.kind == "SELECT" and [c.name for c in r.columns] == ["a", "bee"]
    assert list(r) == [(1, "x"), (2, "y")]
    assert r.fetchall() == []  # consumed


def test_execute_script_and_multiple_statement_error():
    s = Session(Database.open())
    results = list(s.execute_script("CREATE TABLE t (a INT PRIMARY KEY); INSERT INTO t VALUES (1); SELECT a FROM t;"))
    assert [r.kind for r in results] == ["CREATE TABLE", "INSERT", "SELECT"]
    assert results[-1].fetchall() == [(1,)]
    with pytest.raises(ProgrammingError, match="several statements"):
        s.execute("SELECT 1; SELECT 2")


def test_database_shared_per_path(tmp_path):
    a = Database.open(str(tmp_path / "db"))
    b = Database.open(str(tmp_path / "db"))
    assert a is b
    Session(a).execute("CREATE TABLE t (x INT)")
    a.close()
    assert rows(Session(b), "SELECT * FROM t") == []  # still open: one reference left
    b.close()
    assert b.closed
    with pytest.raises(InterfaceError):
        Session(b).execute("SELECT 1")
    assert Database.open(":memory:") is not Database.open(":memory:")


def test_cancel_stops_a_running_scan():
    s = Session(Database.open())
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(3000)])
    it = iter(s.execute("SELECT a FROM t"))
    assert next(it) == (0,)
    s.cancel()
    with pytest.raises(OperationalError, match="cancelled"):
        for _ in it:
            pass
    assert rows(s, "SELECT count(*) FROM t") == [(3000,)]  # the session stays usable


def test_plan_cache_invalidated_by_schema_change():
    s = Session(Database.open())
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b INT)")
    s.execute("INSERT INTO t VALUES (1, 10)")
    q = "SELECT * FROM t WHERE b = 10"
    assert rows(s, q) == [(1, 10)]
    other = Session(s.db)
    other.execute("ALTER TABLE t ADD COLUMN c TEXT")
    other.execute("CREATE INDEX t_b ON t (b)")
    assert rows(s, q) == [(1, 10, None)]
    assert "t_b" in s.execute("EXPLAIN " + q).fetchall()[-1][0]


def test_closed_session():
    s = Session(Database.open())
    s.close()
    with pytest.raises(InterfaceError):
        s.execute("SELECT 1")


def test_autocommit_select_is_not_a_transaction():
    s = Session(Database.open())
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    r = s.execute("SELECT * FROM t")
    assert not s.in_transaction
    r.fetchall()
    s.execute("BEGIN")
    s.execute("INSERT INTO t VALUES (1)")  # BEGIN after a SELECT gets a writable transaction
    s.execute("COMMIT")
    assert rows(s, "SELECT * FROM t") == [(1,)]


def test_interleaved_results_of_the_same_text_keep_their_parameters():
    s = Session(Database.open(), autocommit=False)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, g INT)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i % 2) for i in range(10)])
    s.commit()  # plans are cached only outside schema-changing transactions
    q = "SELECT a FROM t WHERE g = ? ORDER BY a"
    first = iter(s.execute(q, (0,)))
    assert next(first) == (0,)
    second = s.execute(q, (1,)).fetchall()
    assert [r[0] for r in first] == [2, 4, 6, 8]
    assert second == [(1,), (3,), (5,), (7,), (9,)]
    s.execute(q, (0,)).close()  # never iterated: the cached plan is released again
    assert s.plans.get(q).busy is False


def test_executemany_is_one_statement_inside_a_transaction():
    from sqlkv.errors import IntegrityError

    s = Session(Database.open())
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("BEGIN")
    s.execute("INSERT INTO t VALUES (0)")
    with pytest.raises(IntegrityError):
        s.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (1,)])
    s.executemany("INSERT INTO t VALUES (?)", [(5,), (6,)])
    s.execute("COMMIT")
    assert rows(s, "SELECT a FROM t") == [(0,), (5,), (6,)]


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


def test_executemany_after_ddl_in_the_same_transaction_plans_once(monkeypatch):
    session = Session(Database.open(), autocommit=False)
    session.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    calls = []
    original = plancache_module.plan_statement

    def counting(stmt, catalog, env):
        calls.append(stmt.sql)
        return original(stmt, catalog, env)

    monkeypatch.setattr(plancache_module, "plan_statement", counting)
    session.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(50)])
    assert len(calls) == 1
    assert session.execute("SELECT count(*), sum(a) FROM t").fetchall() == [(50, sum(range(50)))]
    session.commit()
