"""One ascending key column, encoded or decoded without `encode_key`'s and `decode_key`'s
general loops: a prepared point read (``WHERE id = ?``) encodes one value and decodes one.

``single_key(7, prefix)`` is ``encode_key([7], None, prefix)`` and ``single_key_value(key,
len(prefix))`` is ``decode_key(key, 1, [False], len(prefix))[0][0]``: the bytes and the values
are always the same (an int of the 64-bit range and a string are written out here, anything
else goes through `encode_key`/`decode_key`, which also raise their errors: a string that
cannot be encoded, a key that is corrupt).
"""

from __future__ import annotations

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.typecodecs import _MIN_FOR_LENGTH
from sqlkv.encoding.varint import INT64_MAX
from sqlkv.storage.kv import prefix_end

_INT_ZERO = M.INT_ZERO
_INT_SMALL = M.INT_SMALL
_INT_SMALL_MAX = M.INT_SMALL_MAX
_INT_MAX_MARKER = M.INT_MAX_MARKER
_SMALL = [bytes((_INT_ZERO + v,)) for v in range(_INT_SMALL)]  # one-byte ints
_WIDE_HEADS = [bytes((_INT_SMALL_MAX + n,)) for n in range(9)]  # marker of an n-byte positive int
_STRING_HEAD = bytes((M.STRING,))
_STRING_END = b"\x00\x01"
_ASCENDING = (False,)
_BYTES = [bytes((i,)) for i in range(256)]


def single_key(value: object, prefix: bytes) -> bytes:
    """``encode_key([value], None, prefix)``."""
    kind = type(value)
    if kind is int:
        if 0 <= value < _INT_SMALL:  # type: ignore[operator]
            return prefix + _SMALL[value]  # type: ignore[index]
        if _INT_SMALL <= value <= INT64_MAX:  # type: ignore[operator]
            n = (value.bit_length() + 7) >> 3  # type: ignore[attr-defined]
            return prefix + _WIDE_HEADS[n] + value.to_bytes(n, "big")  # type: ignore[attr-defined]
    elif kind is str and value.isascii() and "\x00" not in value:  # type: ignore[attr-defined]
        return prefix + _STRING_HEAD + value.encode() + _STRING_END  # type: ignore[attr-defined]
    return encode_key((value,), None, prefix)


def single_key_value(key: bytes, offset: int) -> object:
    """``decode_key(key, 1, [False], offset)[0][0]``, a small or positive 64-bit int read
    inline (its payload length and smallest canonical value looked up by its marker)."""
    try:
        marker = key[offset]
    except IndexError:  # the key ends before the value: decode_key names the corruption
        return decode_key(key, 1, _ASCENDING, offset)[0][0]
    n = WIDE_WIDTHS[marker]
    if n:  # a payload cut short reads below the smallest canonical value: decode_key names it
        value = int.from_bytes(key[offset + 1:offset + 1 + n], "big")
        if WIDE_LOWS[marker] <= value <= INT64_MAX:
            return value
    elif _INT_ZERO <= marker <= _INT_SMALL_MAX:
        return marker - _INT_ZERO
    return decode_key(key, 1, _ASCENDING, offset)[0][0]  # other types; names a corruption


# per marker byte: the payload length of an ascending positive int of 1-8 bytes (0 for any
# other marker), and the smallest value that length encodes canonically
WIDE_WIDTHS = [marker - _INT_SMALL_MAX if _INT_SMALL_MAX < marker <= _INT_MAX_MARKER else 0 for marker in range(256)]
WIDE_LOWS = [_MIN_FOR_LENGTH[n] if n else 0 for n in WIDE_WIDTHS]


def span_end(prefix: bytes) -> bytes | None:
    """``prefix_end(prefix)`` (storage/kv.py) of a non-empty prefix: the end of the span of the
    keys that begin with an encoded value, its last byte raised without a loop when it can be
    (an encoded value ends below 0xFF but for a few DESC encodings)."""
    last = prefix[-1]
    return prefix[:-1] + _BYTES[last + 1] if last != 0xFF else prefix_end(prefix)
