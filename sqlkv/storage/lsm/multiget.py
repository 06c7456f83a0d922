"""Point reads of many keys at once against one read state (`LSMSnapshot.get_many`).

A lookup join or an index scan fetches rows by primary key: 100 keys for one join query.
Read one by one, each key pays the whole path (snapshot, memtables, every table's bloom
filter, index bisect, block cache). Here the keys are sorted and each source is visited once:
the memtables resolve what they hold, then every table takes the keys in its range in one
pass, bisecting its index and the block from where the previous key left off and looking a
block up in the cache once for all its keys. A block already in the cache answers without
the bloom filter (the filter only saves reading a block); it is consulted before a block has
to come from the disk, as in `TableReader.get`.

Versions, tombstones and range deletions are resolved as `LSMCore.get_at` does.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import ReadState
    from sqlkv.storage.lsm.sstable.reader import TableReader

Found = dict[bytes, tuple]  # key -> (version seq, value or None for a tombstone)


def get_many(state: ReadState, keys: list[bytes], seq: int, counters: dict[str, int]) -> list[bytes | None]:
    """The value of each of ``keys`` at ``seq`` (None: absent or deleted), in their order."""
    remaining = sorted(set(keys))
    found: Found = {}
    remaining = _from_memtables(state, remaining, seq, found)
    probed = 0
    for smallest, largest, reader in state.l0:  # newest first: the first version found wins
        if not remaining:
            break
        inside = [k for k in remaining if smallest <= k <= largest]
        if inside:
            probed += 1
            _from_table(reader, inside, seq, found)
            remaining = [k for k in remaining if k not in found]
    for level_largest, level_smallest, readers in state.levels:
        if not remaining:
            break
        for i, inside in _by_table(level_largest, level_smallest, remaining).items():
            probed += 1
            _from_table(readers[i], inside, seq, found)
        remaining = [k for k in remaining if k not in found]
    counters["gets"] += len(keys)
    counters["tables_probed"] += probed
    return [visible_value(state, key, found.get(key), seq) for key in keys]


def _from_memtables(state: ReadState, keys: list[bytes], seq: int, found: Found) -> list[bytes]:
    """Resolve the keys the memtables hold a visible version of; return the others."""
    for mem in state.mems:
        data = mem.data
        if not data:
            continue
        rest = []
        for key in keys:
            entry = data.get(key)
            if entry is not None:
                if entry.__class__ is tuple:  # one version (see memtable.py)
                    version = entry if entry[0] <= seq else None
                else:
                    version = mem.get(key, seq)
                if version is not None:
                    found[key] = version
                    continue
            rest.append(key)
        keys = rest
    return keys


def _by_table(largest: list[bytes], smallest: list[bytes], keys: list[bytes]) -> dict[int, list[bytes]]:
    """The sorted ``keys`` grouped by the table of one level whose range holds them."""
    groups: dict[int, list[bytes]] = {}
    i = 0
    count = len(largest)
    for key in keys:
        i = bisect_left(largest, key, i)
        if i == count:
            break  # sorted keys: the rest are past the level's last table too
        if smallest[i] <= key:
            groups.setdefault(i, []).append(key)
    return groups


def _from_table(reader: TableReader, keys: list[bytes], seq: int, found: Found) -> None:
    """Add to ``found`` the newest version at or below ``seq`` of each of the sorted ``keys``
    the table holds (what `TableReader.get` answers key by key)."""
    if not reader._loaded:
        reader.load()
    index_keys = reader.index_keys
    offsets = reader.index_offsets
    nblocks = len(index_keys)
    entries = reader.cache.entries
    number = reader.number
    i = 0
    current = -1  # the block number ``blk`` holds
    blk = None
    for key in keys:
        i = bisect_left(index_keys, key, i)
        if i == nblocks:
            return
        if i != current:
            if (number, offsets[i]) not in entries and not reader.may_contain(key):
                continue  # the filter spares reading the block
            blk = reader.lookup_block(i)
            current = i
        version = blk.find(key, seq)  # type: ignore[union-attr]
        if version:  # neither absent (None) nor only newer versions (NOT_VISIBLE)
            found[key] = version


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
