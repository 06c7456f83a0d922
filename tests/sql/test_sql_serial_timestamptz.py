"""SERIAL columns are auto-assigned INT primary keys (refused elsewhere). TIMESTAMPTZ values
are instants stored as naive UTC; the session time zone (SET TIME ZONE) reads text without an
offset and gives the values back as aware datetimes in that zone, as PostgreSQL and psycopg do.
Expectations are computed by hand from PostgreSQL's documented behaviour (SQLite has no zones)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

from sqlkv.errors import CheckViolation, DataError, NotSupportedError
from sqlkv.sql import Database, Session

UTC = dt.timezone.utc
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


@pytest.fixture
def session():
    db = Database.open(":memory:")
    s = Session(db)
    yield s
    s.close()
    db.close()


def test_serial_primary_key_is_assigned_and_timestamptz_is_utc_by_default(session):
    session.execute("CREATE TABLE ev (id SERIAL PRIMARY KEY, at TIMESTAMPTZ, at2 TIMESTAMP WITH TIME ZONE)")
    session.execute("INSERT INTO ev (at, at2) VALUES ('2024-01-01 12:00:00+02:00', ?)",
                    (dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-1))),))
    res = session.execute("INSERT INTO ev (at) VALUES (NULL)")
    assert res.lastrowid == 2
    assert session.execute("SELECT id, at, at2 FROM ev ORDER BY id").fetchall() == [
        (1, dt.datetime(2024, 1, 1, 10, tzinfo=UTC), dt.datetime(2024, 1, 1, 13, tzinfo=UTC)),
        (2, None, None),
    ]
    cols = session.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'ev'").fetchall()
    assert [c[0] for c in cols] == ["INT", "TIMESTAMPTZ", "TIMESTAMPTZ"]


def test_session_time_zone_reads_and_writes_timestamptz(session):
    session.execute("CREATE TABLE ev (id INT PRIMARY KEY, at TIMESTAMPTZ, naive TIMESTAMP)")
    session.execute("CREATE INDEX ev_at ON ev (at)")
    assert session.execute("SHOW TIME ZONE").fetchall() == [("UTC",)]
    session.execute("SET TIME ZONE 'Europe/Paris'")
    assert session.execute("SHOW timezone").fetchall() == [("Europe/Paris",)]
    # text without an offset is Paris wall time (winter +01, summer +02); TIMESTAMP is untouched
    session.execute("INSERT INTO ev VALUES (1, '2024-01-15 10:00', '2024-01-15 10:00'), "
                    "(2, '2024-07-15 10:00', '2024-07-15 10:00'), (3, '2024-07-15 10:00+00', NULL)")
    got = session.execute("SELECT id, at, naive FROM ev ORDER BY id").fetchall()
    assert got == [(1, dt.datetime(2024, 1, 15, 10, tzinfo=PARIS), dt.datetime(2024, 1, 15, 10)),
                   (2, dt.datetime(2024, 7, 15, 10, tzinfo=PARIS), dt.datetime(2024, 7, 15, 10)),
                   (3, dt.datetime(2024, 7, 15, 12, tzinfo=PARIS), None)]
    assert all(r[1].tzinfo is PARIS for r in got)
    # comparisons read the literal in the session zone too, through the index span
    assert session.execute("SELECT id FROM ev WHERE at = '2024-07-15 08:00+00'").fetchall() == [(2,)]
    assert session.execute("SELECT id FROM ev WHERE at >= '2024-07-15 10:00' ORDER BY id").fetchall() == [(2,), (3,)]
    # a fetched value passed back as a parameter finds its row
    assert session.execute("SELECT id FROM ev WHERE at = ?", (got[0][1],)).fetchall() == [(1,)]
    # the stored instant does not move with the zone
    session.execute("SET TIME ZONE -5")
    assert session.execute("SHOW TIME ZONE").fetchall() == [("-05:00",)]
    ((at,),) = session.execute("SELECT at FROM ev WHERE id = 1").fetchall()
    assert at == dt.datetime(2024, 1, 15, 9, tzinfo=UTC) and at.utcoffset() == dt.timedelta(hours=-5)
    assert session.execute("SELECT max(at) FROM ev").fetchall()[0][0].utcoffset() == dt.timedelta(hours=-5)
    (ret,) = session.execute("UPDATE ev SET at = '2024-01-15 04:00' WHERE id = 1 RETURNING at").fetchall()
    assert ret[0] == dt.datetime(2024, 1, 15, 9, tzinfo=UTC) and ret[0].utcoffset() == dt.timedelta(hours=-5)
    session.execute("RESET timezone")
    assert session.execute("SELECT at FROM ev WHERE id = 1").fetchall()[0][0].tzinfo is UTC


def test_calendar_functions_and_casts_read_the_session_wall_time(session):
    session.execute("CREATE TABLE ev (at TIMESTAMPTZ, naive TIMESTAMP)")
    session.execute("SET TIME ZONE 'America/New_York'")
    session.execute("INSERT INTO ev VALUES ('2024-01-01 23:30', '2024-01-01 23:30')")  # 04:30 UTC on the 2nd
    sql = ("SELECT extract(hour FROM at), extract(day FROM at), date_part('hour', at), date_trunc('day', at), "
           "to_char(at, 'YYYY-MM-DD HH24:MI'), CAST(at AS DATE), CAST(at AS TEXT), CAST(at AS TIMESTAMP), "
           "extract(epoch FROM at), CAST(naive AS TIMESTAMPTZ) = at FROM ev")
    ny = zoneinfo.ZoneInfo("America/New_York")
    assert session.execute(sql).fetchall() == [(
        23, 1, 23.0, dt.datetime(2024, 1, 1, tzinfo=ny), "2024-01-01 23:30", dt.date(2024, 1, 1),
        "2024-01-01 23:30:00-05:00", dt.datetime(2024, 1, 1, 23, 30),
        dt.datetime(2024, 1, 2, 4, 30, tzinfo=UTC).timestamp(), True)]
    session.execute("SET TIME ZONE 'UTC'")
    assert session.execute(sql).fetchall() == [(
        4, 2, 4.0, dt.datetime(2024, 1, 2, tzinfo=UTC), "2024-01-02 04:30", dt.date(2024, 1, 2),
        "2024-01-02 04:30:00+00:00", dt.datetime(2024, 1, 2, 4, 30),
        dt.datetime(2024, 1, 2, 4, 30, tzinfo=UTC).timestamp(), False)]
    # an instant moved by an interval stays a TIMESTAMPTZ (aware in the session zone)
    assert session.execute("SELECT at + INTERVAL '1 day' FROM ev").fetchall() == [(dt.datetime(2024, 1, 3, 4, 30, tzinfo=UTC),)]
    # a TIMESTAMP column's calendar is its own, whatever the zone
    assert session.execute("SELECT extract(hour FROM naive) FROM ev").fetchall() == [(23,)]


def test_time_zone_is_per_session_and_plans_follow_it(session):
    other = Session(session.db)
    session.execute("CREATE TABLE ev (at TIMESTAMPTZ)")
    session.execute("SET TIME ZONE 'Asia/Tokyo'")
    sql = "SELECT CAST('2024-01-01 09:00' AS TIMESTAMPTZ) = CAST('2024-01-01 00:00+00' AS TIMESTAMPTZ)"
    assert session.execute(sql).fetchall() == [(True,)]
    assert other.execute(sql).fetchall() == [(False,)]  # UTC there
    session.execute("SET TIME ZONE UTC")
    assert session.execute(sql).fetchall() == [(False,)]  # the cached plan folded the old zone
    other.close()


def test_schema_expressions_are_evaluated_in_utc(session):
    # a generated column, a CHECK and a partial-index predicate over a TIMESTAMPTZ must give every
    # session the same stored values and index entries, whatever its zone
    session.execute("CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMPTZ, h INT AS (extract(hour FROM ts)) VIRTUAL, "
                    "hs INT AS (extract(hour FROM ts)) STORED, CHECK (ts > '2024-01-01 00:00'))")
    session.execute("CREATE INDEX t_late ON t (id) WHERE ts >= '2024-06-01 00:00'")
    session.execute("CREATE INDEX t_h ON t (h)")
    session.execute("SET TIME ZONE 'Asia/Tokyo'")
    session.execute("INSERT INTO t (id, ts) VALUES (1, '2024-06-01 05:00')")  # 2024-05-31 20:00 UTC
    with pytest.raises(CheckViolation):
        session.execute("INSERT INTO t (id, ts) VALUES (2, '2024-01-01 05:00')")  # 2023-12-31 20:00 UTC
    assert session.execute("SELECT h, hs FROM t").fetchall() == [(20, 20)]
    session.execute("SET TIME ZONE 'UTC'")
    assert session.execute("SELECT h, hs FROM t WHERE h = 20").fetchall() == [(20, 20)]
    assert session.execute("SELECT count(*) FROM sqlkv_internal.kv WHERE index_name = 't_late'").fetchall() == [(0,)]
    assert session.execute("CHECK DATABASE").fetchall() == []


def test_time_zone_errors(session):
    with pytest.raises(DataError, match='"Nowhere/City"'):
        session.execute("SET TIME ZONE 'Nowhere/City'")
    with pytest.raises(NotSupportedError, match="SET LOCAL"):
        session.execute("SET LOCAL TIME ZONE 'UTC'")
    with pytest.raises(NotSupportedError, match="search_path"):
        session.execute("SET search_path = public")
    with pytest.raises(NotSupportedError):
        session.execute("SHOW search_path")
    assert session.execute("SHOW TIME ZONE").fetchall() == [("UTC",)]  # a failed SET changes nothing


def test_serial_outside_the_primary_key_is_refused(session):
    with pytest.raises(NotSupportedError, match='SERIAL column "n"'):
        session.execute("CREATE TABLE t (id INT PRIMARY KEY, n SERIAL)")


def test_now_is_the_utc_clock_whatever_the_machine_zone():
    """now() is naive UTC (SQLite's CURRENT_TIMESTAMP), so DEFAULT now() in a TIMESTAMPTZ column
    stores the right instant on a machine whose local zone is not UTC."""
    import os
    import subprocess
    import sys

    code = ("import datetime as dt, sqlkv\n"
            "c = sqlkv.connect(autocommit=True); cur = c.cursor()\n"
            "cur.execute('CREATE TABLE t (ts TIMESTAMPTZ DEFAULT now())'); cur.execute('INSERT INTO t DEFAULT VALUES')\n"
            "cur.execute('SELECT ts, now() FROM t'); ts, now = cur.fetchone()\n"
            "utc = dt.datetime.now(dt.timezone.utc)\n"
            "print(abs((utc - ts).total_seconds()) < 3600, abs((utc.replace(tzinfo=None) - now).total_seconds()) < 3600)\n")
    env = dict(os.environ, TZ="Pacific/Kiritimati")  # UTC+14: a local clock would be 14 hours off
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.split() == ["True", "True"], out.stderr
