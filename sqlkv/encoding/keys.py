"""The order-preserving key codec: SQL values <-> bytes whose byte order is the values' SQL order.

Walk-through. ``SELECT * FROM users WHERE id = 10`` on table 104, primary index 1, becomes the
point get of ``index_prefix(104, 1) + encode_key([10]) + family_suffix(0)``:

    index_prefix(104, 1)   b"\\xf0\\x89"   uvarint 104 (0x88 + 104), uvarint 1
    encode_key([10])       b"\\x92"        a small int is one marker byte, 0x88 + 10
    family_suffix(0)       b"\\x88"        uvarint 0

A scan reading that row back calls ``decode_key(key, offset=2)`` and gets ``([10, 0], 4)``.

Each encoded value starts with a marker byte (`sqlkv.encoding.markers`) naming its type and
direction, so keys decode without a schema, and every encoding is prefix-free, so comparing two
encoded tuples bytewise compares them column by column. Per type:

- int: a varint whose marker carries the length: 0..109 is one byte; other values are a marker
  plus 1-8 big-endian bytes (two's complement for negatives). Range: signed 64 bits.
- float: one marker plus the IEEE-754 bits, sign bit flipped for positives and all bits flipped
  for negatives. ``-0.0`` encodes as ``0.0``; every NaN encodes as one NaN marker that sorts
  before all other floats (and decodes to ``float("nan")``).
- Decimal: sign class marker, then the adjusted exponent as a varint and the digits packed two
  per byte, terminated by 0x00 (all complemented for negatives). Equal values encode equal, so
  ``Decimal("1.50")`` decodes as ``Decimal("1.5")``. NaN and +-Infinity have their own markers.
- str / bytes: UTF-8 (or the raw bytes) with 0x00 escaped as 0x00 0xff and a 0x00 0x01
  terminator, so ``"a" < "a\\x00" < "ab"``.
- date: 3 bytes of ``toordinal()``; datetime (naive): 8 bytes of microseconds since 0001-01-01.
- bool: one marker each for false and true.

Descending values use their own markers: ints re-centre the one-byte range (``79 - v``) in the
0x20-0x7f marker family; every other type complements its ascending payload. NULL is 0x00
ascending (first) and 0xff descending (last).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import lru_cache

from sqlkv.encoding import markers as M
from sqlkv.encoding.scalars import (
    decode_date,
    decode_decimal,
    decode_timestamp,
    encode_date,
    encode_decimal,
    encode_timestamp,
)
from sqlkv.encoding.varint import (
    INT64_MAX,
    INT64_MIN,
    COMPLEMENT,
    append_varint,
    corrupt,
    read_varint,
)
from sqlkv.errors import CorruptionError, DataError

Encoder = Callable[[bytearray, object], None]
Decoder = Callable[[bytes, int], tuple[object, int]]

_DOUBLE = struct.Struct(">d")
_UINT64 = struct.Struct(">Q")
_SIGN_BIT = 1 << 63
_ALL_BITS = (1 << 64) - 1
_DESC_INT_PIVOT = M.INT_DESC_SMALL - 1  # desc int v is stored as the varint of 79 - v


# -- unsigned ids (table, index, family) ----------------------------------------------------


def encode_uvarint(n: int) -> bytes:
    """Order-preserving unsigned varint: 0..109 in one byte, larger ids in 2..9 bytes."""
    if 0 <= n < M.INT_SMALL:
        return _ONE_BYTE_IDS[n]
    if n < 0 or n > _ALL_BITS:
        raise DataError(f"id {n} is outside the unsigned 64-bit range")
    buf = bytearray()
    append_varint(buf, n, M.INT_BASE, M.INT_SMALL)
    return bytes(buf)


def decode_uvarint(data: bytes, offset: int) -> tuple[int, int]:
    """Decode an id written by `encode_uvarint` at ``offset``; return ``(id, new_offset)``."""
    if offset >= len(data):
        raise corrupt(data, offset, "key ends where an id was expected")
    marker = data[offset]
    if M.INT_ZERO <= marker <= M.INT_SMALL_MAX:
        return marker - M.INT_ZERO, offset + 1
    if marker < M.INT_ZERO or marker > M.INT_MAX_MARKER:
        raise corrupt(data, offset, f"marker 0x{marker:02x} is not an unsigned id")
    return read_varint(data, offset, M.INT_BASE, M.INT_SMALL)


_ONE_BYTE_IDS = [bytes([M.INT_ZERO + i]) for i in range(M.INT_SMALL)]


@lru_cache(maxsize=4096)
def index_prefix(table_id: int, index_id: int) -> bytes:
    """The key prefix of every entry of one index: ``/<table id>/<index id>``."""
    return encode_uvarint(table_id) + encode_uvarint(index_id)


@lru_cache(maxsize=4096)
def table_prefix(table_id: int) -> bytes:
    """The key prefix of every key of one table: ``/<table id>``."""
    return encode_uvarint(table_id)


def family_suffix(family_id: int) -> bytes:
    """The column family id that ends a row key."""
    return encode_uvarint(family_id)


# -- per-type encoders -------------------------------------------------------------------------


def _int_asc(buf: bytearray, v: int) -> None:
    if 0 <= v < M.INT_SMALL:
        buf.append(M.INT_ZERO + v)
        return
    if v < INT64_MIN or v > INT64_MAX:
        raise DataError(f"integer {v} is out of the 64-bit range")
    append_varint(buf, v, M.INT_BASE, M.INT_SMALL)


def _int_desc(buf: bytearray, v: int) -> None:
    if v < INT64_MIN or v > INT64_MAX:
        raise DataError(f"integer {v} is out of the 64-bit range")
    append_varint(buf, _DESC_INT_PIVOT - v, M.INT_DESC_BASE, M.INT_DESC_SMALL)


def _float_bits(v: float) -> int:
    """The IEEE bits of ``v`` reshaped so that unsigned order is numeric order."""
    if v == 0.0:
        v = 0.0  # -0.0 == 0.0 in SQL, so both encode as +0.0
    bits: int = _UINT64.unpack(_DOUBLE.pack(v))[0]
    return bits ^ _ALL_BITS if bits & _SIGN_BIT else bits | _SIGN_BIT


def _float_asc(buf: bytearray, v: float) -> None:
    if v != v:
        buf.append(M.FLOAT_NAN)
        return
    buf.append(M.FLOAT)
    buf += _UINT64.pack(_float_bits(v))


def _float_desc(buf: bytearray, v: float) -> None:
    if v != v:
        buf.append(M.FLOAT_NAN_DESC)
        return
    buf.append(M.FLOAT_DESC)
    buf += _UINT64.pack(_float_bits(v) ^ _ALL_BITS)


def _escaped(data: bytes) -> bytes:
    if b"\x00" in data:
        data = data.replace(b"\x00", b"\x00\xff")
    return data + b"\x00\x01"


def _bytes_asc(buf: bytearray, v: bytes) -> None:
    buf.append(M.BYTES)
    buf += _escaped(bytes(v))


def _bytes_desc(buf: bytearray, v: bytes) -> None:
    buf.append(M.BYTES_DESC)
    buf += _escaped(bytes(v)).translate(COMPLEMENT)


def _utf8(v: str) -> bytes:
    try:
        return v.encode()
    except UnicodeEncodeError as exc:
        raise DataError(f"string {v[:40]!r} is not valid Unicode (lone surrogate)") from exc


def _str_asc(buf: bytearray, v: str) -> None:
    buf.append(M.STRING)
    buf += _escaped(_utf8(v))


def _str_desc(buf: bytearray, v: str) -> None:
    buf.append(M.STRING_DESC)
    buf += _escaped(_utf8(v)).translate(COMPLEMENT)


def _bool_asc(buf: bytearray, v: bool) -> None:
    buf.append(M.TRUE if v else M.FALSE)


def _bool_desc(buf: bytearray, v: bool) -> None:
    buf.append(M.TRUE_DESC if v else M.FALSE_DESC)


def _null_asc(buf: bytearray, v: None) -> None:
    buf.append(M.NULL)


def _null_desc(buf: bytearray, v: None) -> None:
    buf.append(M.NULL_DESC)


def _decimal_asc(buf: bytearray, v: Decimal) -> None:
    encode_decimal(buf, v, False)


def _decimal_desc(buf: bytearray, v: Decimal) -> None:
    encode_decimal(buf, v, True)


def _date_asc(buf: bytearray, v: datetime.date) -> None:
    encode_date(buf, v, False)


def _date_desc(buf: bytearray, v: datetime.date) -> None:
    encode_date(buf, v, True)


def _timestamp_asc(buf: bytearray, v: datetime.datetime) -> None:
    encode_timestamp(buf, v, False)


def _timestamp_desc(buf: bytearray, v: datetime.datetime) -> None:
    encode_timestamp(buf, v, True)


# Exact-type dispatch, one table per direction (subclasses go through `_encoder_for_subclass`).
_ASC_ENCODERS: dict[type, Encoder] = {
    int: _int_asc,
    str: _str_asc,
    type(None): _null_asc,
    float: _float_asc,
    bool: _bool_asc,
    bytes: _bytes_asc,
    bytearray: _bytes_asc,
    memoryview: _bytes_asc,
    Decimal: _decimal_asc,
    datetime.date: _date_asc,
    datetime.datetime: _timestamp_asc,
}  # type: ignore[dict-item]
_DESC_ENCODERS: dict[type, Encoder] = {
    int: _int_desc,
    str: _str_desc,
    type(None): _null_desc,
    float: _float_desc,
    bool: _bool_desc,
    bytes: _bytes_desc,
    bytearray: _bytes_desc,
    memoryview: _bytes_desc,
    Decimal: _decimal_desc,
    datetime.date: _date_desc,
    datetime.datetime: _timestamp_desc,
}  # type: ignore[dict-item]

# Checked in this order so that bool wins over int and datetime over date.
_SUBCLASS_ORDER = (bool, int, float, Decimal, str, bytes, datetime.datetime, datetime.date)


def _encoder_for_subclass(value: object, descending: bool) -> Encoder:
    table = _DESC_ENCODERS if descending else _ASC_ENCODERS
    for base in _SUBCLASS_ORDER:
        if isinstance(value, base):
            return table[base]
    raise DataError(f"cannot encode a value of type {type(value).__name__} in a key")


def append_value(buf: bytearray, value: object, descending: bool = False) -> None:
    """Append the key encoding of one value to ``buf``."""
    table = _DESC_ENCODERS if descending else _ASC_ENCODERS
    encoder = table.get(type(value))
    if encoder is None:
        encoder = _encoder_for_subclass(value, descending)
    encoder(buf, value)


def encode_key(
    values: Sequence[object], descending: Sequence[bool] | None = None, prefix: bytes = b""
) -> bytes:
    """Encode ``values`` after ``prefix``; ``descending[i]`` makes value i descending.

    ``descending`` may be shorter than ``values``: missing entries mean ascending.
    """
    buf = bytearray(prefix)
    try:
        if not descending:
            for value in values:
                if type(value) is int and 0 <= value < _INT_SMALL:  # type: ignore[operator]
                    buf.append(_INT_ZERO + value)  # type: ignore[operator]
                else:
                    _append_asc(buf, value)
        else:
            ndesc = len(descending)
            for i, value in enumerate(values):
                if i < ndesc and descending[i]:
                    encoder = _DESC_ENCODERS.get(type(value))
                    if encoder is None:
                        encoder = _encoder_for_subclass(value, True)
                    encoder(buf, value)
                else:
                    _append_asc(buf, value)
    except UnicodeEncodeError as exc:
        raise DataError(f"string {exc.object[:40]!r} is not valid Unicode (lone surrogate)") from None
    return bytes(buf)


def _append_asc(buf: bytearray, value: object) -> None:
    """Append one ascending value, with the int and str cases inlined (the hot path)."""
    t = type(value)
    if t is int:
        if 0 <= value < _INT_SMALL:  # type: ignore[operator]
            buf.append(_INT_ZERO + value)  # type: ignore[operator]
        elif _INT_SMALL <= value <= INT64_MAX:  # type: ignore[operator]
            n = (value.bit_length() + 7) >> 3  # type: ignore[attr-defined]
            buf.append(_INT_SMALL_MAX + n)
            buf += value.to_bytes(n, "big")  # type: ignore[attr-defined]
        else:
            _int_asc(buf, value)  # type: ignore[arg-type]
    elif t is str:
        data = value.encode()  # type: ignore[attr-defined]
        buf.append(_STRING)
        if b"\x00" in data:
            data = data.replace(b"\x00", b"\x00\xff")
        buf += data
        buf += b"\x00\x01"
    else:
        encoder = _ASC_ENCODERS.get(t)
        if encoder is None:
            encoder = _encoder_for_subclass(value, False)
        encoder(buf, value)


_INT_ZERO = M.INT_ZERO
# The smallest positive int needing n payload bytes (index n): anything less is non-canonical.
_MIN_FOR_LENGTH = [0, M.INT_SMALL] + [1 << (8 * (n - 1)) for n in range(2, 9)]
_INT_SMALL = M.INT_SMALL
_INT_SMALL_MAX = M.INT_SMALL_MAX
_STRING = M.STRING


# -- decoders: ``decoder(data, offset_of_marker) -> (value, new_offset)`` ----------------------


def _dec_null(data: bytes, off: int) -> tuple[object, int]:
    return None, off + 1


def _dec_int_asc(data: bytes, off: int) -> tuple[object, int]:
    marker = data[off]
    if M.INT_ZERO <= marker <= M.INT_SMALL_MAX:
        return marker - M.INT_ZERO, off + 1
    if marker > M.INT_SMALL_MAX:  # positive, 1..8 payload bytes: inlined for speed
        end = off + marker - M.INT_SMALL_MAX + 1
        value = int.from_bytes(data[off + 1 : end], "big")
        if end <= len(data) and value >= _MIN_FOR_LENGTH[end - off - 1] and value <= INT64_MAX:
            return value, end
    value, end = read_varint(data, off, M.INT_BASE, M.INT_SMALL)
    if value < INT64_MIN or value > INT64_MAX:
        raise corrupt(data, off, "integer beyond the 64-bit range")
    return value, end


def _dec_int_desc(data: bytes, off: int) -> tuple[object, int]:
    stored, end = read_varint(data, off, M.INT_DESC_BASE, M.INT_DESC_SMALL)
    value = _DESC_INT_PIVOT - stored
    if value < INT64_MIN or value > INT64_MAX:
        raise corrupt(data, off, "integer beyond the 64-bit range")
    return value, end


def _dec_float(data: bytes, off: int, flip: int) -> tuple[object, int]:
    end = off + 9
    if end > len(data):
        raise corrupt(data, off, "truncated float")
    bits: int = _UINT64.unpack_from(data, off + 1)[0] ^ flip
    bits = bits ^ _SIGN_BIT if bits & _SIGN_BIT else bits ^ _ALL_BITS
    value: float = _DOUBLE.unpack(_UINT64.pack(bits))[0]
    if value != value or (value == 0.0 and bits):
        raise corrupt(data, off, "non-canonical float (NaN or -0.0 payload)")
    return value, end


def _dec_float_asc(data: bytes, off: int) -> tuple[object, int]:
    return _dec_float(data, off, 0)


def _dec_float_desc(data: bytes, off: int) -> tuple[object, int]:
    return _dec_float(data, off, _ALL_BITS)


def _dec_nan(data: bytes, off: int) -> tuple[object, int]:
    return float("nan"), off + 1


def _unescape(data: bytes, start: int, zero: int) -> tuple[bytes, int]:
    """Read escaped bytes from ``start`` up to the terminator; ``zero`` is 0x00 (or 0xff desc)."""
    zero_byte = b"\x00" if zero == 0 else b"\xff"
    escape, terminator = (0xFF, 0x01) if zero == 0 else (0x00, 0xFE)
    pos = data.find(zero_byte, start)
    if pos < 0 or pos + 1 >= len(data):
        raise corrupt(data, start - 1, "unterminated string or bytes")
    if data[pos + 1] == terminator:  # the common case: no escaped 0x00 inside
        return data[start:pos], pos + 2
    parts = []
    while True:
        follower = data[pos + 1]
        if follower == terminator:
            parts.append(data[start:pos])
            return b"\x00".join(parts) if zero == 0 else b"\xff".join(parts), pos + 2
        if follower != escape:
            raise corrupt(data, pos, f"bad escape 0x{zero:02x} 0x{follower:02x}")
        parts.append(data[start:pos])
        start = pos + 2
        pos = data.find(zero_byte, start)
        if pos < 0 or pos + 1 >= len(data):
            raise corrupt(data, start, "unterminated string or bytes")


def _dec_bytes_asc(data: bytes, off: int) -> tuple[object, int]:
    raw, end = _unescape(data, off + 1, 0x00)
    return bytes(raw), end


def _dec_bytes_desc(data: bytes, off: int) -> tuple[object, int]:
    raw, end = _unescape(data, off + 1, 0xFF)
    return bytes(raw).translate(COMPLEMENT), end


def _utf8_decode(raw: bytes, data: bytes, off: int) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise corrupt(data, off, "string is not valid UTF-8") from None


def _dec_str_asc(data: bytes, off: int) -> tuple[object, int]:
    raw, end = _unescape(data, off + 1, 0x00)
    return _utf8_decode(raw, data, off), end


def _dec_str_desc(data: bytes, off: int) -> tuple[object, int]:
    raw, end = _unescape(data, off + 1, 0xFF)
    return _utf8_decode(bytes(raw).translate(COMPLEMENT), data, off), end


def _dec_false(data: bytes, off: int) -> tuple[object, int]:
    return False, off + 1


def _dec_true(data: bytes, off: int) -> tuple[object, int]:
    return True, off + 1


def _build_tables() -> tuple[list[Decoder | None], list[Decoder | None]]:
    asc: list[Decoder | None] = [None] * 256
    desc: list[Decoder | None] = [None] * 256
    asc[M.NULL] = _dec_null
    desc[M.NULL_DESC] = _dec_null
    asc[M.FLOAT_NAN], asc[M.FLOAT] = _dec_nan, _dec_float_asc
    desc[M.FLOAT_NAN_DESC], desc[M.FLOAT_DESC] = _dec_nan, _dec_float_desc
    asc[M.FALSE], asc[M.TRUE] = _dec_false, _dec_true
    desc[M.FALSE_DESC], desc[M.TRUE_DESC] = _dec_false, _dec_true
    asc[M.BYTES], desc[M.BYTES_DESC] = _dec_bytes_asc, _dec_bytes_desc
    asc[M.STRING], desc[M.STRING_DESC] = _dec_str_asc, _dec_str_desc
    asc[M.DATE] = desc[M.DATE_DESC] = decode_date
    asc[M.TIMESTAMP] = desc[M.TIMESTAMP_DESC] = decode_timestamp
    for marker in range(M.DECIMAL_NAN, M.DECIMAL_NAN_DESC + 1):
        (desc if marker in M.DESCENDING_MARKERS else asc)[marker] = decode_decimal
    for marker in range(M.INT_BASE, M.INT_MAX_MARKER + 1):
        asc[marker] = _dec_int_asc
    for marker in range(M.INT_DESC_BASE, M.INT_DESC_MAX_MARKER + 1):
        desc[marker] = _dec_int_desc
    return asc, desc


_ASC_DECODERS, _DESC_DECODERS = _build_tables()
_ANY_DECODERS = [a if a is not None else d for a, d in zip(_ASC_DECODERS, _DESC_DECODERS)]


def decode_value(data: bytes, offset: int = 0) -> tuple[object, bool, int]:
    """Decode the one value at ``offset``: ``(value, is_descending, new_offset)``."""
    if offset >= len(data):
        raise corrupt(data, offset, "key ends where a value was expected")
    marker = data[offset]
    decoder = _ANY_DECODERS[marker]
    if decoder is None:
        raise corrupt(data, offset, f"unknown marker 0x{marker:02x}")
    try:
        value, end = decoder(data, offset)
    except (IndexError, ValueError, OverflowError, struct.error) as exc:
        raise corrupt(data, offset, f"undecodable value ({exc})") from None
    return value, marker in M.DESCENDING_MARKERS, end


def decode_key(
    data: bytes,
    count: int | None = None,
    descending: Sequence[bool] | None = None,
    offset: int = 0,
) -> tuple[list[object], int]:
    """Decode ``count`` values (all up to the end if None) from ``offset``.

    Returns ``(values, new_offset)``. With ``descending`` given, each value's marker must have
    that direction (missing entries mean ascending); otherwise the markers decide.
    Raises `CorruptionError` naming the offset for unknown markers or truncated values.
    """
    values: list[object] = []
    size = len(data)
    ndesc = len(descending) if descending else 0
    remaining = size if count is None else count  # an upper bound on the values left
    i = 0
    try:
        while remaining > 0 and offset < size:
            marker = data[offset]
            if _INT_ZERO <= marker <= _INT_SMALL_MAX and not (i < ndesc and descending[i]):  # type: ignore[index]
                values.append(marker - _INT_ZERO)
                offset += 1
            elif marker == _STRING and not (i < ndesc and descending[i]):  # type: ignore[index]
                end = data.find(b"\x00", offset + 1)
                if end > 0 and data[end + 1] == 0x01:  # unescaped: the common case
                    values.append(data[offset + 1 : end].decode())
                    offset = end + 2
                else:
                    value, offset = _dec_str_asc(data, offset)
                    values.append(value)
            else:
                if descending is None:
                    decoder = _ANY_DECODERS[marker]
                elif i < ndesc and descending[i]:
                    decoder = _DESC_DECODERS[marker]
                else:
                    decoder = _ASC_DECODERS[marker]
                if decoder is None:
                    raise corrupt(data, offset, _bad_marker_message(marker, descending, i, ndesc))
                value, offset = decoder(data, offset)
                values.append(value)
            i += 1
            remaining -= 1
    except CorruptionError:
        raise
    except UnicodeDecodeError:
        raise corrupt(data, offset, "string is not valid UTF-8") from None
    except (IndexError, ValueError, OverflowError, struct.error) as exc:
        raise corrupt(data, offset, f"undecodable value ({exc})") from None
    if count is not None and i < count:
        raise corrupt(data, offset, f"key ends after {i} of {count} values")
    return values, offset


def _bad_marker_message(marker: int, descending: Sequence[bool] | None, i: int, n: int) -> str:
    if descending is None or _ANY_DECODERS[marker] is None:
        return f"unknown marker 0x{marker:02x}"
    direction = "a descending" if i < n and descending[i] else "an ascending"
    return f"marker 0x{marker:02x} of value {i} is not {direction} encoding"


def is_descending_marker(marker: int) -> bool:
    """Whether a value starting with ``marker`` is a descending encoding."""
    return marker in M.DESCENDING_MARKERS


NULL_ASC = bytes([M.NULL])
NULL_DESC = bytes([M.NULL_DESC])
NOT_NULL_ASC = bytes([M.NOT_NULL])

__all__ = [
    "encode_key",
    "decode_key",
    "decode_value",
    "append_value",
    "encode_uvarint",
    "decode_uvarint",
    "index_prefix",
    "table_prefix",
    "family_suffix",
    "is_descending_marker",
    "NULL_ASC",
    "NULL_DESC",
    "NOT_NULL_ASC",
]
