"""Table functions in FROM: ``generate_series(start, stop [, step])``, ``unnest(a, ...)`` and
``regexp_split_to_table(s, pattern)`` (arrays: sqlkv/sql/exec/unnest.py).

``SELECT * FROM generate_series(1, 10, 3) AS g(n)`` plans a `Series` operator whose arguments
are compiled against the preceding FROM items' columns (a table function is implicitly
LATERAL, as in PostgreSQL), so ``FROM t, generate_series(1, t.n)`` works. The column is named
after the alias (``g``), else ``generate_series``; its type is the arguments' (INT, DECIMAL or
TIMESTAMP).
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.lateral import Series
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.unnest import plan_regexp_matches, plan_unnest
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.plan.jsonb_functions import jsonb_table_function
from sqlkv.sql.types import SqlType


def plan_table_function(func: exp.Expression, scope: Scope, env, alias: str, ordinality: bool = False) -> Operator:
    name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
    if isinstance(func, exp.GenerateSeries) or name == "generate_series":
        # the arguments see the preceding FROM items one level out, read from the scope's cell
        series = _generate_series(func, Scope([], scope), env, alias)
        if ordinality:  # WITH ORDINALITY: (value, 1), (value, 2), ... as PostgreSQL
            series.columns.append(Column("ordinality", None, SqlType("INT")))
        return series
    jsonb = jsonb_table_function(name, func, scope, env, alias, ordinality)  # issue 15: jsonb_each, ...
    if jsonb is not None:
        return jsonb
    if isinstance(func, exp.Unnest) or name == "unnest":  # sqlkv/sql/exec/unnest.py
        if ordinality and isinstance(func, exp.Unnest) and not func.args.get("offset"):
            func.set("offset", True)
        return plan_unnest(func, Scope([], scope), env, alias)
    if name == "regexp_split_to_table":
        return plan_unnest(_split_call(func), Scope([], scope), env, alias or name)
    if name == "regexp_matches":  # one TEXT[] row per match (sqlkv/sql/expr/arrayfuncs.py)
        return plan_regexp_matches(func, Scope([], scope), env, alias or name, ordinality)
    raise ProgrammingError(f"function {name}() is not a table function "
                           f"(FROM supports generate_series, unnest, regexp_split_to_table, regexp_matches "
                           f"and the jsonb_each/jsonb_array_elements family)")


def _split_call(func: exp.Expression) -> exp.Unnest:
    """regexp_split_to_table(s, p [, flags]) as unnest(regexp_split_to_array(s, p [, flags]))."""
    args = [a.copy() for a in func.expressions] if isinstance(func, exp.Anonymous) else []
    return exp.Unnest(expressions=[exp.Anonymous(this="regexp_split_to_array", expressions=args)])


def _generate_series(func: exp.Expression, scope: Scope, env, alias: str) -> Series:
    if isinstance(func, exp.GenerateSeries):
        args = [func.args.get("start"), func.args.get("end")]
        if func.args.get("step") is not None:
            args.append(func.args["step"])
    else:
        args = list(func.expressions)
    if len(args) not in (2, 3) or any(a is None for a in args):
        raise ProgrammingError("generate_series() takes 2 or 3 arguments: start, stop [, step]")
    parts = [compile_typed(a, scope, env) for a in args]
    kinds = {p.type.kind for p in parts[:2]} - {"NULL"}
    if kinds <= {"INT"}:
        typ = SqlType("INT")
    elif kinds <= {"INT", "DECIMAL"}:
        typ = SqlType("DECIMAL")
    elif kinds <= {"DATE", "TIMESTAMP", "TEXT"}:
        typ = SqlType("TIMESTAMP")
        if len(parts) != 3:
            raise ProgrammingError("generate_series() over timestamps needs an INTERVAL step")
    else:
        raise ProgrammingError(f"generate_series() does not take {', '.join(sorted(kinds))} arguments")
    if typ.kind == "TIMESTAMP":
        parts = [compile_typed(exp.cast(a, "TIMESTAMP"), scope, env) for a in args[:2]] + parts[2:]
    step = parts[2].fn if len(parts) == 3 else None
    text = ", ".join(a.sql() for a in args)
    return Series(parts[0].fn, parts[1].fn, step, Column(alias or "generate_series", None, typ), text)
