"""bool_and/bool_or/every, bit_and/bit_or/bit_xor, concat_agg, FILTER (WHERE ...), aggregate
ORDER BY, WITHIN GROUP ordered-set aggregates; array_agg of arrays refused (one-dimensional
arrays; array_agg itself: tests/statements/test_arrays.py; json_agg: test_jsonb.py).

FILTER is checked against sqlite3 (3.30+); the rest by hand, with PostgreSQL's results.
"""

from __future__ import annotations

import pytest

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from tests.query.oracle import Pair
from tests.statements.support import rows, s  # noqa: F401

DATA = "INSERT INTO a VALUES (1, 10, 'a', TRUE), (2, 20, 'b', FALSE), (3, NULL, 'c', NULL), (4, 20, NULL, TRUE)"


@pytest.fixture
def a(s):
    s.execute("CREATE TABLE a (k INT PRIMARY KEY, x INT, s TEXT, b BOOL)")
    s.execute(DATA)
    return s


@pytest.fixture
def pair():
    p = Pair()
    p.both("CREATE TABLE a (k INT PRIMARY KEY, x INT, s TEXT, b BOOL)")
    p.both(DATA)
    return p


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FILTER (WHERE x > 10), sum(x) FILTER (WHERE k < 4), count(x) FILTER (WHERE TRUE) FROM a",
    "SELECT x, count(*) FILTER (WHERE k > 1), max(s) FILTER (WHERE b) FROM a GROUP BY x ORDER BY x",
    "SELECT x FROM a GROUP BY x HAVING count(*) FILTER (WHERE k > 1) > 1",
    "SELECT count(DISTINCT x) FILTER (WHERE k < 4), avg(k) FILTER (WHERE x IS NULL) FROM a",
    "SELECT sum(k) FILTER (WHERE k > 100) FROM a",
])
def test_filter_matches_sqlite(pair, sql):
    pair.check(sql)


def test_boolean_and_bit_aggregates(a):
    assert rows(a, "SELECT bool_and(k > 0), bool_or(k > 1), every(k > 0), bit_and(k), bit_or(k), bit_xor(k) FROM a") \
        == [(True, True, True, 0, 7, 4)]
    assert rows(a, "SELECT bool_and(b), bool_or(b), every(b) FROM a WHERE k <> 2") == [(True, True, True)]
    assert rows(a, "SELECT bool_and(b), bool_or(NOT b) FROM a") == [(False, True)]
    assert rows(a, "SELECT bool_and(b), bit_or(x) FROM a WHERE k > 100") == [(None, None)]
    assert rows(a, "SELECT x, bit_and(k) FROM a GROUP BY x ORDER BY x") == [(None, 3), (10, 1), (20, 0)]


def test_concat_agg(a):
    assert rows(a, "SELECT concat_agg(s) FROM a") == [("abc",)]
    assert rows(a, "SELECT concat_agg(s ORDER BY k DESC) FROM a") == [("cba",)]
    assert rows(a, "SELECT concat_agg(CAST(s AS BYTES)) FROM a") == [(b"abc",)]


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT array_agg(ARRAY[k]) FROM a", NotSupportedError, "multi-dimensional"),
    ("SELECT bool_and(k) FROM a", DataError, "needs BOOL values"),
    ("SELECT bit_or(s) FROM a", DataError, "needs INT values"),
    ("SELECT abs(k) FILTER (WHERE k > 1) FROM a", ProgrammingError, "not an aggregate function"),
    ("SELECT count(*) FILTER (WHERE sum(k) > 1) FROM a", ProgrammingError, "not allowed in FILTER"),
    ("SELECT sum(k) WITHIN GROUP (ORDER BY k) FROM a", ProgrammingError, "only for the ordered-set"),
    ("SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY k) FROM a", DataError, "not between 0 and 1"),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM a", DataError, "needs numbers"),
    ("SELECT mode(k) WITHIN GROUP (ORDER BY k) FROM a", ProgrammingError, "takes 0 arguments"),
    ("SELECT string_agg(DISTINCT s, ',' ORDER BY k) FROM a", ProgrammingError, "must appear in the argument list"),
    ("SELECT sum(k) FILTER (WHERE k > 1) OVER () FROM a", NotSupportedError, "on a window function"),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY k) OVER () FROM a", NotSupportedError, "window function"),
])
def test_aggregate_errors(a, sql, error, text):
    with pytest.raises(error, match=text):
        rows(a, sql)


def test_aggregate_order_by(a):
    assert rows(a, "SELECT string_agg(s, ',' ORDER BY k DESC) FROM a") == [("c,b,a",)]
    assert rows(a, "SELECT group_concat(s ORDER BY s DESC) FROM a") == [("c,b,a",)]
    assert rows(a, "SELECT string_agg(DISTINCT s, ',' ORDER BY s DESC) FROM a") == [("c,b,a",)]
    # ORDER BY x NULLS LAST, then k DESC; the FILTER drops k = 1
    assert rows(a, "SELECT string_agg(s, '-' ORDER BY x NULLS LAST, k DESC) FILTER (WHERE k > 1) FROM a") == [("b-c",)]
    assert rows(a, "SELECT x, string_agg(s, ';' ORDER BY k DESC) FROM a GROUP BY x ORDER BY x") == \
        [(None, "c"), (10, "a"), (20, "b")]


def test_ordered_set_aggregates(a):
    # x over the rows: 10, 20, 20 (NULL ignored)
    assert rows(a, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_disc(0.5) WITHIN GROUP "
                   "(ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM a") == [(20.0, 20, 20)]
    # k: 1, 2, 3, 4 -> position 0.75 interpolates 1..2; disc over 4, 3, 2, 1 takes the first
    assert rows(a, "SELECT percentile_cont(0.25) WITHIN GROUP (ORDER BY k), "
                   "percentile_disc(0.25) WITHIN GROUP (ORDER BY k DESC), "
                   "percentile_cont(?) WITHIN GROUP (ORDER BY k) FROM a", (1,)) == [(1.75, 4, 4.0)]
    assert rows(a, "SELECT b, percentile_disc(0) WITHIN GROUP (ORDER BY k) FROM a GROUP BY b ORDER BY b") == \
        [(None, 3), (False, 2), (True, 1)]
    assert rows(a, "SELECT mode() WITHIN GROUP (ORDER BY s) FROM a") == [("a",)]  # a tie: the first in order
    assert rows(a, "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY k) FROM a WHERE k > 9") == [(None,)]
