"""TIME and UUID column types: storage, keys (primary and secondary, both directions), casts,
comparisons with text literals, gen_random_uuid(). Hand-computed expectations (PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from sqlkv.errors import DataError, ProgrammingError
from tests.statements.support import rows, s  # noqa: F401

U = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"


@pytest.fixture
def u(s):
    s.execute("CREATE TABLE u (id UUID PRIMARY KEY DEFAULT gen_random_uuid(), t TIME, n INT, INDEX (t DESC))")
    s.execute("INSERT INTO u (t, n) VALUES ('13:05:06', 1), ('01:00', 2), (NULL, 3)")
    s.execute(f"INSERT INTO u VALUES ('{U}', '23:59:59.5', 4)")
    return s


def test_time_orders_and_compares(u):
    assert rows(u, "SELECT n, t FROM u ORDER BY t") == [
        (3, None), (2, dt.time(1)), (1, dt.time(13, 5, 6)), (4, dt.time(23, 59, 59, 500000))]
    assert rows(u, "SELECT n FROM u WHERE t > '12:00' ORDER BY n") == [(1,), (4,)]
    assert rows(u, "SELECT n FROM u WHERE t BETWEEN '00:30' AND '14:00' ORDER BY t DESC") == [(1,), (2,)]
    plan = "\n".join(r[0] for r in rows(u, "EXPLAIN SELECT n FROM u WHERE t BETWEEN '00:30' AND '14:00'"))
    assert "u@u_t_idx /Table/" in plan and "~14:00:00" in plan and "widened" not in plan
    assert rows(u, "SELECT min(t), max(t) FROM u") == [(dt.time(1), dt.time(23, 59, 59, 500000))]


def test_uuid_primary_key_and_defaults(u):
    ids = [r[0] for r in rows(u, "SELECT id FROM u ORDER BY id")]
    assert all(isinstance(i, uuid.UUID) for i in ids) and len(set(ids)) == 4
    assert ids == sorted(ids)  # key order is the uuids' byte order
    assert rows(u, f"SELECT n FROM u WHERE id = '{U}'") == [(4,)]
    plan = "\n".join(r[0] for r in rows(u, f"EXPLAIN SELECT n FROM u WHERE id = '{U}'"))
    assert f"get u@u_pkey /Table/" in plan and U in plan
    assert rows(u, "SELECT n FROM u WHERE id = ?", (uuid.UUID(U),)) == [(4,)]
    assert rows(u, f"SELECT key FROM sqlkv_internal.kv WHERE table_name = 'u' AND key LIKE '%{U}/0'") == [
        (f"/u/u_pkey/{U}/0",)]


def test_casts_and_text_forms(u):
    assert rows(u, "SELECT CAST(id AS TEXT), CAST(t AS TEXT), typeof(id), typeof(t) FROM u WHERE n = 4") == [
        (U, "23:59:59.500000", "uuid", "time")]
    assert rows(u, "SELECT CAST(TIMESTAMP '2024-01-01 10:11:12' AS TIME), CAST('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11' "
                   "AS UUID)") == [(dt.time(10, 11, 12), uuid.UUID(U))]
    assert rows(u, "SELECT typeof(gen_random_uuid()), gen_random_uuid() <> gen_random_uuid()") == [("uuid", True)]


@pytest.mark.parametrize("sql, error, text", [
    ("INSERT INTO u VALUES ('not-a-uuid', NULL, 5)", DataError, 'column "id" of type UUID'),
    ("INSERT INTO u VALUES (gen_random_uuid(), '25:00', 6)", DataError, 'column "t" of type TIME'),
    ("INSERT INTO u VALUES (gen_random_uuid(), 5, 6)", DataError, 'column "t" of type TIME'),
    (f"INSERT INTO u VALUES ('{U}', NULL, 7)", Exception, "duplicate key"),
    ("SELECT t + 1 FROM u", ProgrammingError, "operator does not exist: TIME \\+ INT"),
    ("SELECT CAST('x' AS UUID)", DataError, 'invalid input syntax for type UUID: "x"'),
    ("CREATE TABLE tz (t TIMETZ)", ProgrammingError, "TIMETZ"),
])
def test_errors(u, sql, error, text):
    with pytest.raises(error, match=text):
        rows(u, sql)
    assert rows(u, "SELECT count(*) FROM u") == [(4,)]


def test_interval_columns(s):
    from sqlkv.sql.expr.dates import Interval

    s.execute("CREATE TABLE iv (k INT PRIMARY KEY, d INTERVAL, INDEX (d))")
    s.execute("INSERT INTO iv VALUES (1, INTERVAL '1 month'), (2, '30 days'), (3, '-2 hours'), (4, NULL), "
              "(5, '1 year 2 mons 3 days 04:05:06.5')")
    # ordered by length (a month = 30 days), then months, then days (CockroachDB's order)
    assert [k for k, in rows(s, "SELECT k FROM iv ORDER BY d")] == [4, 3, 2, 1, 5]
    assert rows(s, "SELECT k FROM iv WHERE d > '29 days' ORDER BY k") == [(1,), (2,), (5,)]
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN SELECT k FROM iv WHERE d > '29 days'"))
    assert "iv@iv_d_idx" in plan and "widened" not in plan
    assert rows(s, "SELECT d, CAST(d AS TEXT) FROM iv WHERE k = 5") == [
        (Interval(14, 3, (4 * 3600 + 5 * 60 + 6) * 10**6 + 500000), "1 year 2 mons 3 days 04:05:06.500000")]
    assert rows(s, "SELECT TIMESTAMP '2024-01-31' + d FROM iv WHERE k = 1") == [(dt.datetime(2024, 2, 29),)]
    assert rows(s, "SELECT INTERVAL '1 day' < INTERVAL '2 days', INTERVAL '1 month' = INTERVAL '30 days', "
                   "greatest(INTERVAL '1 month', INTERVAL '30 days')") == [(True, False, Interval(1))]
    with pytest.raises(DataError, match='column "d" of type INTERVAL'):
        s.execute("INSERT INTO iv VALUES (6, 'nonsense')")


def test_interval_scaling_and_aggregates(s):
    """PostgreSQL's interval * number, number * interval, interval / number (a fractional month
    carries 30 days, a fractional day 24 hours), sum() and avg() of intervals; by hand."""
    from sqlkv.sql.expr.dates import Interval

    hour = 3600 * 10**6
    assert rows(s, "SELECT INTERVAL '1 month' * 2, 2 * INTERVAL '1 hour', INTERVAL '1 hour' / 2, "
                   "INTERVAL '1 month' * 1.5, INTERVAL '1 day' * 0.5, INTERVAL '1 day' * -1, "
                   "INTERVAL '3 days' / 0") == [
        (Interval(2), Interval(0, 0, 2 * hour), Interval(0, 0, hour // 2), Interval(1, 15),
         Interval(0, 0, 12 * hour), Interval(0, -1), None)]
    s.execute("CREATE TABLE iv (k INT PRIMARY KEY, d INTERVAL)")
    s.execute("INSERT INTO iv VALUES (1, '1 day'), (2, '2 hours'), (3, NULL), (4, '1 month')")
    assert rows(s, "SELECT sum(d), avg(d), min(d), max(d) FROM iv") == [
        (Interval(1, 1, 2 * hour), Interval(0, 10, 8 * hour + 40 * 60 * 10**6), Interval(0, 0, 2 * hour), Interval(1))]
    assert rows(s, "SELECT d * k, d * CAST(2.5 AS DECIMAL), ? * d FROM iv WHERE k = 1", (2,)) == [
        (Interval(0, 1), Interval(0, 2, 12 * hour), Interval(0, 2))]
    assert rows(s, "SELECT sum(d) FROM iv WHERE k = 3") == [(None,)]
    with pytest.raises(ProgrammingError, match="INTERVAL \\* INTERVAL"):
        s.execute("SELECT INTERVAL '1 day' * INTERVAL '1 day'")
    with pytest.raises(ProgrammingError, match="INT / INTERVAL"):
        s.execute("SELECT 2 / INTERVAL '1 day'")


def test_interval_row_values_round_trip():
    from sqlkv.encoding.values import decode_row_value, encode_row_value
    from sqlkv.sql.expr.dates import Interval

    row = {2: Interval(-3, 40, -1), 3: Interval(2**40, -(2**40), 2**62)}
    assert decode_row_value(encode_row_value(row)) == row
