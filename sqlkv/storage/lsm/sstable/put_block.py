"""A format-2 data block of an ingestion's puts that all hold one value at one seq: the
entries of a non-unique index (every value `EMPTY_LIST`, every seq the ingestion's).

`encode_packed_block` of such a block spends a third of its time on what is known in advance:
the values section is one msgpack element repeated, so its offsets are an arithmetic sequence
(one ``range``), and the seqs need no ``min`` to find them uniform. The bytes are the same
(tests/storage/test_storage_put_block.py compares them).
"""

from __future__ import annotations

import struct

import msgpack

from sqlkv.storage.lsm.sstable.block import seal_parts
from sqlkv.storage.lsm.sstable.packed import FLAG_UNIFORM_SEQ, FLAG_WIDE_OFFSETS, HEADER, _offsets

_PACKER = msgpack.Packer(use_bin_type=True)
_CODES = {2: "H", 4: "I"}


def encode_put_block(max_seq: int, keys: list[bytes], value: bytes) -> bytes:
    """``encode_packed_block(0, max_seq, keys, [max_seq] * n, [value] * n)``, sealed."""
    count = len(keys)
    packed_keys = msgpack.packb(keys, use_bin_type=True)
    head = _PACKER.pack_array_header(count)
    element = msgpack.packb(value, use_bin_type=True)
    packed_values = head + element * count
    values_at = HEADER.size + len(packed_keys)
    flags, width = FLAG_UNIFORM_SEQ, 2
    if values_at + len(packed_values) >= 1 << 16:
        flags |= FLAG_WIDE_OFFSETS
        width = 4
    key_starts = _offsets(width, keys, packed_keys, HEADER.size)[:-width]  # keys end where values begin
    first, step = values_at + len(head), len(element)
    value_starts = struct.pack(f"<{count + 1}{_CODES[width]}", *range(first, first + step * count + 1, step))
    header = HEADER.pack(flags, max_seq, count, len(packed_keys), len(packed_values))
    return seal_parts((header, packed_keys, packed_values, key_starts, value_starts, b""))
