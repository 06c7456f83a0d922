"""sqlkv: a relational database in Python, SQL over an ordered key-value store.

Layers, bottom to top (each imports only the ones below it):

    storage   KV interface, in-memory engine, LSM engine       sqlkv.storage
    encoding  order-preserving key codec, row values           sqlkv.encoding
    txn       SERIALIZABLE optimistic transactions             sqlkv.txn
    catalog   descriptors in system tables                     sqlkv.catalog
    sql       parse -> plan -> execute                          sqlkv.sql
    dbapi     PEP 249 driver (sqlkv.connect)                   sqlkv.dbapi
    cli       REPL, scripts, bench, sqllogictest runner        sqlkv.cli
    sqlalchemy  SQLAlchemy dialect (extra sqlkv[sqlalchemy])   sqlkv.sqlalchemy

This module is the PEP 249 driver's face: ``sqlkv.connect(...)``, the module globals, the
exception classes and the type objects/constructors all live here.
"""

from sqlkv.dbapi import (
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    Connection,
    Cursor,
    Date,
    PARSE_COLNAMES,
    PARSE_DECLTYPES,
    Row,
    register_adapter,
    register_converter,
    DateFromTicks,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
    apilevel,
    connect,
    paramstyle,
    threadsafety,
)
from sqlkv.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)

__version__ = "0.1.0"

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
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
    "Date",
    "Time",
    "Timestamp",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
    "Binary",
]
