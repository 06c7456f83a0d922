"""FULL/RIGHT JOIN ... USING and NATURAL FULL JOIN merge the shared column (issue 18).

PostgreSQL's rule: the merged column of a FULL join is COALESCE(left.k, right.k), of a RIGHT
join the right side's k. sqlite3 3.39+ follows it, so it is the oracle.
"""

from __future__ import annotations

import sqlite3

import pytest

from tests.query.oracle import Pair

if sqlite3.sqlite_version_info < (3, 39):
    pytest.skip("sqlite3 before 3.39 has no FULL JOIN to compare with", allow_module_level=True)


@pytest.fixture
def pair():
    p = Pair()
    p.both("CREATE TABLE a (k INT PRIMARY KEY, x INT)")
    p.both("CREATE TABLE b (k INT PRIMARY KEY, y INT)")
    p.both("CREATE TABLE c (k INT PRIMARY KEY, z INT)")
    p.both("INSERT INTO a VALUES (1, 10), (2, 20)")
    p.both("INSERT INTO b VALUES (2, 200), (3, 300)")
    p.both("INSERT INTO c VALUES (3, 3000), (4, 4000)")
    return p


@pytest.mark.parametrize("sql", [
    "SELECT * FROM a FULL JOIN b USING (k) ORDER BY k",
    "SELECT k FROM a FULL JOIN b USING (k) WHERE k = 3",
    "SELECT * FROM a NATURAL FULL JOIN b ORDER BY 1",
    "SELECT a.k, b.k, k FROM a FULL JOIN b USING (k) ORDER BY k",
    "SELECT * FROM a RIGHT JOIN b USING (k) ORDER BY k",
    "SELECT k, y FROM a RIGHT JOIN b USING (k) WHERE k > 2",
    "SELECT * FROM a FULL JOIN b USING (k) FULL JOIN c USING (k) ORDER BY k",
    "SELECT k, count(*) FROM a FULL JOIN b USING (k) GROUP BY k ORDER BY k",
    "SELECT k FROM a FULL JOIN b USING (k) GROUP BY k HAVING k >= 2 ORDER BY k DESC",
    "SELECT * FROM a LEFT JOIN b USING (k) ORDER BY k",
])
def test_merged_column_matches_sqlite(pair, sql):
    pair.check(sql)


def test_right_only_rows_survive_a_filter_on_the_merged_column(pair):
    # the wrong answer of issue 18: `k = 3` read a.k, NULL for b's right-only row
    assert pair.ours("SELECT k, y FROM a FULL JOIN b USING (k) WHERE k = 3") == [(3, 300)]
