"""sqlkv: a relational database in Python, SQL over an ordered key-value store.

Layers, bottom to top (each imports only the ones below it):

    storage   KV interface, in-memory engine, LSM engine       sqlkv.storage
    encoding  order-preserving key codec, row values           sqlkv.encoding
    txn       SERIALIZABLE optimistic transactions             sqlkv.txn
    catalog   descriptors in system tables                     sqlkv.catalog
    sql       parse -> plan -> execute                          sqlkv.sql
    dbapi     PEP 249 driver (sqlkv.connect)                   sqlkv.dbapi
    cli       REPL, scripts, bench, sqllogictest runner        sqlkv.cli
"""

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
