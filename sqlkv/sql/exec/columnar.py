"""Column batches: a scan that feeds only filters and aggregates hands out column lists.

``SELECT count(*), sum(amount) FROM orders WHERE quantity > 10`` plans to
``HashAggregate(Filter(IndexScan))``. On the row path every batch of KV pairs becomes row
tuples (a ``zip`` of the decoded columns), the filter rebuilds a list of the rows it keeps,
and the aggregate maps each argument's getter over them. Here nothing is a row: the scan
decodes only the columns the filter and the aggregates read into one list each
(`RowDecoder.column_lists`), the filter builds a mask from its column terms
(`batch_filters.column_mask`) and ``compress``es the lists the aggregates read, and each
accumulator takes its argument's list whole (`Accumulator.add_batch`: a C-level ``sum``,
``min``, ``max``; ``count(*)`` a length). GROUP BY splits each batch's row numbers by key
and gives each group's accumulators the values at those numbers.

It applies when the chain below the aggregate is a primary-index scan of a one-family table
without VIRTUAL or exploded columns, under filters whose predicates all have column terms,
and every group key and aggregate argument is a plain column read (``count(*)`` included);
anything else keeps the row path. The values, their order within a group, the errors and
the EXPLAIN ANALYZE figures are the row path's: the same KV reads (`reader_for`), the same
comparisons in the same order, each operator counting the rows it hands out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter
from typing import Any

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.counting import reader_for
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter, plain_columns
from sqlkv.sql.exec.scan import IndexScan
from sqlkv.sql.expr.batch_filters import column_mask, column_terms
from sqlkv.sql.observe_explain import timed_column_batches
from sqlkv.storage.kv import columns_of


# An aggregate reads every row, so its scan reads this many at once from the start: with slot
# values (tuples, no dict per row) 1,024 rows beat 256 by 10-15% on workloads 11 and 5 (per
# batch: one unpackb, a few maps, one add_batch per group and aggregate), 4,096 lose again.
COLUMN_BATCH_ROWS = 1024


@dataclass(slots=True)
class ColumnBatch:
    """``n`` rows as one list per row position read (positions nobody reads are absent)."""

    n: int
    columns: dict[int, list]

    def __len__(self) -> int:  # the rows EXPLAIN ANALYZE counts
        return self.n


def columns_of_rows(rows: list[tuple], positions: list[int]) -> ColumnBatch:
    """A batch of row tuples as column lists."""
    return ColumnBatch(len(rows), {p: list(map(itemgetter(p), rows)) for p in positions})


def reads_columns(op: Operator) -> bool:
    """Whether ``op`` produces column batches itself (else they would be cut from its rows)."""
    if type(op) is IndexScan:
        codec = op.codec
        return (op.primary and codec.single_family and not codec.virtual and not codec.exploded
                and op.partial_fetch is None and op.limit is None)
    if type(op) is Filter:
        return column_terms(op.predicate) is not None and reads_columns(op.child)
    return False


def column_batches(op: Operator, ctx: ExecContext, positions: list[int]) -> Iterator[ColumnBatch]:
    """``op``'s rows as column batches of ``positions``, counted for EXPLAIN ANALYZE."""
    st = ctx.stats_for(op)
    produce = _producer(op, positions)
    if st is None:
        return produce(ctx)
    return timed_column_batches(produce, ctx, st)


def _producer(op: Operator, positions: list[int]) -> Callable[[ExecContext], Iterator[ColumnBatch]]:
    if type(op) is IndexScan and reads_columns(op):
        return lambda ctx: _scan_columns(op, ctx, positions)
    if type(op) is Filter and reads_columns(op):
        return lambda ctx: _filter_columns(op, ctx, positions)
    return lambda ctx: (columns_of_rows(rows, positions) for rows in op.batches(ctx))


def _scan_columns(scan: IndexScan, ctx: ExecContext, positions: list[int]) -> Iterator[ColumnBatch]:
    """The scan's batches of KV pairs decoded straight into columns; a widened span (rows to
    re-check against the residual filters) or a point span goes through the scan's rows."""
    spans, exact = scan._spans(ctx)
    if not exact or any(span.point for span in spans):
        yield from (columns_of_rows(rows, positions) for rows in scan._batches(ctx))
        return
    reader = reader_for(ctx, scan)
    decoder = scan.codec.decoder(set(positions))
    for span in reversed(spans) if scan.reverse else spans:
        for keys, values in _span_lists(reader, span.start, span.end, scan.reverse):
            ctx.check_cancelled()
            n = len(keys)
            columns = decoder.column_lists(keys, values)
            for p in positions:
                if p not in columns:  # neither stored nor in the key: a VIRTUAL column's place
                    columns[p] = [None] * n
            yield ColumnBatch(n, columns)


def _span_lists(reader, start: bytes, end: bytes | None, reverse: bool) -> Iterator[tuple[list, list]]:
    """A span's KV pairs as ``(keys, values)`` lists of about `COLUMN_BATCH_ROWS`: forward
    by `scan_columns` (the storage builds no pair tuple, and splices a memtable's scattered
    writes into the table's blocks), backward by `scan_batches`' pairs split apart."""
    if reverse:
        return map(columns_of, reader.scan_batches(start, end, True, None, repeat(COLUMN_BATCH_ROWS)))
    return reader.scan_columns(start, end, COLUMN_BATCH_ROWS)


def _filter_columns(flt: Filter, ctx: ExecContext, positions: list[int]) -> Iterator[ColumnBatch]:
    """The columns of the rows every term of the filter holds for (the non-empty batches)."""
    terms = column_terms(flt.predicate)
    assert terms is not None
    mask_of = column_mask(terms)
    read = sorted(set(positions).union(i for i, _op, _c in terms))
    for batch in column_batches(flt.child, ctx, read):
        columns = batch.columns
        mask = mask_of(columns)
        n = mask.count(True)
        if n == batch.n:
            yield ColumnBatch(n, {p: columns[p] for p in positions})
        elif n:
            yield ColumnBatch(n, {p: list(compress(columns[p], mask)) for p in positions})


# -- aggregation ------------------------------------------------------------------------------

def column_groups(child: Operator, keys: list, specs: list, ctx: ExecContext) -> dict[tuple, list] | None:
    """`HashAggregate._accumulate` over column batches: the groups (key tuple -> one
    accumulator per spec, in first-seen order), or None when the row path must run."""
    key_positions = plain_columns(keys)
    # each argument's row position (None: count(*)); an argument that is no plain column read
    # (an expression, a FILTER or ORDER BY wrapper) leaves the query to the row path
    picks = [[None] if spec.arg is None else plain_columns([spec.arg]) for spec in specs]
    if key_positions is None or None in picks or not reads_columns(child):
        return None
    args: list[int | None] = [p[0] for p in picks]  # type: ignore[index]
    positions = sorted(set(key_positions).union(a for a in args if a is not None))
    batches = column_batches(child, ctx, positions)
    if not key_positions:
        accs = [spec.factory() for spec in specs]
        for batch in batches:
            _feed(accs, args, batch.columns, batch.n)
        return {(): accs}
    return _grouped(batches, key_positions, args, specs)


def _feed(accs: list, args: list[int | None], columns: dict[int, list], n: int) -> None:
    """A batch's values to one group's accumulators (``count(*)`` sees one NULL per row)."""
    for acc, arg in zip(accs, args):
        acc.add_batch([None] * n if arg is None else columns[arg])


def split_by_key(keys: Iterable[Any], items: Iterable[Any]) -> dict[Any, list]:
    """``items`` grouped by their ``keys`` (paired in order): key -> items, in first-seen order."""
    out: dict[Any, list] = {}
    for key, item in zip(keys, items):
        group = out.get(key)
        if group is None:
            out[key] = [item]
        else:
            group.append(item)
    return out


def _grouped(batches: Iterator[ColumnBatch], key_positions: list[int], args: list[int | None],
             specs: list) -> dict[tuple, list]:
    groups: dict[tuple, list] = {}
    for batch in batches:
        columns = batch.columns
        if len(key_positions) == 1:
            batch_keys: Any = zip(columns[key_positions[0]])
        else:
            batch_keys = zip(*[columns[p] for p in key_positions])
        for key, numbers in split_by_key(batch_keys, range(batch.n)).items():  # the batch's row numbers
            accs = groups.get(key)
            if accs is None:
                accs = groups[key] = [spec.factory() for spec in specs]
            if len(numbers) == batch.n:
                _feed(accs, args, columns, batch.n)
            else:
                picked = {p: list(map(columns[p].__getitem__, numbers)) for p in set(args) if p is not None}
                _feed(accs, args, picked, len(numbers))
    return groups
