"""Keys a column at a time: the first key column of a scan's batch of keys, and the keys of a
bulk INSERT's chunk of rows.

Decoding: ``decode_key(key, 1, [False], offset)[0][0]`` for each key of a batch, without its
per-call loop and bookkeeping: a one-column primary key's value is read straight from its marker
(a small integer is the marker itself) or by the type's decoder, with the same errors
`decode_key` raises for a marker of the wrong kind or a truncated value.

Encoding: ``encode_column_keys([7, 300, 12], prefix)`` gives what ``encode_key((v,), None,
prefix)`` gives for each value (``descending`` for the other direction). Python's cost is per
call: one call per value spends more on the call, the bytearray and the type dispatch than on the
bytes. Here a column of non-negative 64-bit ints (either direction) is encoded by a few C-level
``map`` passes down the column (`int_column_pieces`: bit lengths, payload lengths, markers,
``int.to_bytes``), which an index build hands to its key join as two pieces, markers and
payloads, never concatenated value by value (`encode_column_pieces`); strings without NUL are
encoded by maps too; anything else, value by value, ints and strings inline and the rest by
`encode_key`, so the bytes are always the same.
"""

from __future__ import annotations

from collections.abc import Sequence
import struct
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, gt, sub

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.single_key import WIDE_LOWS, WIDE_WIDTHS
from sqlkv.encoding.typecodecs import ASC_DECODERS, DESC_DECODERS
from sqlkv.encoding.varint import INT64_MAX
from sqlkv.errors import CorruptionError

_INT_ZERO = M.INT_ZERO
_INT_SMALL_MAX = M.INT_SMALL_MAX


def first_key_values(keys: list[bytes], offset: int, descending: bool) -> list[object]:
    """The value at ``offset`` of each of ``keys`` (encoded ascending unless ``descending``)."""
    decoders = DESC_DECODERS if descending else ASC_DECODERS
    low, high = (_INT_ZERO, _INT_SMALL_MAX) if not descending else (1, 0)  # no shortcut when DESC
    widths, lows = (_NO_WIDTHS, WIDE_LOWS) if descending else (WIDE_WIDTHS, WIDE_LOWS)
    start = offset + 1
    top = INT64_MAX
    from_bytes = int.from_bytes
    out: list[object] = []
    append = out.append
    try:
        for key in keys:
            marker = key[offset]
            n = widths[marker]
            if n:  # a positive int of n bytes: the decoder's checks, inline (a payload cut
                # short reads below the shortest canonical value of n bytes, so fails them)
                value = from_bytes(key[start:start + n], "big")
                if lows[marker] <= value <= top:
                    append(value)
                    continue
            elif low <= marker <= high:
                append(marker - _INT_ZERO)
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


_NO_WIDTHS = [0] * 256  # (descending: no int decoded inline)
_SMALL = [bytes((M.INT_ZERO + v,)) for v in range(M.INT_SMALL)]  # one-byte ints: 0 .. INT_SMALL-1
_WIDE_HEADS = [bytes((M.INT_SMALL_MAX + n,)) for n in range(9)]  # marker of an n-byte positive int
_STRING_END = b"\x00\x01"


def encode_column_keys(values: Sequence[object], prefix: bytes = b"",
                       descending: bool = False) -> list[bytes]:
    """``encode_key((v,), [descending], prefix)`` of each of ``values``."""
    pieces = int_column_pieces(values, descending, prefix)
    if pieces is not None:
        return pieces[0] if len(pieces) == 1 else list(map(add, *pieces))
    if descending:
        return [encode_key((v,), (True,), prefix) for v in values]
    if values and type(values[0]) is str and set(map(type, values)) == {str}:
        strings = _plain_strings(values, prefix)  # type: ignore[arg-type]
        if strings is not None:
            return strings
    return _encode_loop(values, prefix)


def encode_column_pieces(values: Sequence[object], descending: bool = False, prefix: bytes = b"") -> list[list[bytes]]:
    """Lists of bytes whose concatenation, row by row, is ``encode_key((v,), [descending],
    prefix)`` of each of ``values``: for a caller that joins each row's key from several
    columns anyway (an index entry), so a column of ints is handed out as markers and payloads
    apart and never concatenated value by value."""
    pieces = int_column_pieces(values, descending, prefix)
    return pieces if pieces is not None else [encode_column_keys(values, prefix, descending)]


def int_column_pieces(values: Sequence[object], descending: bool, prefix: bytes) -> list[list[bytes]] | None:
    """`encode_column_pieces` of a column of ints (not bools) in ``[0, INT64_MAX]``, each
    step one C-level ``map`` down the column: the payload length of each value from its
    bit length, its marker from that length, its payload by ``int.to_bytes``; a value of
    the one-byte range then has its marker alone. ``prefix`` goes before each marker. None
    for anything else (negative ints, NULLs, other types: value by value)."""
    if not values or type(values[0]) is not int or set(map(type, values)) != _INT_TYPE:
        return None
    low, high = min(values), max(values)  # type: ignore[type-var]
    if low < 0 or high > INT64_MAX:  # type: ignore[operator]
        return None
    form = _DESC_INTS if descending else _ASC_INTS
    small = form.small_with(prefix)
    if high < form.small_count:  # type: ignore[operator]
        return [list(map(small.__getitem__, values))]  # type: ignore[arg-type]
    if descending:  # the payload of desc v is 79 - v as a negative varint (typecodecs._int_desc)
        wide = values if low >= form.small_count else list(map(max, values, repeat(form.small_count)))
        lengths = list(map(_DESC_LENGTH.__getitem__, map(int.bit_length, map(sub, wide, repeat(80)))))
        payloads = list(map(int.to_bytes, map(sub, map(_DESC_BIAS.__getitem__, lengths), wide),
                            lengths, repeat("big")))
    else:
        lengths = list(map(_ASC_LENGTH.__getitem__, map(int.bit_length, values)))  # type: ignore[arg-type]
        payloads = list(map(int.to_bytes, values, lengths, repeat("big")))  # type: ignore[arg-type]
    markers = list(map(form.heads_with(prefix).__getitem__, lengths))
    if low < form.small_count:  # type: ignore[operator]
        for i in compress(range(len(values)), map(gt, repeat(form.small_count), values)):
            markers[i], payloads[i] = small[values[i]], b""  # type: ignore[index]
    return [markers, payloads]


@dataclass(frozen=True)
class _IntForm:
    """One direction's int encoding: ``small[v]`` is the one-byte key of each v below
    ``small_count``; ``heads[n]`` the marker of a value with an n-byte payload."""

    small: list[bytes]
    heads: list[bytes]

    @property
    def small_count(self) -> int:
        return len(self.small)

    def small_with(self, prefix: bytes) -> list[bytes]:
        return [prefix + b for b in self.small] if prefix else self.small

    def heads_with(self, prefix: bytes) -> list[bytes]:
        return [prefix + b for b in self.heads] if prefix else self.heads


_INT_TYPE = {int}
_ASC_INTS = _IntForm(_SMALL, _WIDE_HEADS)
# desc: v in [0, 80) is the one byte 0x77 - v; else 79 - v < 0 in n bytes, marker 0x28 - n
_DESC_INTS = _IntForm([bytes((M.INT_DESC_BASE + 8 + 79 - v,)) for v in range(M.INT_DESC_SMALL)],
                      [bytes((M.INT_DESC_BASE + 8 - n,)) for n in range(9)])
_ASC_LENGTH = [(bits + 7) >> 3 for bits in range(65)]  # payload bytes of a value of this bit length
_DESC_LENGTH = [max(1, (bits + 7) >> 3) for bits in range(65)]  # of v - 80's bit length
_DESC_BIAS = [(1 << (8 * n)) + 79 for n in range(9)]  # 79 - v + 2**(8n): the n-byte payload


def _encode_loop(values: Sequence[object], prefix: bytes) -> list[bytes]:
    """Ascending, value by value: ints of the 64-bit range and strings inline, anything else
    by `encode_key`."""
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
