"""Short limited reads: the first (or last) few pairs of a span, without a scan's set-up.

``SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10`` reads the first ten entries of
the index orders_sku. A range read (`LSMCore.read_range_at`) pins the version, opens a cursor
per source and merges them, a set-up that costs more than reading ten entries. Here, as a
short prefix read does (shortread.py), each source that can hold a key of the span is visited
against one read state, without pinning (an in-flight reader keeps its table's file open, as a
get does): a memtable gives its first ``width`` keys of the span (its last, reading in reverse),
a table its entries from one bisect of its index and one of the block, walking on (into the next
blocks, the next tables of a level) until it has given ``width`` distinct keys or the span ends.
The newest version at or below the read seq of each key wins; tombstones and range deletions
hide, as in `get_many`.

A source cut off after its ``width`` keys tells nothing past the last key it gave (the *bound*),
so the answer holds up to the nearest bound only: when fewer than ``limit`` visible pairs lie
within it (tombstones, or versions newer than the read, hid some), `first_read` returns None and
the caller reads again wider (``LSMSnapshot.read_range``: ``limit + 8`` keys a source, then
``8 * limit + 64``), then the span the general way. (A memtable page of 128 keys per read cost
~50 us with 2,000 deletions in the memtable.)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlkv.storage.lsm.multiget import has_range_deletions, visible_value
from sqlkv.storage.lsm.sstable.block import DataBlock
from sqlkv.storage.lsm.sstable.packed import EntryColumn, PackedBlock

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import ReadState
    from sqlkv.storage.lsm.sstable.reader import TableReader

Versions = dict[bytes, tuple]  # key -> (newest seq at or below the read seq, value or None)

FIRST_READ_MOST = 64  # larger limits read the span the general way


def first_read(state: ReadState, start: bytes, end: bytes | None, seq: int, limit: int,
               reverse: bool, width: int | None = None) -> list[tuple[bytes, bytes]] | None:
    """The first ``limit`` visible pairs of ``[start, end)`` at ``seq`` (the last ones, in
    descending key order, when ``reverse``); fewer when the span holds fewer; None when the
    sources cut off too early to tell (the caller then reads again wider, or scans the span).
    Each source gives at most ``width`` keys (``limit`` by default): more than ``limit`` leaves
    room for versions a newer source deletes."""
    if width is None:
        width = limit
    if not has_range_deletions(state):
        return _newest_first(state, start, end, seq, limit, reverse, width)
    found: Versions = {}
    bounds: list[bytes] = []  # the last key of each source that stopped at its limit
    for mem in state.mems:
        if mem.data:
            keys, seqs, values, more = mem.page(start, end, True, False, reverse, width)
            _take_versions(keys, seqs, values, seq, found)
            if more and keys:
                bounds.append(keys[0] if reverse else keys[-1])
    for smallest, largest, reader in state.l0:
        if largest >= start and (end is None or smallest < end):
            _bounded(bounds, _table_walk(reader, start, end, seq, width, found, reverse))
    for largest_keys, smallest_keys, readers in state.levels:
        for i in _level_tables(largest_keys, smallest_keys, start, end, reverse):
            bound = _table_walk(readers[i], start, end, seq, width, found, reverse)
            if bound is not None:  # the level's tables after this one hold later keys only
                bounds.append(bound)
                break
    return _visible(state, found, bounds, seq, limit, reverse)


def _bounded(bounds: list[bytes], bound: bytes | None) -> None:
    if bound is not None:
        bounds.append(bound)


def _level_tables(largest_keys: list[bytes], smallest_keys: list[bytes], start: bytes,
                  end: bytes | None, reverse: bool) -> range:
    """The positions of a level's tables meeting ``[start, end)``, in reading order."""
    first = bisect_left(largest_keys, start)
    last = len(smallest_keys) if end is None else bisect_left(smallest_keys, end)
    return range(last - 1, first - 1, -1) if reverse else range(first, last)


def _take_versions(keys: list[bytes], seqs: list[int], values: list, seq: int, found: Versions) -> None:
    for key, version_seq, value in zip(keys, seqs, values):
        if version_seq <= seq:
            kept = found.get(key)
            if kept is None or kept[0] < version_seq:
                found[key] = (version_seq, value)


def _table_walk(reader: TableReader, start: bytes, end: bytes | None, seq: int, limit: int,
                found: Versions, reverse: bool) -> bytes | None:
    """Add the table's newest visible version of each of its first ``limit`` keys of the span
    (its last ones, walking down from the span's end, when ``reverse``); return the last key
    taken when the table has more keys in the span (None: the span ended first)."""
    if not reader._loaded:
        reader.load()
    index_keys = reader.index_keys
    nblocks = len(index_keys)
    if reverse:  # from the block holding the span's end (its last key is >= end), down
        i = nblocks - 1 if end is None else min(nblocks - 1, bisect_left(index_keys, end))
        step = -1
        past = start.__gt__  # past(key): key < start
    else:  # from the first block whose last key is >= start, up
        i = bisect_left(index_keys, start)
        step = 1
        past = _never if end is None else end.__le__  # key >= end
    taken = 0
    previous = None
    first = True
    while 0 <= i < nblocks:
        blk = reader.lookup_block(i)
        keys = blk.keys  # a packed block's key list (decoded once the block is hit again)
        n = len(keys)
        if first:
            first = False
            if reverse:
                j = (n if end is None else bisect_left(keys, end)) - 1
            else:
                j = bisect_left(keys, start)
        else:
            j = n - 1 if reverse else 0
        seq_at, value_at = _entry_readers(blk)
        while 0 <= j < n:
            key = keys[j]
            if past(key):
                return None
            if key != previous:  # a key's versions are adjacent
                if taken == limit:
                    return previous
                taken += 1
                previous = key
            version_seq = seq_at(j)
            if version_seq <= seq:
                kept = found.get(key)
                if kept is None or kept[0] < version_seq:
                    found[key] = (version_seq, value_at(j))
            j += step
        i += step
    return None


def _never(_key: bytes) -> bool:
    return False


def _entry_readers(blk) -> tuple[Callable[[int], int], Callable[[int], bytes | None]]:
    """The seq and the value of entry ``j`` of a block, read without the bounds checks of
    indexing (the walks stay within its keys): a packed block's `EntryColumn` readers."""
    seqs, values = blk.seqs, blk.values
    if seqs.__class__ is EntryColumn:
        return seqs.at, values.at
    return seqs.__getitem__, values.__getitem__


def _visible(state: ReadState, found: Versions, bounds: list[bytes], seq: int, limit: int,
             reverse: bool) -> list[tuple[bytes, bytes]] | None:
    """The first ``limit`` live pairs of ``found`` in reading order, within the nearest bound;
    None when fewer than ``limit`` lie within a bound."""
    bound = (max(bounds) if reverse else min(bounds)) if bounds else None
    # with no range deletion in the read state, a version is live unless it is a tombstone
    ranges = has_range_deletions(state)
    pairs = []
    for key in sorted(found, reverse=reverse):
        if bound is not None and (key < bound if reverse else key > bound):
            return None  # past what every source told
        value = visible_value(state, key, found[key], seq) if ranges else found[key][1]
        if value is not None:
            pairs.append((key, value))
            if len(pairs) == limit:
                return pairs
    return pairs if bound is None else None


# -- no range deletion in the read state: the newest source holding a visible version wins ------

Values = dict[bytes, "bytes | None"]  # key -> its newest visible value in one source (None: deleted)


def _newest_first(state: ReadState, start: bytes, end: bytes | None, seq: int, limit: int,
                  reverse: bool, width: int) -> list[tuple[bytes, bytes]] | None:
    """`first_read` for a read state without range deletions. Newer data is higher (memtables
    newest first, then L0 newest first, then the levels: ingest.py keeps it so for every key),
    so a key's answer is the newest visible version of the first source holding one, and no
    seq needs comparing across sources: each source gives a map of its keys' newest visible
    values, and the maps are merged oldest first, each overwriting the older. A table block
    every version of which the read sees, one per key and no tombstone (its ``simple_seq``),
    gives its entries by slicing its key and value lists."""
    layers: list[Values] = []  # the tables', newest first
    bounds: list[bytes] = []
    for smallest, largest, reader in state.l0:
        if largest >= start and (end is None or smallest < end):
            mine: Values = {}
            _bounded(bounds, _newest_walk(reader, start, end, seq, width, mine, reverse))
            layers.append(mine)
    for largest_keys, smallest_keys, readers in state.levels:
        mine = {}
        for i in _level_tables(largest_keys, smallest_keys, start, end, reverse):
            bound = _newest_walk(readers[i], start, end, seq, width, mine, reverse)
            if bound is not None:
                bounds.append(bound)
                break
        layers.append(mine)
    # The memtables last, over the span up to the tables' nearest bound only (nothing past it
    # is answered): a memtable holding keys all over the span gives few or none of them.
    mem_layers = []
    for mem in state.mems:
        if mem.data:
            keys, seqs, values, more = _memtable_page(mem, start, end, reverse, width, bounds)
            if keys:
                mem_layers.append(_memtable_values(keys, seqs, values, seq))
                if more:
                    bounds.append(keys[0] if reverse else keys[-1])
    if mem_layers:
        layers[:0] = mem_layers
    if len(layers) == 1:
        found = layers[0]
    else:
        found = {}
        for mine in reversed(layers):  # oldest first: a newer source's value overwrites
            found.update(mine)
    ordered = sorted(found)
    if bounds:  # the answer holds up to the nearest bound only
        ordered = ordered[bisect_left(ordered, max(bounds)):] if reverse \
            else ordered[:bisect_right(ordered, min(bounds))]
    if reverse:
        ordered.reverse()
    first = ordered[:limit]
    values = list(map(found.__getitem__, first))
    if None not in values:  # no deletion among the first keys: they are the answer
        return list(zip(first, values)) if len(first) == limit or not bounds else None
    pairs = [(key, value) for key in ordered if (value := found[key]) is not None]
    if len(pairs) >= limit:
        return pairs[:limit]
    return pairs if not bounds else None


def _memtable_page(mem, start: bytes, end: bytes | None, reverse: bool, width: int,
                   bounds: list[bytes]) -> tuple[list, list, list, bool]:
    """`Memtable.page` of the span, cut at the nearest of ``bounds`` (that key included); a
    memtable without a key there (the usual case: a short span) is told by one bisect."""
    if not bounds:
        return mem.page(start, end, True, False, reverse, width)
    if reverse:
        lo = max(bounds)
        return mem.page(lo, end, True, False, True, width) if mem.has_keys_in(lo, end) else _NO_PAGE
    hi = min(bounds)
    return mem.page(start, hi, True, True, False, width) if mem.has_keys_in(start, hi + b"\x00") else _NO_PAGE


_NO_PAGE: tuple[list, list, list, bool] = ([], [], [], False)


def _memtable_values(keys: list[bytes], seqs: list[int], values: list, seq: int) -> Values:
    """A memtable page's newest visible value of each key (its versions come newest first)."""
    if max(seqs) > seq:  # versions newer than the read: left out
        kept = [j for j, version_seq in enumerate(seqs) if version_seq <= seq]
        keys = [keys[j] for j in kept]
        values = [values[j] for j in kept]
    # oldest first, so that the newest version of each key is written last
    return dict(zip(reversed(keys), reversed(values)))


def _newest_walk(reader: TableReader, start: bytes, end: bytes | None, seq: int, limit: int,
                 mine: Values, reverse: bool) -> bytes | None:
    """`_table_walk` giving ``mine`` each key's newest visible value (None: a tombstone),
    slicing the blocks whose every entry the read sees as it is."""
    if not reader._loaded:
        reader.load()
    index_keys = reader.index_keys
    nblocks = len(index_keys)
    if reverse:
        i = nblocks - 1 if end is None else min(nblocks - 1, bisect_left(index_keys, end))
    else:
        i = bisect_left(index_keys, start)
    walk = _Walk(limit, mine, reverse)
    step = -1 if reverse else 1
    while 0 <= i < nblocks:
        blk = reader.lookup_block(i)
        if blk.__class__ is PackedBlock and blk.key_list is None:
            # the block's bytes, not its key list (`keys` would decode the block whole): its
            # entries in the span found by `first_from`, read one by one
            n = blk.count
            lo = blk.first_from(start)
            hi = n if end is None else max(lo, blk.first_from(end))
            walk.stepped(blk, blk.key_at, lo, hi, seq)
        else:
            keys = blk.keys
            n = len(keys)
            lo = bisect_left(keys, start)  # the block's entries in the span: [lo, hi)
            hi = n if end is None else bisect_left(keys, end, lo)
            if blk.__class__ is DataBlock and blk.simple_seq <= seq:
                walk.sliced(keys, blk.values, lo, hi)
            else:
                walk.stepped(blk, keys.__getitem__, lo, hi, seq)
        if walk.bound is not None:
            return walk.bound
        if lo > 0 if reverse else hi < n:
            return None  # the span ends in this block
        i += step
    return None


class _Walk:
    """One table's walk for `_newest_walk`: the distinct keys taken so far (at most
    ``limit``), the last of them, and, once a key past the limit shows up, the bound."""

    __slots__ = ("limit", "mine", "reverse", "taken", "previous", "bound")

    def __init__(self, limit: int, mine: Values, reverse: bool) -> None:
        self.limit, self.mine, self.reverse = limit, mine, reverse
        self.taken = 0
        self.previous: bytes | None = None
        self.bound: bytes | None = None

    def sliced(self, keys: list[bytes], values: list, lo: int, hi: int) -> None:
        """Take entries of ``[lo, hi)`` of a block holding one visible version per key and no
        tombstone, in walking order, by slices (the bound set when the walk stops in it). A
        key's versions never straddle two blocks (the builder cuts blocks between keys, and
        `TableReader.get` looks in one block), so the block's keys are new to the walk."""
        if lo >= hi:
            return
        room = self.limit - self.taken
        if not room:
            self.bound = self.previous
        elif self.reverse:
            low = max(lo, hi - room)
            self.mine.update(zip(keys[low:hi], values[low:hi]))
            self.taken += hi - low
            self.previous = keys[low]
            if low > lo:
                self.bound = self.previous
        else:
            stop = min(hi, lo + room)
            self.mine.update(zip(keys[lo:stop], values[lo:stop]))
            self.taken += stop - lo
            self.previous = keys[stop - 1]
            if stop < hi:
                self.bound = self.previous

    def stepped(self, blk, key_at: Callable[[int], bytes], lo: int, hi: int, seq: int) -> None:
        """Take entries of ``[lo, hi)`` of any block one by one (entry ``j``'s key is
        ``key_at(j)``): per key its newest version at or below ``seq`` (the first seen walking
        up, the last walking down)."""
        if lo >= hi:
            return
        seq_at, value_at = _entry_readers(blk)
        mine, limit, reverse = self.mine, self.limit, self.reverse
        previous, taken = self.previous, self.taken
        for j in range(hi - 1, lo - 1, -1) if reverse else range(lo, hi):
            key = key_at(j)
            if key != previous:  # a key's versions are adjacent
                if taken == limit:
                    self.bound = previous
                    return
                taken += 1
                previous = key
            if seq_at(j) <= seq and (reverse or key not in mine):
                mine[key] = value_at(j)
        self.previous, self.taken = previous, taken
