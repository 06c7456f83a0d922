"""Commit by ingestion: a big transaction that fills empty tables becomes SSTables, not WAL + memtable.

Walk ``BEGIN; INSERT INTO orders VALUES (...) x 100,000; COMMIT`` into an empty ``orders``
(primary key and two secondary indexes: 300k keys) through it:

1. The INSERTs run as always: every row is checked (`Transaction.put_if_absent` reads the
   primary key, so duplicates and unique violations are reported by the statement that makes
   them) and buffered; reads inside the transaction see the buffer (read-your-writes).
2. ``commit()`` asks `plan` (outside the commit lock) whether to ingest: the engine must ingest
   for real (the LSM; the memory and etcd engines inherit `Engine.ingest`, which writes a batch,
   so they keep the batch path), the buffer must hold only puts (no point or range deletes),
   at least ``threshold`` of them (`TxnManager.ingest_threshold`), and nine keys in ten must
   fall in *fresh* index spans: spans ``/<table>/<index>`` that hold nothing visible at the
   transaction's snapshot. The buffer's keys are sorted once; the spans come from them.
3. Under the commit lock the transaction is validated exactly as any other (`_validate`):
   ingestion changes how the writes reach the engine, never whether the commit may happen.
   Then `BulkCommit.still_fresh` checks the conflict log: if a commit after the snapshot wrote
   into a fresh span, the transaction commits by the batch path instead (its rows then share
   the span with someone else's, which is what the batch path is for).
4. ``Engine.ingest`` streams ``(key, buffer value)`` in key order into tables of the target
   size (no other copy of the data: the sorted key list holds references), fsyncs them, appends
   one (empty or timeline) WAL record and installs the tables with one MANIFEST write
   (storage/lsm/ingest.py). The commit's write set is logged for concurrent transactions as the
   batch path logs it, key by key.

Why the result equals the batch path's: a batch gives each op its own seq, an ingestion gives
every pair one seq ``S``; both make all of the transaction's writes visible at once, at a seq
newer than every earlier commit. The LSM keeps "newer is higher" (a memtable holding keys in
the ingested range is flushed first; each table goes to the deepest level nothing above
overlaps), so reads, AS OF SYSTEM TIME (the WAL record carries the timeline sample) and
recovery see the same state. A crash before the MANIFEST write leaves nothing visible and
nothing acknowledged; after it, everything. The freshness rule is about cost, not correctness:
tables that cover a fresh span go straight to the bottom level, and nothing is rewritten later.

``SQLKV_BULK_INGEST=0`` turns this off (tests compare both paths); `DEFAULT_THRESHOLD` is the
size from which it pays (a table build has fixed costs: fsyncs, a MANIFEST write).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sqlkv.encoding.keys import decode_uvarint
from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import Engine, prefix_end
from sqlkv.txn.spans import Intervals, KeySpans

ENABLED = os.environ.get("SQLKV_BULK_INGEST", "1") != "0"
DEFAULT_THRESHOLD = 10_000  # buffered puts from which a commit ingests
FRESH_SHARE = 0.9  # share of the keys that must fall in fresh spans
_BYTES_ONLY = {bytes}


@dataclass
class BulkCommit:
    """The plan of one ingesting commit: the buffer's keys in order and the fresh spans."""

    keys: list[bytes]
    fresh: KeySpans  # index spans empty at the snapshot, as ranges

    def still_fresh(self, logged: Iterable) -> bool:
        """False when a commit in ``logged`` (the conflict log's entries after the snapshot)
        wrote into a fresh span."""
        return all(entry.writes.first_overlap(self.fresh) is None for entry in logged)

    def pairs(self, entries: dict[bytes, bytes | None]) -> Iterator[tuple[bytes, bytes]]:
        """The buffered puts in key order, streamed (values are the buffer's own objects)."""
        return zip(self.keys, map(entries.__getitem__, self.keys))  # type: ignore[arg-type]

    def write_spans(self) -> KeySpans:
        """The commit's write set, as `Transaction._write_spans` would build it."""
        return KeySpans(self.keys, Intervals([], []))


def plan(engine: Engine, txn, threshold: int | None) -> BulkCommit | None:
    """A `BulkCommit` when ``txn``'s commit should ingest (see the module docstring), else None."""
    if not ENABLED or threshold is None or type(engine).ingest is Engine.ingest:
        return None
    buffer = txn._buffer
    entries = buffer.entries
    if len(entries) < threshold or buffer.ranges or set(map(type, entries.values())) != _BYTES_ONLY:
        return None  # too small, or deletes (None values) among the writes
    keys = buffer.sorted_keys()
    spans = index_spans(keys)
    if spans is None:
        return None
    fresh: list[tuple[bytes, bytes]] = []
    fresh_keys = 0
    snapshot = txn._snapshot
    for start, end, count in spans:
        if not snapshot.read_range(start, end, False, 1):
            fresh.append((start, end))
            fresh_keys += count
    if fresh_keys < threshold or fresh_keys < FRESH_SHARE * len(keys):
        return None
    return BulkCommit(keys, KeySpans([], Intervals.from_spans(fresh)))


def index_spans(keys: list[bytes]) -> list[tuple[bytes, bytes, int]] | None:
    """``(start, end, keys in it)`` per ``/<table>/<index>`` prefix of the sorted ``keys``;
    None when a key does not start with two ids (not a table key)."""
    spans = []
    i, n = 0, len(keys)
    while i < n:
        key = keys[i]
        try:
            _, offset = decode_uvarint(key, 0)
            _, offset = decode_uvarint(key, offset)
        except CorruptionError:
            return None
        start = key[:offset]
        end = prefix_end(start)
        if end is None:
            return None
        j = bisect_left(keys, end, i)
        spans.append((start, end, j - i))
        i = j
    return spans
