"""SQL types: what a column or expression holds, and the casts between types.

The type itself (`SqlType`, stored in descriptors) lives in `sqlkv.catalog.types`; this module
is what the SQL layer does with it, and the one place SQL modules import types from.

Walk-through: ``CREATE TABLE t (price DECIMAL(10,2))`` hands the parsed ``DECIMAL(10,2)`` node to
`type_from_ast`, giving ``SqlType("DECIMAL", precision=10, scale=2)``, which the catalog stores
with `SqlType.to_dict`. ``INSERT INTO t VALUES (3)`` then runs ``assign_cast(3, typ, "price")``:
assignment is strict (no text to number), converts the int to ``Decimal("3.00")`` and checks the
precision. ``SELECT CAST(price AS TEXT)`` uses the more permissive `cast`, which parses and
formats (``'12.5'`` -> 12.5) and raises `DataError` when the input cannot be converted.

Runtime values are plain Python: None, int, float, Decimal, str, bytes, bool, date and naive
datetime. `value_type` maps a value back to its SqlType.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from decimal import MAX_PREC, ROUND_HALF_UP, Context, Decimal, DivisionByZero, InvalidOperation, Overflow

from sqlglot import exp

from sqlkv.catalog.types import BOOL, BYTES, DATE, DECIMAL, FLOAT, INT, NULLTYPE, TEXT, TIMESTAMP, SqlType
from sqlkv.errors import DataError, ProgrammingError, NumericValueOutOfRange

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1

_T = exp.DataType.Type
_KIND_BY_AST: dict = {
    _T.INT: "INT", _T.BIGINT: "INT", _T.SMALLINT: "INT", _T.TINYINT: "INT", _T.MEDIUMINT: "INT",
    _T.UINT: "INT", _T.UBIGINT: "INT", _T.USMALLINT: "INT", _T.UTINYINT: "INT",
    _T.FLOAT: "FLOAT", _T.DOUBLE: "FLOAT",
    _T.DECIMAL: "DECIMAL", _T.BIGDECIMAL: "DECIMAL",
    _T.TEXT: "TEXT", _T.VARCHAR: "TEXT", _T.CHAR: "TEXT", _T.NCHAR: "TEXT", _T.NVARCHAR: "TEXT",
    _T.BPCHAR: "TEXT", _T.MEDIUMTEXT: "TEXT", _T.LONGTEXT: "TEXT", _T.TINYTEXT: "TEXT",
    _T.BOOLEAN: "BOOL",
    _T.VARBINARY: "BYTES", _T.BINARY: "BYTES", _T.BLOB: "BYTES", _T.MEDIUMBLOB: "BYTES",
    _T.LONGBLOB: "BYTES", _T.TINYBLOB: "BYTES",
    _T.DATE: "DATE",
    _T.TIMESTAMP: "TIMESTAMP", _T.DATETIME: "TIMESTAMP", _T.TIMESTAMPNTZ: "TIMESTAMP",
    # TIMESTAMPTZ / TIMESTAMP WITH TIME ZONE: stored as naive UTC (aware inputs are converted)
    _T.TIMESTAMPTZ: "TIMESTAMP",
}
# Names sqlglot keeps as user-defined types but which we know.
_KIND_BY_NAME = {
    "BYTES": "BYTES", "SIGNED": "INT", "UNSIGNED": "INT", "INT2": "INT", "INT4": "INT",
    "INT8": "INT", "INT64": "INT", "FLOAT4": "FLOAT", "FLOAT8": "FLOAT", "STRING": "TEXT",
    # INT with an auto-assigned value; the DDL layer checks it is the primary key
    "SERIAL": "INT", "BIGSERIAL": "INT", "SMALLSERIAL": "INT", "SERIAL4": "INT", "SERIAL8": "INT",
}
SERIAL_NAMES = frozenset({"SERIAL", "BIGSERIAL", "SMALLSERIAL", "SERIAL4", "SERIAL8"})


def is_serial(dt_node: exp.DataType) -> bool:
    """``SERIAL`` and friends: INT columns whose value is assigned when omitted."""
    return dt_node.this == _T.USERDEFINED and str(dt_node.args.get("kind") or "").upper() in SERIAL_NAMES


def _type_params(dt_node: exp.DataType) -> list[int]:
    params = []
    for p in dt_node.expressions:
        node = p.this if isinstance(p, exp.DataTypeParam) else p
        try:
            params.append(int(node.name if isinstance(node, exp.Expression) else node))
        except (TypeError, ValueError):
            raise ProgrammingError(f"invalid type parameter in {dt_node.sql()}") from None
    return params


def type_from_ast(dt_node: exp.DataType) -> SqlType:
    """The SqlType named by a parsed type (INTEGER/BIGINT -> INT, VARCHAR(20), DECIMAL(10,2) ...)."""
    kind = _KIND_BY_AST.get(dt_node.this)
    if kind is None and dt_node.this == _T.USERDEFINED:
        kind = _KIND_BY_NAME.get(str(dt_node.args.get("kind") or "").upper())
    if kind is None:
        raise ProgrammingError(f'type "{dt_node.sql()}" does not exist or is not supported')
    params = _type_params(dt_node)
    if kind == "TEXT" and params:
        if params[0] <= 0:
            raise ProgrammingError(f"length for type {dt_node.sql()} must be at least 1")
        fixed = dt_node.this in (_T.CHAR, _T.NCHAR, _T.BPCHAR)
        return SqlType("TEXT", width=params[0], fixed=fixed)
    if kind == "DECIMAL" and params:
        precision = params[0]
        scale = params[1] if len(params) > 1 else 0
        if precision <= 0 or not 0 <= scale <= precision:
            raise ProgrammingError(f"invalid precision/scale in {dt_node.sql()}")
        return SqlType("DECIMAL", precision=precision, scale=scale)
    if dt_node.this in (_T.CHAR, _T.NCHAR, _T.BPCHAR):
        return SqlType("TEXT", width=1, fixed=True)  # CHAR without a length is CHAR(1), as in SQL
    return SqlType(kind)


def value_type(v: object) -> SqlType:
    """The SqlType of a runtime value (NULLTYPE for None)."""
    if v is None:
        return NULLTYPE
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return FLOAT
    if isinstance(v, Decimal):
        return DECIMAL
    if isinstance(v, str):
        return TEXT
    if isinstance(v, (bytes, bytearray, memoryview)):
        return BYTES
    if isinstance(v, dt.datetime):
        return TIMESTAMP
    if isinstance(v, dt.date):
        return DATE
    raise DataError(f"unsupported value of Python type {type(v).__name__}: {v!r}")


def type_name(v: object) -> str:
    """The SQL type name of a value, for error messages."""
    try:
        return value_type(v).kind
    except DataError:
        return type(v).__name__


def check_int_range(v: int) -> int:
    if INT_MIN <= v <= INT_MAX:
        return v
    raise NumericValueOutOfRange("integer out of range")


# ---------------------------------------------------------------- parsing text


def parse_int(text: str) -> int:
    s = text.strip()
    try:
        return check_int_range(int(s, 10))
    except ValueError:
        raise DataError(f'invalid input syntax for type INT: "{text}"') from None


def parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise DataError(f'invalid input syntax for type FLOAT: "{text}"') from None


def parse_decimal(text: str) -> Decimal:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise DataError(f'invalid input syntax for type DECIMAL: "{text}"') from None
    if not d.is_finite() and not d.is_infinite():
        raise DataError(f'invalid input syntax for type DECIMAL: "{text}"')
    return d


_BOOL_WORDS = {"true": True, "t": True, "yes": True, "y": True, "on": True, "1": True,
               "false": False, "f": False, "no": False, "n": False, "off": False, "0": False}


def parse_bool(text: str) -> bool:
    b = _BOOL_WORDS.get(text.strip().lower())
    if b is None:
        raise DataError(f'invalid input syntax for type BOOL: "{text}"')
    return b


def parse_date(text: str) -> dt.date:
    s = text.strip()
    try:
        return dt.date.fromisoformat(s[:10]) if len(s) > 10 and s[10] in " T" else dt.date.fromisoformat(s)
    except ValueError:
        raise DataError(f'invalid input syntax for type DATE: "{text}"') from None


def parse_timestamp(text: str) -> dt.datetime:
    s = text.strip()
    try:
        value = dt.datetime.fromisoformat(s)
    except ValueError:
        raise DataError(f'invalid input syntax for type TIMESTAMP: "{text}"') from None
    if value.tzinfo is not None:  # timestamps are naive: keep the UTC wall time
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def format_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return repr(f)


def to_text(v: object) -> str:
    """The text form of a value (CAST(v AS TEXT), || and string functions)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise DataError("invalid UTF-8 in BYTES value cast to TEXT") from None
    raise DataError(f"cannot convert {type_name(v)} to TEXT")


# ---------------------------------------------------------------- DECIMAL arithmetic

# DECIMAL + - * and % never round (as PostgreSQL's numeric; Python's default context keeps 28
# digits and would turn 1e30 + 1 into 1e30), within PostgreSQL's range: up to 131,072 digits
# before the point. Beyond it the Overflow trap fires: `exact_decimal` makes that a DataError.
EXACT = Context(prec=MAX_PREC, Emax=131_071, Emin=-16_383,
                traps=[InvalidOperation, DivisionByZero, Overflow])


def exact_decimal(op: Callable[[Decimal, Decimal], Decimal]) -> Callable[[Decimal, Decimal], Decimal]:
    """``op`` (an `EXACT` method) with its decimal signals reported as DataError."""
    def run(a: Decimal, b: Decimal) -> Decimal:
        try:
            return op(a, b)
        except Overflow:
            raise DataError("value overflows numeric format") from None
        except InvalidOperation:
            raise DataError(f"invalid numeric operation on {a} and {b}") from None

    return run


# ---------------------------------------------------------------- DECIMAL precision


def fit_decimal(d: Decimal, typ: SqlType, what: str) -> Decimal:
    """Round ``d`` to the type's scale and check its precision."""
    if typ.scale is not None and d.is_finite():
        try:
            d = d.quantize(Decimal(1).scaleb(-typ.scale), rounding=ROUND_HALF_UP)
        except InvalidOperation:
            raise NumericValueOutOfRange(f"numeric value out of range for {what} of type {typ.sql()}") from None
    if typ.precision is not None and d.is_finite():
        int_digits = typ.precision - (typ.scale or 0)
        if d != 0 and d.adjusted() >= int_digits:
            raise NumericValueOutOfRange(f"numeric value out of range for {what} of type {typ.sql()}")
    return d


# ---------------------------------------------------------------- assignment


def _assign_error(value: object, typ: SqlType, column: str) -> DataError:
    shown = repr(value) if not isinstance(value, str) else value
    return DataError(
        f'value "{shown}" ({type_name(value)}) is not valid for column "{column}" of type {typ.sql()}'
    )


def assign_cast(value: object, typ: SqlType, column: str) -> object:
    """Coerce ``value`` for storage in ``column`` of type ``typ`` (INSERT/UPDATE/DEFAULT).

    Strict: only lossless conversions between number types, and text for DATE/TIMESTAMP
    (an untyped date literal); everything else raises DataError naming the column.
    """
    if value is None:
        return None
    kind = typ.kind
    if kind == "INT":
        if isinstance(value, bool):
            raise _assign_error(value, typ, column)
        if isinstance(value, int):
            if INT_MIN <= value <= INT_MAX:
                return value
            raise NumericValueOutOfRange(f'integer out of range for column "{column}"')
        if isinstance(value, Decimal) and value.is_finite() and value.adjusted() > 18:
            # out of range whatever its digits: say so before int() spends minutes on 1E+999999
            raise NumericValueOutOfRange(f'integer out of range for column "{column}"')
        if isinstance(value, (float, Decimal)) and _is_integral(value):
            return assign_cast(int(value), typ, column)
        raise _assign_error(value, typ, column)
    if kind == "FLOAT":
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            return float(value)
        raise _assign_error(value, typ, column)
    if kind == "DECIMAL":
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise _assign_error(value, typ, column)
        d = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        return fit_decimal(d, typ, f'column "{column}"')
    if kind == "TEXT":
        if not isinstance(value, str):
            raise _assign_error(value, typ, column)
        if typ.width is not None and len(value) > typ.width:
            # Like SQL's CHAR/VARCHAR: trailing blanks beyond the width are dropped silently.
            if value[typ.width:].strip(" ") == "":
                return value[: typ.width]
            raise DataError(f'value too long for type {typ.sql()} of column "{column}"')
        return value
    if kind == "BOOL":
        if isinstance(value, bool):
            return value
        raise _assign_error(value, typ, column)
    if kind == "BYTES":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise _assign_error(value, typ, column)
    if kind == "DATE":
        if isinstance(value, dt.datetime):
            raise _assign_error(value, typ, column)
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            return _parse_for_column(parse_date, value, typ, column)
        raise _assign_error(value, typ, column)
    if kind == "TIMESTAMP":
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=None) if value.tzinfo is None else parse_timestamp(value.isoformat())
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day)
        if isinstance(value, str):
            return _parse_for_column(parse_timestamp, value, typ, column)
        raise _assign_error(value, typ, column)
    return value  # NULL type: no constraint


def _parse_for_column(parse, value: str, typ: SqlType, column: str):
    try:
        return parse(value)
    except DataError:
        raise _assign_error(value, typ, column) from None


def _is_integral(v: float | Decimal) -> bool:
    if isinstance(v, float):
        return math.isfinite(v) and v.is_integer()
    return v.is_finite() and v == v.to_integral_value()


# ---------------------------------------------------------------- explicit CAST


def _float_to_int(f: float) -> int:
    if not math.isfinite(f):
        raise NumericValueOutOfRange("integer out of range")
    return check_int_range(round(f))  # round half to even, like PostgreSQL's float8 -> int


def _decimal_to_int(d: Decimal) -> int:
    if not d.is_finite() or d.adjusted() > 18:
        raise NumericValueOutOfRange("integer out of range")
    return check_int_range(int(d.to_integral_value(rounding=ROUND_HALF_UP)))


def cast(value: object, typ: SqlType) -> object:
    """CAST(value AS typ): convert, parsing text; DataError when the value cannot be converted."""
    if value is None:
        return None
    kind = typ.kind
    if kind == "INT":
        return _cast_int(value)
    if kind == "FLOAT":
        if isinstance(value, str):
            return parse_float(value)
        if isinstance(value, (int, float, Decimal)):
            return float(value)
    elif kind == "DECIMAL":
        if isinstance(value, str):
            d = parse_decimal(value)
        elif isinstance(value, bool):
            d = Decimal(int(value))
        elif isinstance(value, float):
            d = Decimal(repr(value)) if math.isfinite(value) else Decimal(value)
        elif isinstance(value, (int, Decimal)):
            d = Decimal(value)
        else:
            raise _cast_error(value, typ)
        return fit_decimal(d, typ, "value")
    elif kind == "TEXT":
        text = to_text(value)
        if typ.width is not None and len(text) > typ.width:
            return text[: typ.width]  # explicit casts truncate, as in SQL
        return text
    elif kind == "BOOL":
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return value != 0
        if isinstance(value, str):
            return parse_bool(value)
    elif kind == "BYTES":
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
    elif kind == "DATE":
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            return parse_date(value)
    elif kind == "TIMESTAMP":
        if isinstance(value, dt.datetime):
            return value
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day)
        if isinstance(value, str):
            return parse_timestamp(value)
    elif kind == "NULL":
        return value
    raise _cast_error(value, typ)


def _cast_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return check_int_range(value)
    if isinstance(value, float):
        return _float_to_int(value)
    if isinstance(value, Decimal):
        return _decimal_to_int(value)
    if isinstance(value, str):
        s = value.strip()
        try:
            return check_int_range(int(s, 10))
        except ValueError:
            pass
        raise DataError(f'invalid input syntax for type INT: "{value}"')
    raise _cast_error(value, INT)


def _cast_error(value: object, typ: SqlType) -> DataError:
    return DataError(f"cannot cast {type_name(value)} to {typ.sql()}")


def common_type(a: SqlType, b: SqlType) -> SqlType | None:
    """The type both operands convert to for comparison/CASE/COALESCE, None if incompatible."""
    if a.kind == "NULL":
        return b
    if b.kind == "NULL":
        return a
    if a.kind == b.kind:
        return a if a == b else SqlType(a.kind)
    kinds = {a.kind, b.kind}
    if kinds <= {"INT", "FLOAT", "DECIMAL"}:
        return FLOAT if "FLOAT" in kinds else DECIMAL
    if kinds == {"DATE", "TIMESTAMP"}:
        return TIMESTAMP
    return None


__all__ = [
    "BOOL", "BYTES", "DATE", "DECIMAL", "FLOAT", "INT", "INT_MAX", "INT_MIN", "NULLTYPE", "TEXT", "TIMESTAMP",
    "SqlType",
]
