"""The first key column of many keys at once (a scan's batch of primary-index keys).

``decode_key(key, 1, [False], offset)[0][0]`` for each key of a batch, without its per-call
loop and bookkeeping: a one-column primary key's value is read straight from its marker (a
small integer is the marker itself) or by the type's decoder, with the same errors
`decode_key` raises for a marker of the wrong kind or a truncated value.
"""

from __future__ import annotations

import struct

from sqlkv.encoding import markers as M
from sqlkv.encoding.keys import decode_key
from sqlkv.encoding.typecodecs import ASC_DECODERS, DESC_DECODERS
from sqlkv.errors import CorruptionError

_INT_ZERO = M.INT_ZERO
_INT_SMALL_MAX = M.INT_SMALL_MAX


def first_key_values(keys: list[bytes], offset: int, descending: bool) -> list[object]:
    """The value at ``offset`` of each of ``keys`` (encoded ascending unless ``descending``)."""
    decoders = DESC_DECODERS if descending else ASC_DECODERS
    low, high = (_INT_ZERO, _INT_SMALL_MAX) if not descending else (1, 0)  # no shortcut when DESC
    out: list[object] = []
    append = out.append
    try:
        for key in keys:
            marker = key[offset]
            if low <= marker <= high:
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
