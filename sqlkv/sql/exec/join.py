"""Join operators: hash join, lookup join (index nested loop) and nested-loop join.

``SELECT * FROM orders o JOIN users u ON u.id = o.user_id WHERE o.total > 100`` joins the
filtered orders (the smaller, driving side) with users. When users has an index whose leading
column is ``id`` the planner picks `LookupJoin`: one index lookup per order row, no scan of
users at all. Otherwise `HashJoin` reads users once into a dict keyed by ``id`` and streams
the orders through it. `NestedLoopJoin` is left for conditions with no equality.

Every join emits ``left row + right row`` tuples. Outer joins pad the missing side with NULLs:
LEFT keeps unmatched left rows, RIGHT unmatched right rows (emitted after the probe), FULL
both. A NULL join key never matches (``NULL = NULL`` is not true).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import chain, islice
from typing import Any

from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.hash_spill import HASH_JOIN_MEMORY_ROWS, grace_join, none
from sqlkv.sql.exec.operator import CANCEL_CHECK_ROWS, Operator, chunked, counted, counted_flat

RowFn = Callable[[tuple], Any]
Pred = Callable[[tuple], bool]
JOIN_KINDS = ("inner", "left", "right", "full", "cross")


def _key(fns: list[RowFn], row: tuple) -> tuple | None:
    key = tuple([f(row) for f in fns])
    return None if None in key else key


def key_function(fns: list[RowFn]) -> Callable[[tuple], Any]:
    """row -> its join key, None when a part of it is NULL (it never matches): the value itself
    for one key column (no tuple per row), else the tuple of the values."""
    if len(fns) == 1:
        return fns[0]
    return partial(_key, fns)


def _drained(rows: list[tuple]) -> Iterator[tuple]:
    """The rows of ``rows``, emptying the list as they go (so they are not held twice)."""
    rows.reverse()
    while rows:
        yield rows.pop()


class JoinBase(Operator):
    # what the planner estimated, shown by EXPLAIN ("estimated rows 50; cost lookup 240 vs
    # hash 100030"); set only when statistics (ANALYZE) informed the estimate
    estimate: str | None = None

    def noted(self, line: str) -> str:
        return line if self.estimate is None else f"{line} [{self.estimate}]"

    def __init__(self, left: Operator, right_columns: list[Column], kind: str) -> None:
        self.left = left
        self.kind = kind
        self.columns = list(left.columns) + list(right_columns)
        self.left_nulls = (None,) * len(left.columns)
        self.right_nulls = (None,) * len(right_columns)


class NestedLoopJoin(JoinBase):
    """Every left row against every (materialised) right row, keeping pairs where ON holds."""

    def __init__(self, left: Operator, right: Operator, kind: str, predicate: Pred | None,
                 text: object = "") -> None:
        super().__init__(left, right.columns, kind)
        self.right = right
        self.predicate = predicate
        self.text = text

    def children(self) -> list[Operator]:
        return [self.left, self.right]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        right_rows = list(counted(self.right, ctx))
        pred = self.predicate
        keep_left = self.kind in ("left", "full")
        keep_right = self.kind in ("right", "full")
        matched_right = [False] * len(right_rows) if keep_right else None
        n = 0
        for lrow in counted(self.left, ctx):
            matched = False
            for i, rrow in enumerate(right_rows):
                row = lrow + rrow
                if pred is None or pred(row):
                    matched = True
                    if matched_right is not None:
                        matched_right[i] = True
                    yield row
            n += 1 + len(right_rows)  # rows visited, so a long inner loop counts
            if n >= CANCEL_CHECK_ROWS:
                n = 0
                ctx.check_cancelled()
            if keep_left and not matched:
                yield lrow + self.right_nulls
        if matched_right is not None:
            for i, rrow in enumerate(right_rows):
                if not matched_right[i]:
                    yield self.left_nulls + rrow

    def describe(self) -> str:
        on = f" on {self.text}" if self.text else ""
        return self.noted(f"nested loop join ({self.kind}){on}")


class HashJoin(JoinBase):
    """Builds a hash table on one input's key (the right one unless ``build_left``), probes it
    with the other's rows. ``build_left`` (inner joins only) is chosen when the left input is
    the smaller one, so memory follows the smaller side. A build side of more than
    `HASH_JOIN_MEMORY_ROWS` rows spills: both inputs are partitioned to temporary files by
    key hash and joined a partition at a time (hash_spill.py)."""

    def __init__(self, left: Operator, right: Operator, kind: str, left_keys: list[RowFn],
                 right_keys: list[RowFn], residual: Pred | None, text: object,
                 build_left: bool = False) -> None:
        super().__init__(left, right.columns, kind)
        self.right = right
        self.left_keys = left_keys
        self.right_keys = right_keys
        self.residual = residual
        self.text = text
        self.build_left = build_left and kind == "inner"

    def children(self) -> list[Operator]:
        return [self.left, self.right]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        build, probe = (self.left, self.right) if self.build_left else (self.right, self.left)
        build_keys, probe_keys = (self.left_keys, self.right_keys) if self.build_left \
            else (self.right_keys, self.left_keys)
        build_rows = counted_flat(build, ctx)
        kept = list(islice(build_rows, HASH_JOIN_MEMORY_ROWS))
        if len(kept) < HASH_JOIN_MEMORY_ROWS:
            yield from self._joined(ctx, kept, counted_flat(probe, ctx))
            return
        keep_probe = not self.build_left and self.kind in ("left", "full")
        keep_build = not self.build_left and self.kind in ("right", "full")
        yield from grace_join(
            chain(_drained(kept), build_rows), counted_flat(probe, ctx),
            key_function(build_keys), key_function(probe_keys),
            lambda part_build, part_probe: self._joined(ctx, list(part_build), part_probe),
            (lambda row: self.left_nulls + row) if keep_build else none,
            (lambda row: row + self.right_nulls) if keep_probe else none)

    def _joined(self, ctx: ExecContext, build_rows: list[tuple], probe_rows: Iterable[tuple]) -> Iterator[tuple]:
        """The join of the build side's rows (all in memory) with the probe side's stream."""
        build_key = key_function(self.left_keys if self.build_left else self.right_keys)
        if self.kind in ("right", "full"):  # unmatched build rows are emitted: track them by position
            positions: dict[Any, list[int]] = {}
            for i, brow in enumerate(build_rows):
                key = build_key(brow)
                if key is not None:
                    positions.setdefault(key, []).append(i)
            return self._probe_tracked(ctx, positions, build_rows, probe_rows)
        table: dict[Any, list[tuple]] = {}
        for brow in build_rows:
            key = build_key(brow)
            if key is not None:
                table.setdefault(key, []).append(brow)
        return self._probe(ctx, table, probe_rows)

    def _probe(self, ctx: ExecContext, table: dict[Any, list[tuple]], probe_rows: Iterable[tuple]) -> Iterator[tuple]:
        """Inner and LEFT joins: each probe row with the build rows of its key."""
        build_left = self.build_left
        probe_key = key_function(self.right_keys if build_left else self.left_keys)
        keep_probe = self.kind == "left"
        pad = self.right_nulls
        residual = self.residual
        get = table.get
        n = 0
        for prow in probe_rows:
            bucket = get(probe_key(prow))  # a NULL key (None) is in no table
            n += 1
            if bucket is not None:
                n += len(bucket)
                matched = False
                for brow in bucket:
                    row = brow + prow if build_left else prow + brow
                    if residual is None or residual(row):
                        matched = True
                        yield row
                if keep_probe and not matched:
                    yield prow + pad
            elif keep_probe:
                yield prow + pad
            if n >= CANCEL_CHECK_ROWS:
                n = 0
                ctx.check_cancelled()

    def _probe_tracked(self, ctx: ExecContext, table: dict[Any, list[int]], right_rows: list[tuple],
                       left_rows: Iterable[tuple]) -> Iterator[tuple]:
        """RIGHT and FULL joins (built on the right): the right rows no left row matched follow."""
        keep_left = self.kind == "full"
        matched_right = [False] * len(right_rows)
        left_key = key_function(self.left_keys)
        residual = self.residual
        get = table.get
        n = 0
        for lrow in left_rows:
            matched = False
            bucket = get(left_key(lrow)) or ()
            n += len(bucket) + 1
            for i in bucket:
                row = lrow + right_rows[i]
                if residual is not None and not residual(row):
                    continue
                matched = matched_right[i] = True
                yield row
            if keep_left and not matched:
                yield lrow + self.right_nulls
            if n >= CANCEL_CHECK_ROWS:
                n = 0
                ctx.check_cancelled()
        for i, rrow in enumerate(right_rows):
            if not matched_right[i]:
                yield self.left_nulls + rrow

    def describe(self) -> str:
        build = ", build left" if self.build_left else ""
        return self.noted(f"hash join ({self.kind}{build}) on {self.text}")


LOOKUP_BATCH = 256  # outer rows of a lookup join whose lookups are read together
SECOND_LOOKUP_BATCH = 16  # ... in the batch after the first outer row's


class LookupJoin(JoinBase):
    """For each left row, looks its key up in an index of the right table (inner or left join)."""

    def __init__(self, left: Operator, access: Any, right_columns: list[Column], kind: str,
                 left_keys: list[RowFn], right_filter: Pred | None, residual: Pred | None,
                 text: object) -> None:
        super().__init__(left, right_columns, kind)
        self.access = access
        self.left_keys = left_keys
        self.right_filter = right_filter
        self.residual = residual
        self.text = text

    def children(self) -> list[Operator]:
        return [self.left]

    def kv_parts(self) -> list[object]:
        return [self.access.lookup_op]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        for joined in self.batches(ctx):
            yield from joined

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        """The joined rows of each batch of outer rows, as one list (split where a key's many
        rows stream)."""
        # Outer rows are looked up in batches (their inner rows read by one get_many): the
        # first outer row alone, so LIMIT 1 or EXISTS reads no more, then the batches grow from
        # SECOND_LOOKUP_BATCH to LOOKUP_BATCH (a query asking for a few customers' orders
        # reads them in two batches, not four, while a LIMIT stopping early reads little ahead).
        batch: list[tuple] = []
        size = 1
        for lrow in counted(self.left, ctx):
            batch.append(lrow)
            if len(batch) >= size:
                yield from self._joined(ctx, batch)
                ctx.check_cancelled()  # each batch is KV reads: check once per batch
                batch = []
                size = SECOND_LOOKUP_BATCH if size == 1 else min(size * 2, LOOKUP_BATCH)
        if batch:
            yield from self._joined(ctx, batch)

    def _joined(self, ctx: ExecContext, lrows: list[tuple]) -> Iterator[list[tuple]]:
        """The joined rows of a batch of outer rows, in their order: one list, but the rows
        of a key with more matches than a batch holds (`IndexLookup.lookup_many` streams
        them) are handed on in chunks as they come."""
        keys = [_key(self.left_keys, lrow) for lrow in lrows]
        found = iter(self.access.lookup_many(ctx, [key for key in keys if key is not None]))
        keep_left = self.kind == "left"
        out: list[tuple] = []
        for lrow, key in zip(lrows, keys):
            inner = next(found) if key is not None else ()
            if type(inner) is list or type(inner) is tuple:
                matched = self._join_to(out, lrow, inner)
            else:
                if out:
                    yield out
                    out = []
                matched = False
                for part in chunked(inner):
                    joined: list[tuple] = []
                    if self._join_to(joined, lrow, part):
                        matched = True
                        yield joined
            if keep_left and not matched:
                out.append(lrow + self.right_nulls)
        if out:
            yield out

    def _join_to(self, out: list[tuple], lrow: tuple, inner: Iterable[tuple]) -> bool:
        """Append ``lrow`` joined with each of its ``inner`` rows that pass the filters to
        ``out``; whether any did."""
        rfilter = self.right_filter
        residual = self.residual
        matched = False
        for rrow in inner:
            if rfilter is not None and not rfilter(rrow):
                continue
            row = lrow + tuple(rrow)
            if residual is not None and not residual(row):
                continue
            matched = True
            out.append(row)
        return matched

    def describe(self) -> str:
        target = self.access.describe()
        if target.startswith("lookup "):
            target = target[len("lookup "):]
        return self.noted(f"lookup join ({self.kind}) {target} on {self.text}")


class Reorder(Operator):
    """Rearranges columns (the join planner's order back to FROM order)."""

    def __init__(self, child: Operator, positions: list[int]) -> None:
        self.child = child
        self.positions = positions
        self.columns = [child.columns[i] for i in positions]

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        pos = self.positions
        return (tuple([row[i] for i in pos]) for row in counted(self.child, ctx))

    def describe(self) -> str:
        return "reorder columns"


class LookupScan(Operator):
    """A table's rows by index key values computed once per execution (from an enclosing
    query's row: ``WHERE u.x = t.a`` inside a correlated subquery)."""

    def __init__(self, access: Any, keys: list[RowFn], text: object, columns: list[Column]) -> None:
        self.access = access
        self.keys = keys
        self.text = text
        self.columns = columns

    def kv_parts(self) -> list[object]:
        return [self.access.lookup_op]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        empty: tuple = ()
        key = tuple([f(empty) for f in self.keys])
        if None in key:
            return iter(())
        return (tuple(r) for r in self.access.lookup(ctx, key))

    def describe(self) -> str:
        target = self.access.describe()
        if not target.startswith("lookup"):
            target = "lookup " + target
        return f"{target} where {self.text}"
