"""Data blocks of table format 2: one value readable without decoding the others.

A format-1 block is one msgpack array ``[flags, max_seq, keys, seqs, values]``: a point read
that misses the block cache decodes every entry of the block (some 500 Python objects for an
8 KiB block) to answer one key, and the cache then holds all of them (about 4x the block's
bytes). A format-2 block keeps the keys and the values in two separate msgpack arrays and adds
the byte offset of every key and every value (grammar-notes/storage.md, "Data block"):

- a point read that misses the cache keeps the block's bytes as they are (`PackedBlock`),
  finds the key's msgpack element with one ``bytes.find`` (the offsets tell a real element
  start from a match inside another key) and slices its value out: no per-entry object is
  built, and the cache is charged little more than the block's size; where the keys section
  is long (an index's block), every 16th key is kept too (`PackedBlock.samples`), so the
  search runs over the ~16 entries between two samples, not over the whole section;
- a block hit again decodes its key list once (`PackedBlock.promote`), so later lookups bisect
  it as they bisect a decoded block -- where the cache has room for the list and would
  have it for every table's (`BlockCache.may_promote`);
- a short prefix read finds its first entry without the key list (`PackedBlock.first_from`);
- a scan decodes the two arrays with one C call each (`decode_packed_block`), as before.

Seqs are a little-endian u64 array, or nothing when every entry has the block's ``max_seq``
(``FLAG_UNIFORM_SEQ``: an ingested table, a bulk load).
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Final

import msgpack

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm.sstable.block import (
    FLAG_MULTI_VERSION,
    FLAG_TOMBSTONES,
    NEVER_SIMPLE,
    NOT_VISIBLE,
    TRAILER_SIZE,
    DataBlock,
    seal_parts,
    unseal,
)

FLAG_UNIFORM_SEQ: Final = 4
FLAG_WIDE_OFFSETS: Final = 8  # offsets are u32 (the sections end at or past 64 KiB), else u16

# flags:u8, max_seq:u64, count:u32, keys_size:u32, values_size:u32
HEADER = struct.Struct("<BQIII")
_SEQ = struct.Struct("<Q")
_U16: Final = "H"
_U32: Final = "I" if array("I").itemsize == 4 else "L"
# offset width -> (array typecode, struct of two consecutive offsets)
_OFFSETS = {2: (_U16, struct.Struct("<HH")), 4: (_U32, struct.Struct("<II"))}
_U64: Final = "Q"
_BIG_ENDIAN = sys.byteorder == "big"

# msgpack's header for a bin of n bytes (n < 256: bin8), i.e. the needle prefix of a key
_BIN8 = [bytes((0xC4, n)) for n in range(256)]
_BIN_HEADER = {0xC4: 2, 0xC5: 3, 0xC6: 5}
_NIL = 0xC0

# Memory a packed block holds besides its raw bytes: the object, its key offsets (2 or 4 bytes
# an entry) and cache bookkeeping; and what a promoted block's key list adds per entry (a bytes
# object of ~40 bytes plus its list slot). Kept honest by tests/storage/test_storage_cache_memory.py.
_PACKED_MEMORY = 400
_KEY_MEMORY = 40 + 8

# A packed block whose keys section is longer than SAMPLED_SECTION keeps every SAMPLE_EVERY-th
# key (`PackedBlock.samples`, sliced out when the block is read): a lookup bisects them in C,
# then searches only the window of entries between two samples, instead of running
# `bytes.find` over the whole section -- whose keys share long prefixes (an index's
# ``/Table/106/2/"sku-...``) that slow the search down (~4 us for an 8 KiB index block, ~2.8
# with the window, in a loaded process). A shorter section (a table's rows: short keys, long
# values) is searched whole: the bisect would cost more than it spares. A sample costs a key's
# object (`_KEY_MEMORY` plus its bytes): ~5% of an index block's charge, against ~100% for the
# whole key list (`promote`).
SAMPLE_EVERY: Final = 16
SAMPLED_SECTION: Final = 2048


def promoted_table_bytes(size: int, entries: int) -> int:
    """About what the block cache would hold for a table of ``size`` bytes and ``entries``
    entries if every block of it were cached with its key list (`PackedBlock.promote`):
    its bytes, the key offsets and the keys' objects (~2.5x the bytes for small rows)."""
    return size + entries * (4 + _KEY_MEMORY)


# A block decoded for a scan: per entry a key and a value bytes object and their list slots,
# and a seq slot (an array, or one shared int in a uniform block).
_DECODED_ENTRY_MEMORY = 2 * (40 + 8) + 8
_DECODED_BLOCK_MEMORY = 3 * 56 + 80 + 250


def _element_of(key: bytes) -> bytes:
    """``key``'s msgpack element as the keys section holds it."""
    n = len(key)
    return _BIN8[n] + key if n < 256 else msgpack.packb(key, use_bin_type=True)


def _bin_size(n: int) -> int:
    return n + (2 if n < 256 else 3 if n < 65536 else 5)


def _element_size(value: bytes | None) -> int:
    return 1 if value is None else _bin_size(len(value))


def _array_header_size(count: int) -> int:
    return 1 if count < 16 else 3 if count < 65536 else 5


def _offsets(width: int, items: list, packed: bytes, base: int) -> bytes:
    """The offsets (from ``base``, where ``packed`` begins), little-endian, ``width`` bytes
    each, of each element of the msgpack array ``packed`` of ``items`` (bins, or nil for
    None), then of its end."""
    first = base + _array_header_size(len(items))
    end = base + len(packed)
    offsets: Iterable[int] = ()
    try:  # usually every item is a bin8 of 2 header bytes: sizes as bytes, all in C
        sizes = bytes(map(len, items)).translate(_PLUS_BIN8_HEADER)
        offsets = list(accumulate(sizes, initial=first))
    except (TypeError, ValueError):  # a None (tombstone) has no len; a len over 255
        pass
    if not offsets or offsets[-1] != end:  # (a size of 256 or more came out as 255)
        offsets = list(accumulate(map(_element_size, items), initial=first))
        if offsets[-1] != end:  # never write a block whose offsets are wrong
            raise ValueError("data block encoding: element offsets disagree with msgpack")
    return struct.pack(f"<{len(items) + 1}{_PACK_CODES[width]}", *offsets)


# n -> n + 2 (a bin8's element size), saturating at 255 (then the total is short: caught)
_PLUS_BIN8_HEADER = bytes(min(255, n + 2) for n in range(256))
_PACK_CODES = {2: "H", 4: "I"}


def _from_le(typecode: str, data: bytes | memoryview) -> array:
    values = array(typecode)
    values.frombytes(data)
    if _BIG_ENDIAN:
        values.byteswap()
    return values


def encode_packed_block(flags: int, max_seq: int, keys: list, seqs: list, values: list) -> bytes:
    """A format-2 data block (sealed) of parallel lists in (key ascending, seq descending) order."""
    count = len(keys)
    packed_keys = msgpack.packb(keys, use_bin_type=True)
    packed_values = msgpack.packb(values, use_bin_type=True)
    values_at = HEADER.size + len(packed_keys)
    width = 2
    if values_at + len(packed_values) >= 1 << 16:
        flags |= FLAG_WIDE_OFFSETS
        width = 4
    key_starts = _offsets(width, keys, packed_keys, HEADER.size)[:-width]  # keys end where values begin
    value_starts = _offsets(width, values, packed_values, values_at)
    if min(seqs, default=max_seq) == max_seq:
        flags |= FLAG_UNIFORM_SEQ
        seq_bytes = b""
    else:
        seq_bytes = struct.pack(f"<{count}Q", *seqs)
    header = HEADER.pack(flags, max_seq, count, len(packed_keys), len(packed_values))
    return seal_parts((header, packed_keys, packed_values, key_starts, value_starts, seq_bytes))


class _Layout:
    """Where the sections of a format-2 block lie (payload offsets), checked against its size."""

    __slots__ = ("flags", "max_seq", "count", "keys_end", "values_end", "key_starts_at",
                 "value_starts_at", "seqs_at", "width", "typecode", "span")

    def __init__(self, raw: bytes, path: str, offset: int) -> None:
        payload_size = len(raw) - TRAILER_SIZE
        if payload_size < HEADER.size:
            raise CorruptionError(f"truncated data block in {path} at offset {offset}")
        self.flags, self.max_seq, count, keys_size, values_size = HEADER.unpack_from(raw, 0)
        self.count = count
        self.keys_end = HEADER.size + keys_size
        self.values_end = self.keys_end + values_size
        self.width = width = 4 if self.flags & FLAG_WIDE_OFFSETS else 2
        self.typecode, self.span = _OFFSETS[width]
        self.key_starts_at = self.values_end
        self.value_starts_at = self.key_starts_at + width * count
        self.seqs_at = self.value_starts_at + width * (count + 1)
        seqs_size = 0 if self.flags & FLAG_UNIFORM_SEQ else 8 * count
        if self.seqs_at + seqs_size != payload_size or not count:
            raise CorruptionError(f"inconsistent block in {path} at offset {offset}")

    def simple_from(self) -> int:
        """The seq at or above which a read sees every entry as is (`DataBlock.simple_seq`)."""
        return NEVER_SIMPLE if self.flags & (FLAG_MULTI_VERSION | FLAG_TOMBSTONES) else self.max_seq

    def seq_column(self, raw: bytes) -> tuple | array:
        if self.flags & FLAG_UNIFORM_SEQ:
            return (self.max_seq,) * self.count
        return _from_le(_U64, memoryview(raw)[self.seqs_at: self.seqs_at + 8 * self.count])


def decode_packed_block(raw: bytes, path: str, offset: int) -> DataBlock:
    """A format-2 block (checksum verified here) decoded into parallel lists, for scans."""
    unseal_check(raw, path, offset)
    layout = _Layout(raw, path, offset)
    return _decoded(raw, layout, path, offset)


def _decoded(raw: bytes, layout: _Layout, path: str, offset: int) -> DataBlock:
    """The block's entries as tuples (`DataBlock`: tuples of bytes leave the garbage
    collector's tracking, so the cached blocks cost its full collections nothing)."""
    view = memoryview(raw)
    try:
        keys = msgpack.unpackb(view[HEADER.size: layout.keys_end], raw=True, use_list=False)
        values = msgpack.unpackb(view[layout.keys_end: layout.values_end], raw=True, use_list=False)
    except Exception as exc:  # msgpack raises several types on garbage
        raise CorruptionError(f"undecodable block in {path} at offset {offset}: {exc}") from None
    if not (type(keys) is tuple and type(values) is tuple and len(keys) == len(values) == layout.count):
        raise CorruptionError(f"inconsistent block in {path} at offset {offset}")
    size = len(raw) + layout.count * _DECODED_ENTRY_MEMORY + _DECODED_BLOCK_MEMORY
    return DataBlock(keys, layout.seq_column(raw), values, layout.simple_from(), size)


def unseal_check(raw: bytes, path: str, offset: int) -> None:
    """`unseal` without copying the payload out (the offsets address ``raw`` itself)."""
    unseal(memoryview(raw), path, offset)


class PackedBlock(_Layout):
    """A format-2 block kept as its bytes: what a point read caches on a miss. It is its own
    layout (a subclass, not an object of its own): the cache holds one object fewer a block
    for every full garbage collection to walk."""

    __slots__ = ("raw", "key_starts", "key_list", "samples", "size", "path", "offset", "simple_seq")

    def __init__(self, raw: bytes, path: str, offset: int) -> None:
        unseal_check(raw, path, offset)
        super().__init__(raw, path, offset)
        self.raw = raw
        self.path, self.offset = path, offset
        self.key_starts = _from_le(self.typecode, memoryview(raw)[self.key_starts_at: self.value_starts_at])
        if self.key_starts[0] <= HEADER.size or self.key_starts[-1] >= self.keys_end:
            raise CorruptionError(f"inconsistent block in {path} at offset {offset}")
        self.key_list: tuple[bytes, ...] | None = None  # decoded by `promote`
        self.simple_seq = self.simple_from()
        # every SAMPLE_EVERY-th key, ascending (a tuple: untracked by the garbage collector)
        self.samples = samples = tuple(map(self.key_at, range(0, self.count, SAMPLE_EVERY))) if (
            self.keys_end - HEADER.size > SAMPLED_SECTION) else ()
        self.size = (len(raw) + self.key_starts.itemsize * self.count + _PACKED_MEMORY
                     + sum(map(len, samples)) + len(samples) * _KEY_MEMORY)

    @property
    def last_key(self) -> bytes:
        start = self.key_starts[-1]
        return self._key_at(start, self.keys_end)

    def _key_at(self, start: int, end: int) -> bytes:
        raw = self.raw
        header = _BIN_HEADER.get(raw[start])
        if header is None:
            raise CorruptionError(f"undecodable key in {self.path}: block at offset {self.offset}")
        return raw[start + header: end]

    @property
    def promotion_bytes(self) -> int:
        """The memory `promote` would add (what the cache would charge the key list)."""
        return self.count * _KEY_MEMORY + 56

    def promote(self) -> int:
        """Decode the key list (the block is being hit again); return the memory it adds."""
        if self.key_list is not None:
            return 0
        try:
            # a tuple, as `_decoded`'s: untracked by the garbage collector once it has seen it
            keys = msgpack.unpackb(memoryview(self.raw)[HEADER.size: self.keys_end], raw=True, use_list=False)
        except Exception as exc:
            raise CorruptionError(f"undecodable block in {self.path} at offset {self.offset}: {exc}") from None
        if type(keys) is not tuple or len(keys) != self.count:
            raise CorruptionError(f"inconsistent block in {self.path} at offset {self.offset}")
        if self.key_list is not None:  # another thread promoted it meanwhile: charged once
            return 0
        self.key_list = keys
        extra = self.promotion_bytes
        self.size += extra
        return extra

    def decoded(self) -> DataBlock:
        """This block as parallel lists (a scan wants them all); no disk read, no checksum."""
        return _decoded(self.raw, self, self.path, self.offset)

    # Read as a `DataBlock` is read (for code that takes a cached block without asking the
    # reader's `block`, which swaps it for its decoded form): decoded on each access, not kept
    # (the cache charged the block for its bytes).
    @property
    def keys(self) -> tuple[bytes, ...]:
        return self.key_list if self.key_list is not None else self.decoded().keys

    @property
    def seqs(self) -> EntryColumn:
        return EntryColumn(self.count, self.seq_at, lambda: self.seq_column(self.raw))

    @property
    def values(self) -> EntryColumn:
        return EntryColumn(self.count, self.value_at, lambda: self.decoded().values)

    def seq_at(self, j: int) -> int:
        if self.flags & FLAG_UNIFORM_SEQ:
            return self.max_seq
        return _SEQ.unpack_from(self.raw, self.seqs_at + 8 * j)[0]

    def find(self, key: bytes, seq: int) -> tuple | None:
        """``(seq, value)`` of the newest version of ``key`` at or below ``seq``; `NOT_VISIBLE`
        when the block holds only newer ones; None when it holds no version of ``key``.

        Without a key list, the key's msgpack element is searched for in the keys section (a
        match that is not an element's start is skipped); inlined, as this runs on every hit
        of a block a database too large for key lists caches."""
        keys = self.key_list
        if keys is not None:
            j = bisect_left(keys, key)
            if j == len(keys) or keys[j] != key:
                return None
        else:
            starts = self.key_starts
            count = len(starts)
            samples = self.samples
            if samples:  # the key's first version is after the last sample below it, at or
                # before the first sample at or above it: its element lies in that window
                g = bisect_left(samples, key)
                low = (g - 1) * SAMPLE_EVERY + 1 if g else 0
                if low >= count:
                    return None
                high = min(g * SAMPLE_EVERY + 1, count)  # past the window's last entry
            else:
                low, high = 0, count
            stop = starts[high] if high < count else self.keys_end
            n = len(key)
            needle = _BIN8[n] + key if n < 256 else _element_of(key)
            raw = self.raw
            pos = raw.find(needle, starts[low], stop)
            while True:
                if pos < 0:
                    return None
                j = bisect_left(starts, pos, low, high)
                if j < high and starts[j] == pos:
                    break
                pos = raw.find(needle, pos + 1, stop)
        if self.flags & FLAG_UNIFORM_SEQ:  # one version per key, all at max_seq
            return (self.max_seq, self.value_at(j)) if self.max_seq <= seq else NOT_VISIBLE
        count = self.count
        while True:
            version = self.seq_at(j)
            if version <= seq:
                return version, self.value_at(j)
            j += 1
            if j == count or not self._is_key(j, key):
                return NOT_VISIBLE

    def key_at(self, j: int) -> bytes:
        """The key of entry ``j``, sliced out of the block (or taken from the key list)."""
        keys = self.key_list
        if keys is not None:
            return keys[j]
        starts = self.key_starts
        start = starts[j]
        end = starts[j + 1] if j + 1 < len(starts) else self.keys_end
        raw = self.raw
        if raw[start] == 0xC4:  # a bin8, as nearly every key is: spare `_key_at`'s call
            return raw[start + 2: end]
        return self._key_at(start, end)

    def first_from(self, key: bytes) -> int:
        """The number of the first entry whose key is >= ``key`` (the count when none is), as
        `bisect_left` over the keys would give it, without decoding the keys. The samples
        (bisected in C), where the block has them, narrow it to the window between two of
        them. There, the first entry whose key begins with ``key`` is the answer (keys
        between ``key`` and one extending it all extend it), found by one ``bytes.find``
        whose match must begin right after an element's header and end inside that
        element; when no key there begins with ``key``, a binary search slicing keys."""
        keys = self.key_list
        if keys is not None:
            return bisect_left(keys, key)
        starts = self.key_starts
        count = len(starts)
        samples = self.samples
        if samples:
            g = bisect_left(samples, key)  # samples[g - 1] < key <= samples[g]
            low = (g - 1) * SAMPLE_EVERY + 1 if g else 0
            high = min(g * SAMPLE_EVERY, count)  # the answer is in [low, high]
            last = min(high + 1, count)  # the window's entries are low .. last - 1
        else:
            low = 0
            high = last = count
        if key and low < high:
            raw = self.raw
            stop = starts[last] if last < count else self.keys_end
            pos = raw.find(key, starts[low], stop)
            while pos >= 0:
                j = bisect_right(starts, pos, low, last) - 1  # the element the match begins in
                # it must begin right after the element's header and end inside its key
                if (pos - starts[j] == _BIN_HEADER.get(raw[starts[j]])
                        and pos + len(key) <= (starts[j + 1] if j + 1 < count else stop)):
                    return j
                pos = raw.find(key, pos + 1, stop)
        key_at = self.key_at
        while low < high:
            middle = (low + high) // 2
            if key_at(middle) < key:
                low = middle + 1
            else:
                high = middle
        return low

    def _is_key(self, j: int, key: bytes) -> bool:
        keys = self.key_list
        if keys is not None:
            return keys[j] == key
        needle = _element_of(key)
        start = self.key_starts[j]
        stop = self.key_starts[j + 1] if j + 1 < len(self.key_starts) else self.keys_end
        return stop - start == len(needle) and self.raw.startswith(needle, start)

    def value_at(self, j: int) -> bytes | None:
        raw = self.raw
        start, end = self.span.unpack_from(raw, self.value_starts_at + self.width * j)
        tag = raw[start]
        if tag == 0xC4:
            return raw[start + 2: end]
        if tag == _NIL:
            return None
        header = _BIN_HEADER.get(tag)
        if header is None or end > self.values_end:
            raise CorruptionError(f"undecodable value in {self.path}: block at offset {self.offset}")
        return raw[start + header: end]


class EntryColumn:
    """The seqs or the values of a `PackedBlock` as a sequence: an entry is read out of the
    block's bytes when indexed; a slice decodes the whole column first."""

    __slots__ = ("count", "at", "whole")

    def __init__(self, count: int, at, whole) -> None:
        self.count, self.at, self.whole = count, at, whole

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, j):
        if isinstance(j, slice):
            return self.whole()[j]
        if j < 0:
            j += self.count
        if not 0 <= j < self.count:
            raise IndexError("block entry out of range")
        return self.at(j)

    def __iter__(self):
        return iter(self.whole())
