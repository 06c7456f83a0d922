"""Retrying SERIALIZABLE transactions that lost a conflict.

sqlkv's transactions are optimistic: two that touch the same keys both run, and the second to
COMMIT fails with SQLSTATE 40001 (`SerializationFailure`), its writes rolled back. The fix is to
run the whole transaction again -- its reads may now see different data -- which is what
`run_transaction` does with an engine (or anything with ``begin()``, e.g. a sessionmaker).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import exc

from sqlkv.errors import SerializationFailure

T = TypeVar("T")


def is_serialization_failure(error: BaseException) -> bool:
    """True for a conflict worth retrying (SQLSTATE 40001), raw or wrapped by SQLAlchemy."""
    if isinstance(error, exc.DBAPIError):
        error = error.orig
    return isinstance(error, SerializationFailure)


def run_transaction(begin: Any, work: Callable[[Any], T], attempts: int = 5) -> T:
    """``work(conn_or_session)`` in a transaction, run again (up to ``attempts``) on conflicts.

    ``begin`` is an Engine (``work`` gets a Connection) or a sessionmaker (``work`` gets a
    Session). ``work`` must not have effects outside the database: it may run several times.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    attempt = 1
    while True:
        try:
            with begin.begin() as handle:
                return work(handle)
        except exc.DBAPIError as error:
            if not is_serialization_failure(error) or attempt >= attempts:
                raise
            attempt += 1
