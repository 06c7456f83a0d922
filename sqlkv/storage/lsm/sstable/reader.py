"""Reading one SSTable: footer, index and bloom loaded lazily, data blocks via the block cache.

A point lookup runs: bisect the index's last-key list -> cached block (or, after the bloom
check, pread, checksum, and for a format-2 table keep the bytes: packed.py) -> find the key in
the block -> first version with seq <= the read seq. A scan asks for the block numbers covering its range
and walks them through `block`, which decodes them whole.

Nothing is read when a reader is created: opening a database touches only the MANIFEST, and a
table's footer, index and bloom are read on its first use.
"""

from __future__ import annotations

import os
import threading
import zlib
from bisect import bisect_left

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.sstable.block import DataBlock, decode_data_block, decode_msgpack_block, unseal
from sqlkv.storage.lsm.sstable.bloom import BloomFilter
from sqlkv.storage.lsm.sstable.builder import FOOTER, FOOTER_CRC, FOOTER_SIZE, MAGIC, READABLE_VERSIONS
from sqlkv.storage.lsm.sstable.packed import PackedBlock, decode_packed_block

# How a data block of each table format is read: decoded whole (for scans), and for a point
# read (format 1 has no cheaper form; format 2 keeps the block's bytes, packed.py).
_DECODERS = {1: decode_data_block, 2: decode_packed_block}
_POINT_READERS = {1: decode_data_block, 2: PackedBlock}


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
        self._bloom_nbits = 0  # 0: no filter (or an empty one) to ask
        self.format_version = 0
        self._decode = decode_data_block
        self._read_for_point = decode_data_block

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
        if magic != MAGIC or version not in READABLE_VERSIONS:
            raise CorruptionError(f"{self.path} is not a sqlkv table (format {version})")
        if index_off + index_size > size or bloom_off + bloom_size > size:
            raise CorruptionError(f"footer of {self.path} points outside the file")
        index = decode_msgpack_block(os.pread(fd, index_size, index_off), self.path, index_off)
        if not (isinstance(index, list) and len(index) == 3 and len(index[0]) == len(index[1]) == len(index[2])):
            raise CorruptionError(f"malformed index block in {self.path} at offset {index_off}")
        self.index_keys, self.index_offsets, self.index_sizes = index
        self.bloom = BloomFilter(unseal(os.pread(fd, bloom_size, bloom_off), self.path, bloom_off))
        self._bloom_nbits = self.bloom.nbits
        self.format_version = version
        self._decode = _DECODERS[version]
        self._read_for_point = _POINT_READERS[version]

    # -- blocks --------------------------------------------------------------------------

    def block(self, i: int) -> DataBlock:
        """Data block number ``i`` (0-based) decoded whole, for a scan: from the cache or the
        disk. A packed block a point read cached is decoded; the decoded form is cached (in
        its place) only where it fits without evicting anything (`BlockCache.put`)."""
        cache_key = (self.number, self.index_offsets[i])
        blk = self.cache.get(cache_key)
        if blk is None:
            return self._read_block(i)
        if blk.__class__ is PackedBlock:
            blk = blk.decoded()
            self.cache.replace(cache_key, blk, blk.size, evict=False)
        return blk

    def _read_block(self, i: int) -> DataBlock:
        blk = self._decode(self._pread_block(i), self.path, self.index_offsets[i])
        self._check_last_key(i, blk.keys[-1] if blk.keys else None)
        self.cache.put((self.number, self.index_offsets[i]), blk, blk.size, evict=False)
        return blk

    def point_block(self, i: int) -> DataBlock | PackedBlock:
        """Data block number ``i`` read from the disk for a point read and cached: a format-2
        block as its bytes (`PackedBlock`), a format-1 block decoded."""
        blk = self._read_for_point(self._pread_block(i), self.path, self.index_offsets[i])
        if blk.__class__ is PackedBlock:
            self._check_last_key(i, blk.last_key)
        else:
            self._check_last_key(i, blk.keys[-1] if blk.keys else None)
        self.cache.put((self.number, self.index_offsets[i]), blk, blk.size)
        return blk

    def lookup_block(self, i: int) -> DataBlock | PackedBlock:
        """Data block number ``i`` for a point read: from the cache (a hit) or the disk (a
        miss, cached by `point_block`)."""
        blk = self.cached_block(i)
        if blk is None:
            self.cache.misses += 1
            return self.point_block(i)
        return blk

    def cached_block(self, i: int) -> DataBlock | PackedBlock | None:
        """Data block number ``i`` if the cache holds it (a hit, counted), else None (nothing
        counted: the caller reads it by `lookup_block`, or spares that on the filter's word).
        A packed block hit again decodes its key list (`PackedBlock.promote`: bisect from then
        on) only where the cache has room for it without evicting and would hold every
        table's blocks with their lists (`BlockCache.may_promote`): in a database larger than
        that a key list costs more than it saves -- it doubles a block's charge, so the cache
        holds half as many blocks and more reads miss; the block's bytes answer by `find` all
        the same."""
        cache = self.cache
        cache_key = (self.number, self.index_offsets[i])
        blk = cache.entries.get(cache_key)
        if blk is None:
            return None
        cache.hits += 1
        try:
            cache.entries.move_to_end(cache_key)
        except KeyError:  # evicted by another thread in between: still valid
            pass
        if (blk.__class__ is PackedBlock and blk.key_list is None and cache.promoted_need <= cache.capacity
                and cache.may_promote(blk.promotion_bytes)):  # (the first test spares two calls a hit)
            cache.grow(cache_key, blk.promote())
        return blk

    def _pread_block(self, i: int) -> bytes:
        fd = self._fd
        if fd is None:
            raise CorruptionError(f"table file {self.path} was closed while in use")
        return os.pread(fd, self.index_sizes[i], self.index_offsets[i])

    def _check_last_key(self, i: int, last_key: bytes | None) -> None:
        if last_key is not None and i + 1 < len(self.index_keys) and last_key != self.index_keys[i]:
            raise CorruptionError(f"index of {self.path} disagrees with block at offset {self.index_offsets[i]}")

    def may_contain(self, key: bytes) -> bool:
        """The bloom filter's answer for ``key`` (True when the table has none), counted."""
        if not self._bloom_nbits:
            return True
        if self.bloom.may_contain(key):  # type: ignore[union-attr]
            self.bloom_positives += 1
            return True
        self.bloom_negatives += 1
        return False

    def get(self, key: bytes, seq: int) -> tuple[int, bytes | None] | None:
        """``(version seq, value)`` of the newest version of ``key`` at or below ``seq``.

        None when the table holds no such version. A None value is a tombstone. This is the
        hot path of every point read. The bloom filter is probed before a block has to come
        from the disk (it spares the read); a cached block answers first, and the filter is
        asked only when the block lacks the key -- which counts the get exactly as probing
        first would: a key the table holds is a positive whatever the filter's bits (a bloom
        filter has no false negatives), an absent one useful or a false positive by the probe.
        """
        if not self._loaded:
            self.load()
        index_keys = self.index_keys
        i = bisect_left(index_keys, key)
        if i == len(index_keys):
            self._count_absent(key)
            return None
        blk = self.cached_block(i)
        if blk is None:
            if not self.may_contain(key):
                return None  # the filter spares reading the block
            self.cache.misses += 1
            found = self.point_block(i).find(key, seq)
            if found is None and self._bloom_nbits:
                self.bloom_false_positives += 1
            return found or None
        found = blk.find(key, seq)
        if found is None:
            self._count_absent(key)
            return None
        if self._bloom_nbits:
            self.bloom_positives += 1
        return found or None

    def _count_absent(self, key: bytes) -> None:
        """Count a get of a key the table lacks as the filter would have answered it."""
        if self._bloom_nbits:
            if self.bloom.may_contain(key):  # type: ignore[union-attr]
                self.bloom_positives += 1
                self.bloom_false_positives += 1
            else:
                self.bloom_negatives += 1

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
    decode = reader._decode
    for offset, size in zip(reader.index_offsets, reader.index_sizes):
        blk = decode(os.pread(fd, size, offset), reader.path, offset)
        yield from zip(blk.keys, blk.seqs, blk.values)
