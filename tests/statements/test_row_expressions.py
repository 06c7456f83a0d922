"""Row expressions: comparisons, IN lists, multi-column UPDATE SET; SET target qualifiers.

Row comparisons are checked against sqlite3 (3.15+ has row values with PostgreSQL's meaning);
the multi-column SET forms by hand (sqlite3 3.40 has them too, used as the oracle where it can).
"""

from __future__ import annotations

import pytest

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from tests.query.oracle import Pair
from tests.statements.support import rows, s  # noqa: F401


@pytest.fixture
def pair():
    p = Pair()
    p.both("CREATE TABLE a (k INT PRIMARY KEY, x INT, y INT)")
    p.both("INSERT INTO a VALUES (1, 10, 100), (2, 20, NULL), (3, NULL, 300), (4, 10, 100)")
    return p


@pytest.mark.parametrize("sql", [
    "SELECT (1, 2) = (1, 2), (1, 2) <> (1, 3), (1, NULL) < (2, 0), (NULL, 1) < (2, 0)",
    "SELECT (1, 2) <= (1, 2), (1, 2) > (1, 1), (1, 2, 3) >= (1, 2, 4), (1, NULL) = (1, 2), (1, NULL) <> (2, 2)",
    "SELECT k FROM a WHERE (x, y) = (10, 100) ORDER BY k",
    "SELECT k FROM a WHERE (k, x) IN ((1, 10), (2, 3), (3, NULL)) ORDER BY k",
    "SELECT k FROM a WHERE (k, x) NOT IN ((1, 10), (2, 3)) ORDER BY k",
    "SELECT k, (x, y) < (10, 200), (x, y) >= (20, 0), (x, y) IN ((10, 100)) FROM a ORDER BY k",
    "SELECT k FROM a WHERE (x, k) > (10, 1) ORDER BY k",
    "SELECT k, (k, x) IN (SELECT k, y / 10 FROM a), (x, y) NOT IN (SELECT x, y FROM a WHERE k > 1) FROM a ORDER BY k",
    "SELECT k FROM a AS o WHERE (x, y) IN (SELECT x, y FROM a AS i WHERE i.k <> o.k) ORDER BY k",
    "SELECT k, (x, 100) IN (SELECT x, y FROM a WHERE y IS NULL OR y > 0) FROM a ORDER BY k",
])
def test_row_comparisons_match_sqlite(pair, sql):
    pair.check(sql)


def test_row_equality_in_where_uses_the_primary_key(s):
    s.execute("CREATE TABLE a (k INT PRIMARY KEY, x INT)")
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN SELECT * FROM a WHERE (k, x) = (1, 10)"))
    assert "get a@a_pkey /Table/" in plan and "filter x = 10" in plan


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT (1, 2) = (1, 2, 3)", ProgrammingError, "unequal number of entries"),
    ("SELECT (1, 2) = 1", ProgrammingError, "cannot compare a row with a single value"),
    ("SELECT (1, 2) IN (SELECT 1, 2, 3)", ProgrammingError, "subquery has 3 columns, the row has 2"),
    ("SELECT (1, 2) = (SELECT 1, 2)", NotSupportedError, "comparing a row with a subquery"),
])
def test_row_comparison_errors(s, sql, error, text):
    with pytest.raises(error, match=text):
        rows(s, sql)


@pytest.fixture
def kv(s):
    s.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT, w DECIMAL(5,2) DEFAULT 9.5)")
    s.execute("INSERT INTO kv VALUES (1, 10, 1), (2, 20, 2)")
    return s


def test_update_set_row_of_values(kv):
    kv.execute("UPDATE kv SET (v, w) = (5, 1.5) WHERE k = 1")
    kv.execute("UPDATE kv SET (v) = (6) WHERE k = 2")
    assert [(k, v, str(w)) for k, v, w in rows(kv, "SELECT * FROM kv ORDER BY k")] == [(1, 5, "1.50"), (2, 6, "2.00")]
    kv.execute("UPDATE kv SET (w, v) = (DEFAULT, v + 1)")
    assert [(k, v, str(w)) for k, v, w in rows(kv, "SELECT * FROM kv ORDER BY k")] == [(1, 6, "9.50"), (2, 7, "9.50")]


def test_update_set_row_from_a_correlated_subquery(kv):
    kv.execute("CREATE TABLE src (k INT PRIMARY KEY, a INT, b DECIMAL)")
    kv.execute("INSERT INTO src VALUES (1, 100, 1.25)")
    kv.execute("UPDATE kv SET (v, w) = (SELECT a, b FROM src WHERE src.k = kv.k)")
    # no row for k = 2: both targets become NULL (PostgreSQL)
    assert [(k, v, w if w is None else str(w)) for k, v, w in rows(kv, "SELECT * FROM kv ORDER BY k")] == \
        [(1, 100, "1.25"), (2, None, None)]


@pytest.mark.parametrize("sql, error, text", [
    ("UPDATE kv SET (v, w) = (SELECT 1, 2, 3)", ProgrammingError, "2 targets, the subquery returns 3"),
    ("UPDATE kv SET (v, w) = (1, 2, 3)", ProgrammingError, r"number of values \(2 and 3\)"),
    ("UPDATE kv SET (v, w) = 1", ProgrammingError, "must be a sub-SELECT or ROW"),
    ("UPDATE kv SET (v, v) = (1, 2)", ProgrammingError, 'multiple assignments to same column "v"'),
    ("UPDATE kv SET (v, w) = (SELECT 1, 2 FROM kv)", DataError, "more than one row"),
    ("UPDATE kv SET k.v = 9", ProgrammingError, r'column "k.v" of relation "kv" does not exist'),
    ("UPDATE kv AS x SET y.v = 9", ProgrammingError, r'column "y.v" of relation "kv" does not exist'),
])
def test_update_set_errors_change_nothing(kv, sql, error, text):
    with pytest.raises(error, match=text):
        kv.execute(sql)
    assert rows(kv, "SELECT k, v FROM kv ORDER BY k") == [(1, 10), (2, 20)]


def test_update_set_qualified_by_the_table_or_its_alias(kv):
    kv.execute("UPDATE kv SET kv.v = 9 WHERE k = 1")
    kv.execute("UPDATE kv AS x SET x.v = 8 WHERE k = 2")
    assert rows(kv, "SELECT k, v FROM kv ORDER BY k") == [(1, 9), (2, 8)]
