"""SERIAL columns are auto-assigned INT primary keys (refused elsewhere); TIMESTAMPTZ values
are stored as naive UTC, whichever offset they were given with."""

from __future__ import annotations

import pytest

from sqlkv.sql import Database, Session


@pytest.fixture
def session():
    db = Database.open(":memory:")
    s = Session(db)
    yield s
    s.close()
    db.close()


def test_serial_primary_key_is_assigned_and_timestamptz_is_naive_utc(session):
    import datetime as dt

    session.execute("CREATE TABLE ev (id SERIAL PRIMARY KEY, at TIMESTAMPTZ, at2 TIMESTAMP WITH TIME ZONE)")
    session.execute("INSERT INTO ev (at, at2) VALUES ('2024-01-01 12:00:00+02:00', ?)",
                    (dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-1))),))
    res = session.execute("INSERT INTO ev (at) VALUES (NULL)")
    assert res.lastrowid == 2
    assert session.execute("SELECT id, at, at2 FROM ev ORDER BY id").fetchall() == [
        (1, dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 13)),
        (2, None, None),
    ]
    cols = session.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'ev'").fetchall()
    assert [c[0] for c in cols][:2] == ["INT", "TIMESTAMP"]


def test_serial_outside_the_primary_key_is_refused(session):
    from sqlkv.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match='SERIAL column "n"'):
        session.execute("CREATE TABLE t (id INT PRIMARY KEY, n SERIAL)")
