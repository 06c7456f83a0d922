"""Operators on values: arithmetic (+ - * / %), bitwise (& | # ~ << >>) and || concatenation.

``price * 2`` compiles (`_arith`) both operands, unifies an untyped literal with the other
side's type, and builds the closure from `arithmetic.arith` (NULL in, NULL out; integer
overflow and division by zero are errors, as in PostgreSQL). Registered with the `Compiler`
through `handles`, like every node handler.
"""

from __future__ import annotations

import operator

from sqlglot import exp

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.casts import cast, to_text
from sqlkv.sql.expr import dates
from sqlkv.sql.expr.arithmetic import arith, negate
from sqlkv.sql.arraycasts import is_array
from sqlkv.sql.expr.arrays import array_concat
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled, constant
from sqlkv.sql.expr.jsonb import jsonb_binary
from sqlkv.sql.expr.operators import INTERVAL, null_propagating
from sqlkv.sql.types import INT_MIN, SqlType, TEXT

_ARITH_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "/"}


@handles(*_ARITH_OPS)
def _arith(c: Compiler, node: exp.Binary) -> Compiled:
    left, right = c.compile(node.this), c.compile(node.expression)
    op = _ARITH_OPS[type(node)]
    if op == "-" and (jsonb := jsonb_binary(c, op, left, right)) is not None:
        return jsonb  # issue 15: jsonb - key / index
    left, right = _untyped_as_other(left, right), _untyped_as_other(right, left)
    if isinstance(node, exp.IntDiv) and not (left.type.kind in ("INT", "NULL") and right.type.kind in ("INT", "NULL")):
        raise ProgrammingError("DIV needs INT operands")
    fn, typ = arith(op, left, right)
    return c.derived(fn, typ, [left, right])


def _untyped_as_other(p: Compiled, other: Compiled) -> Compiled:
    """An untyped string literal next to a typed operand takes its type (``d + '1 day'`` -> ok)."""
    if not p.untyped_text or not other.type.known or other.type.kind == "TEXT":
        return p
    target = other.type
    if target.kind in ("DATE", "TIMESTAMP", "INTERVAL"):
        try:
            return constant(dates.parse_interval(p.value), INTERVAL)
        except (DataError, ProgrammingError):
            if target.kind == "INTERVAL":
                raise
        # not an interval: a date/time (``d - '2024-01-01'`` counts days, as in PostgreSQL)
    value = cast(p.value, target)
    return constant(value, target)


@handles(exp.Neg)
def _neg(c: Compiler, node: exp.Neg) -> Compiled:
    inner = node.this
    if isinstance(inner, exp.Literal) and not inner.is_string and inner.this.strip() == str(-INT_MIN):
        return constant(INT_MIN, SqlType("INT"))
    part = c.compile(inner)
    fn, typ = negate(part)
    return c.derived(fn, typ, [part])


def _shift_left(a: int, n: int) -> int:
    return a << _shift_count(n)


def _shift_right(a: int, n: int) -> int:
    return a >> _shift_count(n)


def _shift_count(n: int) -> int:
    # CockroachDB's rule: a 64-bit INT shifts by 0..63 places; SQLite's "everything is gone"
    # (1 << 64 = 0) hid mistakes, and an unchecked count asks Python for an exabyte integer
    if not 0 <= n <= 63:
        raise DataError("shift argument out of range")
    return n


_BIT_OPS = {
    exp.BitwiseAnd: operator.and_, exp.BitwiseOr: operator.or_, exp.BitwiseXor: operator.xor,
    exp.BitwiseLeftShift: _shift_left, exp.BitwiseRightShift: _shift_right,
}


@handles(*_BIT_OPS)
def _bitwise(c: Compiler, node: exp.Binary) -> Compiled:
    left, right = c.compile(node.this), c.compile(node.expression)
    for p in (left, right):
        if p.type.kind not in ("INT", "NULL"):
            raise ProgrammingError(f"bitwise operators need INT operands, not {p.type.sql()}")
    op = _BIT_OPS[type(node)]
    fa, fb = left.fn, right.fn

    def bitwise(r: tuple) -> object:
        a = fa(r)
        b = fb(r)
        if a is None or b is None:
            return None
        if type(a) is not int or type(b) is not int:
            raise ProgrammingError("bitwise operators need INT operands")
        v = op(a, b)
        return ((v + 2**63) % 2**64) - 2**63  # wrap to 64 bits like two's complement

    return c.derived(bitwise, SqlType("INT"), [left, right])


@handles(exp.BitwiseNot)
def _bitnot(c: Compiler, node: exp.BitwiseNot) -> Compiled:
    part = c.compile(node.this)
    if part.type.kind not in ("INT", "NULL"):
        raise ProgrammingError(f"bitwise operators need INT operands, not {part.type.sql()}")
    fn = part.fn

    def bitnot(r: tuple) -> object:
        v = fn(r)
        if v is None:
            return None
        if type(v) is not int:  # a parameter's type is known only now
            raise ProgrammingError("bitwise operators need INT operands")
        return ~v

    return c.derived(bitnot, SqlType("INT"), [part])


@handles(exp.DPipe)
def _concat_op(c: Compiler, node: exp.DPipe) -> Compiled:
    left, right = c.compile(node.this), c.compile(node.expression)
    if is_array(left.type) or is_array(right.type):  # ARRAY || (sqlkv/sql/expr/arrays.py)
        fn, typ = array_concat(left, right)
        return c.derived(fn, typ, [left, right])
    fa, fb = left.fn, right.fn
    if (jsonb := jsonb_binary(c, "||", left, right)) is not None:
        return jsonb  # issue 15: jsonb || jsonb
    if left.type.kind == "BYTES" and right.type.kind == "BYTES":
        return c.derived(null_propagating(fa, fb, operator.add), left.type, [left, right])
    return c.derived(null_propagating(fa, fb, lambda a, b: to_text(a) + to_text(b)), TEXT, [left, right])


# ---------------------------------------------------------------- comparison and logic
