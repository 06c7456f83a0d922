"""Scalar functions: the table of built-ins and how a call compiles.

``substr(name, 2, 3)`` parses to ``exp.Substring``; `call_shape` turns any function node into
``("substr", [name, 2, 3])`` (sqlglot gives many functions their own node class, others arrive
as ``exp.Anonymous``). `compile_function` looks the name up in `FUNCTIONS`, checks the argument
count and static argument kinds, compiles the arguments and returns a closure that skips the
call and yields NULL when an argument is NULL (unless the function handles NULLs itself, like
concat). Calls with constant arguments fold at compile time, except volatile ones (random()).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError, UndefinedFunction
from sqlkv.sql.casts import cast, parse_date, parse_timestamp
from sqlkv.sql.expr import mathfuncs, sequences, strings
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.dates import extract, strftime_sqlite
from sqlkv.sql.expr.env import Compiled, constant
from sqlkv.sql.expr.operators import unify
from sqlkv.sql.expr.temporal import statement_time
from sqlkv.sql.types import DATE, FLOAT, INT, JSONB, NULLTYPE, SqlType, TEXT, TIMESTAMP, TIMESTAMPTZ, value_type
from sqlkv.sql.timezone import WALL_TIME_FUNCTIONS, local_to_utc, session_wall_time

# Argument kinds: which static types an argument accepts.
ANY = None
TEXTS = frozenset({"TEXT"})
NUMS = frozenset({"INT", "FLOAT", "DECIMAL"})
INTS = frozenset({"INT"})
TEMPORAL = frozenset({"DATE", "TIMESTAMP", "TEXT"})
TEXT_OR_BYTES = frozenset({"TEXT", "BYTES"})

ResultType = SqlType | Callable[[list[SqlType]], SqlType]


@dataclass(frozen=True)
class FunctionDef:
    """A scalar function: arity, argument kinds (last repeats), result type and implementation."""

    name: str
    min_args: int
    max_args: int | None
    impl: Callable[..., Any]
    result: ResultType
    kinds: tuple = ()
    null_ok: bool = False  # impl receives NULL arguments (else NULL in -> NULL out)
    volatile: bool = False  # never folded (random())
    uses_ctx: bool = False  # impl takes the ExecContext as its first argument


def _same(types: list[SqlType]) -> SqlType:
    return types[0] if types else NULLTYPE


def _float_unless_decimal(types: list[SqlType]) -> SqlType:
    """FLOAT, or DECIMAL when an argument is DECIMAL (PostgreSQL's numeric pow/sqrt)."""
    return SqlType("DECIMAL") if any(t.kind == "DECIMAL" for t in types) else FLOAT


FUNCTIONS: dict[str, FunctionDef] = {}
# Names sqlkv knows but does not accept as a scalar call: name -> the NotSupportedError's text
# (filled by the modules that know why, e.g. jsonb.py's set-returning functions).
REFUSED_FUNCTIONS: dict[str, str] = {}
# name -> a function turning the call's argument nodes into the ones compiled (row_json.py:
# row_to_json(t) reads the whole-row reference t as jsonb_build_object('a', t.a, ...))
ARGUMENT_REWRITES: dict[str, Callable[[Compiler, list[exp.Expression]], list[exp.Expression]]] = {}


def register(names: str, min_args: int, max_args: int | None, impl: Callable, result: ResultType,
             kinds: tuple = (), **flags: bool) -> None:
    for name in names.split():
        FUNCTIONS[name] = FunctionDef(name, min_args, max_args, impl, result, kinds, **flags)


# -- strings
register("lower", 1, 1, str.lower, TEXT, (TEXTS,))
register("upper", 1, 1, str.upper, TEXT, (TEXTS,))
register("length char_length character_length", 1, 1, len, INT, (TEXT_OR_BYTES,))
register("octet_length", 1, 1, strings.octet_length, INT, (TEXT_OR_BYTES,))
register("substr substring", 2, 3, strings.substr, _same, (TEXT_OR_BYTES, INTS, INTS))
register("trim btrim", 1, 2, strings.trim_both, TEXT, (TEXTS,))
register("ltrim", 1, 2, strings.trim_left, TEXT, (TEXTS,))
register("rtrim", 1, 2, strings.trim_right, TEXT, (TEXTS,))
register("replace", 3, 3, strings.replace, TEXT, (TEXTS,))
register("instr strpos position", 2, 2, strings.instr, INT, (TEXTS,))
register("concat", 0, None, strings.concat, TEXT, (ANY,), null_ok=True)
register("concat_ws", 1, None, strings.concat_ws, TEXT, (TEXTS, ANY), null_ok=True)
register("repeat", 2, 2, strings.repeat, TEXT, (TEXTS, INTS))
register("lpad", 2, 3, strings.lpad, TEXT, (TEXTS, INTS, TEXTS))
register("rpad", 2, 3, strings.rpad, TEXT, (TEXTS, INTS, TEXTS))
register("reverse", 1, 1, strings.reverse, TEXT, (TEXTS,))
register("left", 2, 2, strings.left, TEXT, (TEXTS, INTS))
register("right", 2, 2, strings.right, TEXT, (TEXTS, INTS))
register("hex", 1, 1, strings.hex_upper, TEXT, (ANY,))
register("quote", 1, 1, strings.quote, TEXT, (ANY,), null_ok=True)
register("ascii unicode", 1, 1, strings.ascii_code, INT, (TEXTS,))
register("chr char", 1, 1, strings.chr_of, TEXT, (INTS,))
register("initcap", 1, 1, strings.initcap, TEXT, (TEXTS,))
register("split_part", 3, 3, strings.split_part, TEXT, (TEXTS, TEXTS, INTS))
register("typeof pg_typeof", 1, 1, lambda v: value_type(v).sql().lower(), TEXT, (ANY,), null_ok=True)  # int[] for arrays
# -- numbers
register("abs", 1, 1, mathfuncs.absolute, _same, (NUMS,))
register("round", 1, 2, mathfuncs.round_half_away, _same, (NUMS, INTS))
register("ceil ceiling", 1, 1, mathfuncs.ceil, _same, (NUMS,))
register("floor", 1, 1, mathfuncs.floor, _same, (NUMS,))
register("trunc truncate", 1, 2, mathfuncs.trunc, _same, (NUMS, INTS))
register("sign", 1, 1, mathfuncs.sign, _same, (NUMS,))
register("power pow", 2, 2, mathfuncs.power, _float_unless_decimal, (NUMS,))
register("sqrt", 1, 1, mathfuncs.sqrt, _float_unless_decimal, (NUMS,))
register("cbrt", 1, 1, mathfuncs.cbrt, FLOAT, (NUMS,))
register("exp", 1, 1, mathfuncs.exp, FLOAT, (NUMS,))
register("ln", 1, 1, mathfuncs.ln, FLOAT, (NUMS,))
register("log10", 1, 1, mathfuncs.log10, FLOAT, (NUMS,))
register("log", 1, 2, mathfuncs.log, FLOAT, (NUMS,))
register("pi", 0, 0, lambda: math.pi, FLOAT)
register("degrees", 1, 1, lambda x: math.degrees(x), FLOAT, (NUMS,))
register("radians", 1, 1, lambda x: math.radians(x), FLOAT, (NUMS,))
register("sin", 1, 1, lambda x: math.sin(x), FLOAT, (NUMS,))
register("cos", 1, 1, lambda x: math.cos(x), FLOAT, (NUMS,))
register("tan", 1, 1, lambda x: math.tan(x), FLOAT, (NUMS,))
register("asin", 1, 1, mathfuncs.domain(math.asin, "asin"), FLOAT, (NUMS,))
register("acos", 1, 1, mathfuncs.domain(math.acos, "acos"), FLOAT, (NUMS,))
register("atan", 1, 1, lambda x: math.atan(x), FLOAT, (NUMS,))
register("atan2", 2, 2, lambda y, x: math.atan2(y, x), FLOAT, (NUMS,))
register("random rand", 0, 0, mathfuncs.random_float, FLOAT, volatile=True)
# sequences: each call has an effect (nextval) or reads session state; never folded
register("nextval", 1, 1, sequences.nextval, INT, (TEXTS,), uses_ctx=True, volatile=True)
register("currval", 1, 1, sequences.currval, INT, (TEXTS,), uses_ctx=True, volatile=True)
register("lastval", 0, 0, sequences.lastval, INT, uses_ctx=True, volatile=True)
register("setval", 2, 3, sequences.setval, INT, (TEXTS, INTS, frozenset({"BOOL"})), uses_ctx=True, volatile=True)
# -- dates and times
register("now current_timestamp localtimestamp transaction_timestamp statement_timestamp", 0, 0,
         statement_time, TIMESTAMP, uses_ctx=True)
register("date", 1, 1, lambda ctx, v: _to_date(ctx, v), DATE, (TEMPORAL,), uses_ctx=True)
register("datetime", 1, 1, lambda ctx, v: _to_timestamp(ctx, v), TIMESTAMP, (TEMPORAL,), uses_ctx=True)
register("strftime", 2, 2, lambda ctx, f, v: strftime_sqlite(f, _to_timestamp(ctx, v)), TEXT,
         (TEXTS, TEMPORAL), uses_ctx=True)
register("date_part datepart", 2, 2, lambda ctx, p, v: float(extract(p, _to_timestamp(ctx, v))),
         FLOAT, (TEXTS, TEMPORAL), uses_ctx=True)
register("date_trunc", 2, 2, lambda ctx, u, v: _date_trunc(u, _to_timestamp(ctx, v)), TIMESTAMP,
         (TEXTS, TEMPORAL), uses_ctx=True)
# -- multi-argument min/max
register("greatest", 1, None, None, _same, (ANY,), null_ok=True)
register("least", 1, None, None, _same, (ANY,), null_ok=True)
register("max", 2, None, None, _same, (ANY,), null_ok=True)
register("min", 2, None, None, _same, (ANY,), null_ok=True)


def _to_timestamp(ctx: Any, v: object) -> dt.datetime:
    if isinstance(v, str):
        if v.strip().lower() == "now":
            return statement_time(ctx)
        return parse_timestamp(v)
    return cast(v, TIMESTAMP)  # type: ignore[return-value]


def _to_date(ctx: Any, v: object) -> dt.date:
    if isinstance(v, str):
        if v.strip().lower() == "now":
            return statement_time(ctx).date()
        return parse_date(v)
    return cast(v, DATE)  # type: ignore[return-value]


_TRUNC_FIELDS = ("microsecond", "second", "minute", "hour", "day", "month")


def _date_trunc(unit: str, ts: dt.datetime) -> dt.datetime:
    u = unit.strip().lower().rstrip("s")
    if u == "year":
        return dt.datetime(ts.year, 1, 1)
    if u == "quarter":
        return dt.datetime(ts.year, (ts.month - 1) // 3 * 3 + 1, 1)
    if u == "week":
        day = ts.date() - dt.timedelta(days=ts.weekday())
        return dt.datetime(day.year, day.month, day.day)
    if u not in _TRUNC_FIELDS:
        raise ProgrammingError(f'date_trunc: unit "{unit}" not recognized')
    cut = {"microsecond": 0, "second": 1, "minute": 2, "hour": 3, "day": 4, "month": 5}[u]
    zero = {"microsecond": 0, "second": 0, "minute": 0, "hour": 0, "day": 1}
    return ts.replace(**{f: zero[f] for f in _TRUNC_FIELDS[:cut]})


# ---------------------------------------------------------------- call shapes

_CLASS_NAMES = {
    exp.StrPosition: "instr", exp.Rand: "random", exp.Pow: "power", exp.Ceil: "ceil",
    exp.Length: "length", exp.Substring: "substr", exp.Typeof: "typeof", exp.Hex: "hex",
    exp.ConcatWs: "concat_ws", exp.Chr: "chr", exp.Unicode: "unicode", exp.SplitPart: "split_part",
    exp.Datetime: "datetime", exp.Localtimestamp: "localtimestamp", exp.Initcap: "initcap",
}


def call_shape(node: exp.Func) -> tuple[str, list[exp.Expression]]:
    """(lower-case function name, argument nodes) for any function node."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), list(node.expressions)
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        chars = node.args.get("expression")
        return name, [node.this] + ([chars] if chars is not None else [])
    if isinstance(node, exp.Pad):
        args = [node.this, node.expression]
        if node.args.get("fill_pattern") is not None:
            args.append(node.args["fill_pattern"])
        return ("lpad" if node.args.get("is_left") else "rpad"), args
    if isinstance(node, exp.DateTrunc):
        return "date_trunc", [node.args["unit"], node.this]
    if isinstance(node, exp.Initcap):
        return "initcap", [node.this]
    if isinstance(node, exp.Log):
        if node.expression is None:
            return "log10", [node.this]
        return "log", [node.this, node.expression]
    name = _CLASS_NAMES.get(type(node)) or type(node).__name__.lower()
    args: list[exp.Expression] = []
    for key in node.arg_types:
        value = node.args.get(key)
        if isinstance(value, list):
            args.extend(v for v in value if isinstance(v, exp.Expression))
        elif isinstance(value, exp.Expression):
            args.append(value)
    return name, args


# ---------------------------------------------------------------- compiling a call


@handles(exp.Func)
def compile_function(c: Compiler, node: exp.Func) -> Compiled:
    name, arg_nodes = call_shape(node)
    if name in ARGUMENT_REWRITES:
        arg_nodes = ARGUMENT_REWRITES[name](c, arg_nodes)
    fdef = c.env.functions.get(name) or FUNCTIONS.get(name)  # the session's own first (userfuncs)
    if fdef is None and not isinstance(node, exp.Anonymous):
        name = node.sql_name().lower()  # the name the user typed: regexp_replace, not regexpreplace
        fdef = c.env.functions.get(name) or FUNCTIONS.get(name)
    if fdef is None and name == "generate_series":
        raise NotSupportedError("generate_series() returns a set of rows: sqlkv accepts it in FROM only "
                                "(SELECT g FROM generate_series(1, 3) AS g), not in a select list")
    if fdef is None and name in REFUSED_FUNCTIONS:
        raise NotSupportedError(REFUSED_FUNCTIONS[name])
    if fdef is None:
        raise UndefinedFunction(f"unknown function: {name}()")
    n = len(arg_nodes)
    if n < fdef.min_args or (fdef.max_args is not None and n > fdef.max_args):
        expected = str(fdef.min_args) if fdef.min_args == fdef.max_args else (
            f"{fdef.min_args} or more" if fdef.max_args is None else f"{fdef.min_args} to {fdef.max_args}")
        raise ProgrammingError(f"wrong number of arguments to function {name}(): {n} given, {expected} expected")
    parts = [_typed_argument(fdef, i, c.compile(a)) for i, a in enumerate(arg_nodes)]
    if fdef.impl is None:
        return _compile_extremum(c, name, parts)
    typ = fdef.result if isinstance(fdef.result, SqlType) else fdef.result([p.type for p in parts])
    zoned = fdef.name in WALL_TIME_FUNCTIONS and any(p.type.tz for p in parts)
    if zoned:  # a TIMESTAMPTZ is read as the session's wall time
        parts = [_wall_time(c, p) if p.type.tz else p for p in parts]
    fn = _call_closure(fdef, [p.fn for p in parts], c.env.ctx)
    if zoned and typ.kind == "TIMESTAMP":  # date_trunc: the truncated wall time, back to an instant
        wall_fn = fn
        fn = lambda r: None if (v := wall_fn(r)) is None else local_to_utc(v)  # noqa: E731
        typ = TIMESTAMPTZ
    if fdef.volatile or fdef.uses_ctx and not parts:
        return Compiled(fn, typ)
    if fdef.uses_ctx and any(p.const and isinstance(p.value, str) and p.value.strip().lower() == "now" for p in parts):
        return Compiled(fn, typ)  # date('now') reads the statement time: not foldable
    return c.derived(fn, typ, parts)


def _wall_time(c: Compiler, part: Compiled) -> Compiled:
    fn = part.fn
    return c.derived(lambda r: session_wall_time(fn(r)), TIMESTAMP, [part])


def _kind_for(fdef: FunctionDef, i: int) -> frozenset | None:
    if not fdef.kinds:
        return None
    return fdef.kinds[i] if i < len(fdef.kinds) else fdef.kinds[-1]


def _typed_argument(fdef: FunctionDef, i: int, part: Compiled) -> Compiled:
    allowed = _kind_for(fdef, i)
    if allowed is None or not part.type.known:
        return part
    if part.untyped_text and "TEXT" not in allowed:
        target = JSONB if "JSONB" in allowed else (INT if allowed == INTS else FLOAT)  # JSONB: issue 15
        return constant(cast(part.value, target), target)
    if part.type.kind not in allowed:
        raise ProgrammingError(
            f"function {fdef.name}() does not accept an argument of type {part.type.sql()} "
            f"(argument {i + 1})"
        )
    return part


def _call_closure(fdef: FunctionDef, fns: list, ctx: Any) -> Callable[[tuple], object]:
    impl = fdef.impl
    name = fdef.name
    if fdef.uses_ctx:
        inner = impl
        impl = lambda *a: inner(ctx, *a)  # noqa: E731
    if fdef.null_ok:
        def call_any(r: tuple) -> object:
            args = [f(r) for f in fns]
            try:
                return impl(*args)
            except (TypeError, AttributeError, ValueError, OverflowError) as e:
                raise _call_error(name, args, e) from None

        return call_any
    if len(fns) == 1:
        f0 = fns[0]

        def call1(r: tuple) -> object:
            a = f0(r)
            if a is None:
                return None
            try:
                return impl(a)
            except (TypeError, AttributeError, ValueError, OverflowError) as e:
                raise _call_error(name, [a], e) from None

        return call1

    def call_n(r: tuple) -> object:
        args = []
        for f in fns:
            v = f(r)
            if v is None:
                return None
            args.append(v)
        try:
            return impl(*args)
        except (TypeError, AttributeError, ValueError, OverflowError) as e:
            raise _call_error(name, args, e) from None

    return call_n


def _call_error(name: str, args: list, e: Exception) -> Exception:
    if isinstance(e, (ValueError, OverflowError)):
        return DataError(f"{name}(): {e}")
    kinds = ", ".join("NULL" if a is None else value_type(a).sql() for a in args)
    return UndefinedFunction(f"function {name}({kinds}) does not exist")


def _compile_extremum(c: Compiler, name: str, parts: list[Compiled]) -> Compiled:
    """greatest/least ignore NULLs (PostgreSQL); multi-argument max/min return NULL if any is NULL (SQLite)."""
    fns, typ = unify(parts, name, for_compare=False)
    builtin = max if name in ("greatest", "max") else min

    def pick(values: list) -> object:
        try:
            return builtin(values)
        except TypeError:  # operands whose types were unknown until now turned out incompatible
            raise _call_error(name, values, TypeError()) from None

    if name in ("greatest", "least"):
        def ignoring_nulls(r: tuple) -> object:
            values = [v for f in fns if (v := f(r)) is not None]
            return pick(values) if values else None

        return c.derived(ignoring_nulls, typ, parts)

    def null_if_any(r: tuple) -> object:
        values = []
        for f in fns:
            v = f(r)
            if v is None:
                return None
            values.append(v)
        return pick(values)

    return c.derived(null_if_any, typ, parts)


__all__ = ["FUNCTIONS", "FunctionDef", "compile_function", "call_shape"]
