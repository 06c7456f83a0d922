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

This module holds the public API and the inlined int/str hot paths; the per-type encoders,
decoders and dispatch tables are in `typecodecs` (Decimal, date and datetime in `scalars`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from sqlkv.encoding import markers as M
from sqlkv.encoding.typecodecs import (
    ANY_DECODERS,
    ASC_DECODERS,
    ASC_ENCODERS,
    DESC_DECODERS,
    DESC_ENCODERS,
    append_int_asc,
    decode_str_asc,
    encoder_for_subclass,
)
from sqlkv.encoding.varint import INT64_MAX, append_varint, corrupt, read_varint
from sqlkv.errors import CorruptionError, DataError

_ALL_BITS: Final = (1 << 64) - 1


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


def append_value(buf: bytearray, value: object, descending: bool = False) -> None:
    """Append the key encoding of one value to ``buf``."""
    table = DESC_ENCODERS if descending else ASC_ENCODERS
    encoder = table.get(type(value))
    if encoder is None:
        encoder = encoder_for_subclass(value, descending)
    try:
        encoder(buf, value)
    except UnicodeEncodeError as exc:
        raise _bad_unicode(exc) from None


def _bad_unicode(exc: UnicodeEncodeError) -> DataError:
    return DataError(f"string {exc.object[:40]!r} is not valid Unicode (lone surrogate)")


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
                    encoder = DESC_ENCODERS.get(type(value))
                    if encoder is None:
                        encoder = encoder_for_subclass(value, True)
                    encoder(buf, value)
                else:
                    _append_asc(buf, value)
    except UnicodeEncodeError as exc:
        raise _bad_unicode(exc) from None
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
            append_int_asc(buf, value)  # type: ignore[arg-type]
    elif t is str:
        data = value.encode()  # type: ignore[attr-defined]
        buf.append(_STRING)
        if b"\x00" in data:
            data = data.replace(b"\x00", b"\x00\xff")
        buf += data
        buf += b"\x00\x01"
    else:
        encoder = ASC_ENCODERS.get(t)
        if encoder is None:
            encoder = encoder_for_subclass(value, False)
        encoder(buf, value)


_INT_ZERO: Final = M.INT_ZERO
_INT_SMALL: Final = M.INT_SMALL
_INT_SMALL_MAX: Final = M.INT_SMALL_MAX
_STRING: Final = M.STRING


def decode_value(data: bytes, offset: int = 0) -> tuple[object, bool, int]:
    """Decode the one value at ``offset``: ``(value, is_descending, new_offset)``."""
    if offset >= len(data):
        raise corrupt(data, offset, "key ends where a value was expected")
    marker = data[offset]
    decoder = ANY_DECODERS[marker]
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
                if 0 < end < size - 1 and data[end + 1] == 0x01:  # no escapes: the common case
                    values.append(data[offset + 1 : end].decode())
                    offset = end + 2
                else:
                    value, offset = decode_str_asc(data, offset)
                    values.append(value)
            else:
                if descending is None:
                    decoder = ANY_DECODERS[marker]
                elif i < ndesc and descending[i]:
                    decoder = DESC_DECODERS[marker]
                else:
                    decoder = ASC_DECODERS[marker]
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
    if descending is None or ANY_DECODERS[marker] is None:
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
