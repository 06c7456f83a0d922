"""Operators: arithmetic, comparison and three-valued logic, built as closures over operand closures.

``a + b * 2 > 10`` arrives here bottom-up: `arith` builds ``b * 2`` from the closure reading
``b`` and the constant 2 (both INT, so the INT fast path: NULL check, multiply, range check),
then ``a + ...``; `comparison` unifies the operand types (INT with INT: nothing to convert) and
returns ``lambda r: None if NULL else a > 10``. When an operand's type is unknown at compile time
(a parameter, a column of an untyped derived table) the closure checks the value's type per row
via `coerce_fn`, raising the same ProgrammingError the compile-time check would.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections.abc import Callable
from decimal import Decimal, DivisionByZero, InvalidOperation

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.expr.dates import Interval, add_interval
from sqlkv.sql.expr.env import Compiled, RowFn
from sqlkv.sql.types import (
    BOOL,
    DATE,
    DECIMAL,
    FLOAT,
    INT,
    INT_MAX,
    INT_MIN,
    NULLTYPE,
    TIMESTAMP,
    SqlType,
    cast,
    common_type,
    type_name,
)

INTERVAL = SqlType("INTERVAL")  # expression-only type of INTERVAL literals and timestamp differences

# Value categories: values of one category compare with each other.
_CATEGORY = {
    int: "INT", float: "FLOAT", Decimal: "DECIMAL", bool: "BOOL", str: "TEXT", bytes: "BYTES",
    dt.date: "DATE", dt.datetime: "TIMESTAMP", Interval: "INTERVAL",
}
_NUMERIC = {"INT", "FLOAT", "DECIMAL"}


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
        if k == tk or (k in _NUMERIC and tk in _NUMERIC):
            return v
        if tk == "TIMESTAMP" and k == "DATE":
            return to_timestamp(v)
        if k == "TEXT" and tk in ("DATE", "TIMESTAMP"):
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
    if ka != kb:
        if not compatible(ka, kb):
            if ka == "TEXT" and kb in ("DATE", "TIMESTAMP"):
                a = cast(a, SqlType(kb))
            elif kb == "TEXT" and ka in ("DATE", "TIMESTAMP"):
                b = cast(b, SqlType(ka))
            else:
                raise operator_error(op, ka, kb)
        a, b = to_timestamp(a), to_timestamp(b)
    return COMPARE_OPS[op](a, b)


def comparison(op: str, left: Compiled, right: Compiled) -> RowFn:
    """``left op right`` with SQL NULL semantics."""
    (fa, fb), target = unify([left, right], op)
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
        if op == "=":
            return lambda r: None if (a := fa(r)) is None else a == c
        return lambda r: None if (a := fa(r)) is None else cmp(a, c)

    def compare(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        b = fb(r)
        if b is None:
            return None
        return cmp(a, b)

    return compare


def comparison_predicate(op: str, left: Compiled, right: Compiled) -> RowFn:
    """Like `comparison` but returns False where the SQL value is NULL (WHERE/ON/HAVING)."""
    fn = comparison(op, left, right)
    (fa, fb), target = unify([left, right], op)
    if not target.known:
        return lambda r: fn(r) is True
    cmp = COMPARE_OPS[op]
    if right.const:
        c = fb(())
        if c is None:
            return lambda r: False
        if op == "=":
            return lambda r: (a := fa(r)) is not None and a == c
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


# ---------------------------------------------------------------- arithmetic


def int_div(a: int, b: int) -> int | None:
    """Integer division truncating toward zero (7/2 = 3, -7/2 = -3); NULL on division by zero."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    if q > INT_MAX:
        raise DataError("integer out of range")
    return q


def int_mod(a: int, b: int) -> int | None:
    """C remainder: the sign follows the dividend (-7 % 2 = -1); NULL when b = 0."""
    if b == 0:
        return None
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _float_div(a: float, b: float) -> float | None:
    return None if b == 0 else a / b


def _float_mod(a: float, b: float) -> float | None:
    return None if b == 0 else math.fmod(a, b)


def _dec_div(a: Decimal, b: Decimal) -> Decimal | None:
    if b == 0:
        return None
    try:
        return a / b
    except (InvalidOperation, DivisionByZero):
        return None


def _dec_mod(a: Decimal, b: Decimal) -> Decimal | None:
    if b == 0:
        return None
    return Decimal(a) % Decimal(b)  # Decimal's % keeps the dividend's sign, like C


_NUMERIC_OPS = {
    "INT": {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": int_div, "%": int_mod},
    "FLOAT": {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _float_div, "%": _float_mod},
    "DECIMAL": {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _dec_div, "%": _dec_mod},
}


def arith_result_type(op: str, a: SqlType, b: SqlType) -> SqlType:
    """Static result type of ``a op b``; ProgrammingError for operand types without the operator."""
    ka, kb = a.kind, b.kind
    if ka in _NUMERIC and kb in _NUMERIC:
        if ka == kb == "INT":
            return INT
        return FLOAT if "FLOAT" in (ka, kb) else DECIMAL
    if ka == "NULL" or kb == "NULL":
        return NULLTYPE if ka == kb else _partial_type(op, a if ka != "NULL" else b)
    temporal = _temporal_type(op, ka, kb)
    if temporal is None:
        raise operator_error(op, a.sql(), b.sql())
    return temporal


def _partial_type(op: str, known: SqlType) -> SqlType:
    if known.kind in _NUMERIC:
        return known
    if known.kind in ("DATE", "TIMESTAMP", "INTERVAL") and op in "+-":
        return NULLTYPE
    raise operator_error(op, known.sql(), "NULL")


def _temporal_type(op: str, ka: str, kb: str) -> SqlType | None:
    if op == "+":
        if (ka, kb) in (("DATE", "INT"), ("INT", "DATE")):
            return DATE
        if {ka, kb} in ({"DATE", "INTERVAL"}, {"TIMESTAMP", "INTERVAL"}):
            return TIMESTAMP
        if ka == kb == "INTERVAL":
            return INTERVAL
    if op == "-":
        if (ka, kb) == ("DATE", "INT"):
            return DATE
        if (ka, kb) == ("DATE", "DATE"):
            return INT
        if ka in ("DATE", "TIMESTAMP") and kb == "INTERVAL":
            return TIMESTAMP
        if {ka, kb} <= {"DATE", "TIMESTAMP"}:
            return INTERVAL
        if ka == kb == "INTERVAL":
            return INTERVAL
    return None


def generic_arith(op: str, a: object, b: object) -> object:
    """``a op b`` for values whose types were not known at compile time."""
    ka, kb = kind_of(a), kind_of(b)
    if ka in _NUMERIC and kb in _NUMERIC:
        if ka != kb:
            if "FLOAT" in (ka, kb):
                a, b, ka = float(a), float(b), "FLOAT"
            else:
                a, b, ka = Decimal(a), Decimal(b), "DECIMAL"
        v = _NUMERIC_OPS[ka][op](a, b)
        if ka == "INT" and v is not None and not INT_MIN <= v <= INT_MAX:
            raise DataError("integer out of range")
        return v
    if _temporal_type(op, ka, kb) is None:
        raise operator_error(op, ka, kb)
    return temporal_arith(op, a, b)


def temporal_arith(op: str, a: object, b: object) -> object:
    if isinstance(b, Interval):
        if isinstance(a, Interval):
            return a.plus(b) if op == "+" else a.plus(b.negated())
        return add_interval(to_timestamp(a), b if op == "+" else b.negated())
    if isinstance(a, Interval):
        return add_interval(to_timestamp(b), a)
    if isinstance(b, int):
        return a + dt.timedelta(days=b if op == "+" else -b)
    if isinstance(a, int):
        return b + dt.timedelta(days=a)
    if type(a) is dt.date and type(b) is dt.date:
        return (a - b).days
    return Interval.from_timedelta(to_timestamp(a) - to_timestamp(b))


def arith(op: str, left: Compiled, right: Compiled) -> tuple[RowFn, SqlType]:
    """``left op right`` for + - * / %: a closure specialised to the static operand types."""
    result = arith_result_type(op, left.type, right.type)
    fa, fb = left.fn, right.fn
    ka, kb = left.type.kind, right.type.kind
    if ka in _NUMERIC and kb in _NUMERIC:
        if ka != kb and "FLOAT" in (ka, kb) and "DECIMAL" in (ka, kb):
            fa, fb = _as_float(fa, ka), _as_float(fb, kb)
        return _numeric_closure(_NUMERIC_OPS[result.kind][op], fa, fb, result.kind == "INT"), result

    def general(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        b = fb(r)
        if b is None:
            return None
        return generic_arith(op, a, b)

    return general, result


def _as_float(fn: RowFn, kind: str) -> RowFn:
    if kind != "DECIMAL":
        return fn
    return lambda r: None if (v := fn(r)) is None else float(v)


def _numeric_closure(op: Callable, fa: RowFn, fb: RowFn, check_int: bool) -> RowFn:
    if check_int:
        def int_op(r: tuple) -> object:
            a = fa(r)
            if a is None:
                return None
            b = fb(r)
            if b is None:
                return None
            v = op(a, b)
            if v is None or INT_MIN <= v <= INT_MAX:
                return v
            raise DataError("integer out of range")

        return int_op

    def num_op(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        b = fb(r)
        if b is None:
            return None
        return op(a, b)

    return num_op


def negate(p: Compiled) -> tuple[RowFn, SqlType]:
    kind = p.type.kind
    fn = p.fn
    if kind == "INT":
        def neg_int(r: tuple) -> object:
            v = fn(r)
            if v is None:
                return None
            if v == INT_MIN:
                raise DataError("integer out of range")
            return -v

        return neg_int, INT
    if kind in ("FLOAT", "DECIMAL", "INTERVAL"):
        return (lambda r: None if (v := fn(r)) is None else -v), p.type
    if kind == "NULL":
        def neg_checked(r: tuple) -> object:
            v = fn(r)
            if v is None:
                return None
            k = kind_of(v)
            if k not in _NUMERIC:
                raise operator_error("-", k)
            if k == "INT" and v == INT_MIN:
                raise DataError("integer out of range")
            return -v

        return neg_checked, NULLTYPE
    raise operator_error("-", p.type.sql())
