"""Where encoded key columns end, without building their values.

A non-unique secondary-index entry's key is the index prefix, the indexed values, then the
row's primary key as the primary index encodes it. To fetch the row, a scan needs only the
offset where the indexed values end: ``decode_key(key, n, directions, offset)[1]``. Decoding
builds every value (a str for a TEXT column) only to throw it away. `columns_end` gives the
same offset from each value's length:

- NULL, bools and one-byte ints are one byte; a wider int's marker carries its payload length
  (``markers``: 0xf6-0xfd are positive ints of 1-8 bytes, 0x80-0x87 negative ones of 8-1).
- A string or byte string runs to its terminator: ``0x00 0x01`` ascending, ``0xff 0xfe``
  descending (the complement), found with one ``bytes.find`` when nothing inside is escaped.
- Anything else (floats, decimals, dates, timestamps, the extended types, escaped strings,
  the widest descending ints) goes through its type's decoder, which knows its length.

The contract is decode_key's, exactly: the same end offset for every key it decodes, and for
every key it rejects the same `CorruptionError` -- any doubt (an unknown marker, a truncated
value, a payload byte a canonical encoder cannot write) re-runs `decode_key` to raise it. So the
checks that need no value stay: an int's canonical length and 64-bit range are read from its
first payload byte, and a string's UTF-8 is validated (``isascii`` on its bytes, a decode only
when one is above 0x7f: a corrupt index entry must not pass silently).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import decode_key
from sqlkv.encoding.typecodecs import ASC_DECODERS, DESC_DECODERS, Decoder
from sqlkv.encoding.varint import COMPLEMENT

# Per marker and direction: how to step over the value it starts.
#   _ONE     the value is the marker alone
#   n >= 2   a fixed width of n bytes whose first payload byte must lie in _LOW..._HIGH
#   _TEXT    UTF-8 up to the terminator;  _BLOB  raw bytes up to the terminator
#   _DECODE  the type's decoder (it returns the end)
#   _BAD     not a marker of that direction: decode_key names it
_BAD: Final = -1
_DECODE: Final = 0
_ONE: Final = 1
_TEXT: Final = -2
_BLOB: Final = -3


def _table(descending: bool) -> tuple[list[int], bytes, bytes]:
    decoders = DESC_DECODERS if descending else ASC_DECODERS
    step = [_BAD if decoder is None else _DECODE for decoder in decoders]
    low = bytearray(256)
    high = bytearray(b"\xff" * 256)

    def fixed(marker: int, width: int, lo: int = 0, hi: int = 0xFF) -> None:
        step[marker], low[marker], high[marker] = width, lo, hi

    if descending:
        fixed(M.NULL_DESC, _ONE)
        fixed(M.TRUE_DESC, _ONE)
        fixed(M.FALSE_DESC, _ONE)
        step[M.STRING_DESC], step[M.BYTES_DESC] = _TEXT, _BLOB
        base, small = M.INT_DESC_BASE, M.INT_DESC_SMALL
    else:
        fixed(M.NULL, _ONE)
        fixed(M.TRUE, _ONE)
        fixed(M.FALSE, _ONE)
        step[M.STRING], step[M.BYTES] = _TEXT, _BLOB
        base, small = M.INT_BASE, M.INT_SMALL
    for value in range(small):
        fixed(base + 8 + value, _ONE)
    # A canonical n-byte payload (varint.read_varint): a positive one is >= small for n = 1 and
    # has a non-zero first byte otherwise; a negative one has a first byte below 0xff for n > 1.
    # 8-byte ints are bounded by the 64-bit range: ascending that is the first byte too; the
    # descending family stores 79 - v, whose bounds need the whole payload (left to the decoder).
    for n in range(1, 8):
        fixed(base + 7 + small + n, 1 + n, small if n == 1 else 1)
        fixed(base + 8 - n, 1 + n, 0, 0xFF if n == 1 else 0xFE)
    if not descending:
        fixed(base + 7 + small + 8, 9, 1, 0x7F)
        fixed(base, 9, 0x80, 0xFE)
    return step, bytes(low), bytes(high)


_ASC_STEP, _ASC_LOW, _ASC_HIGH = _table(False)
_DESC_STEP, _DESC_LOW, _DESC_HIGH = _table(True)


def columns_end(data: bytes, count: int, descending: Sequence[bool], offset: int) -> int:
    """``decode_key(data, count, descending, offset)[1]``, its errors included, without
    building the values; ``descending`` has an entry for each of the ``count`` values."""
    pos = offset
    try:
        for i in range(count):
            if descending[i]:
                pos = _step(data, pos, _DESC_STEP, _DESC_LOW, _DESC_HIGH, DESC_DECODERS, b"\xff", 0xFE)
            else:
                pos = _step(data, pos, _ASC_STEP, _ASC_LOW, _ASC_HIGH, ASC_DECODERS, b"\x00", 0x01)
            if pos < 0:
                break
        else:
            return pos
    except Exception:  # noqa: BLE001 -- whatever went wrong, decode_key says it properly
        pass
    return decode_key(data, count, descending, offset)[1]


def _step(data: bytes, pos: int, steps: list[int], low: bytes, high: bytes,
          decoders: list[Decoder | None], zero: bytes, terminator: int) -> int:
    """The end of the value at ``pos``, or -1 when decode_key must look at it."""
    marker = data[pos]
    step = steps[marker]
    if step == _ONE:
        return pos + 1
    if step > _ONE:
        end = pos + step
        if end <= len(data) and low[marker] <= data[pos + 1] <= high[marker]:
            return end
        return -1
    if step == _DECODE:
        return decoders[marker](data, pos)[1]  # type: ignore[misc]
    if step == _BAD:
        return -1
    stop = data.find(zero, pos + 1)
    if stop < 0 or stop + 1 >= len(data):
        return -1
    if data[stop + 1] != terminator:  # an escaped zero byte inside: the decoder unescapes it
        return decoders[marker](data, pos)[1]  # type: ignore[misc]
    if step == _TEXT:
        payload = data[pos + 1:stop]
        if zero != b"\x00":
            payload = payload.translate(COMPLEMENT)
        if not payload.isascii():
            payload.decode()
    return stop + 2


def end_finder(count: int, descending: Sequence[bool]) -> Callable[[bytes, int], int]:
    """``finder(key, offset)``: `columns_end` of ``count`` values with these directions, the
    usual index on one ascending column through `single_end`."""
    if count == 1 and not descending[0]:
        return single_end
    directions = tuple(descending[:count])
    return lambda key, offset: columns_end(key, count, directions, offset)


def ends_finder(count: int, descending: Sequence[bool]) -> Callable[[list[bytes], int], list[int]]:
    """``finder(keys, offset)``: `end_finder`'s answer for each of ``keys``."""
    if count == 1 and not descending[0]:
        return single_ends
    one = end_finder(count, descending)
    return lambda keys, offset: [one(key, offset) for key in keys]


def single_ends(keys: list[bytes], offset: int) -> list[int]:
    """`single_end` of each of ``keys``, an unescaped ASCII string read without a call."""
    out: list[int] = []
    append = out.append
    start = offset + 1
    for key in keys:
        if len(key) > offset and key[offset] == _STRING:
            stop = key.find(b"\x00", start)
            if 0 < stop < len(key) - 1 and key[stop + 1] == 0x01 and key[start:stop].isascii():
                append(stop + 2)
                continue
        append(single_end(key, offset))
    return out


def single_end(key: bytes, offset: int) -> int:
    """``columns_end(key, 1, [False], offset)``, inline for an unescaped ascending string and
    for the ints, NULL and bools of `_ASC_STEP`."""
    try:
        marker = key[offset]
        if marker == _STRING:
            stop = key.find(b"\x00", offset + 1)
            if stop > 0 and key[stop + 1] == 0x01:
                payload = key[offset + 1:stop]
                if payload.isascii():
                    return stop + 2
                payload.decode()
                return stop + 2
        else:
            step = _ASC_STEP[marker]
            if step == _ONE:
                return offset + 1
            end = offset + step
            if step > _ONE and end <= len(key) and _ASC_LOW[marker] <= key[offset + 1] <= _ASC_HIGH[marker]:
                return end
    except (IndexError, UnicodeDecodeError):
        pass  # columns_end raises what decode_key raises
    return columns_end(key, 1, _ASC, offset)


_STRING: Final = M.STRING
_ASC: Final = (False,)
