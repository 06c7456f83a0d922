"""LATERAL joins and the generate_series table function.

``SELECT * FROM users u, LATERAL (SELECT total FROM orders o WHERE o.uid = u.id LIMIT 2) t``:
the right side is planned with the left side's columns as its enclosing scope (like a
correlated subquery). `LateralJoin` stores each left row in that scope's cell, then runs the
right side for it and concatenates the rows (a LEFT JOIN LATERAL keeps left rows without a
match, padded with NULLs). ``generate_series(1, u.n)`` is a `Series` whose bounds are compiled
the same way, so it may read a preceding FROM item.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.join import JoinBase
from sqlkv.sql.exec.operator import CANCEL_CHECK_ROWS, Operator, counted
from sqlkv.sql.expr.dates import Interval, add_interval

RowFn = Callable[[tuple], Any]


class LateralJoin(JoinBase):
    """For each left row: set the right side's outer cell, run it, emit left + right rows."""

    def __init__(self, left: Operator, right: Operator, cell: list, kind: str,
                 predicate: Callable[[tuple], bool] | None, text: object = "") -> None:
        if kind not in ("inner", "left", "cross"):
            raise ProgrammingError("a LATERAL item can only be joined with INNER, CROSS or LEFT JOIN")
        super().__init__(left, right.columns, "left" if kind == "left" else "inner")
        self.right = right
        self.cell = cell
        self.predicate = predicate
        self.text = text

    def children(self) -> list[Operator]:
        return [self.left, self.right]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        pred = self.predicate
        keep_left = self.kind == "left"
        cell = self.cell
        n = 0
        for lrow in counted(self.left, ctx):
            cell[0] = lrow
            matched = False
            for rrow in counted(self.right, ctx):
                row = lrow + rrow
                if pred is None or pred(row):
                    matched = True
                    yield row
                    cell[0] = lrow  # a consumer may have run another lateral in between
                n += 1
            n += 1
            if n >= CANCEL_CHECK_ROWS:
                n = 0
                ctx.check_cancelled()
            if keep_left and not matched:
                yield lrow + self.right_nulls

    def describe(self) -> str:
        on = f" on {self.text}" if self.text else ""
        return f"lateral join ({self.kind}){on}"


class Series(Operator):
    """generate_series(start, stop [, step]): integers (or DECIMALs), or timestamps by an interval."""

    def __init__(self, start: RowFn, stop: RowFn, step: RowFn | None, column: Column, text: str) -> None:
        self.start = start
        self.stop = stop
        self.step = step
        self.columns = [column]
        self.text = text

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        empty: tuple = ()
        start, stop = self.start(empty), self.stop(empty)
        step = self.step(empty) if self.step is not None else None
        if start is None or stop is None or (self.step is not None and step is None):
            return
        if isinstance(start, dt.date):
            values = _timestamps(ctx, start, stop, step)
        else:
            values = _numbers(ctx, start, stop, 1 if step is None else step)
        if len(self.columns) == 1:
            yield from values
        else:  # WITH ORDINALITY
            for n, (v,) in enumerate(values, 1):
                yield (v, n)

    def describe(self) -> str:
        return f"generate_series({self.text})"


def _numbers(ctx: ExecContext, start: Any, stop: Any, step: Any) -> Iterator[tuple]:
    for v in (start, stop, step):
        if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
            raise DataError(f"generate_series() needs INT or DECIMAL bounds and step, not {type(v).__name__}")
    if step == 0:
        raise DataError("step size cannot equal zero")
    v = start
    n = 0
    while (v <= stop) if step > 0 else (v >= stop):
        yield (v,)
        v += step
        n += 1
        if not n & 4095:
            ctx.check_cancelled()


def _timestamps(ctx: ExecContext, start: Any, stop: Any, step: Any) -> Iterator[tuple]:
    if not isinstance(stop, dt.date) or not isinstance(step, Interval):
        raise DataError("generate_series() over timestamps needs a timestamp stop and an INTERVAL step")
    start = add_interval(start, Interval())  # a DATE becomes a TIMESTAMP, as in PostgreSQL
    stop = add_interval(stop, Interval())
    probe = add_interval(start, step)
    if probe == start:
        raise DataError("step size cannot equal zero")
    forward = probe > start
    v = start
    n = 0
    while (v <= stop) if forward else (v >= stop):
        yield (v,)
        try:
            v = add_interval(v, step)
        except DataError:
            return  # past the largest timestamp: the series ends
        n += 1
        if not n & 4095:
            ctx.check_cancelled()
