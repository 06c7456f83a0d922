"""GROUP BY ROLLUP / CUBE / GROUPING SETS with grouping(), and SELECT DISTINCT ON.

Expected results are PostgreSQL's, computed by hand; ROLLUP is also checked against the
UNION ALL of plain GROUP BYs it stands for, run on sqlite3.
"""

from __future__ import annotations

import pytest

from sqlkv.errors import ProgrammingError
from tests.query.oracle import Pair, norm_rows
from tests.statements.support import rows, s  # noqa: F401

DATA = "INSERT INTO t VALUES (1, 'x', 1, 10), (2, 'x', 2, 20), (3, 'y', 1, 30), (4, 'y', 1, 40)"


@pytest.fixture
def t(s):
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, a TEXT, b INT, v INT)")
    s.execute(DATA)
    return s


def test_rollup_equals_the_union_of_its_group_bys():
    p = Pair()
    p.both("CREATE TABLE t (k INT PRIMARY KEY, a TEXT, b INT, v INT)")
    p.both(DATA)
    p.both("INSERT INTO t VALUES (5, NULL, NULL, 7), (6, 'z', NULL, 8)")
    got = norm_rows(p.ours("SELECT a, b, sum(v), count(*) FROM t GROUP BY ROLLUP (a, b)"), False)
    want = norm_rows(p.lite.execute(
        "SELECT a, b, sum(v), count(*) FROM t GROUP BY a, b UNION ALL "
        "SELECT a, NULL, sum(v), count(*) FROM t GROUP BY a UNION ALL "
        "SELECT NULL, NULL, sum(v), count(*) FROM t").fetchall(), False)
    assert got == want


def test_cube_and_grouping_sets(t):
    assert rows(t, "SELECT a, b, sum(v) FROM t GROUP BY CUBE (a, b) ORDER BY a, b") == [
        (None, None, 100), (None, 1, 80), (None, 2, 20), ("x", None, 30), ("x", 1, 10), ("x", 2, 20),
        ("y", None, 70), ("y", 1, 70)]
    assert rows(t, "SELECT a, b, sum(v) FROM t GROUP BY GROUPING SETS ((a), (b), ()) ORDER BY a, b") == [
        (None, None, 100), (None, 1, 80), (None, 2, 20), ("x", None, 30), ("y", None, 70)]
    assert rows(t, "SELECT a, b, sum(v) FROM t GROUP BY a, ROLLUP (b) ORDER BY a, b") == [
        ("x", None, 30), ("x", 1, 10), ("x", 2, 20), ("y", None, 70), ("y", 1, 70)]
    assert rows(t, "SELECT a, sum(v) FROM t GROUP BY ROLLUP (a) HAVING sum(v) > 40 ORDER BY 1") == \
        [(None, 100), ("y", 70)]


def test_empty_input_still_has_the_grand_total(t):
    assert rows(t, "SELECT a, sum(v), count(*) FROM t WHERE k > 100 GROUP BY ROLLUP (a)") == [(None, None, 0)]


def test_grouping_function(t):
    assert rows(t, "SELECT a, b, grouping(a), grouping(a, b), sum(v) FROM t GROUP BY ROLLUP (a, b) "
                   "ORDER BY 4, 1, 2") == [
        ("x", 1, 0, 0, 10), ("x", 2, 0, 0, 20), ("y", 1, 0, 0, 70),
        ("x", None, 0, 1, 30), ("y", None, 0, 1, 70), (None, None, 1, 3, 100)]
    assert rows(t, "SELECT a, grouping(a) FROM t GROUP BY a ORDER BY a") == [("x", 0), ("y", 0)]
    with pytest.raises(ProgrammingError, match="arguments to GROUPING must be grouping expressions"):
        rows(t, "SELECT a, grouping(v) FROM t GROUP BY a")


@pytest.fixture
def e(s):
    s.execute("CREATE TABLE e (k INT PRIMARY KEY, dept TEXT, name TEXT, sal INT)")
    s.execute("INSERT INTO e VALUES (1, 'a', 'ann', 10), (2, 'a', 'bob', 30), (3, 'b', 'cy', 20), "
              "(4, 'b', 'di', 5), (5, NULL, 'ed', 1)")
    return s


def test_distinct_on_keeps_the_first_row_of_each_group(e):
    assert rows(e, "SELECT DISTINCT ON (dept) dept, name FROM e ORDER BY dept, sal DESC") == \
        [(None, "ed"), ("a", "bob"), ("b", "cy")]
    assert rows(e, "SELECT DISTINCT ON (dept) name FROM e ORDER BY dept, sal") == [("ed",), ("ann",), ("di",)]
    assert rows(e, "SELECT DISTINCT ON (1) dept, name, sal FROM e ORDER BY 1, 3 DESC LIMIT 2") == \
        [(None, "ed", 1), ("a", "bob", 30)]
    assert rows(e, "SELECT DISTINCT ON (dept) dept, name FROM e ORDER BY dept DESC, sal DESC") == \
        [("b", "cy"), ("a", "bob"), (None, "ed")]
    assert sorted(rows(e, "SELECT DISTINCT ON (dept) dept FROM e"), key=str) == [("a",), ("b",), (None,)]
    assert rows(e, "SELECT DISTINCT ON (sal > 9, dept) dept, sal FROM e ORDER BY sal > 9, dept, sal") == \
        [(None, 1), ("b", 5), ("a", 10), ("b", 20)]


def test_distinct_on_must_lead_order_by(e):
    with pytest.raises(ProgrammingError, match="must match initial ORDER BY"):
        rows(e, "SELECT DISTINCT ON (dept) dept, name FROM e ORDER BY sal")
