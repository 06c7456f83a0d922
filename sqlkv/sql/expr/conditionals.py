"""Conditional and set-membership expressions: IS [NOT] DISTINCT FROM, BETWEEN, IN (list), CASE,
IF/IIF, COALESCE, NULLIF and CAST.

``status IN ('a', 'b')`` unifies the operand types (the literals are cast to the column's type
once), then tests membership in a frozenset; NULL on the left gives NULL, and a NULL in the
list turns a miss into NULL. CASE and COALESCE give their branches one common type, converting
INT results to FLOAT/DECIMAL when branches mix them.
"""

from __future__ import annotations

from decimal import Decimal

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError
from sqlkv.sql.expr import dates
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.timezone import local_to_utc, session_wall_time, utc_to_session
from sqlkv.sql.expr.env import Compiled, RowFn, constant
from sqlkv.sql.expr.jsonpath_parse import jsonpath_cast
from sqlkv.sql.expr.rows import rewrite_row_in, row_items
from sqlkv.sql.expr.subquery import compile_in_subquery
from sqlkv.sql.expr.operators import (
    INTERVAL,
    bool_operand,
    comparison,
    distinct_from,
    generic_compare,
    logic_or,
    unify,
)
from sqlkv.sql.casts import cast, to_text
from sqlkv.sql.types import BOOL, NULLTYPE, fit_decimal, type_from_ast
from sqlkv.sql.expr.subquery import compile_row_in_subquery


@handles(exp.NullSafeEQ, exp.NullSafeNEQ)
def _null_safe(c: Compiler, node: exp.Binary) -> Compiled:
    left, right = c.compile(node.this), c.compile(node.expression)
    fn = distinct_from(left, right, negate=isinstance(node, exp.NullSafeEQ))
    return c.derived(fn, BOOL, [left, right])


@handles(exp.Between)
def _between(c: Compiler, node: exp.Between) -> Compiled:
    parts = [c.compile(node.this), c.compile(node.args["low"]), c.compile(node.args["high"])]
    (fv, flo, fhi), target = unify(parts, "BETWEEN")
    if not target.known:
        return c.derived(_between_generic(fv, flo, fhi), BOOL, parts)
    low, high = parts[1], parts[2]
    if low.const and high.const and low.value is not None and high.value is not None:
        lo, hi = flo(()), fhi(())
        if fv is parts[0].fn and parts[0].column is not None:
            i = parts[0].column
            fn = lambda r: None if (v := r[i]) is None else lo <= v <= hi  # noqa: E731
            return c.derived(fn, BOOL, parts, lambda r: (v := r[i]) is not None and lo <= v <= hi)
        fn = lambda r: None if (v := fv(r)) is None else lo <= v <= hi  # noqa: E731
        return c.derived(fn, BOOL, parts, lambda r: (v := fv(r)) is not None and lo <= v <= hi)

    def between(r: tuple) -> object:
        v = fv(r)
        if v is None:
            return None
        lo = flo(r)
        above = None if lo is None else v >= lo
        if above is False:
            return False
        hi = fhi(r)
        below = None if hi is None else v <= hi
        if below is False:
            return False
        return None if above is None or below is None else True

    return c.derived(between, BOOL, parts)


def _between_generic(fv: RowFn, flo: RowFn, fhi: RowFn) -> RowFn:
    def between(r: tuple) -> object:
        v = fv(r)
        if v is None:
            return None
        lo, hi = flo(r), fhi(r)
        above = None if lo is None else generic_compare(">=", v, lo)
        below = None if hi is None else generic_compare("<=", v, hi)
        if above is False or below is False:
            return False
        return None if above is None or below is None else True

    return between


@handles(exp.In)
def _in(c: Compiler, node: exp.In) -> Compiled:
    if row_items(node.this) is not None:
        if node.args.get("query") is not None:
            return compile_row_in_subquery(c, row_items(node.this), node.args["query"])
        return c.compile(rewrite_row_in(node))
    if node.args.get("query") is not None:
        return compile_in_subquery(c, node)
    if node.args.get("unnest") is not None or node.args.get("field") is not None:
        raise NotSupportedError(f"IN form not supported: {node.sql()[:80]}")
    left = c.compile(node.this)
    items = [c.compile(n) for n in node.expressions]
    if not items:  # SQLite's `x IN ()`: FALSE for every x, NULL included
        return constant(False, BOOL)
    fns, target = unify([left, *items], "IN")
    fv, item_fns = fns[0], fns[1:]
    if all(i.const for i in items) and target.known:
        values = [f(()) for f in item_fns]
        has_null = any(v is None for v in values)
        members = frozenset(v for v in values if v is not None)
        missing = None if has_null else False

        def in_set(r: tuple) -> object:
            v = fv(r)
            if v is None:
                return None
            return True if v in members else missing

        if fv is left.fn and left.column is not None:
            i = left.column
            pred = lambda r: (v := r[i]) is not None and v in members  # noqa: E731
        else:
            pred = lambda r: (v := fv(r)) is not None and v in members  # noqa: E731
        return c.derived(in_set, BOOL, [left, *items], pred)
    if target.known and len(items) > 2 and all(_row_independent(n) for n in node.expressions):
        return _in_per_execution(c, fv, item_fns)
    eq = [comparison("=", Compiled(fv, target), Compiled(f, target)) for f in item_fns]
    return c.derived(logic_or(eq) if len(eq) > 1 else eq[0], BOOL, [left, *items])


def _row_independent(node: exp.Expression) -> bool:
    """Constants and parameters only: the value cannot change within one execution."""
    allowed = (exp.Literal, exp.Null, exp.Boolean, exp.Placeholder, exp.Parameter, exp.Paren,
               exp.Neg, exp.Cast, exp.Binary, exp.DataType, exp.DataTypeParam)
    return all(isinstance(n, allowed) for n in node.walk())


def _in_per_execution(c: Compiler, fv: RowFn, item_fns: list[RowFn]) -> Compiled:
    """``x IN (?, ?, ...)``: the member set is built once per execution, then probed per row."""
    ctx = c.env.ctx
    state: list = [None, frozenset(), False]  # execution key, members, has_null

    def members() -> tuple[frozenset, bool]:
        key = (ctx.params, ctx.now)
        if state[0] is None or state[0][0] is not key[0] or state[0][1] is not key[1]:
            values = [f(()) for f in item_fns]
            state[1] = frozenset(v for v in values if v is not None)
            state[2] = any(v is None for v in values)
            state[0] = key
        return state[1], state[2]

    def in_params(r: tuple) -> object:
        v = fv(r)
        if v is None:
            return None
        found, has_null = members()
        if v in found:
            return True
        return None if has_null else False

    return Compiled(in_params, BOOL, pred=lambda r: in_params(r) is True)


@handles(exp.Case)
def _case(c: Compiler, node: exp.Case) -> Compiled:
    subject = c.compile(node.this) if node.this is not None else None
    conds: list[RowFn] = []
    results: list[Compiled] = []
    parts: list[Compiled] = []
    for branch in node.args.get("ifs") or []:
        when = c.compile(branch.this)
        parts.append(when)
        if subject is not None:
            cond = comparison("=", subject, when)
        else:
            cond = bool_operand(when, "CASE WHEN")
        conds.append(cond)
        results.append(c.compile(branch.args["true"]))
    default = node.args.get("default")
    results.append(c.compile(default) if default is not None else constant(None, NULLTYPE))
    fns, typ = unify(results, "CASE", for_compare=False)
    parts.extend(results)
    if subject is not None:
        parts.append(subject)
    pairs = list(zip(conds, fns[:-1]))
    fallback = fns[-1]

    def case(r: tuple) -> object:
        for cond, result in pairs:
            if cond(r) is True:
                return result(r)
        return fallback(r)

    return c.derived(case, typ, parts)


@handles(exp.If)
def _if(c: Compiler, node: exp.If) -> Compiled:
    cond = c.compile_bool(node.this, "IF")
    false_node = node.args.get("false")
    results = [c.compile(node.args["true"]), c.compile(false_node) if false_node else constant(None, NULLTYPE)]
    (ft, ff), typ = unify(results, "IF", for_compare=False)
    fc = cond.fn
    return c.derived(lambda r: ft(r) if fc(r) is True else ff(r), typ, [cond, *results])


@handles(exp.Coalesce)
def _coalesce(c: Compiler, node: exp.Coalesce) -> Compiled:
    parts = [c.compile(node.this), *(c.compile(n) for n in node.expressions)]
    fns, typ = unify(parts, "COALESCE", for_compare=False)
    if len(fns) == 2:
        f1, f2 = fns
        return c.derived(lambda r: v if (v := f1(r)) is not None else f2(r), typ, parts)

    def coalesce(r: tuple) -> object:
        for f in fns:
            v = f(r)
            if v is not None:
                return v
        return None

    return c.derived(coalesce, typ, parts)


@handles(exp.Nullif)
def _nullif(c: Compiler, node: exp.Nullif) -> Compiled:
    left, right = c.compile(node.this), c.compile(node.expression)
    unified = unify([left, right], "NULLIF")
    equal = comparison("=", left, right, unified)
    # The result is the first argument, unchanged (its type), unless its type is only known
    # from the second argument (a parameter or NULL): then the checked operand.
    fa = left.fn if left.type.known and not left.untyped_text else unified[0][0]
    typ = left.type if left.type.known and not left.untyped_text else unified[1]
    return c.derived(lambda r: None if equal(r) is True else fa(r), typ, [left, right])


def _decimal_literal(node: exp.Expression) -> Decimal | None:
    negate = False
    while isinstance(node, (exp.Neg, exp.Paren)):
        negate ^= isinstance(node, exp.Neg)
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string:
        return None
    try:
        d = Decimal(node.this.strip())
    except ArithmeticError:
        return None
    return -d if negate else d


@handles(exp.Cast, exp.TryCast)
def _cast(c: Compiler, node: exp.Cast) -> Compiled:
    to = node.args["to"]
    if to.this == exp.DataType.Type.INTERVAL:
        part = c.compile(node.this)
        fn = part.fn
        return c.derived(lambda r: None if (v := fn(r)) is None else dates.parse_interval(to_text(v)), INTERVAL, [part])
    if to.this == exp.DataType.Type.USERDEFINED and str(to.args.get("kind") or "").lower() == "jsonpath":
        return jsonpath_cast(c.compile(node.this))  # issue 15: '$.a'::jsonpath (jsonpath.py)
    target = type_from_ast(to)
    if target.kind == "DECIMAL":
        exact = _decimal_literal(node.this)
        if exact is not None:  # CAST(1.50 AS DECIMAL): the written digits, not the float's
            return constant(fit_decimal(exact, target, "value"), target)
    part = c.compile(node.this)
    fn = part.fn
    if part.type == target:
        return Compiled(fn, target, part.const, part.value, column=part.column)
    if part.type.tz and target.kind in ("DATE", "TIME", "TIMESTAMP", "TEXT"):
        # TIMESTAMPTZ -> the session's wall time (TEXT: with its offset), as PostgreSQL
        instant = fn
        fn = (lambda r: utc_to_session(instant(r))) if target.kind == "TEXT" else \
            (lambda r: session_wall_time(instant(r)))
    elif target.tz and part.type.kind == "TIMESTAMP":
        wall = fn  # TIMESTAMP -> TIMESTAMPTZ: a wall time in the session zone
        fn = lambda r: None if (v := wall(r)) is None else local_to_utc(v)  # noqa: E731
    if isinstance(node, exp.TryCast):
        def try_cast(r: tuple) -> object:
            try:
                return cast(fn(r), target)
            except DataError:
                return None

        return c.derived(try_cast, target, [part])
    return c.derived(lambda r: None if (v := fn(r)) is None else cast(v, target), target, [part])
