"""Reading one SSTable: footer, index and bloom loaded lazily, data blocks via the block cache.

A point lookup runs: bloom check -> bisect the index's last-key list -> cached block (or pread,
checksum, decode) -> bisect the block's keys -> first version with seq <= the read seq. A scan
asks for the block numbers covering its range and walks them through `block`.

Nothing is read when a reader is created: opening a database touches only the MANIFEST, and a
table's footer, index and bloom are read on its first use.
"""

from __future__ import annotations

import os
import threading
import zlib
from zlib import crc32
from bisect import bisect_left

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.sstable.block import DataBlock, decode_data_block, decode_msgpack_block, unseal
from sqlkv.storage.lsm.sstable.bloom import BloomFilter
from sqlkv.storage.lsm.sstable.builder import FOOTER, FOOTER_CRC, FOOTER_SIZE, FORMAT_VERSION, MAGIC


class TableReader:
    """Lookups in one immutable SSTable. Safe to share between threads."""

    def __init__(self, path: str, number: int, size: int, cache: BlockCache) -> None:
        self.path = path
        self.number = number
        self.size = size
        self.cache = cache
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._loaded = False
        self.index_keys: list[bytes] = []
        self.index_offsets: list[int] = []
        self.index_sizes: list[int] = []
        self.bloom: BloomFilter | None = None
        self.bloom_negatives = 0  # gets the bloom filter answered alone ("useful")
        self.bloom_positives = 0  # gets it let through to the blocks
        self.bloom_false_positives = 0  # ... of which the table held no version of the key
        self._bloom_bits = b""
        self._bloom_nbits = 0
        self._bloom_probes = 0

    # -- opening -------------------------------------------------------------------------

    def load(self) -> None:
        """Read footer, index and bloom (once). Raises CorruptionError naming the file."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                raise CorruptionError(f"table file {self.path} is missing") from None
            try:
                self._read_metadata(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            self._loaded = True

    def _read_metadata(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size != self.size or size < FOOTER_SIZE:
            raise CorruptionError(f"table file {self.path} has size {size}, expected {self.size}")
        footer = os.pread(fd, FOOTER_SIZE, size - FOOTER_SIZE)
        body = footer[: FOOTER.size]
        (crc,) = FOOTER_CRC.unpack_from(footer, FOOTER.size)
        if zlib.crc32(body) & 0xFFFFFFFF != crc:
            raise CorruptionError(f"checksum mismatch in {self.path}: footer at offset {size - FOOTER_SIZE}")
        index_off, index_size, bloom_off, bloom_size, version, magic = FOOTER.unpack(body)
        if magic != MAGIC or version != FORMAT_VERSION:
            raise CorruptionError(f"{self.path} is not a sqlkv table (format {version})")
        if index_off + index_size > size or bloom_off + bloom_size > size:
            raise CorruptionError(f"footer of {self.path} points outside the file")
        index = decode_msgpack_block(os.pread(fd, index_size, index_off), self.path, index_off)
        if not (isinstance(index, list) and len(index) == 3 and len(index[0]) == len(index[1]) == len(index[2])):
            raise CorruptionError(f"malformed index block in {self.path} at offset {index_off}")
        self.index_keys, self.index_offsets, self.index_sizes = index
        self.bloom = BloomFilter(unseal(os.pread(fd, bloom_size, bloom_off), self.path, bloom_off))
        self._bloom_bits = self.bloom.bits
        self._bloom_nbits = self.bloom.nbits
        self._bloom_probes = self.bloom.probes

    # -- blocks --------------------------------------------------------------------------

    def block(self, i: int) -> DataBlock:
        """Data block number ``i`` (0-based), from the cache or the disk."""
        blk = self.cache.get((self.number, self.index_offsets[i]))
        return blk if blk is not None else self._read_block(i)

    def _read_block(self, i: int) -> DataBlock:
        offset = self.index_offsets[i]
        fd = self._fd
        if fd is None:
            raise CorruptionError(f"table file {self.path} was closed while in use")
        raw = os.pread(fd, self.index_sizes[i], offset)
        blk = decode_data_block(raw, self.path, offset)
        if blk.keys and (i + 1 < len(self.index_keys)) and blk.keys[-1] != self.index_keys[i]:
            raise CorruptionError(f"index of {self.path} disagrees with block at offset {offset}")
        self.cache.put((self.number, offset), blk, blk.size)
        return blk

    def may_contain(self, key: bytes) -> bool:
        """The bloom filter's answer for ``key`` (True when the table has none), counted."""
        bloom = self.bloom
        if bloom is None or not self._bloom_nbits:
            return True
        if bloom.may_contain(key):
            self.bloom_positives += 1
            return True
        self.bloom_negatives += 1
        return False

    def get(self, key: bytes, seq: int) -> tuple[int, bytes | None] | None:
        """``(version seq, value)`` of the newest version of ``key`` at or below ``seq``.

        None when the table holds no such version. A None value is a tombstone. This is the
        hot path of every point read, so the bloom probe and the cache lookup are inlined.
        """
        if not self._loaded:
            self.load()
        nbits = self._bloom_nbits
        if nbits:
            bits = self._bloom_bits
            h = crc32(key)
            delta = ((h >> 17) | (h << 15)) & 0xFFFFFFFF
            for _ in range(self._bloom_probes):
                pos = h % nbits
                if not bits[pos >> 3] & (1 << (pos & 7)):
                    self.bloom_negatives += 1
                    return None
                h = (h + delta) & 0xFFFFFFFF
            self.bloom_positives += 1
        index_keys = self.index_keys
        i = bisect_left(index_keys, key)
        if i == len(index_keys):
            if nbits:
                self.bloom_false_positives += 1
            return None
        cache = self.cache
        cache_key = (self.number, self.index_offsets[i])
        blk = cache.entries.get(cache_key)
        if blk is None:
            cache.misses += 1
            blk = self._read_block(i)
        else:
            cache.hits += 1
            try:
                cache.entries.move_to_end(cache_key)
            except KeyError:
                pass
        keys = blk.keys
        j = bisect_left(keys, key)
        n = len(keys)
        seqs = blk.seqs
        if nbits and (j == n or keys[j] != key):
            self.bloom_false_positives += 1
            return None
        while j < n and keys[j] == key:
            if seqs[j] <= seq:
                return seqs[j], blk.values[j]
            j += 1
        return None

    def first_block_for(self, key: bytes) -> int:
        """Index of the first block that may hold keys >= ``key``."""
        if not self._loaded:
            self.load()
        return bisect_left(self.index_keys, key)

    def last_block_for(self, end: bytes | None) -> int:
        """Index of the last block that may hold keys < ``end`` (end None: the last block)."""
        if not self._loaded:
            self.load()
        n = len(self.index_keys)
        if end is None:
            return n - 1
        return min(n - 1, bisect_left(self.index_keys, end))

    @property
    def block_count(self) -> int:
        if not self._loaded:
            self.load()
        return len(self.index_keys)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:
        fd = self._fd
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass


def iter_table(reader: TableReader):
    """Every entry of a table as ``(key, seq, value)``, bypassing the block cache (compaction
    reads each block once; caching it would evict blocks that readers want)."""
    reader.load()
    fd = reader._fd
    if fd is None:
        raise CorruptionError(f"table file {reader.path} was closed while in use")
    for offset, size in zip(reader.index_offsets, reader.index_sizes):
        blk = decode_data_block(os.pread(fd, size, offset), reader.path, offset)
        yield from zip(blk.keys, blk.seqs, blk.values)
