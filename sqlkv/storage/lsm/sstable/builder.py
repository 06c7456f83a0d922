"""Writing one SSTable: entries in, blocks, bloom, index and footer out.

Compaction and flush call ``add(key, seq, value)`` in (key ascending, seq descending) order. The
builder gathers entries into parallel lists and cuts a data block once it passes ``block_size``
-- but only between two keys, so all versions of a key live in one block (a reader then finds
them with one bisect). ``finish`` appends the bloom block, the index block (last key, offset and
size of each data block) and the fixed footer, fsyncs the file and returns its `TableInfo`.
"""

from __future__ import annotations

import os
import struct
import zlib
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add

from sqlkv.storage.lsm.sstable.block import (
    FLAG_MULTI_VERSION,
    FLAG_TOMBSTONES,
    encode_data_block,
    encode_msgpack_block,
    seal,
)
from sqlkv.storage.lsm import fileio
from sqlkv.storage.lsm.sstable.bloom import build_filter
from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.sstable.packed import PackedBlock, encode_packed_block
from sqlkv.storage.lsm.sstable.put_block import encode_put_block

MAGIC = b"SQLKVSST"
# 1: data blocks are one msgpack array (block.py); 2: keys and values apart, with offsets
# (packed.py). Readers take both; writers write 2 (1 only when a test asks for it).
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_BLOCK_ENCODERS = {1: encode_data_block, 2: encode_packed_block}
# index_offset, index_size, bloom_offset, bloom_size, format_version, magic; then crc32 of those.
FOOTER = struct.Struct("<QIQII8s")
FOOTER_CRC = struct.Struct("<I")
FOOTER_SIZE = FOOTER.size + FOOTER_CRC.size

DEFAULT_BLOCK_SIZE = 8 * 1024
_WRITE_CHUNK = 256 * 1024
_ENTRY_OVERHEAD = 12  # approximate msgpack bytes per entry besides key and value


@dataclass
class TableInfo:
    """What the MANIFEST records about one SSTable."""

    number: int
    size: int
    smallest: bytes
    largest: bytes
    min_seq: int
    max_seq: int
    entries: int
    tombstones: int
    # Range tombstones with seq <= checked_seq were applied when writing this file; `needs` lists
    # those among them that still cover some entry here (kept for an older snapshot).
    checked_seq: int = 0
    needs: list[int] = field(default_factory=list)

    def to_list(self) -> list:
        return [self.number, self.size, self.smallest, self.largest, self.min_seq, self.max_seq,
                self.entries, self.tombstones, self.checked_seq, sorted(self.needs)]

    @classmethod
    def from_list(cls, row: list) -> TableInfo:
        return cls(int(row[0]), int(row[1]), bytes(row[2]), bytes(row[3]), int(row[4]),
                   int(row[5]), int(row[6]), int(row[7]), int(row[8]), [int(x) for x in row[9]])


class TableBuilder:
    """Streams sorted entries into a new SSTable file at ``path``."""

    def __init__(self, path: str, number: int, block_size: int = DEFAULT_BLOCK_SIZE, bloom: bool = True,
                 *, format_version: int = FORMAT_VERSION, cache: BlockCache | None = None) -> None:
        """``bloom=False`` writes an empty bloom block (storage.md: gets then read the blocks):
        for an ingestion whose keys are only ever read by range scans (`add_puts` only).
        ``cache``: put each data block written into this block cache as a point read would
        have cached it (an ingestion's tables are read right after it: a bulk load, an index
        build); only for format 2."""
        self.path = path
        self.bloom = bloom
        self.number = number
        self.block_size = block_size
        self.format_version = format_version
        self._encode_block = _BLOCK_ENCODERS[format_version]
        self._cache = cache if format_version == 2 else None
        self._fd = fileio.open_file(path)
        self._pending = bytearray()  # written to the file in large pieces
        self._offset = 0
        self._keys: list[bytes] = []
        self._seqs: list[int] = []
        self._values: list[bytes | None] = []
        self._block_bytes = 0
        self._flags = 0
        self._block_max_seq = 0
        # (value, seq) of every entry of the block when `add_puts` put them all, else None
        self._uniform: tuple[bytes, int] | None = None
        self.payload = 0  # bytes of the keys and values `add_puts` took
        self._index_keys: list[bytes] = []
        self._index_offsets: list[int] = []
        self._index_sizes: list[int] = []
        self._hashes: list[int] = []
        self._last_key: bytes | None = None
        self.smallest: bytes | None = None
        self.min_seq = 1 << 62
        self.max_seq = 0
        self.entries = 0
        self.tombstones = 0

    @property
    def estimated_size(self) -> int:
        return self._offset + self._block_bytes

    def add(self, key: bytes, seq: int, value: bytes | None) -> None:
        self._uniform = None
        if key != self._last_key:
            if self._block_bytes >= self.block_size:
                self._finish_block()
            self._hashes.append(zlib.crc32(key))
            if self.smallest is None:
                self.smallest = key
            self._last_key = key
        elif self._keys:
            self._flags |= FLAG_MULTI_VERSION
        self._keys.append(key)
        self._seqs.append(seq)
        self._values.append(value)
        if value is None:
            self._flags |= FLAG_TOMBSTONES
            self.tombstones += 1
            self._block_bytes += len(key) + _ENTRY_OVERHEAD
        else:
            self._block_bytes += len(key) + len(value) + _ENTRY_OVERHEAD
        if seq > self._block_max_seq:
            self._block_max_seq = seq
        if seq < self.min_seq:
            self.min_seq = seq
        if seq > self.max_seq:
            self.max_seq = seq
        self.entries += 1

    def add_puts(self, keys: Sequence[bytes], values: Sequence[bytes], seq: int, stop_size: int) -> int:
        """`add` of ``(key, seq, value)`` for each pair, in blocks rather than entry by entry
        (an ingestion's puts: distinct keys, ascending and above every key added, one seq).
        Stops at the first block boundary where the file's `estimated_size` reaches
        ``stop_size``; returns how many pairs it took. Blocks are cut where `add` cuts them."""
        n = len(keys)
        if not n:
            return 0
        # one value for every pair (a non-unique index's entries): its blocks are encoded
        # knowing it (`encode_put_block`), and the sizes need no pass over the values
        one = values[0]
        uniform = (one, seq) if type(one) is bytes and values.count(one) == n else None
        # ends[i]: the block bytes of pairs [0, i] (sizes as `add` counts them)
        if uniform is not None:
            sizes = map(add, map(len, keys), repeat(len(one) + _ENTRY_OVERHEAD))
        else:
            sizes = map(add, map(add, map(len, keys), map(len, values)), repeat(_ENTRY_OVERHEAD))
        ends = list(accumulate(sizes, initial=0))
        taken = 0
        while taken < n:
            if self._block_bytes >= self.block_size:
                self._finish_block()
                if self.estimated_size >= stop_size:
                    break
            # the pairs up to the first one that fills the block go in (as `add` would)
            target = ends[taken] + self.block_size - self._block_bytes
            last = min(bisect_left(ends, target, taken + 1), n)
            if not self._keys:
                self._uniform = uniform
            elif self._uniform != uniform:
                self._uniform = None
            self._keys += keys[taken:last]
            self._values += values[taken:last]
            self._seqs += repeat(seq, last - taken)
            self._block_max_seq = max(self._block_max_seq, seq)
            self._block_bytes += ends[last] - ends[taken]
            taken = last
        self.payload += ends[taken] - _ENTRY_OVERHEAD * taken
        if self.bloom:
            self._hashes += map(zlib.crc32, keys[:taken])
        if taken:
            if self.smallest is None:
                self.smallest = keys[0]
            self._last_key = keys[taken - 1]
            self.min_seq = min(self.min_seq, seq)
            self.max_seq = max(self.max_seq, seq)
            self.entries += taken
        return taken

    def _finish_block(self) -> None:
        if not self._keys:
            return
        if self._uniform is not None and self.format_version == 2:  # add_puts' pairs of one value and seq
            raw = encode_put_block(self._block_max_seq, self._keys, self._uniform[0])
        else:
            raw = self._encode_block(self._flags, self._block_max_seq, self._keys, self._seqs, self._values)
        offset = self._write(raw, self._keys[-1])
        if self._cache is not None:
            blk = PackedBlock(raw, self.path, offset)
            self._cache.put((self.number, offset), blk, blk.size)
        self._keys, self._seqs, self._values = [], [], []
        self._uniform = None
        self._block_bytes = 0
        self._flags = 0
        self._block_max_seq = 0

    def _write(self, raw: bytes, index_key: bytes | None) -> int:
        offset = self._offset
        self._pending += raw
        if len(self._pending) >= _WRITE_CHUNK:
            fileio.write_all(self._fd, self._pending)
            self._pending = bytearray()
        self._offset += len(raw)
        if index_key is not None:
            self._index_keys.append(index_key)
            self._index_offsets.append(offset)
            self._index_sizes.append(len(raw))
        return offset

    def finish(self, checked_seq: int = 0, needs: list[int] | None = None) -> TableInfo:
        """Write the remaining block, bloom, index and footer; fsync; close."""
        self._finish_block()
        bloom_raw = seal(build_filter(self._hashes) if self.bloom else b"")
        bloom_offset = self._write(bloom_raw, None)
        index_raw = encode_msgpack_block([self._index_keys, self._index_offsets, self._index_sizes])
        index_offset = self._write(index_raw, None)
        footer = FOOTER.pack(index_offset, len(index_raw), bloom_offset, len(bloom_raw),
                             self.format_version, MAGIC)
        self._pending += footer + FOOTER_CRC.pack(zlib.crc32(footer) & 0xFFFFFFFF)
        self._offset += FOOTER_SIZE
        fileio.write_all(self._fd, self._pending)
        self._pending = bytearray()
        fileio.sync(self._fd, data_only=False)
        self._close()
        return TableInfo(
            number=self.number,
            size=self._offset,
            smallest=self.smallest or b"",
            largest=self._last_key or b"",
            min_seq=self.min_seq if self.entries else 0,
            max_seq=self.max_seq,
            entries=self.entries,
            tombstones=self.tombstones,
            checked_seq=checked_seq,
            needs=list(needs or []),
        )

    def _close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            fileio.close(fd)

    def abandon(self) -> None:
        """Close and remove a partly written file (compaction failed or engine closing)."""
        if self._cache is not None:
            self._cache.evict_file(self.number)
        try:
            self._close()
        finally:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
