"""Rows as JSON objects (issue 15): ``row_to_json(t)``, ``to_jsonb(t)`` / ``to_json(t)``,
``jsonb_agg(t)`` / ``json_agg(t)``, and the same of ``ROW(a, b)``.

sqlkv has no record type, so a whole-row reference is accepted only as the argument of these
functions, where PostgreSQL turns the record into an object: ``row_to_json(t)`` (or ``t.*``) with ``t`` a
table alias in scope (and not a column name, which wins as in PostgreSQL) is compiled as
``jsonb_build_object('id', t.id, 'name', t.name, ...)`` over t's visible columns, and
``row_to_json(ROW(1, 'x'))`` as ``jsonb_build_object('f1', 1, 'f2', 'x')`` (PostgreSQL's field
names for an anonymous row). Values follow to_jsonb: numbers as numbers, TIMESTAMP as ISO text,
arrays as arrays. Since JSON is JSONB in sqlkv the object's keys come out in JSONB's order, not
the columns' order (grammar-notes/expressions.md). ``row_to_json(r, pretty)`` and a whole-row
reference anywhere else are refused.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Scope
from sqlkv.sql.expr.compile import Compiler
from sqlkv.sql.expr.functions import ARGUMENT_REWRITES, register
from sqlkv.sql.expr.rows import row_items
from sqlkv.sql.types import JSONB

JSONB_KINDS = frozenset({"JSONB"})


def _whole_row_alias(node: exp.Expression) -> str | None:
    """``t`` of a whole-row reference written ``t`` or ``t.*``, else None."""
    if not isinstance(node, exp.Column):
        return None
    if isinstance(node.this, exp.Star):
        return node.table or None
    return node.name if not node.table and isinstance(node.this, exp.Identifier) else None


def _alias_columns(scope: Scope, alias: str, star: bool = False) -> list[str] | None:
    """The visible column names of the FROM item ``alias`` in the nearest scope having it, or
    None when ``alias`` names a column (which wins, unless written ``t.*``) or no FROM item."""
    walk: Scope | None = scope
    while walk is not None and not star:
        if walk.find(alias) is not None:
            return None
        walk = walk.outer
    walk = scope
    while walk is not None:
        names = [col.name for col in walk.columns if (col.table or "").lower() == alias.lower() and not col.hidden]
        if names:
            return names
        walk = walk.outer
    return None


def record_object(scope: Scope, node: exp.Expression) -> exp.Expression | None:
    """``jsonb_build_object(...)`` for a whole-row reference or a ROW(...), else None."""
    pairs: list[exp.Expression] = []
    alias = _whole_row_alias(node)
    if alias is not None:
        names = _alias_columns(scope, alias, star=isinstance(node.this, exp.Star))
        if names is None:
            return None
        for name in names:
            pairs += [exp.Literal.string(name), exp.column(name, table=alias, quoted=True)]
    else:
        items = row_items(node)
        if items is None or isinstance(node, exp.Tuple) and len(items) < 2:
            return None
        for i, item in enumerate(items, 1):
            pairs += [exp.Literal.string(f"f{i}"), item.copy()]
    return exp.Anonymous(this="jsonb_build_object", expressions=pairs)


def _to_jsonb_arguments(c: Compiler, args: list[exp.Expression]) -> list[exp.Expression]:
    built = record_object(c.scope, args[0]) if len(args) == 1 else None
    return [built] if built is not None else args


def _row_to_json_arguments(c: Compiler, args: list[exp.Expression]) -> list[exp.Expression]:
    if len(args) == 2:
        raise NotSupportedError("row_to_json(record, pretty) is not supported: sqlkv has no text-preserving "
                                "json to pretty-print (use jsonb_pretty(row_to_json(record)))")
    built = record_object(c.scope, args[0]) if len(args) == 1 else None
    if built is None:
        raise ProgrammingError("row_to_json() takes a row: a table name or alias in FROM (row_to_json(t)) "
                               "or ROW(a, b, ...)" + (f", not {args[0].sql()[:60]}" if args else ""))
    return [built]


def whole_row_aggregate_argument(arg: exp.Expression) -> exp.Expression:
    """jsonb_agg's argument as to_jsonb's, so that ``jsonb_agg(t)`` aggregates t's rows as
    objects (for any other value to_jsonb is what jsonb_agg does to it anyway)."""
    if _whole_row_alias(arg) is not None or row_items(arg) is not None:
        return exp.Anonymous(this="to_jsonb", expressions=[arg])
    return arg


for _name in ("to_jsonb", "to_json"):
    ARGUMENT_REWRITES[_name] = _to_jsonb_arguments
ARGUMENT_REWRITES["row_to_json"] = _row_to_json_arguments
register("row_to_json", 1, 1, lambda doc: doc, JSONB, (JSONB_KINDS,))
