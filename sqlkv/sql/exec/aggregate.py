"""Hash GROUP BY and scalar aggregation, with the aggregate functions' accumulators.

``SELECT dept, count(*), avg(salary) FROM emp GROUP BY dept`` becomes
``HashAggregate(keys=[dept], aggs=[count(*), avg(salary)])`` over the scan: each input row's key
tuple picks (or creates) the group's accumulator list; rows are not kept, only one accumulator
per aggregate per group. Input arrives in batches (`counted_batches`): each batch's rows are
split by group, then each aggregate takes a group's argument values at once (`add_batch`:
a C-level ``sum``/``min``/``max`` when they are all plain ints or strings). Output rows are ``group key values + aggregate results`` in first-seen
group order. Without GROUP BY the operator always emits exactly one row (``count(*)`` of no
rows is 0, ``sum`` NULL, ``total`` 0.0).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from typing import Any

from sqlkv.encoding.interval import Interval
from sqlkv.errors import DataError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.columnar import column_groups, split_by_key
from sqlkv.sql.exec.operator import Operator, counted_batches
from sqlkv.sql.exec.relational import value_key
from sqlkv.sql.expr.dates import scale_interval

if TYPE_CHECKING:
    from sqlkv.sql.exec.aggregate_spec import AggregateSpec

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class Accumulator:
    """State of one aggregate for one group; `add` sees every (non-filtered) input value."""

    __slots__ = ()

    def add(self, value: Any) -> None:
        raise NotImplementedError

    def add_batch(self, values: list) -> None:
        """`add` of each of ``values`` in order; overridden where a whole list is cheaper."""
        add = self.add
        for value in values:
            add(value)

    def result(self) -> Any:
        raise NotImplementedError


_NONE_TYPE = type(None)


def value_kinds(values: list) -> set[type]:
    """The types of the non-NULL ``values``."""
    kinds = set(map(type, values))
    kinds.discard(_NONE_TYPE)
    return kinds


def non_null(values: list, kinds_with_none: bool) -> list:
    return [v for v in values if v is not None] if kinds_with_none else values


class CountStar(Accumulator):
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def add(self, value: Any) -> None:
        self.n += 1

    def add_batch(self, values: list) -> None:
        self.n += len(values)

    def result(self) -> Any:
        return self.n


class Count(Accumulator):
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def add(self, value: Any) -> None:
        if value is not None:
            self.n += 1

    def add_batch(self, values: list) -> None:
        self.n += len(values) - values.count(None)

    def result(self) -> Any:
        return self.n


_PLAIN_NUMBERS = (int, float)


def _numeric(value: Any, func: str) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, decimal.Decimal)):
        return value
    if isinstance(value, str):
        # SQLite reads a numeric prefix of text; strictly typed columns rarely get here.
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return 0
    raise DataError(f"{func}() cannot add a value of type {type(value).__name__}")


def _interval_sum(total: Interval | None, value: Any, func: str) -> Interval:
    if not isinstance(value, Interval) or not (total is None or isinstance(total, Interval)):
        raise DataError(f"{func}() cannot add INTERVAL and {type(value).__name__} values")
    return value if total is None else total.plus(value)


class Sum(Accumulator):
    """SUM: integers stay integers (64-bit overflow is a DataError), NULL when no values."""

    __slots__ = ("total", "seen")

    def __init__(self) -> None:
        self.total: Any = 0
        self.seen = False

    def add(self, value: Any) -> None:
        if type(value) is int and type(self.total) is int:  # the common case, without the checks below
            total = self.total + value
            if not INT64_MIN <= total <= INT64_MAX:
                raise DataError("integer overflow in sum()")
            self.total = total
            self.seen = True
            return
        if value is None:
            return
        if isinstance(value, Interval) or isinstance(self.total, Interval):
            self.total = _interval_sum(self.total if self.seen else None, value, "sum")
            self.seen = True
            return
        v = _numeric(value, "sum")
        if isinstance(self.total, decimal.Decimal) and isinstance(v, float):
            v = decimal.Decimal(repr(v))
        elif isinstance(self.total, float) and isinstance(v, decimal.Decimal):
            v = float(v)
        total = self.total + v
        if type(total) is int and not INT64_MIN <= total <= INT64_MAX:
            # SQLite: any intermediate overflow of an all-integer sum is an error
            raise DataError("integer overflow in sum()")
        self.total = total
        self.seen = True

    def add_batch(self, values: list) -> None:
        total = self.total
        if type(total) is int and value_kinds(values) == {int}:
            ints = non_null(values, None in values)
            # no running total can leave the 64-bit range: add them all at once
            n = len(ints)
            if INT64_MIN <= total + n * min(min(ints), 0) and total + n * max(max(ints), 0) <= INT64_MAX:
                self.total = total + sum(ints)
                self.seen = True
                return
        super().add_batch(values)  # other types, or an overflow to report where SQLite does

    def result(self) -> Any:
        return self.total if self.seen else None


class Total(Sum):
    """TOTAL: like SUM but always a float (never overflows), 0.0 when no values."""

    __slots__ = ()

    def add(self, value: Any) -> None:
        if value is None:
            return
        v = _numeric(value, "total")
        self.total = float(self.total) + float(v)
        self.seen = True

    add_batch = Accumulator.add_batch

    def result(self) -> Any:
        return float(self.total) if self.seen else 0.0


class Avg(Accumulator):
    __slots__ = ("total", "n")

    def __init__(self) -> None:
        self.total: Any = 0
        self.n = 0

    def add(self, value: Any) -> None:
        kind = type(value)
        if (kind is int or kind is float) and type(self.total) in _PLAIN_NUMBERS:  # the common case
            self.total += value
            self.n += 1
            return
        if value is None:
            return
        if isinstance(value, Interval) or isinstance(self.total, Interval):
            self.total = _interval_sum(self.total if self.n else None, value, "avg")
            self.n += 1
            return
        v = _numeric(value, "avg")
        self.total += float(v) if isinstance(v, decimal.Decimal) else v
        self.n += 1

    def add_batch(self, values: list) -> None:
        if type(self.total) is int and value_kinds(values) == {int}:  # exact whatever the order
            ints = non_null(values, None in values)
            self.total += sum(ints)
            self.n += len(ints)
            return
        super().add_batch(values)

    def result(self) -> Any:
        if isinstance(self.total, Interval):  # PostgreSQL's avg(interval): the sum divided by n
            return scale_interval(self.total, 1 / self.n)
        return self.total / self.n if self.n else None


class Extreme(Accumulator):
    """MIN or MAX in SQL's cross-type order, ignoring NULLs."""

    __slots__ = ("best", "best_key", "want_max")

    def __init__(self, want_max: bool) -> None:
        self.best: Any = None
        self.best_key: Any = None
        self.want_max = want_max

    def add(self, value: Any) -> None:
        kind = type(value)
        if kind is type(self.best) and (kind is int or kind is str):
            # the common case: same-typed ints or strings compare as themselves (value_key's order)
            if value > self.best if self.want_max else value < self.best:
                self.best, self.best_key = value, value_key(value)
            return
        if value is None:
            return
        k = value_key(value)
        if self.best_key is None:
            self.best, self.best_key = value, k
            return
        try:
            better = k > self.best_key if self.want_max else k < self.best_key
        except TypeError:
            raise DataError("min()/max() over values of incomparable types") from None
        if better:
            self.best, self.best_key = value, k

    def add_batch(self, values: list) -> None:
        kinds = value_kinds(values)
        best = self.best
        if len(kinds) == 1 and (int in kinds or str in kinds) and (best is None or type(best) in kinds):
            # same-typed ints or strings: Python's order is value_key's
            present = non_null(values, None in values)
            pick = max(present) if self.want_max else min(present)
            if best is None or (pick > best if self.want_max else pick < best):
                self.best, self.best_key = pick, value_key(pick)
            return
        super().add_batch(values)

    def result(self) -> Any:
        return self.best


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class GroupConcat(Accumulator):
    __slots__ = ("parts", "sep")

    def __init__(self, sep: str) -> None:
        self.parts: list[str] = []
        self.sep = sep

    def add(self, value: Any) -> None:
        if value is not None:
            self.parts.append(_text(value))

    def result(self) -> Any:
        return self.sep.join(self.parts) if self.parts else None


class AnyValue(Accumulator):
    """The value of a bare (non-grouped) column: SQLite's "some row of the group" (the last)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None

    def add(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class DistinctInputs(Accumulator):
    """Feeds each distinct non-NULL value once to the wrapped accumulator (``count(DISTINCT x)``);
    with ``keep_null`` (aggregates that collect NULLs, ``jsonb_agg``) NULL is one more value."""

    __slots__ = ("inner", "seen", "keep_null")

    def __init__(self, inner: Accumulator, keep_null: bool = False) -> None:
        self.inner = inner
        self.seen: set = set()
        self.keep_null = keep_null

    def add(self, value: Any) -> None:
        if value is None:
            if not self.keep_null:
                return
            self.keep_null = False  # the first NULL goes in, the others are repeats
            self.inner.add(None)
            return
        if value in self.seen:
            return
        self.seen.add(value)
        self.inner.add(value)

    def result(self) -> Any:
        return self.inner.result()


class HashAggregate(Operator):
    """GROUP BY via a dict from key tuple to accumulators; scalar aggregate when no keys."""

    def __init__(self, child: Operator, keys: list[Callable[[tuple], Any]],
                 aggs: list[AggregateSpec], columns: list[Column], key_texts: list[object]) -> None:
        self.child = child
        self.keys = keys
        self.aggs = aggs
        self.columns = columns
        self.key_texts = key_texts

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        groups = self._accumulate(ctx)
        if not self.keys and not groups:
            groups[()] = [spec.factory() for spec in self.aggs]
        for key, accs in groups.items():
            yield key + tuple(acc.result() for acc in accs)

    def _accumulate(self, ctx: ExecContext) -> dict[tuple, list[Accumulator]]:
        keys = self.keys
        specs = self.aggs
        by_columns = column_groups(self.child, keys, specs, ctx)  # no row tuples at all
        if by_columns is not None:
            return by_columns
        groups: dict[tuple, list[Accumulator]] = {}
        args = [spec.arg for spec in specs]
        if not keys:
            accs = [spec.factory() for spec in specs]
            for batch in counted_batches(self.child, ctx):
                _feed(accs, args, batch)
                ctx.check_cancelled()
            return {(): accs}
        single = keys[0] if len(keys) == 1 else None
        for batch in counted_batches(self.child, ctx):
            if single is not None:
                batch_keys = list(zip(map(single, batch)))
            else:
                batch_keys = list(zip(*[map(k, batch) for k in keys]))
            for key, rows in split_by_key(batch_keys, batch).items():
                accs = groups.get(key)
                if accs is None:
                    accs = groups[key] = [spec.factory() for spec in specs]
                _feed(accs, args, rows)
            ctx.check_cancelled()
        return groups

    def describe(self) -> str:
        aggs = ", ".join(str(s.text) for s in self.aggs if s.func != "any_value")
        if self.keys:
            return f"group by {', '.join(map(str, self.key_texts))}" + (f" aggregate {aggs}" if aggs else "")
        return f"scalar aggregate {aggs}"


def _no_arg(row: tuple) -> None:
    return None


def _feed(accs: list[Accumulator], args: list, rows: list[tuple]) -> None:
    """One group's rows of a batch to its accumulators (an argument-less aggregate such as
    ``count(*)`` sees one NULL per row)."""
    for acc, arg in zip(accs, args):
        acc.add_batch([None] * len(rows) if arg is None else list(map(arg, rows)))
