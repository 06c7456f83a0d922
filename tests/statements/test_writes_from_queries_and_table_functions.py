"""CREATE TABLE AS, INSERT ... SELECT with defaults, UPDATE ... FROM, DELETE ... USING,
standalone VALUES, generate_series and LATERAL.

sqlite3 is the oracle for VALUES, UPDATE ... FROM and INSERT ... SELECT; the others are
PostgreSQL semantics with hand-computed expectations.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from tests.query.oracle import Pair
from tests.statements.support import rows, s  # noqa: F401


@pytest.fixture
def pair():
    p = Pair()
    p.both("CREATE TABLE t (k INT PRIMARY KEY, v INT, note TEXT DEFAULT 'none')")
    p.both("CREATE TABLE u (k INT PRIMARY KEY, w INT)")
    p.both("INSERT INTO t (k, v) VALUES (1, 10), (2, 20), (3, 30)")
    p.both("INSERT INTO u VALUES (1, 100), (2, 200), (4, 400)")
    return p


@pytest.mark.parametrize("sql", [
    "VALUES (1, 'a'), (2, 'b')",
    "SELECT * FROM (VALUES (1), (2)) AS v UNION VALUES (3)",
])
def test_standalone_values_matches_sqlite(pair, sql):
    pair.check(sql)


def test_values_order_by_and_limit(s):
    assert rows(s, "VALUES (1, 'a'), (2, 'b') ORDER BY 1 DESC") == [(2, "b"), (1, "a")]
    assert rows(s, "VALUES (1, 'a'), (2, 'b'), (3, 'c') ORDER BY column2 DESC LIMIT 2 OFFSET 1") == [(2, "b"), (1, "a")]


def test_values_rows_must_have_one_width(s):
    with pytest.raises(ProgrammingError, match="same length"):
        rows(s, "VALUES (1, 2), (3)")
    with pytest.raises(ProgrammingError, match="at least one value"):
        rows(s, "VALUES ()")


def test_insert_select_fills_defaults(pair):
    pair.both("INSERT INTO t (k, v) SELECT k + 10, w FROM u WHERE w > 150")
    pair.check("SELECT * FROM t ORDER BY k")


@pytest.mark.parametrize("stmt", [
    "UPDATE t SET v = u.w + t.v FROM u WHERE u.k = t.k",
    "UPDATE t SET v = x.w, note = 'x' FROM u AS x WHERE x.k = t.k AND x.w > 150",
    "UPDATE t SET v = 0 FROM u AS x, u AS y WHERE x.k = t.k AND y.k = 4",
])
def test_update_from_matches_sqlite(pair, stmt):
    pair.both(stmt)
    pair.check("SELECT * FROM t ORDER BY k")


def test_update_from_with_several_matches_updates_each_row_once(s):
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    s.execute("CREATE TABLE u (k INT PRIMARY KEY, w INT)")
    s.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    s.execute("INSERT INTO u VALUES (1, 5), (2, 5), (3, 5)")
    r = s.execute("UPDATE t SET v = t.v + u.w FROM u WHERE u.w = 5")
    assert r.rowcount == 2
    assert rows(s, "SELECT * FROM t ORDER BY k") == [(1, 15), (2, 25)]


def test_returning_sees_the_from_tables(s):
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    s.execute("CREATE TABLE u (k INT PRIMARY KEY, w INT)")
    s.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    s.execute("INSERT INTO u VALUES (1, 100), (2, 200)")
    assert sorted(rows(s, "UPDATE t SET v = u.w + 1 FROM u WHERE u.k = t.k RETURNING t.k, t.v, u.w, u.*")) == [
        (1, 101, 100, 1, 100), (2, 201, 200, 2, 200)]
    assert rows(s, "DELETE FROM t AS z USING u WHERE u.k = z.k AND u.w > 150 RETURNING z.*, u.w") == [(2, 201, 200)]
    with pytest.raises(ProgrammingError, match='missing FROM-clause entry for table "x"'):
        s.execute("UPDATE t SET v = 1 RETURNING x.*")
    assert rows(s, "SELECT * FROM t") == [(1, 101)]


def test_delete_using(s):
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    s.execute("CREATE TABLE u (k INT PRIMARY KEY, w INT)")
    s.execute("INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)")
    s.execute("INSERT INTO u VALUES (1, 100), (2, 200), (4, 400)")
    assert s.execute("DELETE FROM t USING u WHERE u.k = t.k AND u.w > 150").rowcount == 1
    assert rows(s, "SELECT k FROM t ORDER BY k") == [(1,), (3,)]
    assert rows(s, "DELETE FROM t AS z USING u, u AS u2 WHERE u.k = z.k AND u2.k > 0 RETURNING z.k") == [(1,)]
    assert rows(s, "SELECT k FROM t") == [(3,)]
    with pytest.raises(ProgrammingError, match='table name "t" specified more than once'):
        s.execute("DELETE FROM t USING t WHERE t.k = 3")
    with pytest.raises(ProgrammingError, match='column "u.nope" does not exist'):
        s.execute("UPDATE t SET v = u.nope FROM u")


def test_create_table_as(s):
    s.execute("CREATE TABLE a (k INT PRIMARY KEY, x INT, d DECIMAL(5,2), s VARCHAR(5))")
    s.execute("INSERT INTO a VALUES (1, 10, 1.5, 'a'), (2, 20, 2.25, 'b'), (3, NULL, NULL, NULL)")
    s.execute("CREATE TABLE c AS SELECT k, x * 2 AS y, d, s FROM a WHERE k < 3")
    assert rows(s, "SELECT * FROM c ORDER BY k") == [(1, 20, Decimal("1.50"), "a"), (2, 40, Decimal("2.25"), "b")]
    types = rows(s, "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_name = 'c' AND NOT is_hidden")
    assert types == [("k", "INT"), ("y", "INT"), ("d", "DECIMAL(5,2)"), ("s", "VARCHAR(5)")]
    s.execute("CREATE TABLE c2 (p, q) AS SELECT count(*), max(s) FROM a")
    assert rows(s, "SELECT p, q FROM c2") == [(3, "b")]
    assert rows(s, "SELECT data_type FROM information_schema.columns WHERE table_name = 'c2' AND NOT is_hidden") \
        == [("INT",), ("TEXT",)]
    s.execute("CREATE TABLE c3 AS SELECT 1 AS a, NULL AS b WITH NO DATA")
    assert rows(s, "SELECT * FROM c3") == []
    s.execute("CREATE TABLE c4 AS VALUES (1, 'x'), (2, 'y')")
    assert rows(s, "SELECT column1, column2 FROM c4 ORDER BY 1") == [(1, "x"), (2, "y")]
    s.execute("CREATE TABLE IF NOT EXISTS c AS SELECT 1")  # exists: nothing happens
    assert rows(s, "SELECT count(*) FROM c") == [(2,)]


@pytest.mark.parametrize("sql, error, text", [
    ("CREATE TABLE c AS SELECT k, k FROM a", ProgrammingError, 'column "k" specified more than once'),
    ("CREATE TABLE c (x, y, z) AS SELECT 1, 2", ProgrammingError, "specifies 3 column names"),
    ("CREATE TEMP TABLE c AS SELECT 1", NotSupportedError, "TEMP"),
    ("CREATE TABLE a AS SELECT 1", ProgrammingError, 'relation "a" already exists'),
    ("CREATE TABLE c AS SELECT nope FROM a", ProgrammingError, 'column "nope" does not exist'),
])
def test_create_table_as_errors_create_nothing(s, sql, error, text):
    s.execute("CREATE TABLE a (k INT PRIMARY KEY)")
    with pytest.raises(error, match=text):
        s.execute(sql)
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'c'") == [(0,)]


def test_generate_series_integers(s):
    assert rows(s, "SELECT * FROM generate_series(1, 3)") == [(1,), (2,), (3,)]
    assert rows(s, "SELECT * FROM generate_series(1, 10, 4) AS g") == [(1,), (5,), (9,)]
    assert rows(s, "SELECT n FROM generate_series(10, 1, -3) AS g(n)") == [(10,), (7,), (4,), (1,)]
    assert rows(s, "SELECT g FROM generate_series(1, 3) g WHERE g > 1") == [(2,), (3,)]
    assert rows(s, "SELECT * FROM generate_series(3, 1)") == []
    assert rows(s, "SELECT * FROM generate_series(1, NULL)") == []
    assert rows(s, "SELECT count(*), sum(g) FROM generate_series(1, 100000) g") == [(100000, 5000050000)]
    assert rows(s, "SELECT * FROM generate_series(?, ?)", (2, 3)) == [(2,), (3,)]


def test_generate_series_with_ordinality(a):
    # PostgreSQL: a second column numbering the rows from 1 (it was silently dropped)
    assert rows(a, "SELECT * FROM generate_series(10, 30, 10) WITH ORDINALITY") == [(10, 1), (20, 2), (30, 3)]
    assert rows(a, "SELECT v, i FROM generate_series(10, 30, 10) WITH ORDINALITY AS g(v, i) WHERE i > 1") == \
        [(20, 2), (30, 3)]
    assert rows(a, "SELECT k, s.* FROM a, LATERAL generate_series(1, k) WITH ORDINALITY s WHERE k > 1 "
                   "ORDER BY 1, 3") == [(2, 1, 1), (2, 2, 2), (3, 1, 1), (3, 2, 2), (3, 3, 3)]
    assert rows(a, "SELECT g, ordinality FROM generate_series(5, 6) WITH ORDINALITY AS g") == [(5, 1), (6, 2)]


def test_generate_series_timestamps(s):
    ts = dt.datetime
    # months are added step by step: Jan 31 -> Feb 29 -> Mar 29 (PostgreSQL)
    assert rows(s, "SELECT * FROM generate_series(TIMESTAMP '2024-01-31', TIMESTAMP '2024-05-01', "
                   "INTERVAL '1 month')") == [(ts(2024, 1, 31),), (ts(2024, 2, 29),), (ts(2024, 3, 29),), (ts(2024, 4, 29),)]
    assert rows(s, "SELECT * FROM generate_series('2024-01-01', '2024-01-02', INTERVAL '12 hours')") == \
        [(ts(2024, 1, 1),), (ts(2024, 1, 1, 12),), (ts(2024, 1, 2),)]
    assert rows(s, "SELECT * FROM generate_series(DATE '2024-01-03', DATE '2024-01-01', INTERVAL '-1 day')") == \
        [(ts(2024, 1, 3),), (ts(2024, 1, 2),), (ts(2024, 1, 1),)]


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT * FROM generate_series(1, 3, 0)", DataError, "step size cannot equal zero"),
    ("SELECT * FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02', INTERVAL '0 days')",
     DataError, "step size cannot equal zero"),
    ("SELECT * FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-02')", ProgrammingError,
     "needs an INTERVAL step"),
    ("SELECT * FROM generate_series(1.5, 3)", ProgrammingError, "does not take FLOAT"),
    ("SELECT * FROM generate_series(1)", ProgrammingError, "syntax error"),
    ("SELECT * FROM unnest(1)", ProgrammingError, "must be an array, not type INT"),
    ("SELECT generate_series(1, 3)", NotSupportedError, "in FROM only"),
])
def test_generate_series_errors(s, sql, error, text):
    with pytest.raises(error, match=text):
        rows(s, sql)


@pytest.fixture
def a(s):
    s.execute("CREATE TABLE a (k INT PRIMARY KEY, x INT)")
    s.execute("INSERT INTO a VALUES (1, 10), (2, 20), (3, NULL)")
    return s


def test_generate_series_reads_preceding_from_items(a):
    want = [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3)]
    assert rows(a, "SELECT k, g FROM a, generate_series(1, a.k) g ORDER BY k, g") == want
    assert rows(a, "SELECT k, g FROM a CROSS JOIN LATERAL generate_series(1, k) AS g ORDER BY 1, 2") == want
    assert rows(a, "SELECT k, g FROM a LEFT JOIN generate_series(1, x / 10) AS g ON TRUE ORDER BY 1, 2") == \
        [(1, 1), (2, 1), (2, 2), (3, None)]
    assert rows(a, "SELECT (SELECT count(*) FROM generate_series(1, a.k)) FROM a ORDER BY k") == [(1,), (2,), (3,)]


def test_lateral_subqueries(a):
    assert rows(a, "SELECT * FROM a, LATERAL (SELECT a.k * 2 AS d) l ORDER BY k") == \
        [(1, 10, 2), (2, 20, 4), (3, None, 6)]
    assert rows(a, "SELECT a.k, l.x FROM a LEFT JOIN LATERAL (SELECT x FROM a AS b WHERE b.k = a.k + 1) l "
                   "ON TRUE ORDER BY a.k") == [(1, 20), (2, None), (3, None)]
    assert rows(a, "SELECT a.k, l.x FROM a JOIN LATERAL (SELECT x FROM a AS b WHERE b.k > a.k) l ON l.x > 15 "
                   "ORDER BY a.k") == [(1, 20)]
    # top-1 per row, the classic LATERAL use
    assert rows(a, "SELECT a.k, t.k FROM a, LATERAL (SELECT b.k FROM a AS b WHERE b.k <> a.k "
                   "ORDER BY b.k DESC LIMIT 1) t ORDER BY a.k") == [(1, 3), (2, 3), (3, 2)]
    plan = "\n".join(r[0] for r in rows(a, "EXPLAIN SELECT * FROM a, LATERAL (SELECT a.k * 2 AS d) l"))
    assert "lateral join (inner)" in plan
    with pytest.raises(ProgrammingError, match="INNER, CROSS or LEFT"):
        rows(a, "SELECT * FROM a RIGHT JOIN LATERAL (SELECT a.k) l ON TRUE")
    with pytest.raises(ProgrammingError, match='column "a.k" does not exist'):
        rows(a, "SELECT * FROM (SELECT a.k) l, a")  # without LATERAL, a later item is not visible
