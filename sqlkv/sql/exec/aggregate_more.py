"""More aggregates: bool_and/bool_or/every, bit_and/bit_or/bit_xor, concat_agg, ordered-set
aggregates (percentile_cont/percentile_disc/mode WITHIN GROUP), and the input wrappers for
``FILTER (WHERE ...)`` and ``agg(x ORDER BY y)``.

``SELECT string_agg(name, ',' ORDER BY age) FILTER (WHERE age > 20) FROM users``: the planner
compiles the argument, the ORDER BY keys and the FILTER predicate; `compose_input` makes one
closure per row returning ``SKIP`` when the filter is not TRUE, else ``(value, key1, ...)``;
`Filtered` drops SKIPs and `OrderedInputs` keeps the pairs, sorts them at the end (as ORDER BY
would) and feeds the values, in order, to the plain accumulator.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Iterator
from typing import Any

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.aggregate import Accumulator, HashAggregate, _no_arg
from sqlkv.sql.exec.jsonb_aggregates import FACTORIES as JSONB_FACTORIES
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.relational import SortKey, sort_rows, value_key

SKIP = object()  # a row the FILTER clause rejected


class BoolAgg(Accumulator):
    """bool_and / every (all TRUE) and bool_or (any TRUE); NULL with no non-NULL input."""

    __slots__ = ("value", "want_all")

    def __init__(self, want_all: bool) -> None:
        self.value: bool | None = None
        self.want_all = want_all

    def add(self, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, bool):
            raise DataError(f"{'bool_and' if self.want_all else 'bool_or'}() needs BOOL values, "
                            f"not {type(value).__name__}")
        if self.value is None:
            self.value = value
        elif self.want_all:
            self.value = self.value and value
        else:
            self.value = self.value or value

    def result(self) -> Any:
        return self.value


class BitAgg(Accumulator):
    """bit_and / bit_or / bit_xor over INT values; NULL with no non-NULL input."""

    __slots__ = ("value", "op", "name")

    def __init__(self, op: Callable[[int, int], int], name: str) -> None:
        self.value: int | None = None
        self.op = op
        self.name = name

    def add(self, value: Any) -> None:
        if value is None:
            return
        if type(value) is not int:
            raise DataError(f"{self.name}() needs INT values, not {type(value).__name__}")
        self.value = value if self.value is None else self.op(self.value, value)

    def result(self) -> Any:
        return self.value


class ConcatAgg(Accumulator):
    """concat_agg (CockroachDB): TEXT or BYTES values joined with no separator."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list = []

    def add(self, value: Any) -> None:
        if value is None:
            return
        if self.parts and type(value) is not type(self.parts[0]):
            raise DataError("concat_agg() cannot mix TEXT and BYTES values")
        if not isinstance(value, (str, bytes)):
            raise DataError(f"concat_agg() needs TEXT or BYTES values, not {type(value).__name__}")
        self.parts.append(value)

    def result(self) -> Any:
        if not self.parts:
            return None
        return (b"" if isinstance(self.parts[0], bytes) else "").join(self.parts)


class Collect(Accumulator):
    """The sorted non-NULL inputs of an ordered-set aggregate (WITHIN GROUP fed them in order)."""

    __slots__ = ("values", "finish")

    def __init__(self, finish: Callable[[list], Any]) -> None:
        self.values: list = []
        self.finish = finish

    def add(self, value: Any) -> None:
        if value is not None:
            self.values.append(value)

    def result(self) -> Any:
        return self.finish(self.values) if self.values else None


def _fraction(f: Any) -> float:
    if f is None or isinstance(f, bool) or not isinstance(f, (int, float, decimal.Decimal)):
        raise DataError("percentile fraction must be a number between 0 and 1")
    if not 0 <= f <= 1:
        raise DataError(f"percentile value {f} is not between 0 and 1")
    return float(f)


def percentile_disc(fraction: Any) -> Callable[[list], Any]:
    """The first value whose position in the sorted inputs reaches the fraction (PostgreSQL)."""
    f = _fraction(fraction)

    def finish(values: list) -> Any:
        k = max(math.ceil(f * len(values)) - 1, 0)
        return values[k]

    return finish


def percentile_cont(fraction: Any) -> Callable[[list], Any]:
    """Linear interpolation between the two nearest sorted inputs, as a FLOAT (PostgreSQL)."""
    f = _fraction(fraction)

    def finish(values: list) -> Any:
        for v in (values[0], values[-1]):
            if isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)):
                raise DataError(f"percentile_cont() needs numbers, not {type(v).__name__}")
        pos = f * (len(values) - 1)
        lo = math.floor(pos)
        hi = math.ceil(pos)
        a, b = float(values[lo]), float(values[hi])
        return a + (b - a) * (pos - lo)

    return finish


def mode_of(values: list) -> Any:
    """The most frequent input; among equally frequent ones the first in sort order."""
    best, best_n, run_v, run_n = None, 0, None, 0
    for v in values:
        if run_n and value_key(v) == value_key(run_v):
            run_n += 1
        else:
            run_v, run_n = v, 1
        if run_n > best_n:
            best, best_n = run_v, run_n
    return best


class Filtered(Accumulator):
    """Drops the rows FILTER (WHERE ...) rejected before the wrapped accumulator sees them."""

    __slots__ = ("inner",)

    def __init__(self, inner: Accumulator) -> None:
        self.inner = inner

    def add(self, value: Any) -> None:
        if value is not SKIP:
            self.inner.add(value)

    def result(self) -> Any:
        return self.inner.result()


class OrderedInputs(Accumulator):
    """``agg(x ORDER BY k)``: keeps (x, k...) and feeds x to the accumulator in k's order."""

    __slots__ = ("inner", "keys", "rows", "distinct", "keep_null")

    def __init__(self, inner: Accumulator, keys: list[SortKey], distinct: bool, keep_null: bool = False) -> None:
        self.inner = inner
        self.keys = keys
        self.rows: list[tuple] = []
        self.distinct = distinct
        self.keep_null = keep_null  # DISTINCT keeps one NULL (aggregates that collect NULLs)

    def add(self, value: Any) -> None:
        if value is not SKIP:
            self.rows.append(value)

    def result(self) -> Any:
        seen: set = set()
        null_wanted = self.keep_null
        for row in sort_rows(self.rows, self.keys):
            v = row[0]
            if self.distinct:
                if v is None:
                    if not null_wanted:
                        continue
                    null_wanted = False
                elif v in seen:
                    continue
                else:
                    seen.add(v)
            self.inner.add(v)
        self.rows = []
        return self.inner.result()


def compose_input(arg: Callable[[tuple], Any] | None, order: list[Callable[[tuple], Any]],
                  pred: Callable[[tuple], bool] | None) -> Callable[[tuple], Any]:
    """One closure per row for an aggregate with ORDER BY keys and/or a FILTER predicate."""
    value = arg if arg is not None else (lambda r: 1)
    if order:
        keys = order
        base = value
        value = lambda r: (base(r), *[k(r) for k in keys])  # noqa: E731
    if pred is None:
        return value
    inner = value
    return lambda r: inner(r) if pred(r) else SKIP


def _bit_and(a: int, b: int) -> int:
    return a & b


def _bit_or(a: int, b: int) -> int:
    return a | b


def _bit_xor(a: int, b: int) -> int:
    return a ^ b


class Constant(Accumulator):
    """grouping() outside grouping sets: every key is grouped, so 0."""

    __slots__ = ()

    def add(self, value: Any) -> None:
        pass

    def result(self) -> Any:
        return 0


MORE_AGGREGATES: dict[str, Callable[[], Accumulator]] = {
    "grouping": Constant,
    "bool_and": lambda: BoolAgg(True),
    "every": lambda: BoolAgg(True),
    "bool_or": lambda: BoolAgg(False),
    "bit_and": lambda: BitAgg(_bit_and, "bit_and"),
    "bit_or": lambda: BitAgg(_bit_or, "bit_or"),
    "bit_xor": lambda: BitAgg(_bit_xor, "bit_xor"),
    "concat_agg": ConcatAgg,
    "mode": lambda: Collect(mode_of),
    **JSONB_FACTORIES,  # issue 15: jsonb_agg, jsonb_object_agg (jsonb_aggregates.py)
}
ORDERED_SET = {"percentile_cont": percentile_cont, "percentile_disc": percentile_disc, "mode": None}
NO_TYPE_YET: dict[str, str] = {}  # aggregates whose result type sqlkv lacks (none now)


def refuse_untyped(name: str) -> None:
    kind = NO_TYPE_YET.get(name)
    if kind is not None:
        raise NotSupportedError(f"{name}() returns {kind}, and sqlkv has no {kind} type yet")


def check_percentile_args(name: str, n_args: int) -> None:
    want = 0 if name == "mode" else 1
    if n_args != want:
        raise ProgrammingError(f"{name}() takes {want} argument{'s' if want != 1 else ''} "
                               "before WITHIN GROUP (ORDER BY ...)")


class GroupingSetsAggregate(HashAggregate):
    """GROUP BY ROLLUP/CUBE/GROUPING SETS: each input row feeds one group per grouping set; the
    keys outside a set are NULL in its groups. A set with no keys yields its row even when the
    input is empty (like a scalar aggregate)."""

    def __init__(self, child: Operator, keys: list, aggs: list, columns: list, key_texts: list,
                 sets: list[tuple[int, ...]]) -> None:
        super().__init__(child, keys, aggs, columns, key_texts)
        n = len(keys)
        self.masks = [tuple(i in s for i in range(n)) for s in sets]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        keys, specs, masks = self.keys, self.aggs, self.masks
        args = [(spec.arg if spec.arg is not None else _no_arg) for spec in specs]
        groups: dict[tuple, list[Accumulator]] = {}
        n = 0
        for row in counted(self.child, ctx):
            full = [k(row) for k in keys]
            for set_id, mask in enumerate(masks):
                key = tuple(v if m else None for v, m in zip(full, mask)) + (set_id,)
                accs = groups.get(key)
                if accs is None:
                    accs = groups[key] = [spec.factory() for spec in specs]
                for acc, arg in zip(accs, args):
                    acc.add(arg(row))
            n += 1
            if not n & 4095:
                ctx.check_cancelled()
        for set_id, mask in enumerate(masks):
            empty_key = (None,) * len(keys) + (set_id,)
            if not any(mask) and empty_key not in groups:
                groups[empty_key] = [spec.factory() for spec in specs]
        bits = [self._grouping_bits(spec) for spec in specs]
        for key, accs in groups.items():
            set_bits = [b[key[-1]] if b is not None else None for b in bits]
            yield key[:-1] + tuple(acc.result() if sb is None else sb for acc, sb in zip(accs, set_bits))

    def _grouping_bits(self, spec: Any) -> list[int] | None:
        """grouping(a, b) per set: bit i (from the left) is 1 when argument i is not grouped."""
        if spec.func != "grouping":
            return None
        out = []
        for mask in self.masks:
            v = 0
            for pos in spec.grouping:
                v = (v << 1) | (0 if mask[pos] else 1)
            out.append(v)
        return out

    def describe(self) -> str:
        return f"group by grouping sets ({len(self.masks)}) of {', '.join(map(str, self.key_texts))}"
