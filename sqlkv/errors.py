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
    """Base class of every sqlkv error (PEP 249).

    ``sqlstate`` is PostgreSQL's code for the error. The broad classes carry a class code
    (42000, 23000...); the specific subclasses below (`UniqueViolation`, `UndefinedTable`...)
    carry PostgreSQL's specific code, which their message also ends with, e.g.
    ``... violates unique constraint "t_pkey" (Key (id)=(1) already exists) (SQLSTATE 23505)``,
    so a client can act on the code whether it reads the attribute or only the text.
    """

    sqlstate: str = "XX000"
    code_in_message = False  # True for the specific codes (set by the subclasses)

    def __init__(self, *args: object) -> None:
        if self.code_in_message and args and isinstance(args[0], str) and "SQLSTATE" not in args[0]:
            args = (f"{args[0]} (SQLSTATE {self.sqlstate})", *args[1:])
        super().__init__(*args)


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
    code_in_message = True


# -- specific SQLSTATE codes (PostgreSQL's names; psycopg's errors module has the same classes) --


class UniqueViolation(IntegrityError):
    """A duplicate value in a primary key or unique index."""

    sqlstate = "23505"
    code_in_message = True


class ForeignKeyViolation(IntegrityError):
    """A row references a missing parent key, or a parent key still has referencing rows."""

    sqlstate = "23503"
    code_in_message = True


class NotNullViolation(IntegrityError):
    sqlstate = "23502"
    code_in_message = True


class CheckViolation(IntegrityError):
    sqlstate = "23514"
    code_in_message = True


class SqlSyntaxError(ProgrammingError):
    """The statement does not parse (PostgreSQL's syntax_error; named so as not to shadow
    Python's SyntaxError)."""

    sqlstate = "42601"
    code_in_message = True


class UndefinedTable(ProgrammingError):
    sqlstate = "42P01"
    code_in_message = True


class UndefinedColumn(ProgrammingError):
    sqlstate = "42703"
    code_in_message = True


class UndefinedObject(ProgrammingError):
    """A named constraint (or other object) that does not exist."""

    sqlstate = "42704"
    code_in_message = True


class DuplicateTable(ProgrammingError):
    """CREATE of a table, view, sequence or index whose name is taken."""

    sqlstate = "42P07"
    code_in_message = True


class DuplicateColumn(ProgrammingError):
    sqlstate = "42701"
    code_in_message = True


class DuplicateObject(ProgrammingError):
    """A constraint name already used on the table."""

    sqlstate = "42710"
    code_in_message = True


class UndefinedFunction(ProgrammingError):
    sqlstate = "42883"
    code_in_message = True


class ObjectNotInPrerequisiteState(OperationalError):
    """currval before any nextval in the session."""

    sqlstate = "55000"
    code_in_message = True


class GeneratedAlways(ProgrammingError):
    """A value given for a GENERATED ALWAYS column."""

    sqlstate = "428C9"
    code_in_message = True


class DependentObjectsStillExist(ProgrammingError):
    """DROP of an object others depend on (a table referenced by a foreign key)."""

    sqlstate = "2BP01"
    code_in_message = True


class InvalidForeignKey(ProgrammingError):
    """FOREIGN KEY ... REFERENCES columns that are no primary key or unique constraint."""

    sqlstate = "42830"
    code_in_message = True


class DatatypeMismatch(ProgrammingError):
    """An expression whose type cannot be stored in its column (a generation expression)."""

    sqlstate = "42804"
    code_in_message = True


class DivisionByZero(DataError):
    sqlstate = "22012"
    code_in_message = True


class NumericValueOutOfRange(DataError):
    sqlstate = "22003"
    code_in_message = True


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
    "UniqueViolation",
    "ForeignKeyViolation",
    "NotNullViolation",
    "CheckViolation",
    "SqlSyntaxError",
    "UndefinedTable",
    "UndefinedColumn",
    "UndefinedObject",
    "DuplicateTable",
    "DuplicateColumn",
    "DuplicateObject",
    "UndefinedFunction",
    "ObjectNotInPrerequisiteState",
    "GeneratedAlways",
    "DependentObjectsStillExist",
    "InvalidForeignKey",
    "DatatypeMismatch",
    "DivisionByZero",
    "NumericValueOutOfRange",
    "DatabaseLockedError",
    "CorruptionError",
    "ConditionFailedError",
]
