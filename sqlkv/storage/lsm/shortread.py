"""Short prefix reads: the few pairs under one key prefix, without a scan's set-up.

``SELECT id FROM orders WHERE sku = ?`` on a non-unique index reads the entries under one
prefix, ``/Table/106/2/"sku-42"/``: usually one or two keys. A range read (`LSMCore.read_range_at`)
pins the version, builds a cursor per source that may hold a key of the span and merges them,
a set-up that costs several times the read itself. Here each source is visited as a point get
visits it, against one read state and without pinning (an in-flight reader keeps its table's
file open, as a get does): every memtable holding a key of the span gives its keys in it (one
bisect), and every table whose key range meets the span (the L0 tables, per level the tables
found by bisect) gives the entries from one bisect of its index and one of the block, walking
on only while keys stay below the span's end. The newest version at or below the read seq of
each key wins, tombstones and range deletions hide as in `get_many`.

The answer is exact or absent: more than ``most`` visible pairs, or a source holding more than
``most`` entries in the span (live or not), make `short_read` return None, and the caller reads
the span the general way.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from sqlkv.storage.lsm.multiget import has_range_deletions, visible_value
from sqlkv.storage.lsm.sstable.packed import PackedBlock

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import ReadState
    from sqlkv.storage.lsm.memtable import Memtable
    from sqlkv.storage.lsm.sstable.reader import TableReader

Versions = dict[bytes, tuple]  # key -> (newest seq at or below the read seq, value or None)


def short_read(state: ReadState, start: bytes, end: bytes, seq: int,
               most: int) -> list[tuple[bytes, bytes]] | None:
    """The visible pairs of ``[start, end)`` at ``seq`` in key order; None when there are
    more than ``most`` of them, or a source holds more than ``most`` entries of the span
    (the caller then scans it)."""
    found: Versions = {}
    for mem in state.mems:
        # one bisect tells a memtable without a key in the span (the usual case for an
        # equality on an index) before a page is cut: two bisects, a slice and three lists
        if mem.data and mem.has_keys_in(start, end) and not _from_memtable(mem, start, end, seq, most, found):
            return None
    for smallest, largest, reader in state.l0:
        if largest >= start and smallest < end and not _from_table(reader, start, end, seq, most, found):
            return None
    for largest_keys, smallest_keys, readers in state.levels:
        i = bisect_left(largest_keys, start)
        count = len(largest_keys)
        while i < count and smallest_keys[i] < end:  # the span may straddle neighbouring tables
            if not _from_table(readers[i], start, end, seq, most, found):
                return None
            i += 1
    if not found:
        return []
    pairs = []
    ranges = has_range_deletions(state)  # without one, a version is live unless a tombstone
    for key in sorted(found) if len(found) > 1 else found:
        value = visible_value(state, key, found[key], seq) if ranges else found[key][1]
        if value is not None:
            pairs.append((key, value))
    return pairs if len(pairs) <= most else None


def _from_memtable(mem: Memtable, start: bytes, end: bytes, seq: int, most: int, found: Versions) -> bool:
    """Add the memtable's newest visible version of each of its keys in the span; False when
    it holds more than ``most`` keys there (or more than a page)."""
    keys, seqs, values, more = mem.page(start, end, True, False, False)
    if more or len(keys) > most:
        return False
    previous = None
    for key, version_seq, value in zip(keys, seqs, values):  # newest version first per key
        if version_seq <= seq and key != previous:
            kept = found.get(key)
            if kept is None or kept[0] < version_seq:
                found[key] = (version_seq, value)
            previous = key
    return True


def _from_table(reader: TableReader, start: bytes, end: bytes, seq: int, most: int, found: Versions) -> bool:
    """Add the table's newest visible version of each key in the span: one bisect of the
    index, one of the first block, then the entries up to the span's end (into the blocks
    after it, while the span goes on); False when the table holds more than ``most``
    entries of the span. Blocks come through the block cache, counted as `TableReader.get`
    counts its lookups; a packed block is read entry by entry out of its bytes (its first
    entry in the span found by `PackedBlock.first_from`), never decoded whole."""
    if not reader._loaded:
        reader.load()
    index_keys = reader.index_keys
    nblocks = len(index_keys)
    i = bisect_left(index_keys, start)  # the first block whose last key is >= start
    left = most
    first = True
    while i < nblocks:
        blk = reader.lookup_block(i)
        if blk.__class__ is PackedBlock:
            j = blk.first_from(start) if first else 0
            n, key_at, seq_at, value_at = blk.count, blk.key_at, blk.seq_at, blk.value_at
        else:
            keys = blk.keys
            j = bisect_left(keys, start) if first else 0
            n, key_at, seq_at, value_at = len(keys), keys.__getitem__, blk.seqs.__getitem__, blk.values.__getitem__
        first = False
        # walk, not bisect, to the span's end: a few keys, next to the one just found
        while j < n:
            key = key_at(j)
            if key >= end:
                return True  # the span ends inside this block
            left -= 1
            if left < 0:
                return False
            version_seq = seq_at(j)
            if version_seq <= seq:
                kept = found.get(key)
                if kept is None or kept[0] < version_seq:
                    found[key] = (version_seq, value_at(j))
            j += 1
        i += 1  # the block ended inside the span: its neighbour may continue it
    return True
