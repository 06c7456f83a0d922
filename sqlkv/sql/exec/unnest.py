"""``unnest(a [, b ...]) [WITH ORDINALITY]`` in FROM: one row per array element.

``SELECT * FROM t, unnest(t.tags) WITH ORDINALITY AS u(tag, n)`` plans an `Unnest` whose array
arguments are compiled against the preceding FROM items (a table function is implicitly
LATERAL), so each row of ``t`` gives one row per tag, numbered from 1. Several arrays are zipped,
the shorter ones padded with NULLs (PostgreSQL's multi-argument unnest); a NULL array has no
elements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import zip_longest
from typing import Any

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.arraycasts import array_of, as_array, element_type, is_array
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.expr.arrayfuncs import regexp_matches_rows
from sqlkv.sql.types import INT, TEXT

RowFn = Callable[[tuple], Any]


class Unnest(Operator):
    """The elements of one or more arrays as rows (zipped), optionally numbered."""

    def __init__(self, arrays: list[RowFn], columns: list[Column], ordinality: bool, text: str) -> None:
        self.arrays = arrays
        self.columns = columns
        self.ordinality = ordinality
        self.text = text

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        empty: tuple = ()
        values = []
        for fn in self.arrays:
            v = fn(empty)
            values.append(() if v is None else as_array(v, "the argument of unnest()").items)
        for n, row in enumerate(zip_longest(*values), 1):
            yield row + (n,) if self.ordinality else row

    def describe(self) -> str:
        return f"unnest({self.text}){' with ordinality' if self.ordinality else ''}"


def plan_regexp_matches(func: exp.Expression, scope: Scope, env: Any, alias: str, ordinality: bool) -> Unnest:
    """``regexp_matches(s, re [, flags])`` in FROM: a TEXT[] row per match (all of them with flag g)."""
    args = list(func.expressions) if isinstance(func, exp.Anonymous) else []
    if len(args) not in (2, 3):
        raise ProgrammingError("regexp_matches() takes 2 or 3 arguments: string, pattern [, flags]")
    parts = [compile_typed(a, scope, env) for a in args]
    for i, p in enumerate(parts, 1):
        if p.type.known and p.type.kind != "TEXT":
            raise ProgrammingError(f"regexp_matches() argument {i} must be TEXT, not type {p.type.sql()}")
    fns = [p.fn for p in parts]

    def matches(r: tuple) -> object:
        values = [f(r) for f in fns]
        return None if any(v is None for v in values) else regexp_matches_rows(*values)

    columns = [Column(alias, None, array_of(TEXT))]
    if ordinality:
        columns.append(Column("ordinality", None, INT))
    return Unnest([matches], columns, ordinality, ", ".join(a.sql() for a in args))


def plan_unnest(func: exp.Unnest | exp.Anonymous, scope: Scope, env: Any, alias: str) -> Unnest:
    """The `Unnest` operator of a FROM item; columns named after the alias (one array) or ``unnest``."""
    args = list(func.expressions)
    if not args:
        raise ProgrammingError("unnest() needs at least one array argument")
    parts = [compile_typed(a, scope, env) for a in args]
    for i, p in enumerate(parts, 1):
        if p.type.known and not is_array(p.type):
            raise ProgrammingError(f"unnest() argument {i} must be an array, not type {p.type.sql()}")
    offset = func.args.get("offset") if isinstance(func, exp.Unnest) else None
    name = alias if alias and len(parts) == 1 else "unnest"
    columns = [Column(name, None, element_type(p.type)) for p in parts]
    if offset:
        columns.append(Column(offset.name if isinstance(offset, exp.Identifier) else "ordinality", None, INT))
    return Unnest([p.fn for p in parts], columns, bool(offset), ", ".join(a.sql() for a in args))
