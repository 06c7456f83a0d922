"""b'..' bytes literals (CockroachDB) and INDEX / UNIQUE INDEX declared inside CREATE TABLE."""

from __future__ import annotations

import pytest

from sqlkv.errors import IntegrityError, ProgrammingError
from tests.statements.support import rows, s  # noqa: F401


def test_bytes_literals(s):
    assert rows(s, r"SELECT b'abc', b'', B'\x41\x00z', b'caf\xc3\xa9', length(b'abc'), b'a' || b'b', b'é'") == [
        (b"abc", b"", b"A\x00z", "café".encode(), 3, b"ab", "é".encode())]
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, b BYTES)")
    s.execute("INSERT INTO t VALUES (1, b'hi'), (2, b'it''s')")
    assert rows(s, "SELECT k FROM t WHERE b = b'hi'") == [(1,)]
    assert rows(s, "SELECT b FROM t WHERE k = 2") == [(b"it's",)]


@pytest.mark.parametrize("sql", [r"SELECT b'\xZZ'", r"SELECT b'\x4'"])
def test_bad_bytes_escape(s, sql):
    with pytest.raises(ProgrammingError, match="invalid bytes literal escape"):
        rows(s, sql)


def _indexes(s, table):
    return rows(s, "SELECT index_name, is_unique, column_names, storing_names, predicate "
                   f"FROM information_schema.indexes WHERE table_name = '{table}' AND NOT is_primary "
                   "ORDER BY index_id")


def test_indexes_declared_in_create_table(s):
    s.execute("CREATE TABLE ci (k INT PRIMARY KEY, v INT, w INT, INDEX (v), UNIQUE INDEX ux (v, w DESC), "
              "INDEX iw (w) STORING (v), INDEX pw (w) WHERE w > 0)")
    got = _indexes(s, "ci")
    assert [r[:2] for r in got] == [("ci_v_idx", False), ("ux", True), ("iw", False), ("pw", False)]
    assert "w" in got[1][2] and got[2][3] and "w > 0" in got[3][4]
    s.execute("INSERT INTO ci VALUES (1, 1, 1)")
    with pytest.raises(IntegrityError, match='unique constraint "ux"'):
        s.execute("INSERT INTO ci VALUES (2, 1, 1)")
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN SELECT k FROM ci WHERE v = 1"))
    assert "@ci_v_idx" in plan or "@ux" in plan
    assert rows(s, "SELECT k FROM ci WHERE v = 1") == [(1,)]


def test_create_table_with_a_bad_index_creates_nothing(s):
    with pytest.raises(ProgrammingError, match='column "nope"'):
        s.execute("CREATE TABLE ci2 (k INT PRIMARY KEY, INDEX (nope))")
    with pytest.raises(ProgrammingError, match="needs a column list"):
        s.execute("CREATE TABLE ci2 (k INT PRIMARY KEY, INDEX)")
    with pytest.raises(ProgrammingError, match='relation "ci2" does not exist'):
        rows(s, "SELECT * FROM ci2")


def test_create_table_if_not_exists_with_index(s):
    s.execute('CREATE TABLE IF NOT EXISTS "Q" (k INT PRIMARY KEY, v INT, INDEX (v))')
    s.execute('CREATE TABLE IF NOT EXISTS "Q" (k INT PRIMARY KEY, v INT, INDEX (v))')
    assert [r[0] for r in _indexes(s, "Q")] == ["Q_v_idx"]


@pytest.mark.parametrize("sql, text", [
    ("UPDATE t SET k = 1 AS OF SYSTEM TIME '-5s'", "AS OF SYSTEM TIME is only allowed on SELECT"),
    ("SET search_path = public", "one session setting, the time zone"),
    ("SET TIME ZONE INTERVAL '1' HOUR", "INTERVAL"),
    ("CREATE TEMP TABLE x (k INT)", "TEMP"),
])
def test_refused_clearly(s, sql, text):
    from sqlkv.errors import NotSupportedError

    s.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    with pytest.raises(NotSupportedError, match=text):
        s.execute(sql)
