"""PEP 249 type objects and constructors, and how sqlkv's SQL types map onto them.

A column of type ``VARCHAR(20)`` reaches a driver user as the description entry
``("name", "TEXT", None, 20, None, None, True)``: the type code is the SQL type's kind, a plain
string, and it compares equal to the type object that covers it (``STRING == "TEXT"``), which
is all PEP 249 promises about type codes. Parameters go the other way: `adapt_parameter`
checks each bound value and turns the few Python types sqlkv does not store as such
(``bytearray``, ``memoryview``) into ones it does; a timezone-aware ``datetime.time`` is refused (TIME
is without time zone); ``uuid.UUID`` binds as UUID; a ``list`` binds as an ARRAY (a `SqlArray`),
and ARRAY values come back as lists (`arrays_as_lists`).
"""

from __future__ import annotations

import datetime
import time
import uuid
from decimal import Decimal
from collections.abc import Iterable, Iterator
from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.interval import Interval
from sqlkv.encoding.jsonb import Jsonb, from_python, to_python
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.many import take

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - name fixed by PEP 249
    """The local date of a POSIX timestamp."""
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802 - name fixed by PEP 249
    """The local time of day of a POSIX timestamp."""
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802 - name fixed by PEP 249
    """The local (naive) timestamp of a POSIX timestamp."""
    return Timestamp(*time.localtime(ticks)[:6])


def Binary(data: bytes | bytearray | memoryview | str) -> bytes:  # noqa: N802 - PEP 249
    """A value for a BYTES column. A str is encoded as UTF-8."""
    if isinstance(data, str):
        return data.encode("utf-8")
    return bytes(data)


class DBAPITypeObject:
    """Equal to every type code (SQL type kind) in its group, as PEP 249 asks."""

    def __init__(self, name: str, *kinds: str) -> None:
        self.name = name
        self.kinds = frozenset(kinds)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBAPITypeObject):
            return self.kinds == other.kinds
        if isinstance(other, str):
            return other.upper() in self.kinds
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self.kinds)

    def __repr__(self) -> str:
        return f"<sqlkv type {self.name}: {', '.join(sorted(self.kinds))}>"


STRING = DBAPITypeObject("STRING", "TEXT", "UUID")
BINARY = DBAPITypeObject("BINARY", "BYTES")
NUMBER = DBAPITypeObject("NUMBER", "INT", "FLOAT", "DECIMAL", "BOOL")
DATETIME = DBAPITypeObject("DATETIME", "DATE", "TIMESTAMP", "TIME")
# The implicit row id of a table without a primary key is an INT column; ROWID matches the
# type code the driver gives a column named "rowid" that the SQL layer marks hidden.
ROWID = DBAPITypeObject("ROWID", "ROWID")

# Python types a bound parameter may have, as the SQL layer receives them.
_PASS_THROUGH = (str, int, float, Decimal, bytes, bool, datetime.date, datetime.datetime, uuid.UUID)
_EXACT_PASS = frozenset((*_PASS_THROUGH, type(None))) - {Decimal}  # a Decimal may be a signaling NaN
_INT_LOW, _INT_HIGH = -(1 << 63), (1 << 63) - 1


def adapt_parameter(value: Any, position: int | str) -> Any:
    """Check one bound value and convert it to a runtime value sqlkv stores.

    ``position`` (1-based index or ``:name``) is only for the error message.
    """
    if isinstance(value, Decimal) and value.is_snan():
        raise DataError(f"parameter {position} is a signaling NaN (Decimal('sNaN')), which is not a "
                        f"DECIMAL value; use Decimal('NaN')")
    if type(value) is int and not _INT_LOW <= value <= _INT_HIGH:
        # Beyond INT's 64 bits a Python int is a number literal's DECIMAL, as `SELECT 2^70` spelled
        # out in SQL is; left as int it escaped every INT range check (`SELECT ~ ?` gave 71 bits).
        return Decimal(value)
    if value is None or type(value) in _EXACT_PASS or type(value) is Decimal:
        return value
    if isinstance(value, _PASS_THROUGH):
        return adapt_parameter(_plain(value), position)  # the plain value's own checks apply
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    where = f"parameter {position}" if isinstance(position, int) else f"parameter :{position}"
    if isinstance(value, datetime.timedelta):  # an INTERVAL of days and microseconds (no months)
        return Interval.from_timedelta(value)
    if isinstance(value, Interval):
        return value
    if isinstance(value, dict):  # a JSON document (issue 15): binds to JSONB
        return from_python(value, where)
    if isinstance(value, (list, SqlArray)):  # an ARRAY (sqlkv/sql/arraycasts.py); a JSONB column takes it too
        try:
            return _array_parameter(value, where)
        except NotSupportedError:  # nested lists: only a JSONB document holds them
            return from_python(value, where)
    if isinstance(value, datetime.time):
        if value.tzinfo is not None:  # TIME is without time zone: dropping the offset would lie
            raise NotSupportedError(f"{where} is a timezone-aware datetime.time; TIME is without time zone")
        return value
    raise ProgrammingError(
        f"{where} has unsupported type {type(value).__name__}; use None, int, float, Decimal, "
        "str, bytes, bool, date, datetime, time, timedelta, UUID, a list (an ARRAY, or JSONB) or a dict (JSONB)"
    )


def _array_parameter(value: list | SqlArray, where: str) -> SqlArray:
    items = []
    for item in value:
        if isinstance(item, (list, tuple, SqlArray)):
            raise NotSupportedError(f"{where} is a nested list; multi-dimensional arrays are not supported")
        items.append(adapt_parameter(item, where))
    return SqlArray(items)


def array_positions(columns: list[Any]) -> list[int]:
    """The result columns that are, or may be, ARRAYs (typed ARRAY, NULL or unknown)."""
    kinds = [getattr(c.type, "kind", None) for c in columns]
    return [i for i, k in enumerate(kinds) if k in ("ARRAY", "NULL", None)]


def arrays_as_lists(rows: Any, positions: list[int]) -> Any:
    """Rows with each ARRAY value at ``positions`` (`array_positions`) as a Python list."""
    if not positions:
        return rows
    return (_listed(row, positions) for row in rows)


def _listed(row: tuple, positions: list[int]) -> tuple:
    if not any(type(row[i]) is SqlArray for i in positions):
        return row
    return tuple(list(v.items) if type(v) is SqlArray else v for v in row)


def _plain(value: Any) -> Any:
    """A subclass of a storable type (SQLAlchemy's quoted_name, an IntEnum, numpy.float64, a
    pandas Timestamp) as its plain base value: the SQL layer types values by their exact class."""
    if isinstance(value, datetime.datetime):
        return datetime.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                                 value.microsecond, value.tzinfo, fold=value.fold)
    if isinstance(value, datetime.date):
        return datetime.date(value.year, value.month, value.day)
    for base in (bool, int, float, Decimal, str, bytes):
        if isinstance(value, base):
            return base(value)
    return value


def adapt_parameters(params: Any) -> Any:
    """Validate a whole parameter set: a sequence for ``?`` or a mapping for ``:name``."""
    if params is None:
        return ()
    if type(params) is tuple:
        # the common case: a tuple of plain values passes as it is
        for value in params:
            kind = type(value)
            if kind not in _EXACT_PASS or kind is int and not _INT_LOW <= value <= _INT_HIGH:
                break
        else:
            return params
    if isinstance(params, dict):
        return {key: adapt_parameter(value, key) for key, value in params.items()}
    if isinstance(params, (str, bytes, bytearray)) or not hasattr(params, "__iter__"):
        raise ProgrammingError(
            f"parameters must be a sequence or a mapping, not {type(params).__name__}"
        )
    if hasattr(params, "keys") and hasattr(params, "__getitem__"):
        return {key: adapt_parameter(params[key], key) for key in params.keys()}
    return tuple(adapt_parameter(value, i) for i, value in enumerate(params, start=1))


ADAPT_CHUNK = 512


def adapted_stream(seq_of_parameters: Iterable[Any]) -> Iterator[Any]:
    """`adapt_parameters` of each parameter set of an executemany, lazily, ADAPT_CHUNK sets read
    at a time: a chunk of tuples of plain values (the common case) is checked as a whole, at C
    speed. A set refused -- or an error of the caller's iterable -- is raised when it is
    reached, after the sets before it, as one set at a time would."""
    source = iter(seq_of_parameters)
    while True:
        chunk, failure = take(source, ADAPT_CHUNK)
        if _plain_tuples(chunk):
            yield from chunk
        else:
            for params in chunk:
                yield adapt_parameters(params)
        if failure is not None:
            raise failure
        if len(chunk) < ADAPT_CHUNK:
            return


def _plain_tuples(chunk: list[Any]) -> bool:
    """Whether `adapt_parameters` would pass every set of ``chunk`` unchanged."""
    if set(map(type, chunk)) != {tuple} or len(set(map(len, chunk))) > 1:
        return False
    for column in zip(*chunk):  # a column at a time: its ints range-checked by min and max
        kinds = set(map(type, column))
        if not kinds <= _EXACT_PASS:
            return False
        if int in kinds:
            ints = column if len(kinds) == 1 else [v for v in column if type(v) is int]
            if min(ints) < _INT_LOW or max(ints) > _INT_HIGH:
                return False
    return True


def jsonb_positions(columns: list[Any]) -> list[int]:
    """The result columns that are, or may be, JSONB (a scalar subquery's type is not known)."""
    return [i for i, col in enumerate(columns) if getattr(col.type, "kind", None) in ("JSONB", "NULL", None)]


def jsonb_as_python(rows: Iterator[tuple], positions: list[int], as_text: bool = False) -> Iterator[tuple]:
    """Rows with the JSONB columns at ``positions`` as plain Python (dict, list, str, number,
    bool, None for JSON null), as PostgreSQL drivers return jsonb -- or, ``as_text``, as JSON text."""
    return (_plain_jsonb(row, positions, str if as_text else _python) for row in rows)


def _python(value: Jsonb) -> Any:
    return to_python(value.tree)


def _plain_jsonb(row: tuple, positions: list[int], convert: Any) -> tuple:
    out = list(row)
    for i in positions:
        if isinstance(out[i], Jsonb):
            out[i] = convert(out[i])
    return tuple(out)


def description_entry(column: Any) -> tuple:
    """The PEP 249 7-item description of one result column (a `sqlkv.sql.context.Column`)."""
    sql_type = column.type
    kind = getattr(sql_type, "kind", None)
    if kind is None or kind == "NULL":
        type_code = None
    elif column.hidden and column.name.lower() == "rowid":
        type_code = "ROWID"
    else:
        type_code = kind
    width = getattr(sql_type, "width", None)
    precision = getattr(sql_type, "precision", None)
    scale = getattr(sql_type, "scale", None)
    # name, type_code, display_size, internal_size, precision, scale, null_ok (unknown: None)
    return (column.name, type_code, None, width, precision, scale, None)
