"""Window functions: one operator appending one column per ``f(...) OVER (...)`` to each row.

``SELECT name, rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM emp`` runs as
``Window(scan)``: the operator reads its input (windows need whole partitions), groups row
positions by the PARTITION BY key, sorts each partition by the ORDER BY keys, and computes
the function along the sorted partition -- ranking functions from positions and peer groups
(rows with equal ORDER BY keys), LAG/LEAD by offset, FIRST/LAST/NTH_VALUE and aggregates over
the frame of each row. The default frame with ORDER BY is ``RANGE BETWEEN UNBOUNDED PRECEDING
AND CURRENT ROW`` (the row's peers included), without ORDER BY the whole partition. Frames
that start at the partition's first row are computed incrementally; others recompute the
aggregate per row. Rows come out in input order, each extended by the window values.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlkv.errors import DataError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.aggregate_spec import AggregateSpec
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.relational import SortKey, sort_rows

RowFn = Callable[[tuple], Any]
UNBOUNDED = None

RANKING = {"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile"}
OFFSET_FUNCS = {"lag", "lead"}
VALUE_FUNCS = {"first_value", "last_value", "nth_value"}


@dataclass
class FrameBound:
    """``UNBOUNDED`` (offset None), ``CURRENT ROW`` (offset 0) or ``n PRECEDING/FOLLOWING``."""

    offset: int | None
    preceding: bool


@dataclass
class Frame:
    rows: bool                     # ROWS (physical) vs RANGE (peers)
    start: FrameBound
    end: FrameBound


@dataclass
class WindowFunc:
    func: str
    args: list[RowFn]
    partition: list[RowFn]
    order: list[RowFn]
    order_dirs: list[tuple[bool, bool | None]]   # (desc, nulls_first)
    frame: Frame
    agg: AggregateSpec | None = None
    text: object = ""
    constants: list[Any] = field(default_factory=list)


class Window(Operator):
    def __init__(self, child: Operator, funcs: list[WindowFunc], columns: list[Column]) -> None:
        self.child = child
        self.funcs = funcs
        self.columns = columns

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        rows = list(counted(self.child, ctx))
        results = [self._compute(w, rows, ctx) for w in self.funcs]
        for i, row in enumerate(rows):
            yield row + tuple(r[i] for r in results)

    def describe(self) -> str:
        return "window " + ", ".join(str(w.text) for w in self.funcs)

    # -- one window function ----------------------------------------------------------------------

    def _compute(self, w: WindowFunc, rows: list[tuple], ctx: ExecContext) -> list[Any]:
        out: list[Any] = [None] * len(rows)
        partitions: dict[tuple, list[int]] = {}
        for i, row in enumerate(rows):
            partitions.setdefault(tuple(f(row) for f in w.partition), []).append(i)
        for members in partitions.values():
            keyed = [tuple(f(rows[i]) for f in w.order) + (i,) for i in members]
            if w.order:
                keys = [SortKey(k, d, nf) for k, (d, nf) in enumerate(w.order_dirs)]
                sort_rows(keyed, keys)
            order_keys = [k[:-1] for k in keyed]
            positions = [k[-1] for k in keyed]
            self._partition(w, rows, positions, order_keys, out)
            ctx.check_cancelled()
        return out

    def _partition(self, w: WindowFunc, rows: list[tuple], pos: list[int], keys: list[tuple],
                   out: list[Any]) -> None:
        n = len(pos)
        peers_start, peers_end = _peer_groups(keys) if w.order else ([0] * n, [n] * n)
        f = w.func
        if f in RANKING:
            self._ranking(w, pos, peers_start, peers_end, out)
            return
        if f in OFFSET_FUNCS:
            offset = w.constants[0] if w.constants else 1
            default_fn = w.args[2] if len(w.args) > 2 else None
            step = -offset if f == "lag" else offset
            for k in range(n):
                j = k + step
                if 0 <= j < n:
                    out[pos[k]] = w.args[0](rows[pos[j]])
                else:
                    out[pos[k]] = default_fn(rows[pos[k]]) if default_fn is not None else None
            return
        if _has_range_offset(w.frame):
            bounds = _range_offset_bounds(w, keys, peers_start, peers_end)
        else:
            bounds = [_frame(w.frame, k, n, peers_start[k], peers_end[k]) for k in range(n)]
        if f in VALUE_FUNCS:
            nth = w.constants[0] if f == "nth_value" else None
            for k, (lo, hi) in enumerate(bounds):
                if f == "first_value":
                    j = lo
                elif f == "last_value":
                    j = hi - 1
                else:
                    j = lo + nth - 1
                out[pos[k]] = w.args[0](rows[pos[j]]) if lo <= j < hi else None
            return
        self._aggregate(w, rows, pos, bounds, out)

    @staticmethod
    def _ranking(w: WindowFunc, pos: list[int], ps: list[int], pe: list[int], out: list[Any]) -> None:
        n = len(pos)
        dense = 0
        for k in range(n):
            if k == 0 or ps[k] != ps[k - 1]:
                dense += 1
            f = w.func
            if f == "row_number":
                v: Any = k + 1
            elif f == "rank":
                v = ps[k] + 1
            elif f == "dense_rank":
                v = dense
            elif f == "percent_rank":
                v = ps[k] / (n - 1) if n > 1 else 0.0
            elif f == "cume_dist":
                v = pe[k] / n
            else:  # ntile
                buckets = w.constants[0]
                small, extra = divmod(n, buckets)
                # the first `extra` buckets get one row more
                big_rows = extra * (small + 1)
                v = k // (small + 1) + 1 if k < big_rows else extra + (k - big_rows) // max(small, 1) + 1
            out[pos[k]] = v

    @staticmethod
    def _aggregate(w: WindowFunc, rows: list[tuple], pos: list[int], bounds: list[tuple[int, int]],
                   out: list[Any]) -> None:
        spec = w.agg
        assert spec is not None
        arg = spec.arg
        incremental = all(lo == 0 for lo, _ in bounds) and all(
            bounds[k][1] <= bounds[k + 1][1] for k in range(len(bounds) - 1))
        if incremental:
            acc = spec.factory()
            done = 0
            for k, (_lo, hi) in enumerate(bounds):
                while done < hi:
                    acc.add(arg(rows[pos[done]]) if arg is not None else None)
                    done += 1
                out[pos[k]] = acc.result()
            return
        for k, (lo, hi) in enumerate(bounds):
            acc = spec.factory()
            for j in range(lo, hi):
                acc.add(arg(rows[pos[j]]) if arg is not None else None)
            out[pos[k]] = acc.result()


def _peer_groups(keys: list[tuple]) -> tuple[list[int], list[int]]:
    """For each sorted position: start and end (exclusive) of its group of equal order keys."""
    n = len(keys)
    start = [0] * n
    end = [0] * n
    k = 0
    while k < n:
        j = k
        while j + 1 < n and keys[j + 1] == keys[k]:
            j += 1
        for m in range(k, j + 1):
            start[m] = k
            end[m] = j + 1
        k = j + 1
    return start, end


def _has_range_offset(frame: Frame) -> bool:
    return not frame.rows and any(b.offset not in (None, 0) for b in (frame.start, frame.end))


def _range_offset_bounds(w: WindowFunc, keys: list[tuple], ps: list[int],
                         pe: list[int]) -> list[tuple[int, int]]:
    """RANGE frames with ``n PRECEDING/FOLLOWING``: rows whose single ORDER BY value lies
    within n of the current row's (NULL keys frame their peers only)."""
    if len(w.order) != 1:
        raise DataError("RANGE with an offset needs exactly one ORDER BY expression")
    desc = w.order_dirs[0][0]
    n = len(keys)
    values = [k[0] for k in keys]
    nonnull = [i for i, v in enumerate(values) if v is not None]
    lo_nn = nonnull[0] if nonnull else 0
    hi_nn = nonnull[-1] + 1 if nonnull else 0
    try:
        # the non-NULL keys are contiguous and sorted; negate for DESC to search ascending
        line = [(-values[i] if desc else values[i]) for i in range(lo_nn, hi_nn)]
    except TypeError:
        raise DataError("RANGE with an offset needs a numeric ORDER BY expression") from None
    out = []
    for k in range(n):
        v = values[k]
        if v is None:
            out.append((ps[k], pe[k]))
            continue
        cur = -v if desc else v

        def position(b: FrameBound, is_start: bool) -> int:
            if b.offset is None:
                return 0 if b.preceding else n
            if b.offset == 0:
                return ps[k] if is_start else pe[k]
            target = cur - b.offset if b.preceding else cur + b.offset
            if is_start:
                return lo_nn + bisect.bisect_left(line, target)
            return lo_nn + bisect.bisect_right(line, target)
        lo = max(position(w.frame.start, True), 0)
        hi = min(position(w.frame.end, False), n)
        out.append((lo, max(hi, lo)))
    return out


def _frame(frame: Frame, k: int, n: int, peer_lo: int, peer_hi: int) -> tuple[int, int]:
    """[lo, hi) positions of row k's frame in its sorted partition."""
    def bound(b: FrameBound, is_start: bool) -> int:
        if b.offset is None:
            return 0 if b.preceding else n
        if b.offset == 0:
            if frame.rows:
                return k if is_start else k + 1
            return peer_lo if is_start else peer_hi
        j = k - b.offset if b.preceding else k + b.offset
        return j if is_start else j + 1
    lo = max(bound(frame.start, True), 0)
    hi = min(bound(frame.end, False), n)
    return lo, max(hi, lo)
