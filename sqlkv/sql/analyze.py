"""ANALYZE [table]: collect the statistics the planner estimates row counts with.

``ANALYZE orders`` reads each index of ``orders`` once, in key order, and counts distinct key
prefixes as it goes: index entries are sorted, so a prefix's value changes exactly when the
bytes of that prefix differ from the previous entry's (no set of values is kept: memory stays
constant whatever the table's size). The primary index gives the row count (its keys also
carry a family id, which the prefix comparison ignores); the same pass decodes the rows'
columns that no index leads and feeds each to a `DistinctSketch` (fixed memory). Inverted
indexes are skipped (their entries are elements, not rows). ``ANALYZE`` alone analyzes every
table.

Transactions: the figures are read from the latest committed data, in a read-only
transaction of ANALYZE's own, so the scan neither joins the caller's read set (a concurrent
writer cannot make it fail) nor sees the caller's uncommitted writes. The figures are written
in the caller's transaction: inside BEGIN they become visible (and replace the old ones) when
it commits, and vanish if it rolls back. In a transaction AS OF SYSTEM TIME, or on a read-only
database, ANALYZE is refused like any writing statement.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Iterator

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.catalog.statistics import ColumnStatistics, IndexStatistics, TableStatistics, write_statistics
from sqlkv.encoding.keys import decode_value, index_prefix
from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import ExecContext
from sqlkv.sql.plancache import check_params
from sqlkv.sql.result import Result
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.storage.kv import prefix_end

CANCEL_CHECK_KEYS = 4096  # index entries between two checks of the statement's cancellation


def analyze_statement(catalog, stmt, ctx: ExecContext) -> Result:
    """Run a parsed ANALYZE statement (see the module docstring)."""
    check_params(stmt, ctx.params)
    analyze(catalog, stmt.target, ctx.check_cancelled)
    return Result("ANALYZE", None, None, -1)


def analyze(catalog, target: str | None, check_cancelled: Callable[[], None]) -> int:
    """Collect and store the statistics of table ``target`` (all tables when None), writing
    them in ``catalog``'s transaction; returns the number of tables analyzed."""
    if target is None:
        tables = catalog.list_tables()
    else:
        table = catalog.get_table(target)
        if table.virtual is not None:
            raise ProgrammingError(f'cannot ANALYZE "{target}": it is a virtual table')
        tables = [table]
    reader = catalog.txn.manager.begin(read_only=True)
    try:
        collected = [(t.id, collect(reader, t, check_cancelled)) for t in tables]
    finally:
        reader.rollback()
    for table_id, stats in collected:
        write_statistics(catalog.txn, table_id, stats)
    if collected:
        catalog.note_statistics()
    return len(collected)


def collect(reader, table: TableDescriptor, check_cancelled: Callable[[], None]) -> TableStatistics:
    """The statistics of ``table`` as ``reader`` (a transaction) sees it."""
    at = time.time()
    indexes = {}
    primary = table.primary_index
    led = {table.column_index(i.column_ids[0]) for i in table.all_indexes()
           if i.column_ids and not i.inverted and i.predicate is None}
    # distinct values of the columns no index leads, sketched while the rows stream past
    sketched = [p for p, c in enumerate(table.columns) if p not in led and not c.hidden]
    counter = PrefixCounter(table, primary, check_cancelled)
    start = index_prefix(table.id, primary.id)
    pairs = counter.counted(reader.scan(start, prefix_end(start)))
    columns = {}
    if sketched:
        sketches = [DistinctSketch() for _ in sketched]
        for row in codec_for(table).decoder(set(sketched)).rows(pairs):
            for sketch, p in zip(sketches, sketched):
                sketch.add(row[p])
        columns = {table.columns[p].id: ColumnStatistics(sk.estimate(), sk.nulls)
                   for p, sk in zip(sketched, sketches)}
    else:
        for _pair in pairs:
            pass
    indexes[primary.id] = counter.result()
    for index in table.all_indexes():
        if index is not primary and not index.inverted:
            counter = PrefixCounter(table, index, check_cancelled)
            start = index_prefix(table.id, index.id)
            for _pair in counter.counted(reader.scan(start, prefix_end(start))):
                pass
            indexes[index.id] = counter.result()
    rows = indexes[primary.id].distinct[-1] if indexes[primary.id].distinct else 0
    indexes[primary.id].entries = rows  # one row per distinct primary key, whatever its families
    return TableStatistics(rows, indexes, at, columns)


class PrefixCounter:
    """Distinct values of each key-column prefix of an index, counted as its entries stream by
    in key order (a prefix's value changes exactly when its bytes differ from the previous
    entry's), and the entries whose first key column is NULL."""

    def __init__(self, table: TableDescriptor, index: IndexDescriptor, check_cancelled: Callable[[], None]) -> None:
        self.width = len(index.column_ids)
        self.offset = len(index_prefix(table.id, index.id))
        self.check_cancelled = check_cancelled
        self.distinct = [0] * self.width
        self.nulls = 0
        self.entries = 0

    def counted(self, pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        width, distinct = self.width, self.distinct
        prev_key = b""
        prev_ends = [0] * width
        for pair in pairs:
            key = pair[0]
            ends = []
            offset = self.offset
            first = None
            for j in range(width):
                value, _desc, offset = decode_value(key, offset)
                if j == 0:
                    first = value
                ends.append(offset)
            changed = next((j for j in range(width) if key[:ends[j]] != prev_key[:prev_ends[j]]), width)
            for j in range(changed, width):
                distinct[j] += 1
            if first is None:
                self.nulls += 1
            self.entries += 1
            prev_key, prev_ends = key, ends
            if self.entries % CANCEL_CHECK_KEYS == 0:
                self.check_cancelled()
            yield pair

    def result(self) -> IndexStatistics:
        return IndexStatistics(self.distinct, self.nulls, self.entries)


_MASK = (1 << 64) - 1


def _mixed(value: object) -> int:
    """A well-spread 64-bit hash of a value (Python's hash of an int is the int itself)."""
    try:
        x = hash(value) & _MASK
    except TypeError:  # an ARRAY (list) or JSONB value
        x = hash(repr(value)) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK  # splitmix64's finalizer
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


class DistinctSketch:
    """The number of distinct non-NULL values of a column in bounded memory (a k-minimum-values
    sketch): the `K` smallest hashes seen; exact below `K` distinct values, else estimated from
    how small the K-th smallest hash is (about 6% error for K = 256)."""

    K = 256

    def __init__(self) -> None:
        self.heap: list[int] = []  # negated: the largest kept hash on top
        self.kept: set[int] = set()
        self.nulls = 0
        self.values = 0  # non-NULL values seen: no estimate may exceed it

    def add(self, value: object) -> None:
        if value is None:
            self.nulls += 1
            return
        self.values += 1
        h = _mixed(value)
        if h in self.kept:
            return
        if len(self.kept) < self.K:
            self.kept.add(h)
            heapq.heappush(self.heap, -h)
        elif h < -self.heap[0]:
            self.kept.discard(-heapq.heapreplace(self.heap, -h))
            self.kept.add(h)

    def estimate(self) -> int:
        if len(self.kept) < self.K:
            return len(self.kept)
        return min(self.values, int((self.K - 1) * (1 << 64) / (-self.heap[0] + 1)))
