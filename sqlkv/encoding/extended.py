"""Key encodings of TIME, UUID and INTERVAL, behind the extended-type markers.

The one-byte marker space is full, so these types share two markers -- 0x1e ascending, 0x1f
descending -- followed by a tag byte naming the type (never complemented: a column holds one
type, so the tag is the same in every key of the column and byte order is decided by the
payload). Payloads:

    tag 0x01  TIME (naive)  5 bytes big-endian: microseconds since midnight (< 2^37)
    tag 0x02  UUID          its 16 bytes (the order PostgreSQL sorts uuids in)
    tag 0x03  INTERVAL      16 bytes: its length in microseconds (a month = 30 days) + 2**127,
                            then 8 + 8 bytes: months and days + 2**63 (`Interval.sort_key`)
    tag 0x04  ARRAY         items up to a terminator (variable length; `sqlkv.encoding.arrays`)
    tag 0x05  JSONB         a self-delimiting payload in PostgreSQL's jsonb order (jsonb_keys.py)

Descending values complement the payload bytes. Decoding is canonical: a TIME past 23:59:59.999999
or a short payload is a CorruptionError.
"""

from __future__ import annotations

import datetime
import uuid

from sqlkv.encoding import markers as M
from sqlkv.encoding.arrays import TAG_ARRAY, decode_array
from sqlkv.encoding.interval import DAY_MICROS, Interval
from sqlkv.encoding.jsonb_keys import TAG_JSONB, decode_jsonb
from sqlkv.encoding.varint import corrupt
from sqlkv.errors import DataError

TAG_TIME = 0x01
TAG_UUID = 0x02
TAG_INTERVAL = 0x03
# TAG_ARRAY (0x04, ARRAY values) is sqlkv/encoding/arrays.py's
_I128 = 1 << 127
_I64 = 1 << 63
_DAY_MICROS = 86_400_000_000
_FLIP = bytes(range(255, -1, -1))  # bytes.translate table complementing every byte


def _time_payload(v: datetime.time) -> bytes:
    if v.tzinfo is not None:
        raise DataError(f"timezone-aware time {v.isoformat()} cannot be stored (TIME is without time zone)")
    micros = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return micros.to_bytes(5, "big")


def time_asc(buf: bytearray, v: datetime.time) -> None:
    buf += bytes((M.EXTENDED, TAG_TIME)) + _time_payload(v)


def time_desc(buf: bytearray, v: datetime.time) -> None:
    buf += bytes((M.EXTENDED_DESC, TAG_TIME)) + _time_payload(v).translate(_FLIP)


def uuid_asc(buf: bytearray, v: uuid.UUID) -> None:
    buf += bytes((M.EXTENDED, TAG_UUID)) + v.bytes


def uuid_desc(buf: bytearray, v: uuid.UUID) -> None:
    buf += bytes((M.EXTENDED_DESC, TAG_UUID)) + v.bytes.translate(_FLIP)


def _interval_payload(v: Interval) -> bytes:
    span, months, days = v.sort_key()
    try:
        return (span + _I128).to_bytes(16, "big") + (months + _I64).to_bytes(8, "big") + (days + _I64).to_bytes(8, "big")
    except OverflowError:
        raise DataError(f"interval {v} is out of range for a key") from None


def interval_asc(buf: bytearray, v: Interval) -> None:
    buf += bytes((M.EXTENDED, TAG_INTERVAL)) + _interval_payload(v)


def interval_desc(buf: bytearray, v: Interval) -> None:
    buf += bytes((M.EXTENDED_DESC, TAG_INTERVAL)) + _interval_payload(v).translate(_FLIP)


def _decode_interval(data: bytes, off: int, payload: bytes) -> Interval:
    span = int.from_bytes(payload[:16], "big") - _I128
    months = int.from_bytes(payload[16:24], "big") - _I64
    days = int.from_bytes(payload[24:], "big") - _I64
    value = Interval(months, days, span - (months * 30 + days) * DAY_MICROS)
    return value


def decode_extended(data: bytes, off: int) -> tuple[object, int]:
    """Decode a TIME, UUID, INTERVAL or JSONB at ``off`` (its marker), either direction."""
    descending = data[off] == M.EXTENDED_DESC
    if off + 1 >= len(data):
        raise corrupt(data, off, "extended-type marker without a tag")
    tag = data[off + 1]
    if tag == TAG_ARRAY:  # variable length: sqlkv/encoding/arrays.py
        return decode_array(data, off)
    if tag == TAG_JSONB:  # variable length (jsonb_keys.py)
        return decode_jsonb(data, off + 2, descending)
    size = {TAG_TIME: 5, TAG_UUID: 16, TAG_INTERVAL: 32}.get(tag)
    if size is None:
        raise corrupt(data, off, f"unknown extended type tag 0x{tag:02x}")
    payload = data[off + 2 : off + 2 + size]
    if len(payload) != size:
        raise corrupt(data, off, "extended-type value cut short")
    if descending:
        payload = payload.translate(_FLIP)
    end = off + 2 + size
    if tag == TAG_UUID:
        return uuid.UUID(bytes=payload), end
    if tag == TAG_INTERVAL:
        return _decode_interval(data, off, payload), end
    micros = int.from_bytes(payload, "big")
    if micros >= _DAY_MICROS:
        raise corrupt(data, off, "TIME past the end of the day")
    seconds, us = divmod(micros, 1_000_000)
    return datetime.time(seconds // 3600, seconds // 60 % 60, seconds % 60, us), end
