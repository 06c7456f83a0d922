"""Planning pieces shared by INSERT, UPDATE and DELETE: the target, checks, defaults, RETURNING.

For ``INSERT INTO t (a) VALUES (1) RETURNING a, b`` the insert planner resolves the target
(`target_table`), then compiles once per SQL text, against the table's scope: the CHECK
constraints (`row_checker`), the DEFAULT expressions (`column_defaults`) and the RETURNING
list (`returning`). The results are the execution-side objects of `sqlkv.sql.exec.write` and
`sqlkv.sql.exec.defaults`, holding only closures.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import GeneratedAlways, ProgrammingError, SqlSyntaxError, UndefinedColumn, UndefinedTable
from sqlkv.sql.context import Column, Scope, table_scope
from sqlkv.sql.exec.defaults import Defaults
from sqlkv.sql.exec.insert import DEFAULT
from sqlkv.sql.exec.write import Assignments, Returning, RowChecker
from sqlkv.sql.plan.array_assign import element_assignment, element_target, is_element_target
from sqlkv.sql.expr import (
    compile_for_column,
    compile_row_subquery,
    compile_schema_expr,
    compile_typed,
)
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


def target_table(node: exp.Expression, catalog) -> tuple[TableDescriptor, str]:
    """The descriptor and alias of a DML target (``t`` or ``t AS x``)."""
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(node, exp.Expression):  # `DELETE @ FROM t`: sqlglot read no target at all
        raise SqlSyntaxError("syntax error: no table to write to (expected DELETE FROM t, UPDATE t "
                             "or INSERT INTO t)")
    if not isinstance(table, exp.Table):
        raise ProgrammingError(f"unsupported DML target: {node.sql()}")
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
    checks = [(chk.name, compile_schema_expr(parse_expression(chk.expr_sql), scope, env)) for chk in table.checks]
    generated = [(i, compile_schema_expr(parse_expression(c.computed), scope, env))
                 for i, c in enumerate(table.columns) if c.computed is not None]
    return RowChecker(table, checks, generated)


def column_defaults(table: TableDescriptor, env) -> Defaults:
    """Each column's DEFAULT expression compiled (None where the column has none)."""
    empty = Scope([])
    fns = [
        compile_for_column(parse_expression(col.default_sql), col.type, empty, env)
        if col.default_sql is not None else None
        for col in table.columns
    ]
    return Defaults(table, fns)


def returning(node: exp.Returning | None, table: TableDescriptor, alias: str, env,
              scope: Scope | None = None) -> Returning:
    """RETURNING expressions compiled against the table's row (``*`` expands to the columns), or
    against ``scope`` -- the target row followed by UPDATE ... FROM's other tables' columns."""
    if node is None:
        return Returning()
    scope = scope or Scope(table_scope(table, alias))
    cols: list[Column] = []
    fns: list[Any] = []
    for e in node.expressions:
        qualifier = e.table if isinstance(e, exp.Column) and isinstance(e.this, exp.Star) else ""
        if qualifier and qualifier.lower() not in (alias.lower(), table.name.lower()):
            # u.* of UPDATE ... FROM u: that table's columns from the joined row
            width = len(table.columns)
            found = [(i, c) for i, c in enumerate(scope.columns[width:], width)
                     if (c.table or "").lower() == qualifier.lower() and not c.hidden]
            if not found:
                raise ProgrammingError(f'missing FROM-clause entry for table "{qualifier}"')
            for i, c in found:
                cols.append(Column(c.name, c.table, c.type))
                fns.append(lambda r, i=i: r[i])
            continue
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            for i, c in enumerate(table.columns):
                if not c.hidden:
                    cols.append(Column(c.name, alias, c.type))
                    fns.append(lambda r, i=i: r[i])
            continue
        inner = e.this if isinstance(e, exp.Alias) else e
        name = e.alias if isinstance(e, exp.Alias) else (e.name if isinstance(e, exp.Column) else e.sql())
        compiled = compile_typed(inner, scope, env)
        cols.append(Column(name, None, compiled.type if compiled.type.tz else None))  # TIMESTAMPTZ: zoned
        fns.append(compiled.fn)
    return Returning(cols, fns)


def assignments(nodes: list[exp.Expression], table: TableDescriptor, scope: Scope, env,
                defaults: Defaults, alias: str | None = None) -> Assignments:
    """``SET col = expr, (a, b) = (x, y), (c, d) = (SELECT ...)`` compiled against ``scope``
    (DEFAULT takes the column default). A qualified target must name the table (or ``alias``)."""
    items: list[tuple[int, Any]] = []
    seen: set[int] = set()
    elements: dict[int, int] = {}  # column position -> its item, for SET a[1] = x, a[2] = y
    for node in nodes:
        if not isinstance(node, exp.EQ):
            raise ProgrammingError(f"unsupported SET clause: {node.sql()}")
        if is_element_target(node.this):  # SET tags[3] = 'x' (sqlkv/sql/plan/array_assign.py)
            target, index = element_target(node.this)
            pos, col = _set_column(target, table, alias, seen - set(elements))
            earlier = items[elements[pos]][1] if pos in elements else None
            fn = element_assignment(col, pos, index, node.expression, scope, env, earlier)
            if pos in elements:
                items[elements[pos]] = (pos, fn)
            else:
                elements[pos] = len(items)
                items.append((pos, fn))
            continue
        targets = _set_targets(node.this)
        if any(table.columns.index(table.column(t.name)) in elements for t in targets):
            raise ProgrammingError(f"multiple assignments to same column: {node.this.sql()}")
        cols = [_set_column(t, table, alias, seen) for t in targets]
        value = node.expression
        if isinstance(node.this, exp.Column):
            values: list[exp.Expression] = [value]
        elif isinstance(value, exp.Subquery):
            for _pos, col in cols:
                _refuse_generated(col, value)
            row_of = compile_row_subquery(value, len(cols), scope, env)
            for k, (pos, _col) in enumerate(cols):
                # the first target's closure runs the subquery; the others read what it got
                items.append((pos, _row_item(row_of, k)))
            continue
        else:
            values = _set_values(value, len(cols))
        for (pos, col), v in zip(cols, values):
            _refuse_generated(col, v)
            if is_default(v):
                items.append((pos, lambda r, p=pos: defaults.value(p)))
            else:
                items.append((pos, compile_for_column(v, col.type, scope, env)))
    return Assignments(items)


def _refuse_generated(col: Any, value: exp.Expression) -> None:
    """A generated column or a GENERATED ALWAYS identity may only be SET to DEFAULT."""
    if (col.identity == "ALWAYS" or col.computed is not None) and not is_default(value):
        what = "a generated column" if col.computed is not None else "GENERATED ALWAYS AS IDENTITY"
        raise GeneratedAlways(f'column "{col.name}" can only be updated to DEFAULT (it is {what})')


def _set_targets(node: exp.Expression) -> list[exp.Column]:
    if isinstance(node, exp.Paren):
        node = exp.Tuple(expressions=[node.this])
    items = node.expressions if isinstance(node, exp.Tuple) else [node]
    for t in items:
        if not isinstance(t, exp.Column):
            raise ProgrammingError(f"unsupported SET target: {t.sql()}")
    return items


def _set_column(target: exp.Column, table: TableDescriptor, alias: str | None, seen: set[int]):
    qualifier = target.table
    if qualifier and qualifier.lower() not in {table.name.lower(), (alias or table.name).lower()}:
        raise UndefinedColumn(f'column "{qualifier}.{target.name}" of relation "{table.name}" does not exist '
                               f'(a SET target is qualified only by the table being updated)')
    col = table.column(target.name)
    pos = table.columns.index(col)
    if col.hidden:
        raise ProgrammingError(f'column "{col.name}" cannot be assigned')
    if pos in seen:
        raise ProgrammingError(f'multiple assignments to same column "{col.name}"')
    seen.add(pos)
    return pos, col


def _set_values(value: exp.Expression, n: int) -> list[exp.Expression]:
    if isinstance(value, exp.Paren):
        items = [value.this]
    elif isinstance(value, exp.Tuple):
        items = list(value.expressions)
    elif n == 1:
        items = [value]
    else:
        raise ProgrammingError(f"source for a multiple-column UPDATE item must be a sub-SELECT or "
                               f"ROW() expression: {value.sql()[:60]}")
    if len(items) != n:
        raise ProgrammingError(f"number of columns does not match number of values ({n} and {len(items)})")
    return items


def _row_item(row_of, k: int):
    state: list = [None, None]  # the source row last seen, its subquery row

    def value(r: tuple) -> object:
        if state[0] is not r:
            state[0], state[1] = r, row_of(r)
        return state[1][k]

    return value
