"""Key encoding of a column of values at once (the keys of a bulk INSERT's chunk of rows).

``encode_column_keys([7, 300, 12], prefix)`` gives what ``encode_key((v,), None, prefix)`` gives
for each value, ascending. Python's cost is per call: one call per value spends more on the
call, the bytearray and the type dispatch than on the bytes. Here the common cases -- ints in
the 64-bit range, strings -- are encoded inline in one loop; anything else goes through
`encode_key`, so the bytes are always the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import encode_key
from sqlkv.encoding.varint import INT64_MAX

_SMALL = [bytes((M.INT_ZERO + v,)) for v in range(M.INT_SMALL)]  # one-byte ints: 0 .. INT_SMALL-1
_WIDE_HEADS = [bytes((M.INT_SMALL_MAX + n,)) for n in range(9)]  # marker of an n-byte positive int
_STRING_END = b"\x00\x01"


def encode_column_keys(values: Sequence[object], prefix: bytes = b"") -> list[bytes]:
    """``encode_key((v,), None, prefix)`` of each of ``values``."""
    small = [prefix + head for head in _SMALL]
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
                append(prefix + _WIDE_HEADS[n] + v.to_bytes(n, "big"))  # type: ignore[attr-defined]
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

