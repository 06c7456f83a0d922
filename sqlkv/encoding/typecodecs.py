"""Per-type key encoders and decoders, and the dispatch tables `keys` drives them through.

Walk-through: ``encode_key([2.5], [True])`` looks up ``_DESC_ENCODERS[float]`` and runs
`_float_desc`, which appends the descending float marker 0x04 and the complemented,
order-transformed IEEE bits. ``decode_key`` reads the marker 0x04, finds `_dec_float_desc` in
``DESC_DECODERS[0x04]`` and reverses both steps. The hot int and str cases are inlined in
`sqlkv.encoding.keys`; everything else is a table lookup into this module.

Encoders are ``encoder(buf, value) -> None``; decoders are ``decoder(data, offset_of_marker)
-> (value, new_offset)``, and raise `CorruptionError` for payloads a correct encoder cannot have
written (so decoding is canonical: re-encoding yields the same bytes).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from sqlkv.encoding import arrays, extended
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding import markers as M
from sqlkv.encoding.interval import Interval
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.encoding.jsonb_keys import jsonb_asc, jsonb_desc
from sqlkv.encoding.scalars import (
    decode_date,
    decode_decimal,
    decode_timestamp,
    encode_date,
    encode_decimal,
    encode_timestamp,
)
from sqlkv.encoding.varint import (
    COMPLEMENT,
    INT64_MAX,
    INT64_MIN,
    append_varint,
    corrupt,
    read_varint,
)
from sqlkv.errors import DataError

# Each encoder takes the one value type its table entry maps it from (int, str, Decimal...):
# ``Any`` lets the tables hold them all.
Encoder = Callable[[bytearray, Any], None]
Decoder = Callable[[bytes, int], tuple[object, int]]

_DOUBLE = struct.Struct(">d")
_UINT64 = struct.Struct(">Q")
_SIGN_BIT: Final = 1 << 63
_ALL_BITS: Final = (1 << 64) - 1
DESC_INT_PIVOT: Final = M.INT_DESC_SMALL - 1  # desc int v is stored as the varint of 79 - v
_DESC_SMALL_TOP: Final = M.INT_DESC_BASE + 8 + DESC_INT_PIVOT  # 0x77: the marker of desc 0
# The smallest positive int needing n payload bytes (index n): anything less is non-canonical.
_MIN_FOR_LENGTH = [0, M.INT_SMALL] + [1 << (8 * (n - 1)) for n in range(2, 9)]

# -- per-type encoders -------------------------------------------------------------------------


def append_int_asc(buf: bytearray, v: int) -> None:
    if 0 <= v < M.INT_SMALL:
        buf.append(M.INT_ZERO + v)
        return
    if v < INT64_MIN or v > INT64_MAX:
        raise DataError(f"integer {v} is out of the 64-bit range")
    append_varint(buf, v, M.INT_BASE, M.INT_SMALL)


def _int_desc(buf: bytearray, v: int) -> None:
    if 0 <= v < M.INT_DESC_SMALL:
        buf.append(_DESC_SMALL_TOP - v)  # one byte: marker 0x28 + (79 - v)
        return
    if v < INT64_MIN or v > INT64_MAX:
        raise DataError(f"integer {v} is out of the 64-bit range")
    append_varint(buf, DESC_INT_PIVOT - v, M.INT_DESC_BASE, M.INT_DESC_SMALL)


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


def _bytes_asc(buf: bytearray, v: bytes | bytearray | memoryview) -> None:
    buf.append(M.BYTES)
    buf += _escaped(bytes(v))


def _bytes_desc(buf: bytearray, v: bytes | bytearray | memoryview) -> None:
    buf.append(M.BYTES_DESC)
    buf += _escaped(bytes(v)).translate(COMPLEMENT)


def _str_asc(buf: bytearray, v: str) -> None:
    buf.append(M.STRING)
    buf += _escaped(v.encode())  # callers turn a UnicodeEncodeError into a DataError


def _str_desc(buf: bytearray, v: str) -> None:
    data = v.encode()  # encode_key turns a UnicodeEncodeError into a DataError
    if b"\x00" in data:
        data = data.replace(b"\x00", b"\x00\xff")
    buf.append(M.STRING_DESC)
    buf += (data + b"\x00\x01").translate(COMPLEMENT)


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


# Exact-type dispatch, one table per direction (subclasses go through `encoder_for_subclass`).
ASC_ENCODERS: dict[type, Encoder] = {
    int: append_int_asc,
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
}
DESC_ENCODERS: dict[type, Encoder] = {
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
}

ASC_ENCODERS[datetime.time] = extended.time_asc
ASC_ENCODERS[uuid.UUID] = extended.uuid_asc
DESC_ENCODERS[datetime.time] = extended.time_desc
DESC_ENCODERS[uuid.UUID] = extended.uuid_desc
ASC_ENCODERS[Interval] = extended.interval_asc
DESC_ENCODERS[Interval] = extended.interval_desc
ASC_ENCODERS[SqlArray] = arrays.array_asc  # ARRAY: encoding/arrays.py
DESC_ENCODERS[SqlArray] = arrays.array_desc
ASC_ENCODERS[Jsonb] = jsonb_asc  # issue 15 (jsonb_keys.py)
DESC_ENCODERS[Jsonb] = jsonb_desc

# Checked in this order so that bool wins over int and datetime over date.
_SUBCLASS_ORDER = (bool, int, float, Decimal, str, bytes, datetime.datetime, datetime.date, datetime.time,
                   uuid.UUID, Interval)


def encoder_for_subclass(value: object, descending: bool) -> Encoder:
    table = DESC_ENCODERS if descending else ASC_ENCODERS
    for base in _SUBCLASS_ORDER:
        if isinstance(value, base):
            return table[base]
    raise DataError(f"cannot encode a value of type {type(value).__name__} in a key")


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
    marker = data[off]
    if _DESC_SMALL_TOP - DESC_INT_PIVOT <= marker <= _DESC_SMALL_TOP:
        return _DESC_SMALL_TOP - marker, off + 1
    stored, end = read_varint(data, off, M.INT_DESC_BASE, M.INT_DESC_SMALL)
    value = DESC_INT_PIVOT - stored
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


def decode_str_asc(data: bytes, off: int) -> tuple[object, int]:
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
    asc[M.STRING], desc[M.STRING_DESC] = decode_str_asc, _dec_str_desc
    asc[M.DATE] = desc[M.DATE_DESC] = decode_date
    asc[M.TIMESTAMP] = desc[M.TIMESTAMP_DESC] = decode_timestamp
    asc[M.EXTENDED] = desc[M.EXTENDED_DESC] = extended.decode_extended
    for marker in range(M.DECIMAL_NAN, M.DECIMAL_NAN_DESC + 1):
        (desc if marker in M.DESCENDING_MARKERS else asc)[marker] = decode_decimal
    for marker in range(M.INT_BASE, M.INT_MAX_MARKER + 1):
        asc[marker] = _dec_int_asc
    for marker in range(M.INT_DESC_BASE, M.INT_DESC_MAX_MARKER + 1):
        desc[marker] = _dec_int_desc
    return asc, desc


ASC_DECODERS, DESC_DECODERS = _build_tables()
ANY_DECODERS = [a if a is not None else d for a, d in zip(ASC_DECODERS, DESC_DECODERS)]
