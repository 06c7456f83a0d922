"""DECIMAL keeps its scale, INT2/INT4 refuse out-of-range values, shifts stay within 0..63.

Expectations are PostgreSQL's (DECIMAL) and CockroachDB's (INT widths, shifts), computed by hand.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from sqlkv.errors import DataError
from tests.statements.support import rows, s  # noqa: F401


def test_decimal_literal_keeps_its_written_scale(s):
    s.execute("CREATE TABLE d (k INT PRIMARY KEY, v DECIMAL, w DECIMAL(10,2), x DECIMAL DEFAULT 2.50)")
    s.execute("INSERT INTO d VALUES (1, 1.50, 1.5, -0.10)")
    s.execute("INSERT INTO d (k, v, w) VALUES (2, 3.000, 7)")
    s.execute("UPDATE d SET v = -(1.250) WHERE k = 2")
    got = rows(s, "SELECT v, w, x FROM d ORDER BY k")
    assert [tuple(str(v) for v in r) for r in got] == [("1.50", "1.50", "-0.10"), ("-1.250", "7.00", "2.50")]


def test_cast_of_a_literal_to_decimal_is_exact(s):
    (r,) = rows(s, "SELECT CAST(1.50 AS DECIMAL), CAST(-1.50 AS DECIMAL(5,1)), 1.50::DECIMAL, "
                   "CAST(0.1 AS DECIMAL) + CAST(0.2 AS DECIMAL)")
    assert [str(v) for v in r] == ["1.50", "-1.5", "1.50", "0.3"]


def test_pow_and_sqrt_of_decimal_are_decimal(s):
    s.execute("CREATE TABLE d (k INT PRIMARY KEY, w DECIMAL(10,2))")
    s.execute("INSERT INTO d VALUES (1, 2.25)")
    (r,) = rows(s, "SELECT sqrt(w), pow(w, 2), pow(2, w), sqrt(4.0), typeof(sqrt(w)), typeof(pow(2, w)) FROM d")
    assert r[0] == Decimal("1.5") and isinstance(r[0], Decimal)
    assert r[1] == Decimal("5.0625") and isinstance(r[1], Decimal)
    assert isinstance(r[2], Decimal) and abs(r[2] - Decimal(2) ** Decimal("2.25")) < Decimal("1e-20")
    assert r[3] == 2.0 and isinstance(r[3], float)  # a FLOAT argument keeps FLOAT
    assert r[4:] == ("decimal", "decimal")
    with pytest.raises(DataError, match="square root of a negative"):
        rows(s, "SELECT sqrt(-w) FROM d")


def test_int2_int4_columns_refuse_out_of_range(s):
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, a INT2, b INT4, c SMALLINT, d INTEGER, int4 INT4)")
    s.execute("INSERT INTO t VALUES (1, 32767, 2147483647, -32768, 3000000000, -2147483648)")
    with pytest.raises(DataError, match=r'out of range for type INT2 \(column "a"\)'):
        s.execute("INSERT INTO t VALUES (2, 32768, 0, 0, 0, 0)")
    with pytest.raises(DataError, match=r'out of range for type INT4 \(column "b"\)'):
        s.execute("INSERT INTO t VALUES (2, 0, 2147483648, 0, 0, 0)")
    with pytest.raises(DataError, match=r'out of range for type INT4 \(column "int4"\)'):
        s.execute("INSERT INTO t VALUES (2, 0, 0, 0, 0, -2147483649)")
    with pytest.raises(DataError, match=r'INT2 \(column "c"\)'):
        s.execute("UPDATE t SET c = c - 1")
    assert rows(s, "SELECT a, b, c, d, int4 FROM t") == [(32767, 2147483647, -32768, 3000000000, -2147483648)]
    types = dict(rows(s, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't'"))
    assert (types["a"], types["b"], types["c"], types["d"]) == ("INT2", "INT4", "INT2", "INT")


def test_cast_to_narrow_int_checks_range(s):
    assert rows(s, "SELECT CAST(32767 AS INT2), 7::INT4") == [(32767, 7)]
    with pytest.raises(DataError, match="out of range for type INT2"):
        rows(s, "SELECT CAST(70000 AS SMALLINT)")
    with pytest.raises(DataError, match="out of range for type INT4"):
        rows(s, "SELECT 3000000000::INT4")


@pytest.mark.parametrize("sql, want", [
    ("SELECT 1 << 63", -(2**63)), ("SELECT 5 >> 1", 2), ("SELECT -8 >> 63", -1), ("SELECT 3 << 0", 3),
])
def test_shifts_within_the_width(s, sql, want):
    assert rows(s, sql) == [(want,)]


@pytest.mark.parametrize("sql", ["SELECT 1 << 64", "SELECT 1 >> 64", "SELECT 1 << -1", "SELECT 1 >> 9223372036854775807"])
def test_shift_past_the_width_is_refused(s, sql):
    with pytest.raises(DataError, match="shift argument out of range"):
        rows(s, sql)


DECIMAL_VS_FLOAT_QUERIES = [
    "SELECT k FROM d WHERE v = 2.3 ORDER BY k",
    "SELECT k FROM d WHERE v = 0.1 ORDER BY k",
    "SELECT k FROM d WHERE v >= 2.3 ORDER BY k",
    "SELECT k FROM d WHERE v < 2.3 ORDER BY k",
    "SELECT k FROM d WHERE v IN (2.3, 0.1) ORDER BY k",
    "SELECT k FROM d WHERE v BETWEEN 0.1 AND 2.3 ORDER BY k",
    "SELECT d.k, f.k FROM d JOIN f ON d.v = f.x ORDER BY 1, 2",
    "SELECT d.k, f.k FROM f JOIN d ON f.x = d.v ORDER BY 1, 2",
    "SELECT k FROM d WHERE v IN (SELECT x FROM f) ORDER BY k",
    "SELECT k FROM f WHERE x IN (SELECT v FROM d) ORDER BY k",
    "SELECT k FROM d WHERE EXISTS (SELECT 1 FROM f WHERE f.x = d.v) ORDER BY k",
    "SELECT k, v = 2.3 FROM d ORDER BY k",
]


@pytest.mark.parametrize("sql", DECIMAL_VS_FLOAT_QUERIES)
@pytest.mark.parametrize("indexed", [False, True])
def test_decimal_compared_with_a_float_matches_sqlite(s, sql, indexed):
    """``v = 2.3`` on a DECIMAL column finds the stored 2.3 (PostgreSQL: the literal is numeric;
    SQLite: both REAL). A binary float 2.3 is 2.2999...: compared exactly it matched nothing,
    through a filter, an index span, a hash join or an IN subquery alike."""
    import sqlite3

    schema = ["CREATE TABLE d (k INT PRIMARY KEY, v DECIMAL(10,1))", "CREATE TABLE f (k INT PRIMARY KEY, x FLOAT)"]
    data = ["INSERT INTO d VALUES (1, 2.3), (2, 0.1), (3, 7.5), (4, NULL)",
            "INSERT INTO f VALUES (1, 2.3), (2, 0.1), (3, 0.30000000000000004)"]
    if indexed:
        schema.append("CREATE INDEX d_v ON d (v)")
    lite = sqlite3.connect(":memory:")
    for stmt in schema + data:
        s.execute(stmt)
        lite.execute(stmt)
    assert rows(s, sql) == [tuple(bool(v) if "v = 2.3" in sql and i == 1 and v is not None else v
                                  for i, v in enumerate(r)) for r in lite.execute(sql).fetchall()]


def test_decimal_compared_with_a_float_parameter(s):
    s.execute("CREATE TABLE d (k INT PRIMARY KEY, v DECIMAL(10,1))")
    s.execute("INSERT INTO d VALUES (1, 2.3)")
    assert rows(s, "SELECT k FROM d WHERE v = ?", (2.3,)) == [(1,)]
    assert rows(s, "SELECT k FROM d WHERE ? = v", (2.3,)) == [(1,)]
