"""Planning the set-returning JSONB functions in FROM (issue 15); the operator is
`sqlkv.sql.exec.jsonb_rows.JsonbRows`. ``json_*`` spellings are the same functions (JSON is
JSONB in sqlkv)."""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.jsonb_rows import EXPANSIONS, JsonbRows
from sqlkv.sql.exec.jsonpath_rows import JsonPathRows, plan_jsonpath_rows
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.expr.jsonb import jsonb_fn
from sqlkv.sql.types import SqlType


def jsonb_table_function(name: str, func: exp.Expression, scope: Scope, env, alias: str,
                         ordinality: bool) -> JsonbRows | JsonPathRows | None:
    """The JsonbRows for ``name(arg)``, or None when ``name`` is no JSONB set-returning function."""
    if name.startswith("json_"):
        name = "jsonb_" + name[len("json_"):]
    if name == "jsonb_path_query":  # SQL/JSON path (exec/jsonpath_rows.py)
        return plan_jsonpath_rows(func, scope, env, alias, ordinality)
    if name not in EXPANSIONS:
        return None
    args = list(func.expressions) if isinstance(func, exp.Anonymous) else [func.this]
    if len(args) != 1 or args[0] is None:
        raise ProgrammingError(f"{name}() takes one JSONB argument")
    part = compile_typed(args[0], Scope([], scope), env)
    arg = jsonb_fn(part, f"{name}()")
    columns = [Column(col_name or alias or name, None, SqlType(kind)) for col_name, kind in EXPANSIONS[name][1]]
    if ordinality:
        columns.append(Column("ordinality", None, SqlType("INT")))
    return JsonbRows(name, arg, columns, ordinality, args[0].sql())
