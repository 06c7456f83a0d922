"""A fresh in-memory session per test, and helpers to run SQL on it."""

from __future__ import annotations

import pytest

from sqlkv.sql.session import Database, Session


@pytest.fixture
def s():
    db = Database.open(":memory:")
    session = Session(db, autocommit=True)
    yield session
    session.close()
    db.close()


def rows(session: Session, sql: str, params: tuple = ()) -> list[tuple]:
    return list(session.execute(sql, params))
