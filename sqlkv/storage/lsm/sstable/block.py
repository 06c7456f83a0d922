"""Block encoding shared by data, index, bloom and range blocks.

A block on disk is ``payload | type:u8 | crc32(payload + type):u32``. The payload of a data
block of table format 1 (format 2's is in packed.py) is msgpack ``[flags, max_seq, keys, seqs,
values]`` -- three parallel lists in (key ascending, seq descending) order, ``None`` values
being point tombstones. Storing parallel lists lets a reader decode a block with one C call
and then bisect ``keys`` directly; `DataBlock` is what both formats decode to.

``flags`` bit 0: some key has several versions; bit 1: some value is a tombstone. A block with
neither is "simple": a scan reading at a seq >= max_seq can yield ``zip(keys, values)`` as is.
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_left
from typing import Final

import msgpack

from sqlkv.errors import CorruptionError

BLOCK_TRAILER = struct.Struct("<BI")
TRAILER_SIZE = BLOCK_TRAILER.size
TYPE_RAW: Final = 0

FLAG_MULTI_VERSION: Final = 1
FLAG_TOMBSTONES: Final = 2


class DataBlock:
    """A decoded data block: parallel sequences plus the seq at or above which it is "simple".

    Decoded from disk they are tuples, not lists: a tuple of bytes (or ints) leaves the garbage
    collector's tracking at its first collection, while every full collection walks each slot
    of a list -- a block cache full of decoded blocks made each full collection of a process
    some 20 ms slower (one cache miss per cached key and value)."""

    __slots__ = ("keys", "seqs", "values", "simple_seq", "size")

    def __init__(self, keys: list, seqs: list, values: list, simple_seq: int, size: int) -> None:
        self.keys = keys
        self.seqs = seqs
        self.values = values
        # A read at seq >= simple_seq sees every entry as is; -1 ... never (use 1<<63).
        self.simple_seq = simple_seq
        self.size = size  # memory held (decoded_block_bytes), what the block cache charges

    def find(self, key: bytes, seq: int) -> tuple | None:
        """``(seq, value)`` of the newest version of ``key`` at or below ``seq``; `NOT_VISIBLE`
        when the block holds only newer ones; None when it holds no version of ``key``."""
        keys = self.keys
        j = bisect_left(keys, key)
        n = len(keys)
        if j == n or keys[j] != key:
            return None
        seqs = self.seqs
        while j < n and keys[j] == key:
            if seqs[j] <= seq:
                return seqs[j], self.values[j]
            j += 1
        return NOT_VISIBLE


# A key found but only in versions newer than the read: distinct from None ("no such key in
# the block"), which the reader counts as a bloom false positive.
NOT_VISIBLE: Final = ()


NEVER_SIMPLE: Final = 1 << 63


def seal(payload: bytes) -> bytes:
    """Append the trailer (type and checksum) to a block payload."""
    return seal_parts((payload,))


def seal_parts(parts: tuple[bytes, ...]) -> bytes:
    """The block whose payload is ``parts`` joined, trailer appended: one copy of the bytes
    (the checksum runs over the parts, then the type byte)."""
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    crc = zlib.crc32(_TYPE_RAW_BYTE, crc) & 0xFFFFFFFF
    return b"".join((*parts, BLOCK_TRAILER.pack(TYPE_RAW, crc)))


_TYPE_RAW_BYTE = bytes([TYPE_RAW])


def unseal(raw: bytes, path: str, offset: int) -> bytes:
    """Check a block's trailer and return its payload; CorruptionError naming file and offset."""
    if len(raw) < TRAILER_SIZE:
        raise CorruptionError(f"truncated block in {path} at offset {offset}")
    payload_end = len(raw) - TRAILER_SIZE
    block_type, crc = BLOCK_TRAILER.unpack_from(raw, payload_end)
    if zlib.crc32(memoryview(raw)[: payload_end + 1]) & 0xFFFFFFFF != crc:
        raise CorruptionError(f"checksum mismatch in {path}: block at offset {offset}")
    if block_type != TYPE_RAW:
        raise CorruptionError(f"unknown block type {block_type} in {path} at offset {offset}")
    return raw[:payload_end]


def encode_data_block(flags: int, max_seq: int, keys: list, seqs: list, values: list) -> bytes:
    return seal(msgpack.packb([flags, max_seq, keys, seqs, values], use_bin_type=True))


def decode_data_block(raw: bytes, path: str, offset: int) -> DataBlock:
    payload = unseal(raw, path, offset)
    try:
        flags, max_seq, keys, seqs, values = msgpack.unpackb(payload, raw=True, use_list=False)
    except Exception as exc:  # msgpack raises several types on garbage
        raise CorruptionError(f"undecodable block in {path} at offset {offset}: {exc}") from None
    if not (type(keys) is type(seqs) is type(values) is tuple and len(keys) == len(seqs) == len(values)):
        raise CorruptionError(f"inconsistent block in {path} at offset {offset}")
    simple_seq = NEVER_SIMPLE if flags & (FLAG_MULTI_VERSION | FLAG_TOMBSTONES) else max_seq
    return DataBlock(keys, seqs, values, simple_seq, decoded_block_bytes(len(raw), len(keys)))


# What a decoded block costs in memory beyond its raw bytes, measured with tracemalloc on
# CPython 3.11 (tests/storage/test_storage_cache_memory.py keeps it honest): per entry a key
# and a value bytes object (33-byte header each, rounded up by the allocator), a seq int and
# three list slots; per block three lists, the block object and its cache bookkeeping.
_ENTRY_MEMORY = 2 * 40 + 32 + 3 * 8
_BLOCK_MEMORY = 3 * 56 + 80 + 250


def decoded_block_bytes(raw_size: int, entries: int) -> int:
    """Memory a decoded data block holds: what the block cache charges for it."""
    return raw_size + entries * _ENTRY_MEMORY + _BLOCK_MEMORY


def encode_msgpack_block(obj: object) -> bytes:
    return seal(msgpack.packb(obj, use_bin_type=True))


def decode_msgpack_block(raw: bytes, path: str, offset: int) -> object:
    payload = unseal(raw, path, offset)
    try:
        return msgpack.unpackb(payload, raw=True, use_list=True)
    except Exception as exc:
        raise CorruptionError(f"undecodable block in {path} at offset {offset}: {exc}") from None
