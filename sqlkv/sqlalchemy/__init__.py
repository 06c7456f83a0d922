"""SQLAlchemy 2.x dialect for sqlkv (``pip install 'sqlkv[sqlalchemy]'``).

    from sqlalchemy import create_engine, text
    engine = create_engine("sqlkv:///shop.db")        # sqlkv:// is a memory database
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name) VALUES (:id, :name)"), {"id": 1, "name": "ann"})

This package sits above the driver (`sqlkv.dbapi`): SQLAlchemy compiles Core/ORM constructs
(`compiler`) to sqlkv SQL, runs them through ``sqlkv.connect()`` connections (`base`), and
reads schemas back from ``information_schema`` (`reflection`). Upserts use SQLAlchemy's
PostgreSQL-style construct, re-exported here (as is ``distinct_on``, for SELECT DISTINCT ON)::

    from sqlkv.sqlalchemy import insert
    stmt = insert(users).values(id=1, name="ann")
    conn.execute(stmt.on_conflict_do_update(index_elements=["id"], set_={"name": stmt.excluded.name}))

Isolation is always SERIALIZABLE and optimistic: a conflicting transaction fails at COMMIT with
``sqlalchemy.exc.OperationalError`` whose ``orig`` is ``sqlkv.errors.SerializationFailure``
(SQLSTATE 40001). Retry the whole transaction: `run_transaction` does that.
"""

from __future__ import annotations

from sqlalchemy.dialects.postgresql import distinct_on, insert

from sqlkv.sqlalchemy.base import SqlkvDialect
from sqlkv.sqlalchemy.retry import is_serialization_failure, run_transaction
from sqlkv.sqlalchemy.url import connect_arguments

dialect = SqlkvDialect

__all__ = ["SqlkvDialect", "dialect", "insert", "distinct_on", "connect_arguments", "is_serialization_failure",
           "run_transaction"]
