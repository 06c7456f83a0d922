"""Estimated keys and bytes per key span, from metadata the store already holds.

``SELECT * FROM sqlkv_internal.table_stats`` asks, per table and index, how many keys and
bytes its key span ``[/Table/t/i, /Table/t/i+1)`` holds. Counting by scan would read the
whole database; instead each table file answers from its block index: interior blocks count
at the table's average keys per block and their size on disk, while the (at most two) blocks
a span boundary cuts are read (usually from the block cache) and counted key by key. The
memtables count their keys in the span exactly. Every stored version and tombstone counts
until compaction drops it, so the figure is what the span costs on disk, not a row count.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore
    from sqlkv.storage.lsm.sstable.reader import TableReader


def approximate_sizes(core: LSMCore, spans: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
    core.check_open()
    with core.lock:
        state = core.read_state
        state.version.pins += 1
        core.pinned[id(state.version)] = state.version
    try:
        tables = [(t, state.version.readers[t.number]) for level in state.version.levels for t in level]
        out = []
        for start, end in spans:
            keys = size = 0
            for mem in state.mems:
                k, b = _memtable_span(mem, start, end)
                keys, size = keys + k, size + b
            for info, reader in tables:
                if info.largest < start or (end is not None and info.smallest >= end):
                    continue
                k, b = _table_span(reader, info.entries, start, end)
                keys, size = keys + k, size + b
            out.append((keys, size))
        return out
    finally:
        core.unpin(state.version)


def _memtable_span(mem, start: bytes, end: bytes | None) -> tuple[int, int]:
    with mem.lock:
        ordered = mem._sorted_keys()
        lo = ordered.bisect_left(start)
        hi = len(ordered) if end is None else ordered.bisect_left(end)
        keys = hi - lo
        size = 0
        for key in ordered.islice(lo, hi):
            entry = mem.data[key]
            versions = [entry] if entry.__class__ is tuple else entry
            size += sum(len(key) + len(v[1] or b"") for v in versions)
    return keys, size


def _table_span(reader: TableReader, entries: int, start: bytes, end: bytes | None) -> tuple[int, int]:
    first = reader.first_block_for(start)
    last = reader.last_block_for(end)
    blocks = len(reader.index_keys)
    if first >= blocks or last < first:
        return 0, 0
    per_block = entries / blocks if blocks else 0
    keys = size = 0
    for i in range(first, last + 1):
        if i in (first, last):  # a boundary block: count what really lies in the span
            blk = reader.block(i)
            lo = bisect_left(blk.keys, start)
            hi = len(blk.keys) if end is None else bisect_left(blk.keys, end)
            if hi > lo:
                keys += hi - lo
                size += sum(len(blk.keys[j]) + len(blk.values[j] or b"") for j in range(lo, hi))
        else:
            keys += round(per_block)
            size += reader.index_sizes[i]
    return keys, size
