"""Relational operators: Values, Filter, Project, Sort (and top-N), Distinct, Limit.

``SELECT DISTINCT name, age * 2 AS a2 FROM users WHERE age > ? ORDER BY a2 DESC LIMIT 3`` runs
as ``Limit(Sort(Distinct(Project(Filter(scan)))))``. Every operator pulls rows lazily from its
child with `counted`, so rows stream; only `Sort` (all rows, or the best N for a top-N) and
`Distinct` (the set of rows seen) hold state. Expressions were compiled once by the planner into
callables ``fn(row)``; nothing here walks an AST per row. Filter, Project, Slice and Limit
work on batches (`BatchOperator`): a list comprehension or a ``map`` per batch of rows.
"""

from __future__ import annotations

import datetime
import decimal
import heapq
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlkv.errors import DataError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.external_sort import sort_spilling
from sqlkv.sql.expr.batch_filters import batch_filter
from sqlkv.sql.exec.operator import BatchOperator, Operator, counted, counted_batches

RowFn = Callable[[tuple], Any]
CHECK_EVERY = 4096  # rows between cancellation checks in long loops


class Values(Operator):
    """A fixed list of rows, each a tuple of compiled expressions (evaluated per execution)."""

    def __init__(self, columns: list[Column], rows: list[list[RowFn]]) -> None:
        self.columns = columns
        self.row_fns = rows

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        empty: tuple = ()
        for fns in self.row_fns:
            yield tuple(fn(empty) for fn in fns)

    def describe(self) -> str:
        return f"values ({len(self.row_fns)} rows)"


class RowsOperator(Operator):
    """Rows produced by a Python callable per execution (materialised CTEs, test fakes)."""

    def __init__(self, columns: list[Column], source: Callable[[ExecContext], Iterator[tuple]],
                 label: str = "rows") -> None:
        self.columns = columns
        self.source = source
        self.label = label

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        return iter(self.source(ctx))

    def describe(self) -> str:
        return self.label


class Filter(BatchOperator):
    """Keeps the rows for which the compiled predicate is TRUE."""

    def __init__(self, child: Operator, predicate: Callable[[tuple], bool], text: object) -> None:
        self.child = child
        self.columns = child.columns
        self.predicate = predicate
        self.text = text

    def children(self) -> list[Operator]:
        return [self.child]

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        keep = batch_filter(self.predicate)  # one comprehension over the batch for col-op-const
        for batch in counted_batches(self.child, ctx):
            kept = keep(batch)
            if kept:
                yield kept

    def describe(self) -> str:
        return f"filter {self.text}"


class Project(BatchOperator):
    """Computes one output tuple per input row from compiled expressions."""

    def __init__(self, child: Operator, columns: list[Column], exprs: list[RowFn],
                 texts: list[str] | None = None) -> None:
        self.child = child
        self.columns = columns
        self.exprs = exprs
        self.texts = texts or [c.name for c in columns]

    def children(self) -> list[Operator]:
        return [self.child]

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        fns = self.exprs
        if not fns:  # no columns (EXISTS, SELECT FROM t): one empty tuple per row
            return ([()] * len(batch) for batch in counted_batches(self.child, ctx))
        picks = plain_columns(fns)
        if picks is not None and len(picks) > 1:  # only column reads: one C-level getter per row
            getter = operator.itemgetter(*picks)
            return (list(map(getter, batch)) for batch in counted_batches(self.child, ctx))
        # one map per expression, zipped into rows: the loops run in C, each row's
        # expressions are still evaluated in order
        return (list(zip(*[map(f, batch) for f in fns])) for batch in counted_batches(self.child, ctx))

    def describe(self) -> str:
        return "project " + ", ".join(map(str, self.texts))


class Slice(BatchOperator):
    """Keeps the first ``width`` columns (drops sort keys computed for ORDER BY)."""

    def __init__(self, child: Operator, width: int) -> None:
        self.child = child
        self.width = width
        self.columns = child.columns[:width]

    def children(self) -> list[Operator]:
        return [self.child]

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        w = self.width
        return ([row[:w] for row in batch] for batch in counted_batches(self.child, ctx))

    def describe(self) -> str:
        return f"columns 1..{self.width}"


def plain_columns(fns: Sequence[RowFn]) -> list[int] | None:
    """The row positions when every expression is a plain column read (an itemgetter of one
    position, as the compiler makes them), else None."""
    picks = []
    for f in fns:
        if type(f) is not operator.itemgetter:
            return None
        args = f.__reduce__()[1]
        if len(args) != 1 or type(args[0]) is not int:
            return None
        picks.append(args[0])
    return picks


# --- sorting -------------------------------------------------------------------------------

def _type_rank(v: Any) -> int:
    """SQLite's order between storage classes: numbers < text < blobs (< dates, our extension)."""
    if isinstance(v, (int, float, decimal.Decimal)):
        return 0
    if isinstance(v, str):
        return 1
    if isinstance(v, (bytes, bytearray, memoryview)):
        return 2
    if isinstance(v, datetime.datetime):
        return 4
    if isinstance(v, datetime.date):
        return 3
    return 5


def value_key(v: Any) -> tuple:
    """Sort key of a non-NULL value giving SQL's total order across types."""
    if isinstance(v, float) and v != v:  # NaN sorts below every number
        return (0, float("-inf"), 0)
    if isinstance(v, (int, float, decimal.Decimal)):
        return (0, v, 1)
    return (_type_rank(v), v, 1)


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY term: the column of the input row, direction and NULL placement."""

    index: int
    desc: bool = False
    nulls_first: bool | None = None  # None: NULLs first ascending, last descending

    def nulls_low(self) -> bool:
        """True when NULL must compare below every value in the ascending-key sense."""
        nf = (not self.desc) if self.nulls_first is None else self.nulls_first
        return nf != self.desc


def _column_key(k: SortKey) -> Callable[[tuple], tuple]:
    i = k.index
    null_key = (0,) if k.nulls_low() else (2,)
    def key(row: tuple) -> tuple:
        v = row[i]
        return null_key if v is None else (1, value_key(v))
    return key


class _Reversed:
    """Inverts the order of a key (for top-N heaps with mixed ASC/DESC terms)."""

    __slots__ = ("k",)

    def __init__(self, k: tuple) -> None:
        self.k = k

    def __lt__(self, other: _Reversed) -> bool:
        return other.k < self.k

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.k == self.k


def sort_rows(rows: list[tuple], keys: Sequence[SortKey]) -> list[tuple]:
    """Sorts in place with one stable pass per key, last key first (no per-compare Python code)."""
    try:
        for k in reversed(keys):
            rows.sort(key=_column_key(k), reverse=k.desc)
    except TypeError as exc:
        raise DataError(f"cannot order values of incomparable types: {exc}") from None
    return rows


def merge_key(keys: Sequence[SortKey]) -> Callable[[tuple], tuple]:
    """One comparable key per row giving `sort_rows`'s order (descending terms inverted), for
    heaps and merges that take a single key."""
    fns = [_column_key(k) for k in keys]
    flags = [k.desc for k in keys]
    def key(row: tuple) -> tuple:
        return tuple(_Reversed(f(row)) if d else f(row) for f, d in zip(fns, flags))
    return key


def top_n(rows: Iterator[tuple], keys: Sequence[SortKey], n: int) -> list[tuple]:
    """The first ``n`` rows in sort order, keeping only ``n`` rows in memory."""
    if n <= 0:
        return []
    fns = [_column_key(k) for k in keys]
    if all(not k.desc for k in keys) or all(k.desc for k in keys):
        desc = keys[0].desc if keys else False
        def key(row: tuple) -> tuple:
            return tuple(f(row) for f in fns)
        pick = heapq.nlargest if desc else heapq.nsmallest
        try:
            return pick(n, rows, key=key)
        except TypeError as exc:
            raise DataError(f"cannot order values of incomparable types: {exc}") from None
    try:
        return heapq.nsmallest(n, rows, key=merge_key(keys))
    except TypeError as exc:
        raise DataError(f"cannot order values of incomparable types: {exc}") from None


class Sort(Operator):
    """ORDER BY: materialises its input (or only the best ``limit`` rows for a top-N); past
    `external_sort.SORT_MEMORY_ROWS` rows it sorts in runs spilled to disk."""

    def __init__(self, child: Operator, keys: list[SortKey], texts: list[str],
                 limit: Callable[[ExecContext], int | None] | None = None) -> None:
        self.child = child
        self.columns = child.columns
        self.keys = keys
        self.texts = texts
        self.limit = limit  # rows needed (LIMIT + OFFSET), evaluated per execution

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        n = self.limit(ctx) if self.limit is not None else None
        if n is not None:
            return iter(top_n(counted(self.child, ctx), self.keys, n))
        keys = self.keys
        # past SORT_MEMORY_ROWS rows, sorted runs spill to temporary files (external_sort.py)
        return sort_spilling(counted(self.child, ctx), lambda batch: sort_rows(batch, keys), merge_key(keys))

    def describe(self) -> str:
        kind = "top-n sort" if self.limit is not None else "sort"
        return f"{kind} " + ", ".join(map(str, self.texts))


class Distinct(Operator):
    """Drops repeated rows (compared on the first ``width`` columns), keeping first occurrences."""

    def __init__(self, child: Operator, width: int | None = None) -> None:
        self.child = child
        self.columns = child.columns
        self.width = width

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        seen: set = set()
        w = self.width
        for row in counted(self.child, ctx):
            key = row if w is None else row[:w]
            if key in seen:
                continue
            seen.add(key)
            yield row

    def describe(self) -> str:
        return "distinct"


class Limit(BatchOperator):
    """LIMIT/OFFSET with counts evaluated per execution (they may be parameters)."""

    def __init__(self, child: Operator, limit: Callable[[ExecContext], int | None],
                 offset: Callable[[ExecContext], int], text: object) -> None:
        self.child = child
        self.columns = child.columns
        self.limit = limit
        self.offset = offset
        self.text = text

    def children(self) -> list[Operator]:
        return [self.child]

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        left = self.limit(ctx)
        skip = self.offset(ctx)
        if left is not None and left <= 0:
            return
        for batch in counted_batches(self.child, ctx):
            if skip:
                if len(batch) <= skip:
                    skip -= len(batch)
                    continue
                batch, skip = batch[skip:], 0
            if left is not None:
                if len(batch) >= left:
                    yield batch[:left]
                    return  # the child is not asked for another batch
                left -= len(batch)
            yield batch

    def describe(self) -> str:
        return f"limit {self.text}"


class WithSubqueries(Operator):
    """The plan's root plus the subqueries its expressions run, so EXPLAIN can show them."""

    def __init__(self, child: Operator, subplans: list[Operator]) -> None:
        self.child = child
        self.subplans = subplans
        self.columns = child.columns

    def rows(self, ctx: ExecContext):
        if ctx.stats is not None:  # EXPLAIN ANALYZE: the child's line (the one shown) gets the figures
            return counted(self.child, ctx)
        return self.child.rows(ctx)

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        if ctx.stats is not None:
            return counted_batches(self.child, ctx)
        return self.child.batches(ctx)

    def explain(self, ctx: ExecContext | None = None, indent: int = 0) -> list[str]:
        lines = self.child.explain(ctx, indent)
        for i, sub in enumerate(self.subplans, 1):
            kind = "correlated" if getattr(sub, "correlated", False) else "uncorrelated"
            lines.append("  " * indent + f"subquery {i} ({kind}):")
            lines.extend(sub.explain(ctx, indent + 1))
        return lines

    def describe(self) -> str:
        return self.child.describe()


class Renamed(Operator):
    """Same rows, different column names (a CTE's declared column list)."""

    def __init__(self, child: Operator, columns: list[Column]) -> None:
        self.child = child
        self.columns = columns

    def children(self) -> list[Operator]:
        return self.child.children()

    def rows(self, ctx: ExecContext):
        return self.child.rows(ctx)

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        return self.child.batches(ctx)

    def describe(self) -> str:
        return self.child.describe()
