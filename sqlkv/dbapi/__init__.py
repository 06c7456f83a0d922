"""sqlkv's PEP 249 (DB-API 2.0) driver.

    import sqlkv
    conn = sqlkv.connect("shop.db")          # or ":memory:"
    cur = conn.cursor()
    cur.execute("SELECT name FROM users WHERE id = ?", (10,))
    print(cur.fetchone())
    conn.commit()

`connect` opens a `Connection` over one SQL session (`sqlkv.sql.session.Session`); cursors
run statements through it and stream rows from its lazy results. Module globals follow PEP
249: ``apilevel = "2.0"``, ``threadsafety = 1`` (share the module between threads, not
connections), ``paramstyle = "qmark"`` (``:name`` with a mapping works too).

``import sqlkv`` stays light (~0.15 s): the SQL layer with sqlglot (~0.8 s), the LSM engine and
the schema reader are imported by the functions that first need them (`connect`,
``create_function``, ``iterdump``/``backup``, a traced ``executescript``) -- the only reason
this package has function-level imports.
"""

from sqlkv.dbapi.compat import PARSE_COLNAMES, PARSE_DECLTYPES, register_adapter, register_converter
from sqlkv.dbapi.connection import Connection, connect
from sqlkv.dbapi.row import Row
from sqlkv.dbapi.cursor import Cursor
from sqlkv.dbapi.types import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Date,
    DateFromTicks,
    DBAPITypeObject,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
)

apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"

__all__ = [
    "connect",
    "Connection",
    "Cursor",
    "Row",
    "PARSE_COLNAMES",
    "PARSE_DECLTYPES",
    "register_adapter",
    "register_converter",
    "apilevel",
    "threadsafety",
    "paramstyle",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
    "DBAPITypeObject",
    "Date",
    "Time",
    "Timestamp",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
    "Binary",
]
