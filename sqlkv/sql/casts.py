"""Casts between SQL types: strict assignment casts and permissive CAST, text parsing and formatting.

``INSERT INTO t (price) VALUES (3)`` into a ``DECIMAL(10,2)`` column runs
``assign_cast(3, typ, "price")``: assignment is strict (no text to number), converts the int to
``Decimal("3.00")`` and checks the precision. ``SELECT CAST(price AS TEXT)`` uses the more
permissive `cast`, which parses and formats (``'12.5'`` -> 12.5, `to_text`) and raises
`DataError` when the input cannot be converted.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal, InvalidOperation, ROUND_HALF_UP

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.interval import Interval
from sqlkv.sql.arraycasts import assign_array, cast_array, format_array
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import DataError, NumericValueOutOfRange, ProgrammingError
from sqlkv.sql.types import INT, INT_MAX, INT_MIN, SqlType, check_int_range, check_int_width, fit_decimal, type_name
from sqlkv.sql.expr.dates import parse_interval
from sqlkv.sql.timezone import local_to_utc
from sqlkv.sql.jsonb_casts import assign_jsonb, cast_jsonb

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


def parse_timestamptz(text: str) -> dt.datetime:
    """Text for a TIMESTAMPTZ: with an offset, that instant; without, a wall time in the
    session time zone. Naive UTC, as stored."""
    s = text.strip()
    try:
        value = dt.datetime.fromisoformat(s)
    except ValueError:
        raise DataError(f'invalid input syntax for type TIMESTAMPTZ: "{text}"') from None
    return local_to_utc(value)


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
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, (uuid.UUID, Interval, Jsonb)):
        return str(v)
    if isinstance(v, SqlArray):
        return format_array(v, to_text)
    if isinstance(v, (bytes, bytearray, memoryview)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise DataError("invalid UTF-8 in BYTES value cast to TEXT") from None
    raise DataError(f"cannot convert {type_name(v)} to TEXT")


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
    if kind == "ARRAY":
        return assign_array(value, typ, column, assign_cast, cast)
    if isinstance(value, SqlArray) and kind not in ("NULL", "JSONB"):  # JSONB takes it as a JSON array
        raise _assign_error(value, typ, column)
    if kind == "INT":
        if isinstance(value, bool):
            raise _assign_error(value, typ, column)
        if isinstance(value, int):
            if INT_MIN <= value <= INT_MAX:
                return value if typ.width is None else check_int_width(value, typ, column)
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
            # an aware value is that instant in UTC; a naive one is kept (UTC for TIMESTAMPTZ)
            return value if value.tzinfo is None else local_to_utc(value)
        if isinstance(value, dt.date):
            midnight = dt.datetime(value.year, value.month, value.day)
            return local_to_utc(midnight) if typ.tz else midnight
        if isinstance(value, str):
            return _parse_for_column(parse_timestamptz if typ.tz else parse_timestamp, value, typ, column)
        raise _assign_error(value, typ, column)
    if kind in ("TIME", "UUID", "INTERVAL"):
        if isinstance(value, str):
            return _parse_for_column(PARSERS[kind], value, typ, column)
        if kind == "TIME" and isinstance(value, dt.time) and value.tzinfo is None:
            return value
        if kind == "UUID" and isinstance(value, uuid.UUID) or kind == "INTERVAL" and isinstance(value, Interval):
            return value
        raise _assign_error(value, typ, column)
    if kind == "JSONB":
        return assign_jsonb(value, column)
    return value  # NULL type: no constraint


def parse_time(text: str) -> dt.time:
    try:
        value = dt.time.fromisoformat(text.strip())
    except ValueError:
        raise DataError(f'invalid input syntax for type TIME: "{text}"') from None
    if value.tzinfo is not None:
        raise DataError(f'TIME is without time zone: "{text}"')
    return value


def parse_uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise DataError(f'invalid input syntax for type UUID: "{text}"') from None


def parse_interval_text(text: str) -> Interval:
    try:
        return parse_interval(text)
    except ProgrammingError as e:
        raise DataError(str(e)) from None


PARSERS = {"TIME": parse_time, "UUID": parse_uuid, "INTERVAL": parse_interval_text}


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
    if kind == "ARRAY":
        return cast_array(value, typ, cast)
    if isinstance(value, SqlArray) and kind not in ("TEXT", "NULL", "JSONB"):
        raise _cast_error(value, typ)
    if kind == "JSONB" or type(value) is Jsonb and kind not in ("TEXT", "NULL"):
        return cast_jsonb(value, typ)  # issue 15: to and from JSONB (jsonb_casts.py)
    if kind == "INT":
        return _cast_int(value) if typ.width is None else check_int_width(_cast_int(value), typ)
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
            return value if value.tzinfo is None else local_to_utc(value)
        if isinstance(value, dt.date):
            midnight = dt.datetime(value.year, value.month, value.day)
            return local_to_utc(midnight) if typ.tz else midnight
        if isinstance(value, str):
            return parse_timestamptz(value) if typ.tz else parse_timestamp(value)
    elif kind == "TIME":
        if isinstance(value, str):
            return parse_time(value)
        if isinstance(value, dt.datetime):
            return value.time()
        if isinstance(value, dt.time):
            return value
    elif kind == "INTERVAL":
        if isinstance(value, str):
            return parse_interval_text(value)
        if isinstance(value, Interval):
            return value
    elif kind == "UUID":
        if isinstance(value, str):
            return parse_uuid(value)
        if isinstance(value, (bytes, bytearray, memoryview)) and len(value) == 16:
            return uuid.UUID(bytes=bytes(value))
        if isinstance(value, uuid.UUID):
            return value
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
