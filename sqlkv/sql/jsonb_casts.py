"""Casts to and from JSONB (issue 15), called by casts.py.

``'{"a":1}'::JSONB`` parses the text (`sqlkv.encoding.jsonb.parse`: a DataError names the position
of invalid text); ``CAST(j AS INT)`` takes a JSON number, ``CAST(j AS BOOL)`` a JSON boolean, as
PostgreSQL does (``cannot cast jsonb string to type INT`` otherwise); ``CAST(j AS TEXT)`` is the
value's text (casts.to_text). An INSERT into a JSONB column takes a JSONB value, text (parsed) or
a driver's dict (adapted to JSONB before it gets here) or list (bound as an ARRAY, made a
JSON array here).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from sqlkv.catalog.types import SqlType
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, from_python, parse, type_name
from sqlkv.errors import DataError, NumericValueOutOfRange
from sqlkv.sql.types import check_int_range, check_int_width, fit_decimal


def assign_jsonb(value: object, column: str) -> Jsonb:
    """A value stored in a JSONB column."""
    if type(value) is Jsonb:
        return value
    if isinstance(value, str):
        try:
            return parse(value)
        except DataError as e:
            raise DataError(f'{e} (column "{column}")') from None
    if isinstance(value, (dict, list)):
        return from_python(value, f'column "{column}"')
    if isinstance(value, SqlArray):  # the driver binds a Python list as an ARRAY: here, a JSON array
        return from_python(list(value.items), f'column "{column}"')
    shown = "BOOL" if isinstance(value, bool) else type(value).__name__
    raise DataError(f'column "{column}" is of type JSONB but the value {value!r} is {shown}; '
                    f"cast text with ::JSONB or use to_jsonb()")


def cast_jsonb(value: object, typ: SqlType) -> object:
    """CAST to JSONB (from text or JSONB) or from JSONB to a scalar type."""
    if typ.kind == "JSONB":
        if type(value) is Jsonb:
            return value
        if isinstance(value, str):
            return parse(value)
        if isinstance(value, (dict, list)):
            return from_python(value)
        if isinstance(value, SqlArray):  # a list parameter (`?::JSONB`), bound as an ARRAY
            return from_python(list(value.items))
        raise DataError(f"cannot cast {type(value).__name__} to JSONB; use to_jsonb()")
    assert type(value) is Jsonb
    tree = value.tree
    kind = typ.kind
    if kind == "BOOL" and isinstance(tree, bool):
        return tree
    if kind in ("INT", "FLOAT", "DECIMAL") and isinstance(tree, (int, Decimal)) and not isinstance(tree, bool):
        return _number_as(tree, typ)
    raise DataError(f"cannot cast jsonb {type_name(tree)} to type {typ.sql()}")


def _number_as(n: int | Decimal, typ: SqlType) -> object:
    if typ.kind == "FLOAT":
        f = float(n)
        if math.isinf(f):
            raise NumericValueOutOfRange(f"value {n} is out of range for type FLOAT")
        return f
    if typ.kind == "DECIMAL":
        return fit_decimal(Decimal(n), typ, "value")
    if isinstance(n, Decimal):
        if n.adjusted() > 18:
            raise NumericValueOutOfRange("integer out of range")
        n = int(n.to_integral_value(rounding=ROUND_HALF_UP))  # as numeric -> int in PostgreSQL
    return check_int_range(n) if typ.width is None else check_int_width(n, typ)
