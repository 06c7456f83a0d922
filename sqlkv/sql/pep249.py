"""Turning what a statement raises into PEP 249 errors.

Errors sqlkv raises on purpose are already PEP 249 classes (`sqlkv.errors`) naming the table,
column or constraint. A failed conditional put that no layer above named (a unique index
entry) is an IntegrityError. Any other Python exception is translated here: too-deep input
and values outside Python's ranges are the user's (ProgrammingError, DataError); anything
else is a bug in sqlkv, reported as InternalError naming the statement.
"""

from __future__ import annotations

import decimal
from sqlkv.errors import ConditionFailedError, DataError, Error, IntegrityError, InternalError, UniqueViolation, NumericValueOutOfRange
from sqlkv.sql.depth import too_deep


def as_pep249(e: Exception, sql: str, where: str) -> Error:
    """The PEP 249 error for a Python exception a statement raised."""
    if isinstance(e, RecursionError):
        return too_deep(sql)
    if isinstance(e, OverflowError):
        return NumericValueOutOfRange(f"value out of range: {e}")
    if isinstance(e, decimal.DecimalException):
        return DataError(f"invalid numeric value or operation ({type(e).__name__})")
    return InternalError(f"internal error {where}: {type(e).__name__}: {e}")


def unique_violation(e: ConditionFailedError) -> IntegrityError:
    """A conditional put that failed without a layer above naming the constraint."""
    return UniqueViolation(f"duplicate key value violates a unique constraint ({e})")
