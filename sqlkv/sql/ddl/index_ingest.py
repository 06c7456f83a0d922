"""CREATE INDEX on a populated table by bulk ingestion (LSM engine): sort, write tables, install.

The transactional backfill (indexes.py) puts every entry through the statement's write buffer,
the WAL and the memtable. Here the entries are sorted and handed to `Engine.ingest`, which
writes them straight into SSTables installed by one MANIFEST write (storage/lsm/ingest.py),
as Pebble and CockroachDB build an index. ``CREATE INDEX ix ON t (k)`` on an autocommit
statement walks these steps, each in a transaction of its own:

1. **Reserve** (`_reserve`, committed): bump ``t``'s ``next_index_id`` and write a *pending
   backfill* marker ``/Table/5/1/<t>/<ix id>``. The id is never handed out again, so no other
   CREATE INDEX -- concurrent, retried, or after a crash -- writes under it, and cleaning it up
   deletes nobody else's entries.
2. **Fence** ``t``'s keys (`TxnManager.fence`): commits writing into ``t`` wait until the
   index is published. Then take the snapshot the backfill reads: every write to ``t`` is either
   in it or waits, and once released it fails its commit check (it read ``t``'s descriptor,
   which the publication changed) and is re-run by its caller against the new descriptor, which
   maintains the index. Why not CockroachDB's write-only state, where writers maintain the index
   during the backfill: an ingested key gets the *newest* sequence number here (there are no
   MVCC timestamps to ingest at the snapshot's), so a row deleted during the backfill would
   have its stale entry ingested on top of the deletion's. Blocking writers of that one table
   for the backfill's length is the price; readers, and writers of other tables, go on.
3. **Build** the entries from a scan at that snapshot, sorted in runs of `RUN_ENTRIES` (spilled
   to anonymous temporary files past the first: nothing is left after a crash) and merged a
   list at a time (exec/merge_lists.py); equal adjacent keys are a unique violation, reported as the transactional path reports it (the first row, in primary
   key order, that repeats an earlier row's key), and nothing is ingested.
4. **Ingest** the merged stream (`TxnManager.ingest`: one commit, atomic via the MANIFEST);
   a non-unique index's tables get no bloom filter (`_ingest_checked`).
5. **Publish** (committed): the descriptor gains the index, the marker goes.

A failure after step 1 removes the id's key range and the marker (`_abandon`). A crash leaves
the marker: `collect_abandoned` (run when a database is opened) removes the range and the
marker, and CHECK DATABASE skips the key range of a pending backfill meanwhile. Other engines,
explicit transactions, and a statement whose transaction already wrote something use the
transactional backfill.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from itertools import chain, islice, repeat
from operator import eq, getitem, itemgetter
from dataclasses import replace

from sqlkv.catalog.catalog import Catalog
from sqlkv.catalog.pending_builds import abandon, mark_live, pending_key, unmark_live
from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import index_prefix, table_prefix
from sqlkv.errors import DuplicateTable, SerializationFailure, UndefinedTable
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.merge_lists import merged_lists
from sqlkv.sql.exec.spill import read_lists, spill_run
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.ddl.index_entries import (BATCH_ROWS, column_batches, distinct_batch, distinct_entries,
                                         unique_batch, unique_entries)
from sqlkv.sql.rowstore.index import EMPTY_LIST, IndexCodec, unique_violation
from sqlkv.storage.kv import Engine, PairColumns, columns_of, prefix_end

# Off switch (tests compare both paths; a user can set SQLKV_BULK_INDEX=0).
ENABLED = os.environ.get("SQLKV_BULK_INDEX", "1") != "0"
RUN_ENTRIES = 200_000  # entries sorted in memory at once (~30-60 MB); more spill to a temporary file per run
_SPILL_CHUNK = 4_096  # entries per pickle record in a spilled run (and per list handed to ingest)
_CHUNK_ROWS = 4_096  # rows between two checks for a cancelled statement

def applies(ctx: ExecContext, catalog: Catalog) -> bool:
    """Whether this CREATE INDEX may build by ingestion (see the module docstring)."""
    txn = ctx.txn
    if not ENABLED or not ctx.extra.get("owns_txn") or catalog.dirty or txn.write_count or txn.shared:
        return False
    return type(txn.manager.engine).ingest is not Engine.ingest


# -- the steps ---------------------------------------------------------------------------------


def build_by_ingest(table: TableDescriptor, idx: IndexDescriptor, catalog: Catalog, ctx: ExecContext) -> None:
    """Steps 1-5. ``table`` is the statement's copy (with any expression column the index
    added); ``idx`` its new index, whose id is replaced by the reserved one."""
    manager = ctx.txn.manager
    stored = catalog.table_by_id(table.id)  # as the statement found it (before its changes)
    if stored is None or stored.version != table.version:
        raise SerializationFailure(f'restart transaction: table "{table.name}" changed (SQLSTATE 40001)')
    shape = _shape(stored)
    index_id = _reserve(manager, catalog, table.id, shape)
    idx = replace(idx, id=index_id)
    live = mark_live(manager, table.id, index_id)
    try:
        start = table_prefix(table.id)
        with manager.fence(start, prefix_end(start)) as fence:
            try:
                _backfill_and_publish(table, idx, catalog, ctx, fence, shape)
            except BaseException:
                abandon(manager, table.id, index_id, fence)
                raise
    finally:
        unmark_live(live)


def _reserve(manager, catalog: Catalog, table_id: int, shape: dict) -> int:
    """Step 1, committed; a commit conflict is retried (a changed table then fails the check)."""
    for attempt in range(20):
        txn = manager.begin()
        try:
            cat = Catalog(txn, catalog.cache)
            desc = _same_table(cat, table_id, shape)
            index_id = desc.next_index_id
            desc.next_index_id += 1
            cat.update(desc)
            txn.put(pending_key(table_id, index_id), b"")
        except BaseException:
            txn.rollback()
            raise
        try:
            txn.commit()
            return index_id
        except SerializationFailure:
            if attempt == 19:
                raise
    raise AssertionError("unreachable")


def _shape(desc: TableDescriptor) -> dict:
    """The descriptor but for what another CREATE INDEX (or DROP INDEX) changes: those may
    run meanwhile; this index is published onto the indexes the table then has."""
    d = desc.to_dict()
    for changed in ("version", "next_index_id", "indexes"):
        d.pop(changed, None)
    return d


def _same_table(cat: Catalog, table_id: int, shape: dict) -> TableDescriptor:
    desc = cat.table_by_id(table_id)
    if desc is None:
        raise UndefinedTable(f"table {table_id} was dropped while CREATE INDEX ran")
    if _shape(desc) != shape:
        raise SerializationFailure(f'restart transaction: table "{desc.name}" was changed by another '
                                   f"statement while CREATE INDEX ran (SQLSTATE 40001)")
    return desc


def _backfill_and_publish(table: TableDescriptor, idx: IndexDescriptor, catalog: Catalog, ctx: ExecContext,
                          fence, shape: dict) -> None:
    manager = ctx.txn.manager
    snap = manager.begin()
    try:
        _same_table(Catalog(snap, catalog.cache), table.id, shape)
        codec = codec_for(table)
        ic = IndexCodec(table, idx, codec.pk_positions)
        start = index_prefix(table.id, idx.id)
        with ctx.progress(f'indexing "{table.name}" ({idx.name})') as wrap:
            distinct = distinct_entries(codec, ic)
            if codec.single_family:  # one pair per row: read a batch of them at a time
                batches = snap.scan_columns(codec.prefix, prefix_end(codec.prefix), BATCH_ROWS)
                if ctx.extra.get("progress") is not None:  # the shell's bar counts rows
                    batches = _counted_rows(batches, wrap)
                if distinct:
                    chunks = _distinct_chunks(column_batches(codec, ic, batches), ic)
                elif unique_entries(codec, ic):
                    chunks = _unique_chunks(column_batches(codec, ic, batches), ic)
                else:
                    chunks = _entry_chunks(_rows_with_pk(codec, ic, batches), ic)
            else:
                pairs = wrap(snap.scan(codec.prefix, prefix_end(codec.prefix)), label="rows")
                chunks = _entry_chunks(((row, None) for row in codec.decode_rows(pairs)), ic)
            runs = _sorted_runs(chunks, ctx)
            merged = merged_lists(runs, _ENTRY_ORDER if not distinct or ic.storing_positions else None)
            duplicate = _ingest_checked(manager, merged, start, prefix_end(start), ic, distinct)
        if duplicate is not None:

            raise unique_violation(table, idx, ic, _row_at(codec, snap, ic, duplicate))
    finally:
        snap.rollback()
    publish = manager.begin()
    manager.pass_fence(publish, fence)
    try:
        cat = Catalog(publish, catalog.cache)
        current = _same_table(cat, table.id, shape)
        for other in cat.list_tables():
            if other.find_index(idx.name) is not None:
                raise DuplicateTable(f'index "{idx.name}" already exists')
        table.version = current.version
        table.next_index_id = max(current.next_index_id, idx.id + 1)
        table.indexes = [*current.indexes, idx]
        cat.update(table)
        publish.delete(pending_key(table.id, idx.id))
        publish.commit()
    except BaseException:
        publish.rollback()
        raise


def _counted_rows(batches: Iterator[tuple[list, list]], wrap) -> Iterator[tuple[list, list]]:
    """The ``(keys, values)`` batches again, their pairs passed one by one through the
    progress hook's ``wrap``."""
    pairs = wrap(chain.from_iterable(zip(keys, values) for keys, values in batches), label="rows")
    return map(columns_of, iter(lambda: list(islice(pairs, BATCH_ROWS)), []))


def _rows_with_pk(codec, ic: IndexCodec, batches) -> Iterator[tuple[tuple, bytes]]:
    """``(row, its encoded primary key)`` per row of a single-family table's ``(keys,
    values)`` batches, with only the columns the index reads decoded (`RowDecoder.batch`);
    the key bytes save `IndexCodec.entry` encoding the primary key again (key = prefix +
    primary key + family 0)."""
    decode, start, cut = codec.decoder(set(ic.all_positions)).batch, len(codec.prefix), -len(codec.fam0_suffix)
    for keys, values in batches:
        yield from zip(decode(list(zip(keys, values))), map(getitem, keys, repeat(slice(start, cut))))


def _sorted_runs(chunks: Iterator[list], ctx: ExecContext) -> list[Iterator[tuple]]:
    """The index entries (lists of them) as sorted runs of ``(key, ordinal, value)``
    (ordinal: the row's place in primary key order), or of `_distinct_chunks`' items; each run an
    iterator of sorted tuples of `_SPILL_CHUNK` entries. Runs but the last are spilled, so
    memory holds one run."""
    runs: list[Iterator] = []
    # The run is gathered as tuples, which the garbage collector stops tracking once it has
    # seen they hold only bytes (or untracked tuples): a full collection during the build then
    # does not walk every entry gathered so far, as it walks a list's.
    parts: list[tuple] = []
    gathered = 0
    for chunk in chunks:
        ctx.check_cancelled()  # Ctrl-C stops a long build (the build is then abandoned)
        parts.append(tuple(chunk))
        gathered += len(chunk)
        if gathered >= RUN_ENTRIES:
            runs.append(read_lists(spill_run(_sorted(parts), _SPILL_CHUNK, "CREATE INDEX")))
            parts, gathered = [], 0
    run = _sorted(parts)
    runs.append(run[at:at + _SPILL_CHUNK] for at in range(0, len(run), _SPILL_CHUNK))
    return runs


def _sorted(parts: list[tuple]) -> tuple:
    """The gathered entries sorted, as a tuple (untracked by the collector, like ``parts``:
    a run of 200,000 held as a list would be walked by every collection while it lives).
    Entries that are tuples sort on their key alone (`_ENTRY_ORDER`)."""
    run = list(chain.from_iterable(parts))
    parts.clear()
    run.sort(key=_ENTRY_ORDER if run and type(run[0]) is tuple else None)
    return tuple(run)


# Tuples sort on their key: a C-level sort of the keys, not tuple comparisons. Equal keys (a
# unique violation) keep their gathering order, which is their ordinals' (the runs are
# gathered in primary key order), so the order is the tuples' own.
_ENTRY_ORDER = itemgetter(0)


def _entry_chunks(rows, ic: IndexCodec) -> Iterator[list[tuple]]:
    """``(key, ordinal, value)`` of each row the index holds, a list per `_CHUNK_ROWS` rows."""
    chunk: list[tuple] = []
    for ordinal, (row, pk_bytes) in enumerate(rows, 1):
        if ic.holds(row):
            key, value, _conditional = ic.entry(row, pk_bytes)
            chunk.append((key, ordinal - 1, value))
        if not ordinal % _CHUNK_ROWS:
            yield chunk
            chunk = []
    yield chunk


def _distinct_chunks(batches, ic: IndexCodec) -> Iterator[list]:
    """Distinct entries (index_entries.py), a list per batch of rows: keys, or ``(key,
    value)`` pairs when the index stores columns; no ordinal (no key repeats)."""
    for columns, pks in batches:
        keys, values = distinct_batch(ic, columns, pks)
        yield keys if values is None else list(zip(keys, values))


def _unique_chunks(batches, ic: IndexCodec) -> Iterator[list[tuple]]:
    """A unique index's ``(key, ordinal, value)`` entries, a list per batch of rows
    (index_entries.py `unique_batch`; every row has one: no predicate)."""
    first = 0
    for columns, pks in batches:
        yield unique_batch(ic, columns, pks, first)
        first += len(pks)


class _Duplicate(Exception):
    pass


_KEY, _VALUE = itemgetter(0), itemgetter(2)  # of an ``(key, ordinal, value)`` entry


def _ingest_checked(manager, merged: Iterator[Sequence], start: bytes, end: bytes, ic: IndexCodec,
                    distinct: bool) -> int | None:
    """Ingest the merged entries (sorted lists or tuples of them); on equal adjacent keys ingest nothing and return the ordinal
    of the row the transactional backfill would have reported (the smallest second ordinal of
    any group of equal keys: the first row in primary key order repeating an earlier key).
    Distinct entries (keys alone get the values' `EMPTY_LIST`) cannot repeat a key.

    Only a unique index's entries are read by exact key (``put_if_absent`` of the next row
    with the same values); a non-unique index's end with the primary key and are found by
    range scans, so their tables get no bloom filter (``point_reads``)."""
    point_reads = ic.unique
    if distinct:
        manager.ingest(_pair_columns(merged, bool(ic.storing_positions)), start, end, point_reads)
        return None
    failed: list = []  # the list holding the first repeated key, and the key before it

    def columns() -> Iterator[tuple[list[bytes], list[bytes]]]:
        prev = None
        for chunk in merged:
            keys = list(map(_KEY, chunk))
            if keys[0] == prev or any(map(eq, keys, keys[1:])):
                failed[:] = [chunk, prev]
                raise _Duplicate
            prev = keys[-1]
            yield keys, list(map(_VALUE, chunk))

    try:
        manager.ingest(PairColumns(columns()), start, end, point_reads)
        return None
    except _Duplicate:
        pass
    # finish the pass to find the reported row (the error path only); the lists before the
    # failed one repeat no key, but its first key may repeat the last one before it
    chunk, prev = failed
    best, seen_second = None, False
    for key, ordinal, _value in chain(chunk, chain.from_iterable(merged)):
        if key != prev:
            prev, seen_second = key, False
        elif not seen_second:
            seen_second = True
            best = ordinal if best is None else min(best, ordinal)
    return best


def _pair_columns(merged: Iterator[Sequence], storing: bool) -> PairColumns:
    """Distinct entries' sorted sequences for the engine: of ``(key, value)`` pairs when the
    index stores columns, else of keys, whose values are all `EMPTY_LIST`."""
    if storing:
        return PairColumns(tuple(zip(*chunk)) for chunk in merged)  # type: ignore[misc]
    return PairColumns((keys, [EMPTY_LIST] * len(keys)) for keys in merged)


def _row_at(codec, snap, ic: IndexCodec, ordinal: int) -> tuple:
    rows = codec.decode_rows(snap.scan(codec.prefix, prefix_end(codec.prefix)))
    for n, row in enumerate(rows):
        if n == ordinal:
            return row
    raise AssertionError("the duplicate's row vanished from the snapshot")  # the snapshot is fixed


# -- failure and crash -------------------------------------------------------------------------


