"""Expressions: compile SQL expressions into Python closures over rows.

``SELECT price * 2 FROM items WHERE name LIKE 'a%'``: the planner builds a `Scope` for the rows of
``items`` and calls ``compile_expr(price * 2, scope, env)`` (-> ``fn(row)``) and
``compile_predicate(name LIKE 'a%', scope, env)`` (-> ``pred(row) -> bool``, True only for SQL
TRUE). `infer_type` gives the static result type for output columns, `is_constant` and
`eval_constant` let the planner turn ``id = ? + 1`` into a key span. Modules: `compile` (dispatch
per node class), `binary` (arithmetic, bitwise and || handlers), `operators` (arithmetic, comparison, three-valued logic), `functions` (built-ins,
with `strings`, `mathfuncs`, `dates`), `like`, `subquery`, `ordering` (sort order).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlkv.sql.context import Scope
from sqlkv.sql.expr import arrayfuncs as _arrayfuncs  # noqa: F401  (each module registers
from sqlkv.sql.expr import arrays as _arrays  # noqa: F401
from sqlkv.sql.expr import binary as _binary  # noqa: F401
from sqlkv.sql.expr import conditionals as _conditionals  # noqa: F401
from sqlkv.sql.expr import functions as _functions  # noqa: F401   its node handlers)
from sqlkv.sql.expr import functions_more as _functions_more  # noqa: F401
from sqlkv.sql.expr import matching as _matching  # noqa: F401
from sqlkv.sql.expr import jsonb as _jsonb  # noqa: F401  (issue 15: JSONB operators and functions)
from sqlkv.sql.expr import jsonpath as _jsonpath  # noqa: F401  (issue 15: SQL/JSON path)
from sqlkv.sql.expr import regex as _regex  # noqa: F401
from sqlkv.sql.expr import row_json as _row_json  # noqa: F401  (issue 15: row_to_json(t), jsonb_agg(t))
from sqlkv.sql.expr import temporal as _temporal  # noqa: F401
from sqlkv.sql.expr.compile import Compiler, predicate_fn
from sqlkv.sql.expr.dates import Interval
from sqlkv.sql.expr.env import CompileEnv, Compiled, SubqueryPlanner
from sqlkv.sql.expr.ordering import compare_values, sort_key
from sqlkv.sql.timezone import UTC, reset_zone, set_zone
from sqlkv.sql.types import SqlType
from sqlkv.sql.expr.subquery import compile_row_subquery as row_subquery

_NOT_CONSTANT = (exp.Column, exp.Subquery, exp.Exists, exp.Select, exp.AggFunc, exp.Window, exp.Star)


def compile_expr(node: exp.Expression, scope: Scope, env: CompileEnv) -> Callable[[tuple], object]:
    """A closure computing ``node`` for a row of ``scope``."""
    return Compiler(scope, env).compile(node).fn


def compile_typed(node: exp.Expression, scope: Scope, env: CompileEnv) -> Compiled:
    """Like `compile_expr`, also giving the static type and the folded value when constant."""
    return Compiler(scope, env).compile(node)


def compile_for_column(node: exp.Expression, typ: SqlType, scope: Scope, env: CompileEnv) -> Callable[[tuple], object]:
    """`compile_expr` for a value stored in a column of type ``typ``: a number literal bound for a
    DECIMAL column keeps its written digits (``1.50`` stays 1.50, not the float 1.5)."""
    if typ.kind == "DECIMAL" and _number_literal(node):
        node = exp.Cast(this=node, to=exp.DataType.build("DECIMAL"))
    return compile_expr(node, scope, env)


def compile_row_subquery(node: exp.Expression, width: int, scope: Scope, env: CompileEnv) -> Callable[[tuple], tuple]:
    """A closure giving the one row of a subquery with ``width`` columns (``SET (a, b) = (SELECT ...)``)."""
    return row_subquery(Compiler(scope, env), node, width)


def _number_literal(node: exp.Expression) -> bool:
    while isinstance(node, (exp.Neg, exp.Paren)):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string


def compile_schema_expr(node: exp.Expression, scope: Scope, env: CompileEnv,
                        predicate: bool = False) -> Callable[[tuple], object]:
    """An expression stored in the schema (CHECK, generated column, partial-index predicate),
    compiled -- and, when it reads a TIMESTAMPTZ, evaluated -- in UTC whatever the session's
    time zone, so every session computes the same stored values and index entries."""
    token = set_zone(UTC)
    try:
        fn = compile_predicate(node, scope, env) if predicate else compile_expr(node, scope, env)
    finally:
        reset_zone(token)
    tz_columns = {c.name.lower() for c in scope.columns if c.type is not None and c.type.tz}
    if not any(c.name.lower() in tz_columns for c in node.find_all(exp.Column)) and not any(
            d.this == exp.DataType.Type.TIMESTAMPTZ for d in node.find_all(exp.DataType)):
        return fn

    def in_utc(row: tuple) -> object:
        token = set_zone(UTC)
        try:
            return fn(row)
        finally:
            reset_zone(token)

    return in_utc


def compile_predicate(node: exp.Expression, scope: Scope, env: CompileEnv) -> Callable[[tuple], bool]:
    """A closure returning True exactly when ``node`` is TRUE for the row (FALSE/NULL -> False)."""
    return predicate_fn(Compiler(scope, env), node)


def infer_type(node: exp.Expression, scope: Scope) -> SqlType:
    """The static result type of ``node`` (NULLTYPE when unknown until run time)."""
    return Compiler(scope, None, typing_only=True).compile(node).type


def is_constant(node: exp.Expression) -> bool:
    """True when ``node`` reads no columns and no subqueries (parameters and now() allowed)."""
    if isinstance(node, _NOT_CONSTANT):
        return False
    return not any(isinstance(n, _NOT_CONSTANT) for n in node.walk() if n is not node)


def eval_constant(node: exp.Expression, env: CompileEnv) -> object:
    """Evaluate a constant expression now, with the parameters and time of ``env.ctx``."""
    return Compiler(Scope([]), env).compile(node).fn(())


__all__ = [
    "CompileEnv",
    "Compiled",
    "Interval",
    "SubqueryPlanner",
    "compare_values",
    "compile_expr",
    "compile_for_column",
    "compile_row_subquery",
    "compile_schema_expr",
    "compile_predicate",
    "compile_typed",
    "eval_constant",
    "infer_type",
    "is_constant",
    "sort_key",
]
