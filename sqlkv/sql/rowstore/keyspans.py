"""Key spans from filter conjuncts: which part of an index a WHERE clause can be answered from.

For ``SELECT * FROM orders WHERE customer = ? AND day BETWEEN '2024-01-01' AND '2024-01-31'``
with an index ``orders_customer_day (customer, day)`` the planner (`sqlkv.sql.plan.access`)
extracts one `ColumnBounds` per index column -- an equality on ``customer``, a range on
``day`` -- and builds a `SpanBuilder`. The values are only known at execution time (parameters,
``now()``), so the builder keeps the compiled constant expressions and, in `SpanBuilder.spans`,
evaluates them, coerces them to the column types and encodes the spans:

    start = /Table/105/2/<customer>/2024-01-01     end = PrefixEnd(/Table/105/2/<customer>/2024-01-31)

IN lists multiply into several spans (sorted, deduplicated); an equality on NULL or an empty
range gives no span at all. When a value cannot be coerced to the column type exactly, the
builder widens to the whole constrained prefix and says so (``exact=False``); the scan then
re-checks the filters it was meant to enforce, so spans never change query results.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import product
from typing import Any

from sqlglot import exp

from sqlkv.encoding.keys import encode_key
from sqlkv.errors import DataError
from sqlkv.sql.casts import cast
from sqlkv.sql.context import ExecContext
from sqlkv.encoding.arrays import SqlArray
from sqlkv.sql.types import INT_MAX, INT_MIN, SqlType, float_as_decimal
from sqlkv.storage.kv import prefix_end

MAX_SPANS = 4096
ConstFn = Callable[[tuple], Any]

_NOT_NULL_ASC = b"\x01"  # start of the non-NULL ascending values (markers >= 0x02)
_NULL_DESC = b"\xff"  # NULL in a descending column sorts last


class _Empty(Exception):
    """The constraint can match no row (NULL comparison, 1.5 for an INT column...)."""


class _Inexact(Exception):
    """The value cannot be placed in the column's key order: widen the span."""


@dataclass
class Span:
    start: bytes
    end: bytes | None
    point: bool = False  # start is a whole key prefix of at most one row


@dataclass
class ColumnBounds:
    """Constraints on one index column gathered from the filters."""

    eq: list[tuple[exp.Expression, ConstFn]] | None = None  # one value, or an IN list
    is_in: bool = False
    is_null: bool = False
    lo: tuple[exp.Expression, ConstFn, bool] | None = None  # (node, fn, inclusive)
    hi: tuple[exp.Expression, ConstFn, bool] | None = None
    not_null: bool = False
    like_prefix: str | None = None
    used: list[exp.Expression] = field(default_factory=list)  # filters these came from

    @property
    def is_equality(self) -> bool:
        return self.eq is not None or self.is_null

    @property
    def is_range(self) -> bool:
        return self.lo is not None or self.hi is not None or self.not_null or self.like_prefix is not None


def coerce_key_value(v: Any, typ: SqlType, bound: str) -> Any:
    """``v`` as a value of the column's type for a key; bound is 'eq', 'lo' or 'hi'.

    Returns the value; for lo/hi an inexact integral bound returns ``(value, True)`` as a
    tuple marker meaning "now inclusive". Raises _Empty/_Inexact.
    """
    if v is None:
        raise _Empty
    kind = typ.kind
    if kind == "INT":
        if isinstance(v, bool):
            raise _Inexact
        if isinstance(v, int):
            return v
        if isinstance(v, (float, Decimal)):
            if v != v:
                raise _Empty
            if isinstance(v, float) and math.isinf(v) or isinstance(v, Decimal) and v.is_infinite():
                raise _Inexact
            # Clamp before int(): int(Decimal('1E+999999')) builds a million-digit integer.
            if v > INT_MAX:
                if bound == "hi":
                    return _Rounded(INT_MAX)
                raise _Empty
            if v < INT_MIN:
                if bound == "lo":
                    return _Rounded(INT_MIN)
                raise _Empty
            if v == int(v):
                return int(v)
            if bound == "eq":
                raise _Empty
            return _Rounded(math.ceil(v) if bound == "lo" else math.floor(v))
        raise _Inexact
    if kind == "FLOAT":
        if isinstance(v, float):
            return v
        if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return float(v)
        raise _Inexact
    if kind == "DECIMAL":
        if isinstance(v, Decimal):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return Decimal(v)
        if isinstance(v, float) and math.isfinite(v):
            return float_as_decimal(v)  # as the comparison does: 2.3 is Decimal('2.3')
        raise _Inexact
    if kind == "TEXT":
        if isinstance(v, str):
            return v
        raise _Inexact
    if kind in ("DATE", "TIMESTAMP"):
        if isinstance(v, str):
            try:
                return cast(v, typ)
            except DataError:
                raise _Inexact from None

        if kind == "DATE" and isinstance(v, dt.date) and not isinstance(v, dt.datetime):
            return v
        if kind == "TIMESTAMP" and isinstance(v, dt.datetime):
            return v
        raise _Inexact
    if kind in ("TIME", "UUID", "INTERVAL"):
        if isinstance(v, str):
            try:
                return cast(v, typ)
            except DataError:
                raise _Inexact from None
        if kind == "TIME" and isinstance(v, dt.time) or kind == "UUID" and isinstance(v, uuid.UUID):
            return v
        if kind == "INTERVAL" and type(v).__name__ == "Interval":
            return v
        raise _Inexact
    if kind == "BOOL":
        if isinstance(v, bool):
            return v
        raise _Inexact
    if kind == "BYTES":
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        raise _Inexact
    if kind == "ARRAY":
        return _array_key_value(v, typ, bound)
    if kind == "JSONB":  # issue 15: JSONB keys (sqlkv/encoding/jsonb_keys.py)
        if isinstance(v, str):
            try:
                return cast(v, typ)
            except DataError:
                raise _Inexact from None
        if type(v).__name__ == "Jsonb":
            return v
        raise _Inexact
    raise _Inexact


def _array_key_value(v: Any, typ: SqlType, bound: str) -> SqlArray:
    """An ARRAY bound whose every element is exactly a value of the column's element type."""
    if isinstance(v, str):
        try:
            v = cast(v, typ)
        except DataError:
            raise _Inexact from None
    elem = typ.element
    if not isinstance(v, SqlArray) or elem is None or not elem.known:
        raise _Inexact
    out = []
    for item in v:
        try:
            out.append(None if item is None else coerce_key_value(item, elem, "eq"))
        except _Empty:
            if bound == "eq":
                raise
            raise _Inexact from None
    return SqlArray(out)


@dataclass
class _Rounded:
    """A range bound moved to the nearest integer inside the range (it becomes inclusive)."""

    value: int


@dataclass
class SpanBuilder:
    """Computes an index's spans for one execution from the constrained leading columns."""

    prefix: bytes
    types: list[SqlType]  # types of the constrained columns, in index order
    desc: list[bool]
    bounds: list[ColumnBounds]  # equality columns, then at most one range column
    point_width: int = -1  # number of leading columns whose equality pins at most one row

    def __post_init__(self) -> None:
        b = self.bounds
        self._single_point = (
            len(b) == 1 and self.point_width == 1 and b[0].eq is not None and len(b[0].eq) == 1
        )
        # ``a = x [AND b = y]`` (one value per column): one prefix span -- a point when it pins
        # a whole unique key -- without the product/dedupe/sort of the general case
        self._one_prefix = bool(b) and not self._single_point and all(
            x.eq is not None and len(x.eq) == 1 and not x.is_null for x in b
        )
        self._one_prefix_point = self.point_width == len(b)

    @property
    def n_eq(self) -> int:
        return sum(1 for b in self.bounds if b.is_equality)

    def spans(self, ctx: ExecContext) -> tuple[list[Span], bool]:
        """(sorted spans, exact). ``exact=False``: the caller must re-check the filters."""
        try:
            return self._spans(), True
        except _Empty:
            return [], True
        except _Inexact:
            return [Span(self.prefix, prefix_end(self.prefix))], False

    def _spans(self) -> list[Span]:
        if self._single_point:
            # fast path: ``pk = value`` on a one-column unique key
            node_fn = self.bounds[0].eq[0]  # type: ignore[index]
            value = coerce_key_value(node_fn[1](()), self.types[0], "eq")
            base = encode_key([value], self.desc, self.prefix)
            return [Span(base, prefix_end(base), True)]
        if self._one_prefix:
            values = [coerce_key_value(b.eq[0][1](()), t, "eq") for b, t in zip(self.bounds, self.types)]  # type: ignore[index]
            base = encode_key(values, self.desc, self.prefix)
            return [Span(base, prefix_end(base), self._one_prefix_point)]
        eq_bounds = [b for b in self.bounds if b.is_equality]
        choices: list[list[Any]] = []
        for i, b in enumerate(eq_bounds):
            if b.is_null:
                choices.append([None])
                continue
            vals = []
            for _node, fn in b.eq or []:
                try:
                    vals.append(coerce_key_value(fn(()), self.types[i], "eq"))
                except _Empty:
                    continue
            if not vals:
                raise _Empty
            choices.append(_dedupe(vals))
        combos = list(product(*choices)) if choices else [()]
        if len(combos) > MAX_SPANS:
            raise _Inexact
        neq = len(eq_bounds)
        rng = self.bounds[neq] if len(self.bounds) > neq else None
        point = rng is None and self.point_width == neq and not any(b.is_null for b in eq_bounds)
        spans = []
        for combo in combos:
            base = encode_key(list(combo), self.desc[:neq], self.prefix)
            if rng is None:
                spans.append(Span(base, prefix_end(base), point))
            else:
                span = self._range_span(base, rng, self.types[neq], self.desc[neq])
                if span is not None:
                    spans.append(span)
        spans.sort(key=lambda s: s.start)
        return spans

    def _range_span(self, base: bytes, b: ColumnBounds, typ: SqlType, desc: bool) -> Span | None:
        if b.like_prefix is not None:
            enc = encode_key([b.like_prefix], None, base)[:-2]  # drop the 0x00 0x01 terminator
            return Span(enc, prefix_end(enc))
        lo = self._bound(b.lo, typ, "lo")
        hi = self._bound(b.hi, typ, "hi")
        # key-order bounds: a descending column swaps SQL's lower and upper bounds
        low_sql, high_sql = (hi, lo) if desc else (lo, hi)
        if low_sql is None:
            start = base if desc else base + _NOT_NULL_ASC
        else:
            val, incl = low_sql
            key = encode_key([val], [desc], base)
            start = key if incl else _after(key)
        if high_sql is None:
            end = base + _NULL_DESC if desc else prefix_end(base)
        else:
            val, incl = high_sql
            key = encode_key([val], [desc], base)
            end = _after(key) if incl else key
        if end is not None and end <= start:
            return None
        return Span(start, end)

    def _bound(self, bound, typ: SqlType, which: str) -> tuple[Any, bool] | None:
        """(value, inclusive) in SQL terms, or None for unbounded."""
        if bound is None:
            return None
        _node, fn, incl = bound
        v = coerce_key_value(fn(()), typ, which)
        if isinstance(v, _Rounded):
            return v.value, True
        return v, incl


def _after(key: bytes) -> bytes | None:
    """The first key after every key starting with ``key`` (the encodings are prefix-free)."""
    return prefix_end(key)


def _dedupe(vals: list[Any]) -> list[Any]:
    """``vals`` without repeats (first kept), in linear time: an IN list may have 10,000s."""
    seen: dict[tuple[type, Any], None] = {}
    for v in vals:
        seen.setdefault((type(v), v), None)  # the type too: 1 and 1.0 and True are equal
    return [v for _t, v in seen]
