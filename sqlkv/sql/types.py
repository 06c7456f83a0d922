"""SQL types: what a column or expression holds; the casts between them are in casts.py.

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
from collections.abc import Callable
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, MAX_PREC, Overflow, ROUND_HALF_UP

from sqlglot import exp

import uuid

from sqlkv.catalog.types import BOOL, BYTES, DATE, DECIMAL, FLOAT, INT, NULLTYPE, SqlType, TEXT, TIMESTAMP
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.interval import Interval
from sqlkv.sql.arraycasts import array_of, array_value_type, as_array, common_array_type
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import DataError, NotSupportedError, NumericValueOutOfRange, ProgrammingError

TIME = SqlType("TIME")
UUID = SqlType("UUID")
INTERVAL = SqlType("INTERVAL")
JSONB = SqlType("JSONB")

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
    # TIMESTAMPTZ / TIMESTAMP WITH TIME ZONE: stored as naive UTC, read and written in the
    # session time zone (SqlType.tz; sqlkv/sql/timezone.py)
    _T.TIMESTAMPTZ: "TIMESTAMP",
    _T.TIME: "TIME",  # without time zone
    _T.UUID: "UUID",
    _T.INTERVAL: "INTERVAL",
    _T.JSONB: "JSONB", _T.JSON: "JSONB",  # JSON is an alias of JSONB (issue 15; sqlkv/encoding/jsonb.py)
}


# Names sqlglot keeps as user-defined types but which we know.
_KIND_BY_NAME = {
    "BYTES": "BYTES", "SIGNED": "INT", "UNSIGNED": "INT", "INT2": "INT2", "INT4": "INT4",
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
    if dt_node.this == _T.ARRAY:  # T[] / ARRAY<T> (sqlkv/sql/arraycasts.py)
        if not dt_node.expressions:
            raise ProgrammingError(f'type "{dt_node.sql()}" needs an element type (INT[], ARRAY<TEXT>)')
        return array_of(type_from_ast(dt_node.expressions[0]))
    kind = _KIND_BY_AST.get(dt_node.this)
    if kind is None and dt_node.this == _T.USERDEFINED:
        kind = _KIND_BY_NAME.get(str(dt_node.args.get("kind") or "").upper())
    if kind is None and dt_node.this == _T.MAP:  # a JSONB object is sqlkv's map (expressions.md, "JSONB")
        raise NotSupportedError(f'type "{dt_node.sql()}" is not supported: use JSONB, whose objects are '
                                f"maps from text keys (doc -> 'key', doc ? 'key', jsonb_each(doc))")
    if kind is None:
        raise ProgrammingError(f'type "{dt_node.sql()}" does not exist or is not supported')
    if kind in ("INT2", "INT4") or dt_node.this == _T.SMALLINT:
        # CockroachDB's widths: SMALLINT/INT2 16 bits, INT4 32; INT/INTEGER/BIGINT are 64
        return SqlType("INT", width=32 if kind == "INT4" else 16)
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
    if dt_node.this == _T.TIMESTAMPTZ:
        return TIMESTAMPTZ
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
    if isinstance(v, dt.time):
        return TIME
    if isinstance(v, uuid.UUID):
        return UUID
    if isinstance(v, Interval):
        return INTERVAL
    if isinstance(v, (SqlArray, list, tuple)):
        return array_value_type(as_array(v), value_type)
    if isinstance(v, Jsonb):
        return JSONB
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


def int_limit(typ: SqlType) -> int:
    """The largest value of an INT type (INT2/INT4 narrower than the 64-bit INT)."""
    return INT_MAX if typ.width is None else 2 ** (typ.width - 1) - 1


def check_int_width(v: int, typ: SqlType, column: str | None = None) -> int:
    limit = int_limit(typ)
    if -limit - 1 <= v <= limit:
        return v
    where = f' (column "{column}")' if column else ""
    raise NumericValueOutOfRange(f"integer out of range for type {typ.sql()}{where}")


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
            # EXACT, not the thread default (28 digits): DECIMAL(38,12) holds 32-digit values
            d = d.quantize(Decimal(1).scaleb(-typ.scale), rounding=ROUND_HALF_UP, context=EXACT)
        except InvalidOperation:
            raise NumericValueOutOfRange(f"numeric value out of range for {what} of type {typ.sql()}") from None
    if typ.precision is not None and d.is_finite():
        int_digits = typ.precision - (typ.scale or 0)
        if d != 0 and d.adjusted() >= int_digits:
            raise NumericValueOutOfRange(f"numeric value out of range for {what} of type {typ.sql()}")
    return d


def float_as_decimal(v: float) -> Decimal | float:
    """A FLOAT compared with a DECIMAL, as the decimal of its shortest text (NaN stays FLOAT).

    ``d = 2.3`` on a DECIMAL column must find the stored ``2.3`` (PostgreSQL's literal is
    numeric; SQLite compares both as REAL); the binary float 2.3 is 2.29999..., which no
    stored decimal equals. INSERT converts a FLOAT for a DECIMAL column the same way.
    """
    return Decimal(repr(v)) if v == v else v


TIMESTAMPTZ = SqlType("TIMESTAMP", tz=True)


def common_type(a: SqlType, b: SqlType) -> SqlType | None:
    """The type both operands convert to for comparison/CASE/COALESCE, None if incompatible."""
    if a.kind == "NULL":
        return b
    if b.kind == "NULL":
        return a
    if a.kind == b.kind == "ARRAY" and a != b:
        return common_array_type(a, b, common_type)
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
