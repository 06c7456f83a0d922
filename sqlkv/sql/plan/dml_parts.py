"""Planning pieces shared by INSERT, UPDATE and DELETE: the target, checks, defaults, RETURNING.

For ``INSERT INTO t (a) VALUES (1) RETURNING a, b`` the insert planner resolves the target
(`target_table`), then compiles once per SQL text, against the table's scope: the CHECK
constraints (`row_checker`), the DEFAULT expressions (`column_defaults`) and the RETURNING
list (`returning`). The results are the execution-side objects of `sqlkv.sql.exec.write` and
`sqlkv.sql.exec.defaults`, holding only closures.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import GeneratedAlways, ProgrammingError, UndefinedTable
from sqlkv.sql.context import Column, Scope, table_scope
from sqlkv.sql.exec.defaults import Defaults
from sqlkv.sql.exec.insert import DEFAULT
from sqlkv.sql.exec.write import Assignments, Returning, RowChecker
from sqlkv.sql.expr import compile_expr


def target_table(node: exp.Expression, catalog) -> tuple[TableDescriptor, str]:
    """The descriptor and alias of a DML target (``t`` or ``t AS x``)."""
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        shown = node.sql() if isinstance(node, exp.Expression) else repr(node)
        raise ProgrammingError(f"unsupported DML target: {shown}")
    name = table.name
    if table.db:
        name = f"{table.db}.{name}"
    desc = catalog.find_table(name)
    if desc is None:
        if catalog.get_view(name) is not None:
            raise ProgrammingError(f'cannot modify view "{name}"')
        raise UndefinedTable(f'relation "{name}" does not exist')
    if desc.virtual is not None:
        raise ProgrammingError(f'cannot modify virtual table "{name}"')
    alias = table.alias or table.name
    return desc, alias


def is_default(node: exp.Expression) -> bool:
    """The keyword DEFAULT in a VALUES list or a SET clause."""
    return isinstance(node, (exp.Var, exp.Column)) and node.name.upper() == "DEFAULT" and not getattr(node, "table", "")


def refuse_generated_always(table: TableDescriptor, targets: list[int], value_rows: list | None,
                            from_query: bool, overriding: bool = False) -> None:
    """INSERT may give a GENERATED ALWAYS identity column only DEFAULT (PostgreSQL's 428C9),
    unless OVERRIDING SYSTEM VALUE; a generated column only DEFAULT, always."""
    for i, pos in enumerate(targets):
        col = table.columns[pos]
        if (col.identity != "ALWAYS" or overriding) and col.computed is None:
            continue
        if from_query or any(i < len(row) and row[i] is not DEFAULT for row in value_rows or []):
            what = "a generated column" if col.computed is not None else "GENERATED ALWAYS AS IDENTITY"
            hint = "" if col.computed is not None else ", or use OVERRIDING SYSTEM VALUE"
            raise GeneratedAlways(f'cannot insert a non-DEFAULT value into column "{col.name}": it is '
                                  f"{what} (leave it out, or write DEFAULT{hint})")


def row_checker(table: TableDescriptor, alias: str, env) -> RowChecker:
    """The table's CHECK constraints compiled against its scope."""
    scope = Scope(table_scope(table, alias))
    checks = [(chk.name, compile_expr(sqlglot.parse_one(chk.expr_sql), scope, env)) for chk in table.checks]
    generated = [(i, compile_expr(sqlglot.parse_one(c.computed), scope, env))
                 for i, c in enumerate(table.columns) if c.computed is not None]
    return RowChecker(table, checks, generated)


def column_defaults(table: TableDescriptor, env) -> Defaults:
    """Each column's DEFAULT expression compiled (None where the column has none)."""
    empty = Scope([])
    fns = [
        compile_expr(sqlglot.parse_one(col.default_sql), empty, env) if col.default_sql is not None else None
        for col in table.columns
    ]
    return Defaults(table, fns)


def returning(node: exp.Returning | None, table: TableDescriptor, alias: str, env) -> Returning:
    """RETURNING expressions compiled against the table's row (``*`` expands to the columns)."""
    if node is None:
        return Returning()
    scope = Scope(table_scope(table, alias))
    cols: list[Column] = []
    fns: list[Any] = []
    for e in node.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            for i, c in enumerate(table.columns):
                if not c.hidden:
                    cols.append(Column(c.name, alias, c.type))
                    fns.append(lambda r, i=i: r[i])
            continue
        inner = e.this if isinstance(e, exp.Alias) else e
        name = e.alias if isinstance(e, exp.Alias) else (e.name if isinstance(e, exp.Column) else e.sql())
        cols.append(Column(name, None, None))
        fns.append(compile_expr(inner, scope, env))
    return Returning(cols, fns)


def assignments(nodes: list[exp.Expression], table: TableDescriptor, scope: Scope, env,
                defaults: Defaults) -> Assignments:
    """``SET col = expr, ...`` compiled against ``scope`` (DEFAULT takes the column default)."""
    items: list[tuple[int, Any]] = []
    seen = set()
    for node in nodes:
        if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column):
            raise ProgrammingError(f"unsupported SET clause: {node.sql()}")
        col = table.column(node.this.name)
        pos = table.columns.index(col)
        if col.hidden:
            raise ProgrammingError(f'column "{col.name}" cannot be assigned')
        if pos in seen:
            raise ProgrammingError(f'multiple assignments to same column "{col.name}"')
        seen.add(pos)
        value = node.expression
        if (col.identity == "ALWAYS" or col.computed is not None) and not is_default(value):
            what = "a generated column" if col.computed is not None else "GENERATED ALWAYS AS IDENTITY"
            raise GeneratedAlways(f'column "{col.name}" can only be updated to DEFAULT (it is {what})')
        if is_default(value):
            items.append((pos, lambda r, p=pos: defaults.value(p)))
        else:
            items.append((pos, compile_expr(value, scope, env)))
    return Assignments(items)
