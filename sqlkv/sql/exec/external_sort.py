"""ORDER BY over more rows than the sort may hold: sorted runs spilled to disk, then merged.

``SELECT * FROM orders ORDER BY amount`` on a 1M-row table cannot be answered from an index, and
holding every row to sort it would make the statement's memory grow with the table. `Sort`
hands its input to `sort_spilling`: rows are collected up to `SORT_MEMORY_ROWS`; when the input
ends first, they are sorted in memory as before (nothing touches the disk). Otherwise each full
batch is sorted and written as one *run* to an anonymous temporary file (already unlinked, so a
crash leaves nothing behind; spill.py), in pickled blocks of `BLOCK_ROWS` rows; the result is a k-way
`heapq.merge` of the runs that reads one block per run at a time. Memory is then bounded by one
batch while runs are written, and by one block per run while they are merged.

Order is the one `relational.sort_rows` gives: every run is sorted by it, and the merge compares
the same per-term keys (descending terms inverted, `relational.merge_key`), breaking ties by run
order, so equal rows keep their input order across runs too (the sort stays stable).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import IO, Any

from sqlkv.errors import DataError
from sqlkv.sql.exec.spill import read_chunks, spill_run

SORT_MEMORY_ROWS = 100_000  # rows a sort holds before it spills a run (module-level: tests lower it)
BLOCK_ROWS = 1_000  # rows per pickled block of a run: what the merge holds per run


SortBatch = Callable[[list[tuple]], list[tuple]]
RowKey = Callable[[tuple], Any]


def sort_spilling(rows: Iterator[tuple], sort_batch: SortBatch, key: RowKey) -> Iterator[tuple]:
    """``rows`` in the order ``sort_batch`` sorts a list into, in memory when they fit
    `SORT_MEMORY_ROWS`, else by runs on disk merged on ``key`` (the same order as one key per row)."""
    limit = SORT_MEMORY_ROWS
    batch: list[tuple] = []
    runs: list[IO[bytes]] = []
    try:
        for row in rows:
            batch.append(row)
            if len(batch) >= limit:
                runs.append(spill_run(sort_batch(batch), BLOCK_ROWS, "ORDER BY"))
                batch = []
        if not runs:
            yield from sort_batch(batch)
            return
        if batch:
            runs.append(spill_run(sort_batch(batch), BLOCK_ROWS, "ORDER BY"))
            batch = []
        yield from _merged(runs, key)
    finally:
        for run in runs:
            run.close()


def _merged(runs: list[IO[bytes]], key: RowKey) -> Iterator[tuple]:
    try:
        yield from heapq.merge(*(read_chunks(run) for run in runs), key=key)
    except TypeError as exc:
        raise DataError(f"cannot order values of incomparable types: {exc}") from None
