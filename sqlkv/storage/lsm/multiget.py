"""Point reads of many keys at once against one read state (`LSMSnapshot.get_many`).

A lookup join or an index scan fetches rows by primary key: 100 keys for one join query.
Read one by one, each key pays the whole path (snapshot, memtables, every table's bloom
filter, index bisect, block cache). Here the keys are sorted and each source is visited once:
the memtables resolve what they hold, then every table takes the keys in its range in one
pass (a level's tables in one pass too), bisecting its index and the block from where the
previous key left off and looking a block up in the cache once for all its keys; a block
whose every version the read sees, one per key and no tombstone, answers by one bisect. A
decoded block is looked up in the cache here, as `TableReader.cached_block` does (a packed
block through it: it may promote the block). A block already in the cache answers without
the bloom filter (the filter only saves reading a block); it is consulted before a block has
to come from the disk, as in `TableReader.get`.

Hot rows: a value found in a block every version of which the read sees (one per key, no
tombstone: the key's only version in its table) is remembered by key with its table's number
and the block's ``simple_seq`` (`HotRows`, one per engine). Tables never change, so a later
`get_many` reaching that table for the key at a seq at or above ``simple_seq`` takes the value
from there -- no index bisect, block cache lookup or block bisect -- counted as the block cache
hit it stands for. ``ORDER BY sku LIMIT 10`` run again fetches the same ten rows. A read
state holding a range deletion does without (its versions are resolved in full).

Versions, tombstones and range deletions are resolved as `LSMCore.get_at` does.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from sqlkv.storage.lsm.sstable.block import DataBlock

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import ReadState
    from sqlkv.storage.lsm.sstable.reader import TableReader

# key -> (version seq, value or None for a tombstone); or, when the read state holds no range
# deletion (``versions`` False below), key -> the value alone
Found = dict[bytes, "tuple | bytes | None"]

HOT_ROWS_MAX = 4096  # values remembered per engine; the lot is dropped when full
# only values this short are remembered: hot rows hold their values alive after their block
# leaves the cache, so they stay within 4,096 x 1 KiB beyond the cache's own bound
HOT_ROW_MAX_BYTES = 1024
# an engine's block cache -> its hot rows: key -> (table number, value, the block's simple_seq)
_hot_rows: WeakKeyDictionary = WeakKeyDictionary()


def hot_rows_of(cache) -> dict[bytes, tuple[int, bytes, int]]:
    """The hot rows of the engine whose block cache is ``cache`` (see the module docstring)."""
    rows = _hot_rows.get(cache)
    if rows is None:
        rows = _hot_rows[cache] = {}
    return rows


def get_many(state: ReadState, keys: list[bytes], seq: int, counters: dict[str, int]) -> list[bytes | None]:
    """The value of each of ``keys`` at ``seq`` (None: absent or deleted), in their order."""
    remaining = sorted(set(keys))
    # with no range deletion to resolve, a key's newest version's value is its answer (None: a
    # tombstone), so only values are kept: no version tuple per key (asked once: a range
    # deletion the active memtable gets meanwhile is newer than ``seq``, it hides nothing)
    ranges = has_range_deletions(state)
    found: Found = {}
    remaining = _from_memtables(state, remaining, seq, found, ranges)
    probed = 0
    for smallest, largest, reader in state.l0:  # newest first: the first version found wins
        if not remaining:
            break
        held = len(found)
        probed += _from_level([largest], [smallest], [reader], remaining, seq, found, ranges)
        if len(found) > held:
            remaining = [k for k in remaining if k not in found]
    for level_largest, level_smallest, readers in state.levels:
        if not remaining:
            break
        held = len(found)
        probed += _from_level(level_largest, level_smallest, readers, remaining, seq, found, ranges)
        if len(found) > held:
            remaining = [k for k in remaining if k not in found]
    counters["gets"] += len(keys)
    counters["tables_probed"] += probed
    if ranges:
        return [visible_value(state, key, found.get(key), seq) for key in keys]
    return list(map(found.get, keys))


def _from_memtables(state: ReadState, keys: list[bytes], seq: int, found: Found,
                    versions: bool) -> list[bytes]:
    """Resolve the keys the memtables hold a visible version of (``found`` gets each one's
    version, or its value alone unless ``versions``); return the others."""
    for mem in state.mems:
        data = mem.data
        if not data:
            continue
        entries = list(map(data.get, keys))
        if entries.count(None) == len(entries):
            continue  # none of the keys here (the usual case): no step per key
        rest = []
        for key, entry in zip(keys, entries):
            if entry is not None:
                if entry.__class__ is tuple:  # one version (see memtable.py)
                    version = entry if entry[0] <= seq else None
                else:
                    version = mem.get(key, seq)
                if version is not None:
                    found[key] = version if versions else version[1]
                    continue
            rest.append(key)
        keys = rest
    return keys


def _from_level(largest: list[bytes], smallest: list[bytes], readers: list[TableReader],
                keys: list[bytes], seq: int, found: Found, versions: bool) -> int:
    """Add to ``found`` the newest version at or below ``seq`` (its value alone unless
    ``versions``) of each of the sorted ``keys`` that the tables of one level (their
    ``largest`` and ``smallest`` keys, in order) hold, in one pass: the table, the block and
    the entry each bisected from where the previous key left them. Return how many tables
    had a key in their range (were probed)."""
    probed = 0
    count = len(largest)
    t = 0
    table = -1
    reader = blk = cache = None
    cached: dict = {}
    hot: dict[bytes, tuple[int, bytes, int]] = {}
    offsets: list[int] = []
    number = 0
    index_keys: list[bytes] = []
    b = current = 0
    simple = False
    block_keys: list[bytes] = []
    for key in keys:
        t = bisect_left(largest, key, t)
        if t == count:
            break  # sorted keys: the rest are past the level's last table too
        if smallest[t] > key:
            continue
        if t != table:
            table = t
            probed += 1
            reader = readers[t]
            if not reader._loaded:
                reader.load()
            index_keys = reader.index_keys
            offsets, number = reader.index_offsets, reader.number
            if cache is None:
                cache = reader.cache
                cached = cache.entries
                hot = hot_rows_of(cache) if not versions else {}
            b = 0
            current = -1
        hit = hot.get(key)
        if hit is not None and hit[0] == number and hit[2] <= seq:
            found[key] = hit[1]
            cache.hits += 1  # (the hit on its block it spares)
            continue
        b = bisect_left(index_keys, key, b)
        if b == len(index_keys):
            continue
        if b != current:
            cache_key = (number, offsets[b])
            blk = cached.get(cache_key)
            if blk.__class__ is DataBlock:  # a decoded block cached: the hit `cached_block` counts
                cache.hits += 1
                try:
                    cached.move_to_end(cache_key)
                except KeyError:  # evicted by another thread in between: still valid
                    pass
            else:  # a packed block (`cached_block` may promote it), or not cached
                blk = reader.cached_block(b) or _unless_filtered(reader, b, key)  # type: ignore[union-attr]
                if blk is None:
                    continue  # the filter spares reading the block
            current = b
            # every version in the block visible, one per key, no tombstone: a bisect answers
            simple = blk.__class__ is DataBlock and blk.simple_seq <= seq
            block_keys = blk.keys if simple else []
        if simple:
            j = bisect_left(block_keys, key)
            if j < len(block_keys) and block_keys[j] == key:
                if versions:
                    found[key] = (blk.seqs[j], blk.values[j])  # type: ignore[union-attr]
                else:
                    found[key] = value = blk.values[j]  # type: ignore[union-attr]
                    if len(value) <= HOT_ROW_MAX_BYTES:
                        if len(hot) >= HOT_ROWS_MAX:
                            hot.clear()
                        hot[key] = (number, value, blk.simple_seq)  # type: ignore[union-attr]
        else:
            version = blk.find(key, seq)  # type: ignore[union-attr]
            if version:  # neither absent (None) nor only newer versions (NOT_VISIBLE)
                found[key] = version if versions else version[1]
    return probed


def _unless_filtered(reader: TableReader, i: int, key: bytes):
    """Block ``i`` of ``reader``, not cached, read for a point read of ``key``; None when the
    bloom filter says the table lacks ``key`` (a cached block answers without the filter)."""
    if not reader.may_contain(key):
        return None
    reader.cache.misses += 1
    return reader.point_block(i)


def has_range_deletions(state: ReadState) -> bool:
    """Whether a range deletion may hide something in ``state`` (the tables' or a memtable's:
    the active memtable's can appear after the state was taken, so it is asked each time)."""
    if state.has_tombstones:
        return True
    for mem in state.mems:
        if mem.range_tombstones:
            return True
    return False


def visible_value(state: ReadState, key: bytes, version: tuple | None, seq: int) -> bytes | None:
    """The value of ``version`` (the newest of ``key`` at ``seq``), unless it is a tombstone
    or a range deletion of the read state covers it."""
    if version is None or version[1] is None:
        return None
    if state.has_tombstones and state.version.tomb_index.covers(key, version[0], seq):
        return None
    for mem in state.mems:
        if mem.range_tombstones and mem.tombstone_index().covers(key, version[0], seq):
            return None
    return version[1]
