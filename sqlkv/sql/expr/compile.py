"""The expression compiler: a sqlglot expression -> a Python closure ``fn(row) -> value``.

Walk-through for ``WHERE price * qty > ? AND name LIKE 'ab%'`` over scope (name, price, qty):
`Compiler.compile` dispatches on the node class. ``price`` resolves through the scope to row
position 1 and compiles to ``operator.itemgetter(1)`` with the column's type; ``price * qty``
becomes an INT multiply closure (NULL check, multiply, 64-bit range check); ``?`` becomes a
closure reading ``ctx.params[0]`` at run time, wrapped to check its type against INT per row;
``>`` unifies the operand types; ``LIKE 'ab%'`` becomes ``str.startswith``; AND flattens its
operands into one three-valued closure. Subtrees whose operands are all literals are folded to a
constant at compile time (an error while folding is kept for run time, so a division that never
runs never fails). The planner calls `compile_predicate` for WHERE, which drops the NULL/FALSE
distinction for speed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from decimal import Decimal

from sqlglot import exp

from sqlkv.errors import Error, NotSupportedError, ProgrammingError
from sqlkv.sql.context import ExecContext, Scope
from sqlkv.sql.expr.batch_filters import with_conjunction_batch
from sqlkv.sql.expr.env import CompileEnv, Compiled, RowFn, column_parts, constant
from sqlkv.sql.expr.subquery import compile_quantified, compile_subquery
from sqlkv.sql.expr.operators import (
    bool_operand,
    comparison,
    comparison_predicate,
    distinct_from,
    logic_and,
    logic_not,
    logic_or,
    unify,
)
from sqlkv.sql.types import BOOL, INT_MAX, NULLTYPE, TEXT, SqlType
from sqlkv.sql.expr import rows

Handler = Callable[["Compiler", exp.Expression], Compiled]
_HANDLERS: dict[type, Handler] = {}


def handles(*classes: type) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for cls in classes:
            _HANDLERS[cls] = fn
        return fn

    return register


class Compiler:
    """Compiles expressions against one scope. ``typing_only`` skips subquery planning."""

    def __init__(self, scope: Scope, env: CompileEnv | None, typing_only: bool = False) -> None:
        self.scope = scope
        self.env = env if env is not None else CompileEnv(ExecContext())
        self.typing_only = typing_only

    def compile(self, node: exp.Expression) -> Compiled:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            handler = _find_handler(type(node))
        return handler(self, node)

    def derived(self, fn: RowFn, typ: SqlType, parts: list[Compiled], pred: RowFn | None = None) -> Compiled:
        """A compiled node; folded to a constant when every operand is constant."""
        if all(p.const for p in parts):
            try:
                value = fn(())
            except Error:
                return Compiled(fn, typ)  # raise at run time, only if a row reaches it
            return constant(value, typ)
        return Compiled(fn, typ, pred=pred)

    def compile_bool(self, node: exp.Expression, what: str) -> Compiled:
        part = self.compile(node)
        return Compiled(bool_operand(part, what), BOOL, part.const, part.value)


def _find_handler(cls: type) -> Handler:
    for base in cls.__mro__[1:]:
        handler = _HANDLERS.get(base)
        if handler is not None:
            _HANDLERS[cls] = handler
            return handler
    return _unsupported


def _unsupported(c: Compiler, node: exp.Expression) -> Compiled:
    raise NotSupportedError(f"expression not supported: {node.sql()[:80]} ({type(node).__name__})")


# ---------------------------------------------------------------- leaves


@handles(exp.Literal)
def _literal(c: Compiler, node: exp.Literal) -> Compiled:
    text = node.this
    if node.is_string:
        return constant(text, TEXT, untyped_text=True)
    return constant(*number_literal(text))


def number_literal(text: str) -> tuple[object, SqlType]:
    """Integer literals are INT (DECIMAL past 64 bits); others are FLOAT, as in SQLite."""
    t = text.strip()
    if t.isdigit():
        if len(t.lstrip("0")) > 19:  # past 64 bits (and past int()'s 4,300-digit limit)
            return Decimal(t), SqlType("DECIMAL")
        v = int(t)
        if v <= INT_MAX:
            return v, SqlType("INT")
        return Decimal(t), SqlType("DECIMAL")
    try:
        return float(t), SqlType("FLOAT")
    except ValueError:
        raise ProgrammingError(f"invalid number literal {text!r}") from None


@handles(exp.Null)
def _null(c: Compiler, node: exp.Expression) -> Compiled:
    return constant(None, NULLTYPE)


@handles(exp.Boolean)
def _boolean(c: Compiler, node: exp.Boolean) -> Compiled:
    return constant(bool(node.this), BOOL)


@handles(exp.HexString)
def _hex(c: Compiler, node: exp.HexString) -> Compiled:
    try:
        return constant(bytes.fromhex(node.this), SqlType("BYTES"))
    except ValueError:
        raise ProgrammingError(f"invalid hexadecimal literal x'{node.this}'") from None


@handles(exp.Paren, exp.Alias)
def _paren(c: Compiler, node: exp.Expression) -> Compiled:
    return c.compile(node.this)


@handles(exp.Column)
def _column(c: Compiler, node: exp.Column) -> Compiled:
    if isinstance(node.this, exp.Star):
        raise ProgrammingError("* is not allowed in an expression")
    name, table = column_parts(node)
    if not table and name.startswith("$") and name[1:].isdigit():
        return _placeholder(c, exp.Parameter(this=exp.var(name[1:])))  # $1: sqlglot's default dialect
    depth, idx = c.scope.resolve(name, table or None)
    col = c.scope.at_depth(depth).columns[idx]
    typ = col.type if col.type is not None else NULLTYPE
    if depth == 0:
        return Compiled(operator.itemgetter(idx), typ, column=idx)
    cell = c.scope.at_depth(depth).cell
    return Compiled(lambda r: cell[0][idx], typ)


def local_column(node: exp.Column, scope: Scope) -> Compiled | None:
    """What `_column` compiles ``node`` to when it names a column of ``scope`` itself (not of an
    enclosing scope, not a ``$1`` parameter), without a Compiler; None otherwise (and the
    ambiguity error `Scope.resolve` raises for such a name)."""
    this = node.args.get("this")
    if type(this) is not exp.Identifier:
        return None
    name, table = column_parts(node)
    if name.startswith("$"):
        return None
    idx = scope.find(name, table or None)
    if idx is None:
        return None
    typ = scope.columns[idx].type
    return Compiled(operator.itemgetter(idx), typ if typ is not None else NULLTYPE, column=idx)


@handles(exp.Placeholder, exp.Parameter)
def _placeholder(c: Compiler, node: exp.Expression) -> Compiled:
    ctx = c.env.ctx
    key = param_key(node)
    shown = f":{key}" if isinstance(key, str) else f"${key + 1}"

    def param(r: tuple) -> object:
        params = ctx.params
        try:
            if isinstance(key, str) and not hasattr(params, "keys"):
                raise ProgrammingError(f"named parameter {shown} needs a mapping of parameters")
            return params[key]
        except (IndexError, KeyError, TypeError):
            raise ProgrammingError(f"no value supplied for parameter {shown}") from None

    return Compiled(param, NULLTYPE)


def param_key(node: exp.Expression) -> int | str:
    """Positional index (0-based) of a ``?``/``$n`` placeholder, or the name of ``:name``."""
    if "param_index" in node.meta:
        return int(node.meta["param_index"])
    if isinstance(node, exp.Parameter):
        name = node.name
        if name.isdigit():
            return int(name) - 1
        return name
    if isinstance(node.this, str) and node.this:
        return int(node.this) - 1 if node.this.isdigit() else node.this
    # No index from the parser: count the unnamed placeholders left to right.
    position = 0
    for other in node.root().find_all(exp.Placeholder, bfs=False):
        if other is node:
            return position
        if not other.this:
            position += 1
    return position


@handles(exp.Star)
def _star(c: Compiler, node: exp.Expression) -> Compiled:
    raise ProgrammingError("* is not allowed in an expression")


# ---------------------------------------------------------------- arithmetic and strings

# Comparisons other modules compile (they build on this one, so it cannot import them): a hook
# returns the compiled comparison, or None to leave it to `_comparison`.
COMPARISON_HOOKS: list[Callable[[Compiler, exp.Binary, str], Compiled | None]] = []

_COMPARISONS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@handles(*_COMPARISONS)
def _comparison(c: Compiler, node: exp.Binary) -> Compiled:
    op = _COMPARISONS[type(node)]
    if rows.is_row_comparison(node):
        return c.compile(rows.rewrite_row_comparison(node))
    for hook in COMPARISON_HOOKS:  # x op ANY/ALL(array): sqlkv/sql/expr/arrays.py
        compiled = hook(c, node, op)
        if compiled is not None:
            return compiled
    if isinstance(node.expression, (exp.Any, exp.All)):
        return compile_quantified(c, node, op)
    left, right = c.compile(node.this), c.compile(node.expression)
    if left.const and not right.const:  # keep the constant on the right for the fast paths
        left, right, op = right, left, _FLIPPED[op]
    unified = unify([left, right], op)
    pred = comparison_predicate(op, left, right, unified)
    return c.derived(comparison(op, left, right, unified), BOOL, [left, right], pred)


def predicate_fn(c: Compiler, node: exp.Expression) -> RowFn:
    """A closure returning True exactly when ``node`` is TRUE (NULL and FALSE both give False).

    AND/OR of TRUE-only operands keep their meaning under two-valued logic, so they combine
    the operands' predicate forms; other nodes use their own ``pred`` closure when they have one.
    """
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.And, exp.Or)):
        fns = [predicate_fn(c, n) for n in _flatten(node, type(node))]
        if isinstance(node, exp.And):
            if len(fns) == 2:
                f1, f2 = fns
                return with_conjunction_batch(lambda r: f1(r) and f2(r), fns)
            return with_conjunction_batch(lambda r: all(f(r) for f in fns), fns)
        if len(fns) == 2:
            f1, f2 = fns
            return lambda r: f1(r) or f2(r)
        return lambda r: any(f(r) for f in fns)
    part = c.compile(node)
    fn = bool_operand(part, "WHERE")
    if part.const:
        value = part.value is True
        return lambda r: value
    if part.pred is not None:
        return part.pred
    return lambda r: fn(r) is True


def _flatten(node: exp.Expression, cls: type) -> list[exp.Expression]:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cls):
            stack.append(n.expression)
            stack.append(n.this)
        elif isinstance(n, exp.Paren) and isinstance(n.this, cls):
            stack.append(n.this)
        else:
            out.append(n)
    return out


@handles(exp.And)
def _and(c: Compiler, node: exp.And) -> Compiled:
    parts = [c.compile_bool(n, "AND") for n in _flatten(node, exp.And)]
    return c.derived(logic_and([p.fn for p in parts]), BOOL, parts)


@handles(exp.Or)
def _or(c: Compiler, node: exp.Or) -> Compiled:
    parts = [c.compile_bool(n, "OR") for n in _flatten(node, exp.Or)]
    return c.derived(logic_or([p.fn for p in parts]), BOOL, parts)


@handles(exp.Not)
def _not(c: Compiler, node: exp.Not) -> Compiled:
    part = c.compile_bool(node.this, "NOT")
    return c.derived(logic_not(part.fn), BOOL, [part])


@handles(exp.Is)
def _is(c: Compiler, node: exp.Is) -> Compiled:
    left = c.compile(node.this)
    target = node.expression
    fn = left.fn
    if isinstance(target, exp.Null):
        return c.derived(lambda r: fn(r) is None, BOOL, [left])
    if isinstance(target, exp.Boolean):
        checked = bool_operand(left, "IS")
        if target.this:
            return c.derived(lambda r: checked(r) is True, BOOL, [left])
        return c.derived(lambda r: checked(r) is False, BOOL, [left])
    right = c.compile(target)  # IS <expr>: SQLite's IS NOT DISTINCT FROM
    return c.derived(distinct_from(left, right, negate=True), BOOL, [left, right])


# ---------------------------------------------------------------- functions, aggregates, subqueries


# Function calls (exp.Func) are compiled by functions.py, which registers its handler here
# when the package is imported: it builds on this module's Compiler, so this module cannot
# import it.


@handles(exp.AggFunc)
def _aggregate(c: Compiler, node: exp.AggFunc) -> Compiled:
    if isinstance(node, (exp.Max, exp.Min)) and node.expressions:
        return _HANDLERS[exp.Func](c, node)  # SQLite's scalar max(a, b, ...)/min(a, b, ...)
    raise ProgrammingError(f"aggregate functions are not allowed here: {node.sql()[:60]}")


@handles(exp.Window)
def _window(c: Compiler, node: exp.Window) -> Compiled:
    raise ProgrammingError(f"window functions are not allowed here: {node.sql()[:60]}")


@handles(exp.Subquery, exp.Exists, exp.Select, exp.Union, exp.Intersect, exp.Except)
def _subquery(c: Compiler, node: exp.Expression) -> Compiled:
    return compile_subquery(c, node)


@handles(exp.Collate)
def _collate(c: Compiler, node: exp.Collate) -> Compiled:
    name = node.expression.name.upper() if node.expression is not None else ""
    if name in ("BINARY", "C", "DEFAULT", '"C"'):
        return c.compile(node.this)
    raise NotSupportedError(f"collation {name} is not supported")
