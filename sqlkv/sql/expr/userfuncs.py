"""Scalar functions a program defines at run time: ``conn.create_function("slug", 1, slugify)``.

The driver builds a `FunctionDef` here and puts it in its session's ``functions`` (name ->
definition); the compiler looks there before the built-ins, so a user function may also
replace one, as in sqlite3. Like sqlite3's, the function receives NULLs (None) as they are
and may return None, int, float, str, bytes, bool, Decimal, date or datetime; its result
type is only known when it runs, like a ``?`` parameter's. Anything it raises becomes an
OperationalError naming the function; a result of another Python type is a DataError.
A function not marked deterministic is never folded at compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlkv.sql.types import NULLTYPE, value_type
from sqlkv.errors import DataError, Error, OperationalError, ProgrammingError
from sqlkv.sql.expr.functions import FunctionDef


def user_function(name: str, narg: int, func: Callable[..., Any], deterministic: bool = False) -> FunctionDef:
    """The definition of a user's scalar function of ``narg`` arguments (-1: any number)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ProgrammingError(f"function name must be an identifier, not {name!r}")
    if not isinstance(narg, int) or narg < -1 or narg > 127:
        raise ProgrammingError(f"narg must be -1 (any) or 0..127, not {narg!r}")
    if not callable(func):
        raise TypeError(f"func must be callable, not {type(func).__name__}")
    low = name.lower()

    def call(*args: Any) -> Any:
        try:
            value = func(*args)
        except Error:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported as its own
            raise OperationalError(f"user-defined function {low}() raised {type(exc).__name__}: {exc}") from exc
        try:
            value_type(value)
        except DataError:
            raise DataError(
                f"user-defined function {low}() returned a {type(value).__name__}, not a SQL value"
            ) from None
        return value

    lowest, highest = (0, None) if narg == -1 else (narg, narg)
    return FunctionDef(low, lowest, highest, call, NULLTYPE, null_ok=True, volatile=not deterministic)
