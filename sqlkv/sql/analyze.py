"""ANALYZE [table]: collect the statistics the planner estimates row counts with.

``ANALYZE orders`` reads each index of ``orders`` once, in key order, and counts distinct key
prefixes as it goes: index entries are sorted, so a prefix's value changes exactly when the
bytes of that prefix differ from the previous entry's (no set of values is kept: memory stays
constant whatever the table's size). The primary index gives the row count (its keys also
carry a family id, which the prefix comparison ignores). Inverted indexes are skipped (their
entries are elements, not rows). ``ANALYZE`` alone analyzes every table.

Transactions: the figures are read from the latest committed data, in a read-only
transaction of ANALYZE's own, so the scan neither joins the caller's read set (a concurrent
writer cannot make it fail) nor sees the caller's uncommitted writes. The figures are written
in the caller's transaction: inside BEGIN they become visible (and replace the old ones) when
it commits, and vanish if it rolls back. In a transaction AS OF SYSTEM TIME, or on a read-only
database, ANALYZE is refused like any writing statement.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.catalog.statistics import IndexStatistics, TableStatistics, write_statistics
from sqlkv.encoding.keys import decode_value, index_prefix
from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import ExecContext
from sqlkv.sql.plancache import check_params
from sqlkv.sql.result import Result
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
    for index in table.all_indexes():
        if not index.inverted:
            indexes[index.id] = _index_statistics(reader, table, index, check_cancelled)
    primary = indexes[table.primary_index.id]
    rows = primary.distinct[-1] if primary.distinct else 0
    primary.entries = rows  # one row per distinct primary key, whatever its families
    return TableStatistics(rows, indexes, at)


def _index_statistics(reader, table: TableDescriptor, index: IndexDescriptor,
                      check_cancelled: Callable[[], None]) -> IndexStatistics:
    """One pass over the index's entries: distinct values of each key-column prefix."""
    width = len(index.column_ids)
    start = index_prefix(table.id, index.id)
    distinct = [0] * width
    nulls = entries = 0
    prev_key = b""
    prev_ends: list[int] = [0] * width
    for key, _value in reader.scan(start, prefix_end(start)):
        ends = []
        offset = len(start)
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
            nulls += 1
        entries += 1
        prev_key, prev_ends = key, ends
        if entries % CANCEL_CHECK_KEYS == 0:
            check_cancelled()
    return IndexStatistics(distinct, nulls, entries)
