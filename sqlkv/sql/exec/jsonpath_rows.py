"""``jsonb_path_query(target, path [, vars [, silent]])`` in FROM (issue 15): one JSONB row per item
the path yields (sqlkv/sql/expr/jsonpath.py), implicitly LATERAL as the other JSONB set-returning
functions (``FROM t, jsonb_path_query(t.doc, '$.tags[*]') AS tag``). A NULL argument gives no
rows; WITH ORDINALITY numbers them. A select-list call is rewritten into this (parse_srf.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlglot import exp

from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.expr.jsonb import jsonb_fn
from sqlkv.sql.expr.jsonpath import path_items
from sqlkv.sql.types import JSONB, SqlType

RowFn = Callable[[tuple], Any]


class JsonPathRows(Operator):
    def __init__(self, args: list[RowFn], columns: list[Column], ordinality: bool, text: str) -> None:
        self.args = args
        self.columns = columns
        self.ordinality = ordinality
        self.text = text

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        values = [fn(()) for fn in self.args]
        if any(v is None for v in values):
            return
        for n, item in enumerate(path_items(*values), 1):
            if not n & 511:
                ctx.check_cancelled()
            yield (Jsonb(item), n) if self.ordinality else (Jsonb(item),)

    def describe(self) -> str:
        return f"jsonb_path_query({self.text})"


def plan_jsonpath_rows(func: exp.Expression, scope: Scope, env, alias: str, ordinality: bool) -> JsonPathRows:
    args = list(func.expressions) if isinstance(func, exp.Anonymous) else []
    if not 2 <= len(args) <= 4:
        raise ProgrammingError("jsonb_path_query() takes 2 to 4 arguments: target, path [, vars [, silent]]")
    inner = Scope([], scope)  # the arguments see the preceding FROM items one level out
    parts = [compile_typed(a, inner, env) for a in args]
    fns = [jsonb_fn(parts[0], "jsonb_path_query()"), parts[1].fn]
    if len(parts) > 2:
        fns.append(jsonb_fn(parts[2], "jsonb_path_query()"))
    if len(parts) > 3:
        if parts[3].type.kind not in ("BOOL", "NULL"):
            raise ProgrammingError(f"jsonb_path_query(): silent must be BOOL, not {parts[3].type.sql()}")
        fns.append(parts[3].fn)
    if parts[1].type.kind not in ("TEXT", "NULL"):
        raise ProgrammingError(f"jsonb_path_query() needs the path as TEXT, not {parts[1].type.sql()}")
    columns = [Column(alias or "jsonb_path_query", None, JSONB)]
    if ordinality:
        columns.append(Column("ordinality", None, SqlType("INT")))
    return JsonPathRows(fns, columns, ordinality, ", ".join(a.sql() for a in args))
