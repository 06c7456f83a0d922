"""Keys a column at a time: the first key column of a scan's batch of keys, and the keys of a
bulk INSERT's chunk of rows.

Decoding: ``decode_key(key, 1, [False], offset)[0][0]`` for each key of a batch, without its
per-call loop and bookkeeping: a one-column primary key's value is read straight from its marker
(a small integer is the marker itself) or by the type's decoder, with the same errors
`decode_key` raises for a marker of the wrong kind or a truncated value.

Encoding: ``encode_column_keys([7, 300, 12], prefix)`` gives what ``encode_key((v,), None,
prefix)`` gives for each value, ascending. Python's cost is per call: one call per value spends
more on the call, the bytearray and the type dispatch than on the bytes. Here the common cases --
ints in the 64-bit range, strings -- are encoded inline in one loop; anything else goes through
`encode_key`, so the bytes are always the same.
"""

from __future__ import annotations

from collections.abc import Sequence
import struct
from itertools import repeat

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.typecodecs import _MIN_FOR_LENGTH, ASC_DECODERS, DESC_DECODERS
from sqlkv.encoding.varint import INT64_MAX
from sqlkv.errors import CorruptionError

_INT_ZERO = M.INT_ZERO
_INT_SMALL_MAX = M.INT_SMALL_MAX
_INT_MAX_MARKER = M.INT_MAX_MARKER


def first_key_values(keys: list[bytes], offset: int, descending: bool) -> list[object]:
    """The value at ``offset`` of each of ``keys`` (encoded ascending unless ``descending``)."""
    decoders = DESC_DECODERS if descending else ASC_DECODERS
    low, high = (_INT_ZERO, _INT_SMALL_MAX) if not descending else (1, 0)  # no shortcut when DESC
    wide_low, wide_high = (_INT_SMALL_MAX + 1, _INT_MAX_MARKER) if not descending else (1, 0)
    from_bytes = int.from_bytes
    out: list[object] = []
    append = out.append
    try:
        for key in keys:
            marker = key[offset]
            if low <= marker <= high:
                append(marker - _INT_ZERO)
                continue
            if wide_low <= marker <= wide_high:  # a positive int of 1-8 bytes: the decoder's checks, inline
                end = offset + marker - _INT_SMALL_MAX + 1
                value = from_bytes(key[offset + 1:end], "big")
                if end <= len(key) and _MIN_FOR_LENGTH[end - offset - 1] <= value <= INT64_MAX:
                    append(value)
                    continue
            decoder = decoders[marker]
            if decoder is None:
                break  # decode_key below names the bad marker
            append(decoder(key, offset)[0])
        else:
            return out
    except (IndexError, ValueError, OverflowError, UnicodeDecodeError, struct.error, CorruptionError):
        pass  # decode_key below raises the error with its message
    return [decode_key(key, 1, [descending], offset)[0][0] for key in keys]


_SMALL = [bytes((M.INT_ZERO + v,)) for v in range(M.INT_SMALL)]  # one-byte ints: 0 .. INT_SMALL-1
_WIDE_HEADS = [bytes((M.INT_SMALL_MAX + n,)) for n in range(9)]  # marker of an n-byte positive int
_STRING_END = b"\x00\x01"


def encode_column_keys(values: Sequence[object], prefix: bytes = b"",
                       descending: bool = False) -> list[bytes]:
    """``encode_key((v,), [descending], prefix)`` of each of ``values``."""
    if descending:
        return [encode_key((v,), (True,), prefix) for v in values]
    if values and type(values[0]) is str and set(map(type, values)) == {str}:
        strings = _plain_strings(values, prefix)  # type: ignore[arg-type]
        if strings is not None:
            return strings
    small = [prefix + head for head in _SMALL] if prefix else _SMALL
    wide_heads = [prefix + head for head in _WIDE_HEADS] if prefix else _WIDE_HEADS
    string_head = prefix + bytes((M.STRING,))
    limit = M.INT_SMALL
    out: list[bytes] = []
    append = out.append
    for v in values:
        t = type(v)
        if t is int:
            if 0 <= v < limit:  # type: ignore[operator]
                append(small[v])  # type: ignore[index]
                continue
            if limit <= v <= INT64_MAX:  # type: ignore[operator]
                n = (v.bit_length() + 7) >> 3  # type: ignore[attr-defined]
                append(wide_heads[n] + v.to_bytes(n, "big"))  # type: ignore[attr-defined]
                continue
        elif t is str:
            try:
                data = v.encode()  # type: ignore[attr-defined]
            except UnicodeEncodeError:
                append(encode_key((v,), None, prefix))  # raises its DataError
                continue
            if b"\x00" in data:
                data = data.replace(b"\x00", b"\x00\xff")
            append(string_head + data + _STRING_END)
            continue
        append(encode_key((v,), None, prefix))
    return out


def _plain_strings(values: Sequence[str], prefix: bytes) -> list[bytes] | None:
    """A column of strings none of which holds a NUL (nothing to escape) encoded by C-level
    maps and joins; None when one does, or cannot be encoded (the loop then names it)."""
    try:
        encoded = list(map(str.encode, values))
    except UnicodeEncodeError:
        return None
    if b"\x00" in b"".join(encoded):
        return None
    head = prefix + bytes((M.STRING,))
    return list(map(b"".join, zip(repeat(head), encoded, repeat(_STRING_END))))
