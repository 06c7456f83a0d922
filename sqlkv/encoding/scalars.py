"""Key encodings of the rarer scalar types: Decimal, date and (naive) datetime.

Walk-through: ``encode_key([Decimal("-12.5")])`` lands in `encode_decimal`. The value is finite,
negative and non-zero; its digits are ``125`` with adjusted exponent 2 (-12.5 = -0.125e2), so
the payload is ``varint(2) = 0x8a``, the digit pairs ``12``, ``50`` stored as 13, 51, and the
0x00 terminator. A negative number sorts lower the larger its magnitude, so the payload is
complemented: ``0x08 0x75 0xf2 0xcc 0xff``. Descending encodings complement the payload once
more (and use the descending markers), so descending negatives are stored plainly.

Dates are 3 big-endian bytes of ``date.toordinal()``; datetimes are 8 big-endian bytes of
microseconds since 0001-01-01 00:00 (naive only: a tz-aware datetime raises `DataError`).
Descending forms complement those bytes.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

from sqlkv.encoding import markers as M
from sqlkv.encoding.varint import (
    COMPLEMENT,
    INT64_MAX,
    INT64_MIN,
    append_varint,
    corrupt,
    read_varint,
)
from sqlkv.errors import DataError

# -- Decimal -----------------------------------------------------------------------------------

_DECIMAL_SPECIALS: dict[int, Decimal] = {
    M.DECIMAL_NAN: Decimal("NaN"),
    M.DECIMAL_NAN_DESC: Decimal("NaN"),
    M.DECIMAL_NEG_INF: Decimal("-Infinity"),
    M.DECIMAL_NEG_INF_DESC: Decimal("-Infinity"),
    M.DECIMAL_INF: Decimal("Infinity"),
    M.DECIMAL_INF_DESC: Decimal("Infinity"),
    M.DECIMAL_ZERO: Decimal(0),
    M.DECIMAL_ZERO_DESC: Decimal(0),
}


def _special_decimal_marker(v: Decimal, descending: bool) -> int:
    if v.is_nan():  # quiet and signalling NaN alike; the diagnostic payload is dropped
        return M.DECIMAL_NAN_DESC if descending else M.DECIMAL_NAN
    if v.is_signed():
        return M.DECIMAL_NEG_INF_DESC if descending else M.DECIMAL_NEG_INF
    return M.DECIMAL_INF_DESC if descending else M.DECIMAL_INF


def encode_decimal(buf: bytearray, v: Decimal, descending: bool) -> None:
    """Append ``v``: sign-class marker, adjusted exponent, digit pairs, terminator."""
    if not v.is_finite():
        buf.append(_special_decimal_marker(v, descending))
        return
    sign, digit_tuple, exponent = v.as_tuple()
    digits = list(digit_tuple)
    while digits and digits[-1] == 0:
        digits.pop()
        exponent += 1  # type: ignore[operator]
    start = 0
    while start < len(digits) and digits[start] == 0:
        start += 1
    digits = digits[start:]
    if not digits:
        buf.append(M.DECIMAL_ZERO_DESC if descending else M.DECIMAL_ZERO)
        return
    adjusted = len(digits) + exponent  # type: ignore[operator]
    if adjusted < INT64_MIN or adjusted > INT64_MAX:
        raise DataError(f"decimal {v} has an exponent too large for a key")
    payload = bytearray()
    append_varint(payload, adjusted, M.INT_BASE, M.INT_SMALL)
    if len(digits) % 2:
        digits.append(0)
    for i in range(0, len(digits), 2):
        payload.append(digits[i] * 10 + digits[i + 1] + 1)
    payload.append(0)
    negative = sign == 1
    if negative:
        buf.append(M.DECIMAL_NEG_DESC if descending else M.DECIMAL_NEG)
    else:
        buf.append(M.DECIMAL_POS_DESC if descending else M.DECIMAL_POS)
    buf += payload.translate(COMPLEMENT) if negative != descending else payload


def _varint_length(marker: int) -> int:
    rel = marker - M.INT_BASE
    if rel < 8:
        return 8 - rel
    if rel < 8 + M.INT_SMALL:
        return 0
    return rel - 7 - M.INT_SMALL


def decode_decimal(data: bytes, off: int) -> tuple[object, int]:
    """Decode the Decimal whose marker is at ``off``."""
    marker = data[off]
    special = _DECIMAL_SPECIALS.get(marker)
    if special is not None:
        return special, off + 1
    negative = marker in (M.DECIMAL_NEG, M.DECIMAL_NEG_DESC)
    flip = 0xFF if negative != (marker in M.DESCENDING_MARKERS) else 0x00
    pos = off + 1
    if pos >= len(data):
        raise corrupt(data, off, "truncated decimal")
    exp_marker = data[pos] ^ flip
    if exp_marker < M.INT_BASE or exp_marker > M.INT_MAX_MARKER:
        raise corrupt(data, pos, "bad decimal exponent")
    end = pos + 1 + _varint_length(exp_marker)
    chunk = bytes(data[pos:end])
    if len(chunk) != end - pos:
        raise corrupt(data, pos, "truncated decimal exponent")
    if flip:
        chunk = chunk.translate(COMPLEMENT)
    adjusted, _ = read_varint(chunk, 0, M.INT_BASE, M.INT_SMALL)
    if adjusted < INT64_MIN or adjusted > INT64_MAX:
        raise corrupt(data, pos, "decimal exponent beyond the 64-bit range")
    stop = data.find(b"\xff" if flip else b"\x00", end)
    if stop <= end:
        raise corrupt(data, end, "decimal without digits or terminator")
    pairs = bytes(data[end:stop])
    if flip:
        pairs = pairs.translate(COMPLEMENT)
    digits = _unpack_pairs(pairs, data, end)
    value = Decimal((1 if negative else 0, tuple(digits), adjusted - len(digits)))
    return value, stop + 1


def _unpack_pairs(pairs: bytes, data: bytes, off: int) -> list[int]:
    digits: list[int] = []
    for byte in pairs:
        if byte < 1 or byte > 100:
            raise corrupt(data, off, f"bad decimal digit pair 0x{byte:02x}")
        digits.extend(divmod(byte - 1, 10))
    if digits[0] == 0 or pairs[-1] == 1:  # leading zero, or a trailing "00" pair
        raise corrupt(data, off, "non-canonical decimal digits")
    if digits[-1] == 0:
        digits.pop()  # the padding of an odd digit count
    return digits


# -- date and datetime -------------------------------------------------------------------------

_MAX_ORDINAL = datetime.date.max.toordinal()
_MICROS_PER_DAY = 86_400_000_000
_MAX_MICROS = _MAX_ORDINAL * _MICROS_PER_DAY - 1
_ALL_24 = (1 << 24) - 1
_ALL_64 = (1 << 64) - 1
_EPOCH = datetime.datetime(1, 1, 1)


def encode_date(buf: bytearray, v: datetime.date, descending: bool) -> None:
    """Append ``v`` as 3 bytes of its proleptic Gregorian ordinal."""
    ordinal = v.toordinal()
    if descending:
        buf.append(M.DATE_DESC)
        buf += (ordinal ^ _ALL_24).to_bytes(3, "big")
    else:
        buf.append(M.DATE)
        buf += ordinal.to_bytes(3, "big")


def decode_date(data: bytes, off: int) -> tuple[object, int]:
    """Decode the date whose marker is at ``off``."""
    end = off + 4
    if end > len(data):
        raise corrupt(data, off, "truncated date")
    ordinal = int.from_bytes(data[off + 1 : end], "big")
    if data[off] == M.DATE_DESC:
        ordinal ^= _ALL_24
    if ordinal < 1 or ordinal > _MAX_ORDINAL:
        raise corrupt(data, off, f"date ordinal {ordinal} out of range")
    return datetime.date.fromordinal(ordinal), end


def encode_timestamp(buf: bytearray, v: datetime.datetime, descending: bool) -> None:
    """Append naive ``v`` as 8 bytes of microseconds since 0001-01-01 00:00."""
    if v.tzinfo is not None:
        raise DataError(f"timezone-aware datetime {v.isoformat()} cannot be stored in a key")
    seconds = (v.toordinal() - 1) * 86_400 + v.hour * 3600 + v.minute * 60 + v.second
    micros = seconds * 1_000_000 + v.microsecond
    if descending:
        buf.append(M.TIMESTAMP_DESC)
        buf += (micros ^ _ALL_64).to_bytes(8, "big")
    else:
        buf.append(M.TIMESTAMP)
        buf += micros.to_bytes(8, "big")


def decode_timestamp(data: bytes, off: int) -> tuple[object, int]:
    """Decode the naive datetime whose marker is at ``off``."""
    end = off + 9
    if end > len(data):
        raise corrupt(data, off, "truncated datetime")
    micros = int.from_bytes(data[off + 1 : end], "big")
    if data[off] == M.TIMESTAMP_DESC:
        micros ^= _ALL_64
    if micros > _MAX_MICROS:
        raise corrupt(data, off, "datetime out of range")
    return _EPOCH + datetime.timedelta(microseconds=micros), end
