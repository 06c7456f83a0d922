"""The PEP 249 exception hierarchy, shared by every layer.

Every error a user can cause reaches them as one of these classes. Lower layers raise the most
specific class they can (the storage engine raises `CorruptionError` naming the file, the
transaction layer raises `SerializationFailure`); the SQL layer adds table, column and
constraint names. `ConditionFailedError` is internal: the SQL layer turns it into an
`IntegrityError` that names the constraint.
"""

from __future__ import annotations


class Warning(Exception):  # noqa: A001 - the name is fixed by PEP 249
    """Important warnings (PEP 249)."""


class Error(Exception):
    """Base class of every sqlkv error (PEP 249)."""

    sqlstate: str = "XX000"


class InterfaceError(Error):
    """Misuse of the driver interface: closed cursor/connection, bad parameters."""

    sqlstate = "08000"


class DatabaseError(Error):
    """Errors related to the database."""


class DataError(DatabaseError):
    """Bad data: a value of the wrong type, out of range, too long, division by zero."""

    sqlstate = "22000"


class OperationalError(DatabaseError):
    """Errors in the database's operation, not necessarily the programmer's fault."""

    sqlstate = "58000"


class IntegrityError(DatabaseError):
    """A constraint was violated: unique, primary key, NOT NULL, CHECK, foreign key."""

    sqlstate = "23000"


class InternalError(DatabaseError):
    """The database hit an internal inconsistency (a bug, or corruption found by a check)."""

    sqlstate = "XX000"


class ProgrammingError(DatabaseError):
    """SQL errors: syntax, unknown table/column, wrong number of parameters."""

    sqlstate = "42000"


class NotSupportedError(DatabaseError):
    """A feature sqlkv does not provide."""

    sqlstate = "0A000"


class SerializationFailure(OperationalError):
    """A SERIALIZABLE transaction conflicted with a concurrent one; retry it."""

    sqlstate = "40001"


class DatabaseLockedError(OperationalError):
    """Another process holds the database directory's LOCK file."""

    sqlstate = "55006"


class CorruptionError(DatabaseError):
    """Stored data failed a checksum or format check. The message names the file."""

    sqlstate = "XX001"


class ConditionFailedError(Exception):
    """A conditional put found a different value than expected (internal, not PEP 249).

    `key` is the key whose condition failed and `actual` its current value (None when absent).
    """

    def __init__(self, key: bytes, actual: bytes | None) -> None:
        super().__init__(f"condition failed on key {key!r}")
        self.key = key
        self.actual = actual


__all__ = [
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
    "SerializationFailure",
    "DatabaseLockedError",
    "CorruptionError",
    "ConditionFailedError",
]
