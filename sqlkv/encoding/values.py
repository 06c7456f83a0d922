"""Row values: the non-key columns of a row, stored as one msgpack value under the row's key.

Walk-through: ``INSERT INTO users (id, name, balance) VALUES (10, 'ann', 2.50)`` with ``id`` the
primary key (column 1) puts, at the key ``/104/1/10/0``, the value
``encode_row_value({2: "ann", 3: Decimal("2.50")}, width=4)`` -- a msgpack array indexed by
column id, ``[nil, nil, "ann", 2.50]`` (*slots*: nil for ids with no value -- NULLs, key
columns, dropped columns, id 0). Without ``width`` (multi-family tables, tables whose ids are
sparse after many ALTERs) it is a msgpack map from column id to value, NULLs absent, as every
value was before slots. Either way adding a column needs no rewrite of old rows: a map lacks
its id, an older array is shorter, both read as NULL. ``decode_row_value`` returns the dict of
non-NULL columns from either form; a scan reads whole columns of a batch with `decode_columns`
(one ``itemgetter`` per column over the unpacked arrays, no dict per row: about half the
unpacking cost of maps).

bool, int (64-bit), float, str and bytes are msgpack's own types. The rest are msgpack ext
types with these codes and payloads:

    1  Decimal              ``str(value)`` in ASCII (exact: keeps ``2.50``, NaN, Infinity)
    2  date                 ``>I``  proleptic Gregorian ordinal
    3  datetime (naive)     ``>q``  microseconds since 0001-01-01 00:00
    4  datetime (aware)     ``>qq`` wall-clock microseconds as in 3, then UTC offset in
                            microseconds (decoded with a fixed-offset ``datetime.timezone``)
    5  time (naive)         ``>q``  microseconds since midnight
    6  timedelta            ``>iii`` days, seconds, microseconds (timedelta's normal form)
    7  UUID                 16 raw bytes
    8  Interval             ``>qqq`` months, days, microseconds
    9  SqlArray (ARRAY)     a msgpack array of the elements (nil for a NULL element), each
                            element in this same format; one dimension (`sqlkv.encoding.arrays`)
    10 JSONB                its text in UTF-8 (`sqlkv.encoding.jsonb`: normal form, parsed on read)

Packing uses one ``msgpack.Packer`` per thread (a Packer is not reentrant: its ``default`` hook
runs Python code, during which another thread could otherwise use the same buffer).
"""

from __future__ import annotations

import datetime
import struct
import threading
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from itertools import repeat
from operator import itemgetter
from typing import Any

import msgpack

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.interval import Interval
from sqlkv.encoding.jsonb import Jsonb, decode_stored, encode_stored
from sqlkv.errors import CorruptionError, DataError

EXT_DECIMAL = 1
EXT_DATE = 2
EXT_DATETIME = 3
EXT_DATETIME_TZ = 4
EXT_TIME = 5
EXT_TIMEDELTA = 6
EXT_UUID = 7
EXT_INTERVAL = 8
EXT_ARRAY = 9
EXT_JSONB = 10

_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_TWO_I64 = struct.Struct(">qq")
_THREE_I32 = struct.Struct(">iii")
_THREE_I64 = struct.Struct(">qqq")
_EPOCH = datetime.datetime(1, 1, 1)
# ExtType's __new__ re-checks the code and payload types in Python on every call; the namedtuple
# constructor `_make` skips that, and our codes and payloads are valid by construction.
_ext = msgpack.ExtType._make


def _wall_micros(v: datetime.datetime) -> int:
    seconds = (v.toordinal() - 1) * 86_400 + v.hour * 3600 + v.minute * 60 + v.second
    return seconds * 1_000_000 + v.microsecond


def _to_ext(value: Any) -> msgpack.ExtType:
    """msgpack's ``default`` hook: the ext form of a value msgpack has no type for."""
    t = type(value)
    if t is Decimal:
        return _ext((EXT_DECIMAL, str(value).encode("ascii")))
    if t is datetime.datetime:
        offset = value.utcoffset()
        if offset is None:
            return _ext((EXT_DATETIME, _I64.pack(_wall_micros(value))))
        offset_micros = offset // datetime.timedelta(microseconds=1)
        return _ext((EXT_DATETIME_TZ, _TWO_I64.pack(_wall_micros(value), offset_micros)))
    if t is datetime.date:
        return _ext((EXT_DATE, _U32.pack(value.toordinal())))
    if t is datetime.time:
        if value.tzinfo is not None:
            raise DataError(f"timezone-aware time {value.isoformat()} is not supported")
        micros = (value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000
        return _ext((EXT_TIME, _I64.pack(micros + value.microsecond)))
    if t is datetime.timedelta:
        packed = _THREE_I32.pack(value.days, value.seconds, value.microseconds)
        return _ext((EXT_TIMEDELTA, packed))
    if t is uuid.UUID:
        return _ext((EXT_UUID, value.bytes))
    if t is Jsonb:
        return _ext((EXT_JSONB, encode_stored(value)))
    if t is Interval:
        try:
            return _ext((EXT_INTERVAL, _THREE_I64.pack(value.months, value.days, value.micros)))
        except struct.error:
            raise DataError(f"interval {value} is out of range") from None
    if t is SqlArray:
        return _ext((EXT_ARRAY, _pack_array(value)))
    for base in (Decimal, datetime.datetime, datetime.date, datetime.time, uuid.UUID):
        if isinstance(value, base):  # a subclass: store it as its base type
            return _to_ext(_as_base(value, base))
    raise DataError(f"cannot store a value of type {t.__name__}")


def _as_base(value: Any, base: type) -> Any:
    if base is Decimal:
        return Decimal(value)
    if base is uuid.UUID:
        return uuid.UUID(bytes=value.bytes)
    if base is datetime.datetime:
        return datetime.datetime(value.year, value.month, value.day, value.hour, value.minute,
                                 value.second, value.microsecond, value.tzinfo)
    if base is datetime.date:
        return datetime.date(value.year, value.month, value.day)
    return datetime.time(value.hour, value.minute, value.second, value.microsecond, value.tzinfo)


def _from_ext(code: int, data: bytes) -> object:
    """msgpack's ``ext_hook``: rebuild a value from its ext form."""
    try:
        if code == EXT_DECIMAL:
            return Decimal(data.decode("ascii"))
        if code == EXT_DATETIME:
            return _EPOCH + datetime.timedelta(microseconds=_I64.unpack(data)[0])
        if code == EXT_DATE:
            return datetime.date.fromordinal(_U32.unpack(data)[0])
        if code == EXT_DATETIME_TZ:
            wall, offset = _TWO_I64.unpack(data)
            zone = datetime.timezone(datetime.timedelta(microseconds=offset))
            return (_EPOCH + datetime.timedelta(microseconds=wall)).replace(tzinfo=zone)
        if code == EXT_TIME:
            seconds, micros = divmod(_I64.unpack(data)[0], 1_000_000)
            minutes, second = divmod(seconds, 60)
            hour, minute = divmod(minutes, 60)
            return datetime.time(hour, minute, second, micros)
        if code == EXT_TIMEDELTA:
            days, seconds, micros = _THREE_I32.unpack(data)
            return datetime.timedelta(days, seconds, micros)
        if code == EXT_UUID:
            return uuid.UUID(bytes=data)
        if code == EXT_INTERVAL:
            return Interval(*_THREE_I64.unpack(data))
        if code == EXT_ARRAY:
            return _unpack_array(data)
        if code == EXT_JSONB:
            return decode_stored(data)
    except (ValueError, OverflowError, struct.error, ArithmeticError) as exc:
        raise CorruptionError(f"corrupt row value: bad ext type {code} payload ({exc})") from None
    raise CorruptionError(f"corrupt row value: unknown ext type {code}")


def _pack_array(value: SqlArray) -> bytes:
    if any(isinstance(v, SqlArray) for v in value.items):  # it could not be read back (one dimension)
        raise DataError("cannot store a multi-dimensional array")
    # a fresh packer: the thread's own is busy packing the row this array belongs to
    return msgpack.packb(list(value.items), default=_to_ext, use_bin_type=True, datetime=False)


def _unpack_array(data: bytes) -> SqlArray:
    try:
        items = msgpack.unpackb(data, ext_hook=_from_ext, raw=False)
    except CorruptionError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise CorruptionError(f"corrupt row value: bad array payload ({type(exc).__name__}: {exc})") from None
    if type(items) is not list or any(isinstance(v, (SqlArray, list, dict)) for v in items):
        raise CorruptionError("corrupt row value: an array payload is not a list of scalars")
    return SqlArray(items)


_local = threading.local()


def _packer() -> Callable[[object], bytes]:
    try:
        return _local.pack  # type: ignore[no-any-return]
    except AttributeError:
        pack = msgpack.Packer(default=_to_ext, use_bin_type=True, datetime=False).pack
        _local.pack = pack
        return pack


def _pack(obj: object) -> bytes:
    try:
        pack = _local.pack
    except AttributeError:
        pack = _packer()
    try:
        return pack(obj)  # type: ignore[no-any-return]
    except DataError:
        raise
    except OverflowError as exc:
        raise DataError(f"integer out of the 64-bit range ({exc})") from None
    except (TypeError, ValueError) as exc:
        raise DataError(f"cannot store value: {exc}") from None


def _unpack(data: bytes) -> Any:
    try:
        return msgpack.unpackb(data, ext_hook=_from_ext, raw=False, strict_map_key=False)
    except CorruptionError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        # ExtraData, FormatError, StackError and UnicodeDecodeError are ValueErrors
        raise CorruptionError(f"corrupt row value: {type(exc).__name__}: {exc}") from None


def encode_row_value(columns: dict[int, object], width: int | None = None) -> bytes:
    """Encode a row's non-key columns (column id -> value; NULLs may be left out): as slots
    (an array of ``width`` values indexed by column id, nil where there is none) when
    ``width`` is given and covers every id, else as a map."""
    if width is not None and columns and max(columns) < width:
        return _pack(list(map(columns.get, range(width))))
    return _pack(columns)


def encode_slots(slots: Sequence[object]) -> bytes:
    """Encode a row's slots built by the caller (the value of column id ``i`` at ``i``, None
    where there is none): what `encode_row_value` writes given a width (all NULL: nils)."""
    return encode_values(slots)


def slot_width(column_ids: Sequence[int]) -> int | None:
    """The slot array width for a table storing ``column_ids`` in one value, or None when its
    ids are too sparse for slots (nil for each absent id would outweigh the map's keys)."""
    if not column_ids:
        return None
    width = max(column_ids) + 1
    return width if width <= 2 * len(column_ids) + 8 else None


def decode_row_value(data: bytes) -> dict[int, object]:
    """Decode what `encode_row_value` wrote: column id -> value, NULLs absent."""
    return _as_map(_unpack(data))


def row_value_getter(data: bytes, width: int) -> Callable[[int], object]:
    """``decode_row_value(data).get`` (None for NULL) for column ids below ``width``, without
    building a dict from a slot array: the array padded with nils to ``width`` (columns
    added after it was written), indexed directly. A point read's few lookups."""
    row = _unpack(data)
    if type(row) is list:
        if len(row) < width:
            row += [None] * (width - len(row))
        return row.__getitem__
    return _as_map(row).get


def _as_map(row: object) -> dict[int, object]:
    if type(row) is list or type(row) is tuple:
        return {cid: v for cid, v in enumerate(row) if v is not None}  # type: ignore[arg-type]
    if type(row) is not dict:
        raise CorruptionError(f"corrupt row value: expected a map or an array, found {type(row).__name__}")
    return row  # type: ignore[return-value]


def encode_single(value: object) -> bytes:
    """Encode one value on its own (an element of an exploded column), NULL as nil."""
    return _pack(value)


def decode_single(data: bytes) -> object:
    """Decode what `encode_single` wrote."""
    return _unpack(data)


_ARRAY32 = struct.Struct(">BI")  # msgpack's array 32 header: 0xdd, then the element count


def decode_row_values(datas: list[bytes], text: bool = True) -> list[dict[int, object]]:
    """`decode_row_value` of each of ``datas`` (a scan's batch), unpacked by one C-level call
    (`_unpacked`)."""
    rows, kinds = _unpacked(datas, text)
    if tuple in kinds:
        return [row if type(row) is dict else _as_map(row) for row in rows]
    return list(rows)


def decode_columns(datas: list[bytes], column_ids: Sequence[int], text: bool = True) -> dict[int, list]:
    """The values of each of ``column_ids`` over a batch of row values (None where NULL), in
    order: from slot arrays all long enough, one C-level ``map(itemgetter(id), rows)`` per
    column; from maps one ``map(dict.get, ...)``; otherwise (maps and arrays mixed, arrays
    written before a column was added) row by row. The same values as `decode_row_values`."""
    rows, kinds = _unpacked(datas, text)
    if kinds == _SLOTS:
        try:
            return {cid: list(map(itemgetter(cid), rows)) for cid in column_ids}
        except IndexError:  # an array shorter than an id: written before that column was added
            pass
    elif kinds == _MAPS:
        return {cid: list(map(dict.get, rows, repeat(cid))) for cid in column_ids}
    return {cid: [_column(row, cid) for row in rows] for cid in column_ids}


def _column(row: tuple | dict, cid: int) -> object:
    if type(row) is dict:
        return row.get(cid)
    return row[cid] if cid < len(row) else None


def _unpacked(datas: list[bytes], text: bool) -> tuple[Sequence, set[type]]:
    """The batch's values parsed by one ``unpackb``, and their types (maps, slot arrays as
    tuples): the values are concatenated behind an array header counting them, so msgpack
    builds the sequence itself (no iterator step per value). Anything short of exactly one
    map or array per value filling the bytes exactly (a corrupt value could shift the split)
    is decoded again value by value, which names the error.

    Arrays come out as tuples, not lists: a tuple of plain values leaves the garbage
    collector's tracking at its first collection, a list stays tracked and is traversed
    again by the older generations (a third of the unpacking time on 4,096-row batches).

    ``text=False`` (the caller reads no column stored as a msgpack string: no TEXT) leaves
    strings as the bytes they are stored as, skipping their UTF-8 decoding (a quarter of the
    unpacking time on a row with two short strings); the other values are the same."""
    parts = [_ARRAY32.pack(0xDD, len(datas))]
    parts += datas
    try:
        rows = msgpack.unpackb(b"".join(parts), ext_hook=_from_ext, raw=not text, strict_map_key=False,
                               use_list=False)
    except Exception:  # noqa: BLE001 -- reported precisely by the per-value decode
        rows = None
    kinds = set(map(type, rows)) if type(rows) is tuple else None
    if kinds is None or not kinds <= _ROW_FORMS:
        rows = [decode_row_value(data) for data in datas]  # raises the corrupt value's error
        kinds = _MAPS if rows else set()
    return rows, kinds


_SLOTS = {tuple}
_MAPS = {dict}
_ROW_FORMS = {dict, tuple}


def encode_values(values: Sequence[object]) -> bytes:
    """Encode a plain list of values (index STORING columns), NULLs included as nil."""
    return _pack(values if type(values) in (list, tuple) else list(values))


def decode_values(data: bytes) -> list[object]:
    """Decode what `encode_values` wrote."""
    values = _unpack(data)
    if type(values) is not list:
        raise CorruptionError(f"corrupt value list: expected an array, found {type(values).__name__}")
    return values
