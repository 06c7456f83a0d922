"""Arithmetic: + - * / % on numbers, dates, timestamps and intervals, as specialised closures.

``price * 2 + 1`` over an INT column: `arith` sees INT and INT, picks `operator.mul` from the
INT table and `_numeric_const_closure` (the right operand is a constant), which reads ``r[i]``
inline, returns NULL for NULL, and checks the 64-bit range. Integer division truncates toward
zero and % follows C; division or modulo by zero yields NULL (SQLite's rule, which the
sqllogictest corpus relies on). Operands whose type is unknown until run time go through
`generic_arith`, which checks the value kinds per row.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections.abc import Callable
from decimal import Decimal, DivisionByZero, InvalidOperation

from sqlkv.errors import DataError, NumericValueOutOfRange
from sqlkv.sql.expr.dates import add_interval, Interval, scale_interval
from sqlkv.sql.expr.env import Compiled, RowFn
from sqlkv.sql.expr.operators import (

    INTERVAL,
    NUMERIC_KINDS,
    kind_of,
    null_propagating,
    operator_error,
    to_timestamp,
)
from sqlkv.sql.types import (
    DATE, DECIMAL, EXACT, FLOAT, INT, INT_MAX, INT_MIN, NULLTYPE, TIMESTAMP, TIMESTAMPTZ, SqlType, exact_decimal,
)

_NUMERIC = NUMERIC_KINDS


def int_div(a: int, b: int) -> int | None:
    """Integer division truncating toward zero (7/2 = 3, -7/2 = -3); NULL on division by zero."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    if q > INT_MAX:
        raise NumericValueOutOfRange("integer out of range")
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
    return _exact_mod(Decimal(a), Decimal(b))  # keeps the dividend's sign, like C


_exact_mod = exact_decimal(EXACT.remainder)


_NUMERIC_OPS = {
    "INT": {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": int_div, "%": int_mod},
    "FLOAT": {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _float_div, "%": _float_mod},
    "DECIMAL": {"+": exact_decimal(EXACT.add), "-": exact_decimal(EXACT.subtract),
                "*": exact_decimal(EXACT.multiply), "/": _dec_div, "%": _dec_mod},
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
    if temporal.kind == "TIMESTAMP" and (a.tz or b.tz):
        return TIMESTAMPTZ  # an instant moved by an interval is an instant
    return temporal


def _partial_type(op: str, known: SqlType) -> SqlType:
    if known.kind in _NUMERIC:
        return known
    if known.kind in ("DATE", "TIMESTAMP", "INTERVAL") and op in "+-":
        return NULLTYPE
    if known.kind == "INTERVAL" and op in "*/":
        return INTERVAL
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
    if op == "*" and {ka, kb} in ({"INTERVAL", "INT"}, {"INTERVAL", "FLOAT"}, {"INTERVAL", "DECIMAL"}):
        return INTERVAL
    if op == "/" and ka == "INTERVAL" and kb in _NUMERIC:
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
            raise NumericValueOutOfRange("integer out of range")
        return v
    if _temporal_type(op, ka, kb) is None:
        raise operator_error(op, ka, kb)
    return temporal_arith(op, a, b)


def temporal_arith(op: str, a: object, b: object) -> object:
    try:
        return _temporal_arith(op, a, b)
    except OverflowError:
        raise DataError("date or timestamp out of range") from None


def _temporal_arith(op: str, a: object, b: object) -> object:
    if op == "*":  # an INTERVAL and a number, either way round
        return scale_interval(a, b) if isinstance(a, Interval) else scale_interval(b, a)
    if op == "/":
        if b == 0:
            return None  # division by zero is NULL in sqlkv (SQLite's rule, expressions.md)
        return scale_interval(a, 1 / b if isinstance(b, float) else 1 / float(b))
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
        fn_op = _NUMERIC_OPS[result.kind][op]
        if right.const and fb is right.fn:
            # the left operand as converted above (a DECIMAL meeting a FLOAT is read as float)
            column = left.column if fa is left.fn else None
            return _numeric_const_closure(fn_op, fa, column, right.value, result.kind == "INT"), result
        if left.column is not None and fa is left.fn and result.kind == "INT":
            return _int_column_expr_closure(fn_op, left.column, fb), result
        return _numeric_closure(fn_op, fa, fb, result.kind == "INT"), result

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


def _numeric_const_closure(op: Callable, fa: RowFn, i: int | None, c: object, check_int: bool) -> RowFn:
    """``expr op constant``: no call for the constant, and ``r[i]`` inline for a column ``i``."""
    if c is None:
        return lambda r: None
    if check_int:
        if i is not None:
            def int_col_const(r: tuple) -> object:
                a = r[i]
                if a is None:
                    return None
                v = op(a, c)
                if v is None or INT_MIN <= v <= INT_MAX:
                    return v
                raise NumericValueOutOfRange("integer out of range")

            return int_col_const

        def int_expr_const(r: tuple) -> object:
            a = fa(r)
            if a is None:
                return None
            v = op(a, c)
            if v is None or INT_MIN <= v <= INT_MAX:
                return v
            raise NumericValueOutOfRange("integer out of range")

        return int_expr_const
    if i is not None:
        return lambda r: None if (a := r[i]) is None else op(a, c)
    return lambda r: None if (a := fa(r)) is None else op(a, c)


def _int_column_expr_closure(op: Callable, i: int, fb: RowFn) -> RowFn:
    """INT ``column op expr``: the column read inline."""
    def int_col_expr(r: tuple) -> object:
        a = r[i]
        if a is None:
            return None
        b = fb(r)
        if b is None:
            return None
        v = op(a, b)
        if v is None or INT_MIN <= v <= INT_MAX:
            return v
        raise NumericValueOutOfRange("integer out of range")

    return int_col_expr


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
            raise NumericValueOutOfRange("integer out of range")

        return int_op

    return null_propagating(fa, fb, op)


def negate(p: Compiled) -> tuple[RowFn, SqlType]:
    kind = p.type.kind
    fn = p.fn
    if kind == "INT":
        def neg_int(r: tuple) -> object:
            v = fn(r)
            if v is None:
                return None
            if v == INT_MIN:
                raise NumericValueOutOfRange("integer out of range")
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
                raise NumericValueOutOfRange("integer out of range")
            return -v

        return neg_checked, NULLTYPE
    raise operator_error("-", p.type.sql())
