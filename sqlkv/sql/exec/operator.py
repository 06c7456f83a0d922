"""The operator protocol: every node of a plan is an `Operator` producing tuples lazily.

``SELECT name FROM users WHERE id > 10 ORDER BY name LIMIT 5`` becomes
``Limit(Sort(Project(Filter(Scan))))``-like trees; each node's `rows(ctx)` pulls from its
children, so rows stream and only stateful operators (sort, hash build, aggregation, DISTINCT)
hold rows in memory. `explain()` renders the tree one operator per line, children indented.

Rows also travel in *batches*: `batches(ctx)` yields lists of row tuples, growing from
1 (a table scan: `FIRST_SCAN_BATCH`) to `BATCH_ROWS` (so a LIMIT met early reads little ahead). An operator that
works on whole batches (`BatchOperator`: scans, filters, projections, LIMIT, aggregation) pays
its Python overhead per batch instead of per row; its `rows` flattens its batches. Any other
operator gets a default `batches` that chunks its `rows`, so either protocol works everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice

from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.observe_explain import analyze_suffix, merged_stats, timed_batches, timed_rows

# Operators that loop over many rows without a scan below them (joins over materialised
# inputs) call ctx.check_cancelled() after about this many rows of work, so interrupt() acts
# within a fraction of a second even in the middle of a cross join's inner loop.
CANCEL_CHECK_ROWS = 1 << 15

BATCH_ROWS = 256  # the largest batch operators exchange
FIRST_SCAN_BATCH = 16  # a table scan's first batch (its rows cost little to read ahead)


def batch_sizes(first: int = 1) -> Iterator[int]:
    """``first``, twice that, ... then `BATCH_ROWS` for ever: one stream's batch sizes. Growing
    from 1, a LIMIT met early never has more than as many rows again read ahead."""
    size = first
    while size < BATCH_ROWS:
        yield size
        size *= 2
    while True:
        yield BATCH_ROWS


def chunked(rows: Iterator[tuple]) -> Iterator[list[tuple]]:
    """``rows`` as lists of `batch_sizes` rows (the last may be shorter)."""
    it = iter(rows)
    for size in batch_sizes():
        batch = list(islice(it, size))
        if not batch:
            return
        yield batch


class Operator:
    """Base class of plan nodes. Subclasses set ``columns`` and implement `rows`/`describe`."""

    columns: list[Column]

    def children(self) -> list[Operator]:
        return []

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        raise NotImplementedError

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        """The rows in non-empty lists; by default `rows` cut into `batch_sizes`."""
        return chunked(self.rows(ctx))

    def describe(self) -> str:
        """One line naming the operator and its essentials (spans, keys, predicates)."""
        return type(self).__name__

    def kv_parts(self) -> list[object]:
        """Objects outside the tree whose KV requests are this operator's (a lookup join's
        index lookup): EXPLAIN ANALYZE shows them on this operator's line."""
        return []

    def explain(self, ctx: ExecContext | None = None, indent: int = 0) -> list[str]:
        """The subtree, one line per operator. With ``ctx.stats``, each line gets its figures."""
        line = "  " * indent + self.describe()
        if ctx is not None and ctx.stats is not None:
            st = merged_stats(ctx.stats, self)
            if st is not None:
                line += f"  ({analyze_suffix(st)})"
        out = [line]
        for child in self.children():
            out.extend(child.explain(ctx, indent + 1))
        return out

    def __str__(self) -> str:
        return "\n".join(self.explain())


def counted(op: Operator, ctx: ExecContext) -> Iterator[tuple]:
    """``op.rows(ctx)``, counting rows into ctx.stats when EXPLAIN ANALYZE collects."""
    st = ctx.stats_for(op)
    if st is None:
        yield from op.rows(ctx)
        return
    yield from timed_rows(op, ctx, st)


def counted_batches(op: Operator, ctx: ExecContext) -> Iterator[list[tuple]]:
    """``op.batches(ctx)``, counting rows into ctx.stats when EXPLAIN ANALYZE collects."""
    st = ctx.stats_for(op)
    if st is None:
        return op.batches(ctx)
    return timed_batches(op, ctx, st)


def counted_flat(op: Operator, ctx: ExecContext) -> Iterator[tuple]:
    """`counted`'s rows read through ``op.batches`` (a scan's batched read and decode), for a
    consumer that takes every row anyway (a hash join's inputs): it reads up to one batch
    ahead of what it has consumed."""
    return chain.from_iterable(counted_batches(op, ctx))


class BatchOperator(Operator):
    """An operator whose native protocol is `batches`; `rows` flattens them."""

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        raise NotImplementedError

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        return chain.from_iterable(self.batches(ctx))
