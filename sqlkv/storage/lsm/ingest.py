"""Bulk ingestion: sorted pairs written straight into SSTables and installed in one MANIFEST write.

Pebble's and CockroachDB's way of loading a lot of data (an index backfill, an import): no WAL
record per pair, no memtable, no flush, no L0 -> L1 rewrite. Walking one call through it::

    engine.ingest(iter_of_sorted_pairs)   # e.g. every (index key, b"") of a new index

1. Take the write lock (writers wait; readers do not) and the next seq ``S``. Every ingested
   pair gets seq ``S``: the whole ingestion is one batch, so snapshots stay exact.
2. Stream the pairs -- checked strictly ascending, bytes -- into tables of ``target_file_size``
   (fsynced), never holding more than one table's block lists in memory.
3. If a memtable holds a key in the ingested span ``[first, last]`` it is flushed first (its
   versions are older than ``S`` and must not shadow the new ones), as Pebble does. The tables
   then go each to the deepest level such that no table at that level or above overlaps its
   own span (L0 when L0 itself overlaps), which keeps "newer data is higher" true for every
   key: a commit that fills an empty table and also touches a busy span (a descriptor) puts
   only the table holding the busy keys in L0. A
   running compaction is waited for first (its outputs may land anywhere in its span); after
   30 s of waiting the tables go to L0, which is always safe.
4. Append a batch at ``S`` to the WAL and fsync it (replay demands consecutive seqs): empty,
   or holding the ingestion's timeline sample when history is on (history.py); then install
   the tables through the MANIFEST and publish ``S``.

A crash before step 4's MANIFEST write leaves tables no MANIFEST lists (removed at open) and at
most an empty (or timeline-only) batch in the WAL: nothing of the ingestion is visible, and nothing was
acknowledged. After it, everything is. ``close()`` meanwhile stops the ingestion (it removes
its tables and raises InterfaceError).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import lt
from typing import TYPE_CHECKING

from sqlkv.errors import InterfaceError, OperationalError
from sqlkv.storage.kv import UNEQUAL_COLUMNS, PairColumns, checked_pairs
from sqlkv.storage.lsm import background
from sqlkv.storage.lsm.compaction import CompactionAborted, table_path
from sqlkv.storage.lsm.sstable.builder import TableBuilder, TableInfo
from sqlkv.storage.lsm.wal import encode_record

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore


COMPACTION_WAIT = 30.0  # seconds an ingest waits for a running compaction before using L0
CHUNK = 4096  # pairs checked and handed to the table builder at once
_BYTES = {bytes}
_PAIR = {2}


def ingest(core: LSMCore, pairs: Iterable[tuple[bytes, bytes]], point_reads: bool = True) -> int:
    """Ingest sorted ``(key, value)`` pairs atomically; returns the last seq of the ingestion
    (its pairs are at the first; a timeline sample may take the next ones) -- the last seq,
    unchanged, when there were none. ``point_reads=False`` (nobody will get these keys one
    by one: a non-unique index's entries) writes the tables without a bloom filter."""
    core.check_open()
    if core.read_only:
        raise OperationalError(f"database {core.path} is open read-only")
    if core.bg_error is not None:
        raise OperationalError(f"database {core.path}: background work failed: {core.bg_error}")
    with core.write_lock:
        core.check_open()
        seq = core.applied_seq + 1
        try:
            infos, payload = _write_tables(core, pairs, seq, point_reads)
        except CompactionAborted:
            raise InterfaceError(f"database {core.path} was closed during ingest()") from None
        if not infos:
            return core.visible_seq
        try:
            seq = _install(core, infos, seq)
        except OSError as exc:
            _remove(core, infos)
            raise OperationalError(f"ingest into {core.path} failed: {exc.strerror or exc}") from None
        except BaseException:
            _remove(core, infos)
            raise
        # the pairs count as a batch's keys and values do, the tables as a flush's (so write
        # amplification stays tables written / user bytes)
        written = sum(i.size for i in infos)
        core.stats_counters["user_bytes"] += payload
        core.stats_counters["flush_bytes"] += written
        counters = core.ingest_counters
        counters["ingests"] += 1
        counters["tables"] += len(infos)
        counters["bytes"] += written
        return seq


def _write_tables(core: LSMCore, pairs: Iterable[tuple[bytes, bytes]], seq: int,
                  point_reads: bool) -> tuple[list[TableInfo], int]:
    """Step 2: the pairs, in chunks, into tables of about the target size (`add_puts` cuts
    blocks a chunk at a time instead of entry by entry); also returns their bytes."""
    infos: list[TableInfo] = []
    builder: TableBuilder | None = None
    target = core.opts.target_file_size
    payload = 0
    try:
        for keys, values in _checked_chunks(pairs):
            if core.closing:
                raise CompactionAborted()
            while True:
                if builder is None:
                    core.fit_cache(ingesting=sum(i.size for i in infos) + target)  # cached as written
                    number = core.new_file_number()
                    builder = TableBuilder(table_path(core.path, number), number, core.opts.block_size,
                                           bloom=point_reads,
                                           cache=core.cache)  # read right after: a bulk load
                taken = builder.add_puts(keys, values, seq, target)
                if taken == len(keys):
                    break
                infos.append(builder.finish(seq))
                payload += builder.payload
                builder = None
                keys, values = keys[taken:], values[taken:]
        if builder is not None:
            infos.append(builder.finish(seq))
            payload += builder.payload
            builder = None
    except BaseException:
        if builder is not None:
            builder.abandon()
        _remove(core, infos)
        raise
    return infos, payload


def _checked_chunks(pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Sequence, Sequence]]:
    """``(keys, values)`` of `CHUNK` pairs at a time (a `PairColumns`' own lists), checked as
    `checked_pairs` checks them (whose message names the first bad pair when a chunk fails
    the checks made in C here)."""
    if isinstance(pairs, PairColumns):
        chunks: Iterator[tuple[Sequence, Sequence]] = pairs.columns()
    else:
        it = iter(pairs)
        chunks = (_transposed(chunk) for chunk in iter(lambda: list(islice(it, CHUNK)), []))
    previous: bytes | None = None
    count = 0
    for keys, values in chunks:
        if not keys and not values:
            continue
        try:
            ok = len(keys) == len(values) and set(map(type, keys)) == _BYTES and _all_bytes(values) \
                and (previous is None or previous < keys[0]) and all(map(lt, keys, keys[1:]))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            for _ in checked_pairs(_pairs_of(keys, values), previous, count):
                pass
            raise AssertionError("a chunk failed the checks but no pair did")  # unreachable
        yield keys, values
        previous = keys[-1]
        count += len(keys)


def _all_bytes(values: Sequence) -> bool:
    """Whether every value is bytes: when all are one object (a non-unique index's
    `EMPTY_LIST`), by a C-level count of it, which compares by identity first."""
    one = values[0]
    return (type(one) is bytes and values.count(one) == len(values)) or set(map(type, values)) == _BYTES


def _transposed(chunk: list) -> tuple[Sequence, Sequence]:
    """A chunk of pairs as ``(keys, values)``; anything but pairs as itself, for
    `checked_pairs` to name."""
    try:
        if set(map(len, chunk)) == _PAIR:
            return tuple(zip(*chunk))  # type: ignore[return-value]
    except TypeError:
        pass
    return chunk, None  # type: ignore[return-value]


def _pairs_of(keys, values) -> Iterable:
    if values is None:  # `_transposed` could not split the chunk
        return keys
    if not isinstance(keys, (list, tuple)) or not isinstance(values, (list, tuple)) or len(keys) != len(values):
        raise InterfaceError(UNEQUAL_COLUMNS)
    return zip(keys, values)


def _install(core: LSMCore, infos: list[TableInfo], seq: int) -> int:
    """Steps 3 and 4 (write lock held); returns the last seq of the WAL record (the
    timeline's ops, when history is on, take seqs after ``seq``)."""
    first, last = infos[0].smallest, infos[-1].largest
    past_last = last + b"\x00"
    if any(m.data and m.has_keys_in(first, past_last) for m in [core.mem, *core.imm]):
        if core.mem.entries:
            core._rotate_memtable()
        background.wait_for_flushes(core)
    # A running compaction's outputs may land anywhere in its span: wait for it (one job,
    # seconds at most) rather than put the tables in L0, where they would all be rewritten.
    settled = core.compaction_mutex.acquire(timeout=COMPACTION_WAIT)
    try:
        wal = core.wal
        # the record holds the ingestion's timeline sample (history.py), if history is on
        ops = core.stamp_ops([], seq)
        end_seq = seq + max(1, len(ops)) - 1
        wal.append(encode_record(seq, max(1, len(ops)), ops))  # type: ignore[union-attr]
        if ops:
            with core.mem.lock:
                core.mem.apply(ops, seq)
        core.applied_seq = end_seq
        wal.note_applied(end_seq)  # type: ignore[union-attr]
        wal.sync_seq(end_seq)  # type: ignore[union-attr]
        with core.bg_cond:
            version = core.version
            levels = [list(tables) for tables in version.levels]
            for info in infos:  # they do not overlap each other: each finds its own level
                level = _target_level(version, info.smallest, info.largest) if settled else 0
                levels[level].append(info)
            background._install(core, levels, version.tombstones)  # MANIFEST, read state
            core.bg_cond.notify_all()
        with core._publish_lock:
            core.visible_seq = max(core.visible_seq, end_seq)
        return end_seq
    finally:
        if settled:
            core.compaction_mutex.release()


def _target_level(version, first: bytes, last: bytes) -> int:
    """The deepest level such that it and every level above hold nothing in ``[first, last]``."""
    level = 0
    for candidate in range(len(version.levels)):
        if version.overlapping(candidate, first, last):
            break
        level = candidate
    return level


def _remove(core: LSMCore, infos: list[TableInfo]) -> None:
    for info in infos:
        core.cache.evict_file(info.number)  # the blocks the builder cached
        try:
            os.unlink(table_path(core.path, info.number))
        except FileNotFoundError:
            pass
