"""`AggregateSpec`: one aggregate call of a query, and the accumulator factory it makes.

``string_agg(name, ',' ORDER BY age) FILTER (WHERE age > 20)`` is planned (plan/aggregates.py)
into ``AggregateSpec("string_agg", arg=<name>, separator=",", order=[<age>], filter=<age > 20>)``;
its ``factory`` makes a fresh accumulator per group: the plain one from aggregate.py
(`GroupConcat`) wrapped by aggregate_more.py's `OrderedInputs` and `Filtered`. It sits in a
module of its own because it builds on both: aggregate_more.py's accumulators extend
aggregate.py's, so neither of those two can import the other's users.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlkv.errors import ProgrammingError
from sqlkv.sql.exec import aggregate_more as more
from sqlkv.sql.exec.aggregate import (
    Accumulator,
    AnyValue,
    Avg,
    Count,
    CountStar,
    DistinctInputs,
    Extreme,
    GroupConcat,
    Sum,
    Total,
)
from sqlkv.sql.exec.aggregate_arrays import ArrayAgg
from sqlkv.sql.exec.relational import SortKey

# aggregates whose result lists NULL inputs: under DISTINCT, NULL is kept once (PostgreSQL)
COLLECTS_NULLS = frozenset({"array_agg", "jsonb_agg", "json_agg"})


@dataclass
class AggregateSpec:
    """One aggregate call: function name, compiled argument (None for ``count(*)``), DISTINCT."""

    func: str
    arg: Callable[[tuple], Any] | None
    distinct: bool = False
    separator: str = ","
    text: object = ""  # str() gives the call's SQL
    filter: Callable[[tuple], bool] | None = None  # FILTER (WHERE ...): True only for SQL TRUE
    order: list = field(default_factory=list)  # (key fn, desc, nulls_first): agg(x ORDER BY k)
    fraction: Callable[[tuple], Any] | None = None  # percentile_cont(f): a constant, per execution
    grouping: list[int] = field(default_factory=list)  # grouping(a, b): key positions (0 without sets)
    factory: Callable[[], Accumulator] = field(init=False)

    def __post_init__(self) -> None:
        self.factory = self._factory()
        if self.filter is not None or self.order:
            # one closure per row: SKIP for rows the filter rejects, (value, keys...) when ordered
            self.arg = more.compose_input(self.arg, [k for k, _, _ in self.order], self.filter)

    def _factory(self) -> Callable[[], Accumulator]:
        f = self.func
        base: Callable[[], Accumulator]
        if f == "count":
            base = CountStar if self.arg is None else Count
        elif f == "sum":
            base = Sum
        elif f == "total":
            base = Total
        elif f == "avg":
            base = Avg
        elif f in ("min", "max"):
            want_max = f == "max"
            base = lambda: Extreme(want_max)  # noqa: E731
        elif f in ("group_concat", "string_agg"):
            sep = self.separator
            base = lambda: GroupConcat(sep)  # noqa: E731
        elif f == "any_value":
            base = AnyValue
        elif f == "array_agg":  # DISTINCT keeps one NULL: the accumulator does it (aggregate_arrays.py)
            distinct = self.distinct and not self.order
            base = lambda: ArrayAgg(distinct)  # noqa: E731
        else:
            base = self._more_factory()
        return self._wrapped(base)

    def _more_factory(self) -> Callable[[], Accumulator]:
        f = self.func
        if f in ("percentile_cont", "percentile_disc"):
            finisher = more.percentile_cont if f == "percentile_cont" else more.percentile_disc
            fraction = self.fraction if self.fraction is not None else (lambda r: None)
            return lambda: more.Collect(finisher(fraction(())))
        factory = more.MORE_AGGREGATES.get(f)
        if factory is None:
            raise ProgrammingError(f"unknown aggregate function {f}()")
        return factory

    def _wrapped(self, base: Callable[[], Accumulator]) -> Callable[[], Accumulator]:
        """DISTINCT, ORDER BY and FILTER around the plain accumulator."""
        make = base
        if self.order:
            keys = [SortKey(i + 1, desc, nf) for i, (_, desc, nf) in enumerate(self.order)]
            distinct = self.distinct
            keep_null = self.func in COLLECTS_NULLS
            make = lambda: more.OrderedInputs(base(), keys, distinct, keep_null)  # noqa: E731
        elif self.distinct and self.arg is not None and self.func != "array_agg":
            keep_null = self.func in COLLECTS_NULLS
            make = lambda: DistinctInputs(base(), keep_null)  # noqa: E731
        if self.filter is not None:
            ordered = make
            return lambda: more.Filtered(ordered())
        return make
