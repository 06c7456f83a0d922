"""Fast paths for prepared statements whose plan is one index read.

``SELECT id, sku FROM orders WHERE id = ?`` plans to ``Project(IndexScan)`` with a point span.
Run the normal way, each execution stacks five generators (the result's, the time-zone
wrapper, the error guard, the projection, the scan) and a streaming result with its callbacks.
`compile_index_read` recognises such plans when they are cached and gives the session a
function that runs the scan itself and returns the (few) rows as a list: for a primary key,
encode the key, get, decode, pick the columns (`IndexScan.point_get`); for an equality on
every column of a non-unique index, encode the values, read the entries under them by one
short prefix read and fetch their rows (`IndexScan.equality_rows`); for another equality or
a range on an index, read its entries at once and fetch their rows with one ``get_many``; for
``pk IN (...)``, one ``get_many`` (`IndexScan.ready_rows`). A LIMIT/OFFSET above cuts the
list; ``ORDER BY k LIMIT n`` on an indexed column is a whole-index scan the planner limited to
n rows, read the same way (on the LSM, n <= 64 entries by a short limited read) -- over an
index on one TEXT column with the rows' columns picked, by one function (`_first_rows`). When the
table has one column family and no VIRTUAL or exploded column, the rows are decoded straight
into the projection's columns (`PickedDecoder`) instead of into whole rows picked afterwards.

It applies only where the shortcut cannot change what the statement does: the span bounds are
parameters or literals (no function that reads the clock or a sequence), the projection picks
columns (nothing that can fail or read the context), and the span is exact. A value that has
to widen the span (the text '7' for an INT key: the scan then re-checks its filters) or more
than `MAX_READY_ROWS` matching rows make the function return None: the statement then runs the
normal way, streaming, without holding its rows in memory.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial

from sqlglot import exp

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Limit, Project, plain_columns
from sqlkv.sql.exec.row_fetch import row_prefix_list, rows_at, rows_by_keys, text_entry_row_keys
from sqlkv.sql.exec.scan import IndexScan
from sqlkv.sql.rowstore.picked import PickedDecoder, picks_for

MAX_READY_ROWS = 256

IndexRead = Callable[[ExecContext], "list[tuple] | None"]


def compile_index_read(plan: Operator) -> IndexRead | None:
    """A function running ``plan`` to a list of rows, or None when ``plan`` is not one
    read of an index (see the module docstring), under a LIMIT/OFFSET or not."""
    if type(plan) is Limit:
        if not _constant_limit(plan):
            return None
        first = _first_entries_scan(plan.child)  # fused, when it applies: no general read made too
        read = compile_index_read(plan.child) if first is None else _first_rows(*first)
        if read is None:
            return None
        return _limited(plan, read)
    positions = None
    scan = plan
    if type(plan) is Project:
        positions = plain_columns(plan.exprs)
        if positions is None:
            return None
        scan = plan.child
    if type(scan) is not IndexScan or not _bounds_on_constants(scan):
        return None
    # the rows decoded straight into the projection's columns, when the table allows
    decoder = None
    if positions is not None and not scan.index_only and scan.partial_fetch is None:
        decoder = picks_for(scan.codec, positions)
        if decoder is not None:
            positions = None
    if scan.point_gettable:
        return _reader(scan.point_get, decoder, positions)
    if scan.equality_readable:
        return _reader(partial(scan.equality_rows, most=MAX_READY_ROWS), decoder, positions)
    return _reader(partial(scan.ready_rows, most=MAX_READY_ROWS), decoder, positions)


def _bounds_on_constants(scan: IndexScan) -> bool:
    """Spans computed from parameters and literals only (equalities, IN lists, ranges)."""
    bounds = scan.builder.bounds
    if not bounds:  # a whole index: only its first rows (ORDER BY k LIMIT n)
        return scan.limit is not None and scan.limit <= MAX_READY_ROWS
    for b in bounds:
        nodes = [node for node, _fn in b.eq or ()]
        nodes += [bound[0] for bound in (b.lo, b.hi) if bound is not None]
        if not all(_constant(node) for node in nodes):
            return False
    return True


def _constant(node: exp.Expression) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, (exp.Placeholder, exp.Literal, exp.Boolean))


def _constant_limit(limit: Limit) -> bool:
    """LIMIT and OFFSET are parameters or literals (nothing that reads the clock or a table)."""
    nodes = getattr(limit.text, "nodes", None)  # the LazySql the planner labels it with
    return nodes is not None and all(isinstance(n, str) or _constant(n) for n in nodes)


def _limited(limit: Limit, read: IndexRead) -> IndexRead:
    """``read`` cut to LIMIT/OFFSET, evaluated per execution as `Limit.rows` does."""
    count_of, offset_of = limit.limit, limit.offset

    def limited(ctx: ExecContext) -> list[tuple] | None:
        n = count_of(ctx)
        off = offset_of(ctx)
        if n is not None and n <= 0:
            return []
        rows = read(ctx)
        if rows is None:
            return None
        return rows[off:] if n is None else rows[off:off + n]

    return limited


def _first_entries_scan(plan: Operator) -> tuple[IndexScan, PickedDecoder, PickedDecoder] | None:
    """The scan and decoders of ``ORDER BY k LIMIT n`` over a whole index on one TEXT column
    of a one-family table, its rows' columns picked (what `_first_rows` fuses), or None. The
    first decoder takes the indexed column from the caller (its entries' keys hold it), the
    second decodes every picked column from the rows."""
    if type(plan) is not Project or type(plan.child) is not IndexScan:
        return None
    scan = plan.child
    positions = plain_columns(plan.exprs)
    if (scan.builder.bounds or not scan.text_entries or scan.index_only or scan.partial_fetch is not None
            or scan.limit is None or scan.limit > MAX_READY_ROWS or positions is None):
        return None
    decoder = picks_for(scan.codec, positions)
    if decoder is None:
        return None
    return scan, decoder.given(scan.icodec.key_positions[0]), decoder  # type: ignore[union-attr]


def _first_rows(scan: IndexScan, entry_decoder: PickedDecoder, decoder: PickedDecoder) -> IndexRead:
    """`IndexScan.ready_rows` for `_first_entries_scan`'s scans in one function: the index's
    first (or last) entries by one limited read, their rows' keys and indexed strings cut in
    one pass, the rows fetched by one ``get_many`` and decoded into the picked columns, the
    indexed one taken from the entries -- what ``ready_rows`` does for such a scan, without
    its checks of the span's kind. Entries the one-pass cut refuses go the general way."""
    start, end, reverse = scan.whole_span.start, scan.whole_span.end, scan.reverse
    kv_limit = min(scan.limit, MAX_READY_ROWS + 1)  # type: ignore[type-var]
    codec, ic = scan.codec, scan.icodec

    def first_rows(ctx: ExecContext) -> list[tuple] | None:
        txn = ctx.txn
        pairs = txn.read_range(start, end, reverse, kv_limit)
        if len(pairs) > MAX_READY_ROWS:
            return None
        texts: list[str] = []
        keys = text_entry_row_keys(codec, ic, pairs, texts)
        if keys is not None:
            return rows_by_keys(entry_decoder, txn, keys, texts)
        return rows_at(codec, decoder, txn, row_prefix_list(codec, ic, pairs))

    return first_rows


def _reader(ready_rows: Callable[..., list[tuple] | None], decoder: PickedDecoder | None,
            positions: list[int] | None) -> IndexRead:
    """``ready_rows(ctx, decoder=decoder)`` with the row positions ``positions`` picked from
    each row (None: the rows are the answer)."""
    if positions is None:
        if decoder is None:
            return ready_rows
        return partial(ready_rows, decoder=decoder)
    if len(positions) == 1:
        only = positions[0]

        def read_one(ctx: ExecContext) -> list[tuple] | None:
            rows = ready_rows(ctx)
            # None: widened (the scan re-checks its filters), or long: the normal path
            return None if rows is None else [(row[only],) for row in rows]

        return read_one
    pick = operator.itemgetter(*positions)

    def read(ctx: ExecContext) -> list[tuple] | None:
        rows = ready_rows(ctx)
        return None if rows is None else list(map(pick, rows))

    return read
