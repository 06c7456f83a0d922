"""Operands and logic: type unification, comparison, IS DISTINCT FROM, three-valued AND/OR/NOT.

``d < '2024-02-01' AND qty > ?`` arrives here as compiled operands. `unify` gives the operands
of ``<`` a common type: the untyped literal is cast to DATE once, at compile time. `comparison`
then returns ``lambda r: None if (a := r[i]) is None else a < c`` (column against constant: the
row is read inline). The parameter's type is unknown until run time, so ``qty > ?`` wraps it
with `coerce_fn`, which checks each value against INT and raises the same ProgrammingError a
static mismatch would. `logic_and` combines the two with SQL's three-valued AND.
"""

from __future__ import annotations

import datetime as dt
import operator
import uuid
from collections.abc import Callable
from decimal import Decimal

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.casts import cast
from sqlkv.sql.expr.batch_filters import with_column_const_batch
from sqlkv.sql.expr.dates import Interval
from sqlkv.sql.expr.env import Compiled, RowFn
from sqlkv.sql.types import BOOL, DECIMAL, NULLTYPE, SqlType, common_type, float_as_decimal, type_name

from sqlkv.sql.types import INTERVAL  # noqa: E402  (INTERVAL literals, timestamp differences, columns)

# Value categories: values of one category compare with each other.
_CATEGORY = {
    int: "INT", float: "FLOAT", Decimal: "DECIMAL", bool: "BOOL", str: "TEXT", bytes: "BYTES",
    dt.date: "DATE", dt.datetime: "TIMESTAMP", Interval: "INTERVAL", dt.time: "TIME", uuid.UUID: "UUID",
    SqlArray: "ARRAY",
    Jsonb: "JSONB",
}
NUMERIC_KINDS = frozenset({"INT", "FLOAT", "DECIMAL"})
_NUMERIC = NUMERIC_KINDS


def kind_of(v: object) -> str:
    k = _CATEGORY.get(type(v))
    if k is None:
        raise DataError(f"unsupported value {v!r}")
    return k


def compatible(a: str, b: str) -> bool:
    return a == b or (a in _NUMERIC and b in _NUMERIC) or {a, b} == {"DATE", "TIMESTAMP"}


def operator_error(op: str, a: str, b: str | None = None) -> ProgrammingError:
    if b is None:
        return ProgrammingError(f"operator does not exist: {op} {a}")
    return ProgrammingError(f"operator does not exist: {a} {op} {b}")


# ---------------------------------------------------------------- coercion


def to_timestamp(v: object) -> object:
    if type(v) is dt.date:
        return dt.datetime(v.year, v.month, v.day)
    return v


def coerce_fn(fn: RowFn, target: SqlType, op: str) -> RowFn:
    """Wrap an operand of unknown type: check each value fits ``target`` (text parses as dates)."""
    tk = target.kind

    def coerced(r: tuple) -> object:
        v = fn(r)
        if v is None:
            return v
        k = _CATEGORY.get(type(v))
        if k == "FLOAT" and tk == "DECIMAL":
            return float_as_decimal(v)
        if k == tk or (k in _NUMERIC and tk in _NUMERIC):
            return v
        if tk == "TIMESTAMP" and k == "DATE":
            return to_timestamp(v)
        if k == "TEXT" and tk in ("DATE", "TIMESTAMP", "TIME", "UUID", "INTERVAL", "JSONB"):
            return cast(v, target)
        if tk == "DATE" and k == "TIMESTAMP":
            return v
        raise operator_error(op, k or type(v).__name__, tk)

    return coerced


def unify(parts: list[Compiled], op: str, for_compare: bool = True) -> tuple[list[RowFn], SqlType]:
    """Operand closures whose values are mutually comparable, and their common type.

    Untyped string literals are cast to the common type now; operands of unknown type are
    checked per row; DATE operands are promoted when mixed with TIMESTAMP. With
    ``for_compare`` False the values are also converted to the common numeric type (results
    of CASE/COALESCE must have one type).
    """
    typed = [p.type for p in parts if p.type.known and not p.untyped_text]
    target = NULLTYPE
    for t in typed:
        common = common_type(target, t)
        if common is None:
            raise operator_error(op, target.sql(), t.sql())
        target = common
    if not target.known and any(p.untyped_text for p in parts):
        target = SqlType("TEXT")
    if for_compare and target.kind == "FLOAT" and any(p.type.kind == "DECIMAL" for p in parts):
        target = DECIMAL  # FLOAT operands compare as decimals (float_as_decimal)
    fns = []
    for p in parts:
        fns.append(_convert(p, target, op, for_compare))
    return fns, target


def _convert(p: Compiled, target: SqlType, op: str, for_compare: bool) -> RowFn:
    if not target.known:
        return p.fn
    if p.untyped_text and target.kind != "TEXT":
        value = cast(p.value, target)
        return lambda r: value
    src = p.type.kind
    if src == "NULL":
        if p.const:  # the NULL literal
            return p.fn
        return coerce_fn(p.fn, target, op)
    if src == "DATE" and target.kind == "TIMESTAMP":
        fn = p.fn
        return lambda r: to_timestamp(fn(r))
    if src == "FLOAT" and target.kind == "DECIMAL":
        fn = p.fn
        if p.const:
            value = None if p.value is None else float_as_decimal(p.value)
            return lambda r: value
        return lambda r: None if (v := fn(r)) is None else float_as_decimal(v)
    if for_compare or src == target.kind:
        return p.fn
    fn = p.fn
    if target.kind == "FLOAT":
        return lambda r: None if (v := fn(r)) is None else float(v)
    if target.kind == "DECIMAL":
        return lambda r: None if (v := fn(r)) is None else Decimal(v)
    return fn


# ---------------------------------------------------------------- comparison

COMPARE_OPS: dict[str, Callable[[object, object], bool]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def generic_compare(op: str, a: object, b: object) -> bool:
    """Compare values whose types were unknown at compile time (checked here)."""
    ka, kb = kind_of(a), kind_of(b)
    if {ka, kb} == {"FLOAT", "DECIMAL"}:
        a, b = (float_as_decimal(a), b) if ka == "FLOAT" else (a, float_as_decimal(b))
    elif ka != kb:
        if not compatible(ka, kb):
            if ka == "TEXT" and kb in ("DATE", "TIMESTAMP"):
                a = cast(a, SqlType(kb))
            elif kb == "TEXT" and ka in ("DATE", "TIMESTAMP"):
                b = cast(b, SqlType(ka))
            else:
                raise operator_error(op, ka, kb)
        a, b = to_timestamp(a), to_timestamp(b)
    return COMPARE_OPS[op](a, b)


# Column-versus-constant comparisons, the most common filter shape, read the row inline.
_COLUMN_CONST_EXPR: dict[str, Callable[[int, object], RowFn]] = {
    "=": lambda i, c: lambda r: None if (a := r[i]) is None else a == c,
    "<>": lambda i, c: lambda r: None if (a := r[i]) is None else a != c,
    "<": lambda i, c: lambda r: None if (a := r[i]) is None else a < c,
    "<=": lambda i, c: lambda r: None if (a := r[i]) is None else a <= c,
    ">": lambda i, c: lambda r: None if (a := r[i]) is None else a > c,
    ">=": lambda i, c: lambda r: None if (a := r[i]) is None else a >= c,
}
_COLUMN_CONST_PRED: dict[str, Callable[[int, object], RowFn]] = {
    "=": lambda i, c: lambda r: (a := r[i]) is not None and a == c,
    "<>": lambda i, c: lambda r: (a := r[i]) is not None and a != c,
    "<": lambda i, c: lambda r: (a := r[i]) is not None and a < c,
    "<=": lambda i, c: lambda r: (a := r[i]) is not None and a <= c,
    ">": lambda i, c: lambda r: (a := r[i]) is not None and a > c,
    ">=": lambda i, c: lambda r: (a := r[i]) is not None and a >= c,
}


def _plain_column(p: Compiled, fn: RowFn) -> int | None:
    """The row index when the (unified) operand is still the plain column read."""
    return p.column if p.column is not None and fn is p.fn else None


Unified = tuple[list[RowFn], SqlType]


def comparison(op: str, left: Compiled, right: Compiled, unified: Unified | None = None) -> RowFn:
    """``left op right`` with SQL NULL semantics (``unified``: `unify`'s result, if already known)."""
    (fa, fb), target = unified or unify([left, right], op)
    if not target.known and not left.const and not right.const:
        def compare_checked(r: tuple) -> object:
            a = fa(r)
            if a is None:
                return None
            b = fb(r)
            if b is None:
                return None
            return generic_compare(op, a, b)

        return compare_checked
    cmp = COMPARE_OPS[op]
    if right.const:
        c = fb(())
        if c is None:
            return lambda r: None
        i = _plain_column(left, fa)
        if i is not None:
            return _COLUMN_CONST_EXPR[op](i, c)
        return lambda r: None if (a := fa(r)) is None else cmp(a, c)

    return null_propagating(fa, fb, cmp)


def comparison_predicate(op: str, left: Compiled, right: Compiled, unified: Unified | None = None) -> RowFn:
    """Like `comparison` but returns False where the SQL value is NULL (WHERE/ON/HAVING)."""
    unified = unified or unify([left, right], op)
    (fa, fb), target = unified
    if not target.known:
        fn = comparison(op, left, right, unified)
        return lambda r: fn(r) is True
    cmp = COMPARE_OPS[op]
    if right.const:
        c = fb(())
        if c is None:
            return lambda r: False
        i = _plain_column(left, fa)
        if i is not None:
            return with_column_const_batch(_COLUMN_CONST_PRED[op](i, c), op, i, c)
        return lambda r: (a := fa(r)) is not None and cmp(a, c)
    return lambda r: (a := fa(r)) is not None and (b := fb(r)) is not None and cmp(a, b)


def distinct_from(left: Compiled, right: Compiled, negate: bool) -> RowFn:
    """IS [NOT] DISTINCT FROM: NULL-safe, never NULL."""
    (fa, fb), target = unify([left, right], "IS DISTINCT FROM")
    checked = not target.known

    def is_distinct(r: tuple) -> bool:
        a = fa(r)
        b = fb(r)
        if a is None or b is None:
            return (a is None) != (b is None)
        return not generic_compare("=", a, b) if checked else a != b

    if negate:
        return lambda r: not is_distinct(r)
    return is_distinct


# ---------------------------------------------------------------- three-valued logic


def bool_operand(p: Compiled, what: str) -> RowFn:
    """The closure of a boolean operand; non-boolean types are rejected (statically or per row)."""
    if p.type.kind == "BOOL":
        return p.fn
    if p.type.known and not (p.untyped_text and p.const):
        raise ProgrammingError(f"argument of {what} must be type BOOL, not type {p.type.sql()}")
    if p.untyped_text:
        value = cast(p.value, BOOL)
        return lambda r: value
    fn = p.fn

    def checked(r: tuple) -> object:
        v = fn(r)
        if v is None or v is True or v is False:
            return v
        raise ProgrammingError(f"argument of {what} must be type BOOL, not type {type_name(v)}")

    return checked


def logic_and(fns: list[RowFn]) -> RowFn:
    if len(fns) == 2:
        fa, fb = fns

        def and2(r: tuple) -> object:
            a = fa(r)
            if a is False:
                return False
            b = fb(r)
            if b is False:
                return False
            if a is None or b is None:
                return None
            return True

        return and2

    def and_n(r: tuple) -> object:
        saw_null = False
        for f in fns:
            v = f(r)
            if v is False:
                return False
            if v is None:
                saw_null = True
        return None if saw_null else True

    return and_n


def logic_or(fns: list[RowFn]) -> RowFn:
    if len(fns) == 2:
        fa, fb = fns

        def or2(r: tuple) -> object:
            a = fa(r)
            if a is True:
                return True
            b = fb(r)
            if b is True:
                return True
            if a is None or b is None:
                return None
            return False

        return or2

    def or_n(r: tuple) -> object:
        saw_null = False
        for f in fns:
            v = f(r)
            if v is True:
                return True
            if v is None:
                saw_null = True
        return None if saw_null else False

    return or_n


def logic_not(fn: RowFn) -> RowFn:
    return lambda r: None if (v := fn(r)) is None else not v


def null_propagating(fa: RowFn, fb: RowFn, op: Callable[[object, object], object]) -> RowFn:
    """``op(fa(r), fb(r))``, or NULL as soon as either side is NULL (``fb`` not evaluated then)."""
    def apply(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        b = fb(r)
        if b is None:
            return None
        return op(a, b)

    return apply
