"""Generated (computed) columns in DDL: what CREATE TABLE / ALTER TABLE accept.

``total INT GENERATED ALWAYS AS (price * qty) STORED`` (or ``AS (...) STORED``) is a column
whose value the row writer computes from the row (`sqlkv.sql.exec.write.RowChecker`) and
stores like any other; ``VIRTUAL`` (the default, as in SQLite and MySQL) is never stored: the
row codec computes it whenever a row is decoded (`sqlkv.sql.rowstore.codec`). Either kind can
be indexed: the index entry holds the computed value. The expression must be immutable and
use only non-generated columns of its own table (PostgreSQL's rules); a generated column has
no DEFAULT, is not part of the primary key and is not written by INSERT or UPDATE.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from sqlkv.catalog.descriptors import ColumnDescriptor, TableDescriptor
from sqlkv.errors import DatatypeMismatch, NotSupportedError, ProgrammingError
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.types import common_type
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


# functions whose value changes between calls: a partial index's predicate must not use them
_VOLATILE = ("now", "rand", "current_", "localtime", "clock_timestamp", "gen_random", "uuid", "nextval", "currval",
             "lastval", "setval")


def immutable_expression(node: exp.Expression, table: TableDescriptor, env, what: str, where: str) -> tuple:
    """(SQL text, static type) of an expression stored in the schema -- a partial index's
    predicate, a generated column, an index expression: immutable, no subquery or
    parameter, over this table's columns only (qualifiers are dropped)."""
    for n in node.walk():
        if isinstance(n, (exp.Select, exp.Subquery, exp.Exists)):
            raise NotSupportedError(f"{what} cannot contain a subquery ({where})")
        if isinstance(n, (exp.Placeholder, exp.Parameter)):
            raise ProgrammingError(f"{what} cannot contain parameters ({where})")
        if isinstance(n, exp.Func):
            fname = (n.sql_name() if not isinstance(n, exp.Anonymous) else str(n.this)).lower()
            if fname.startswith(_VOLATILE):
                raise ProgrammingError(f"functions in {what} must be immutable: {n.sql()} ({where})")
        if isinstance(n, exp.Column):
            if n.table:
                n.set("table", None)  # t.a: the index's own table is the only one in scope
            table.column(n.name)
    compiled = compile_typed(node, Scope(table_scope(table, table.name)), env)  # unknown functions, type errors
    return node.sql(), compiled.type


def check_generated_columns(table: TableDescriptor, env) -> None:
    """Validate every generated column of ``table`` (a new or changed descriptor)."""
    for col in table.columns:
        if col.computed is None:
            continue
        where = f'column "{col.name}" of table "{table.name}"'
        if col.default_sql is not None or col.identity is not None:
            raise ProgrammingError(f"a generated column cannot have a DEFAULT or be an identity ({where})")
        if col.id in table.primary_index.column_ids:
            raise NotSupportedError(f"a generated column cannot be part of the primary key ({where})")
        node = parse_expression(col.computed)
        for ref in node.find_all(sqlglot.exp.Column):
            used = table.find_column(ref.name)
            if used is not None and used.computed is not None:
                raise ProgrammingError(f'a generation expression cannot use generated column "{used.name}" ({where})')
        col.computed, typ = immutable_expression(node, table, env, "a generation expression", where)
        if typ is not None and typ.known and common_type(typ, col.type) is None:
            # found now, not at the first INSERT (PostgreSQL: no assignment cast between them)
            raise DatatypeMismatch(f'column "{col.name}" is of type {col.type.sql()} but its generation '
                                   f"expression is of type {typ.sql()} ({where})")


def uses_column(table: TableDescriptor, column: str) -> str | None:
    """What uses ``column`` in an expression: 'generated column "g"' or 'index expression
    lower(email)'; None when nothing does."""
    for col in table.columns:
        if col.computed is not None and any(
                c.name.lower() == column.lower() for c in parse_expression(col.computed).find_all(exp.Column)):
            return f"index expression {col.computed}" if col.hidden else f'generated column "{col.name}"'
    return None


EXPRESSION_COLUMN_PREFIX = "sqlkv_idx_expr_"


def expression_column(table: TableDescriptor, node: exp.Expression, env) -> ColumnDescriptor:
    """The hidden VIRTUAL column an index expression (``lower(email)``) is stored through, as
    CockroachDB does: an existing one with the same expression, else a new one on ``table``.
    The planner matches a query's ``lower(email)`` to it (`sqlkv.sql.plan.expression_index`)."""
    where = f'index on "{table.name}"'
    for n in node.walk():
        if isinstance(n, exp.Column):
            used = table.find_column(n.name)
            if used is not None and used.computed is not None and used.hidden:
                raise ProgrammingError(f"an index expression cannot use another index expression ({where})")
    text, typ = immutable_expression(node, table, env, "an index expression", where)
    if typ is None or not typ.known:
        raise ProgrammingError(f"the type of index expression {text} is unknown; add a CAST ({where})")
    for col in table.columns:
        if col.hidden and col.computed == text:
            return col
    n = 1
    while table.find_column(f"{EXPRESSION_COLUMN_PREFIX}{n}") is not None:
        n += 1
    col = ColumnDescriptor(table.next_column_id, f"{EXPRESSION_COLUMN_PREFIX}{n}", typ, hidden=True, computed=text,
                           virtual=True)
    table.next_column_id += 1
    table.columns.append(col)
    return col


def drop_unused_expression_columns(table: TableDescriptor) -> None:
    """After DROP INDEX: the hidden expression columns no index uses any more go too."""
    used = {cid for idx in table.all_indexes() for cid in (*idx.column_ids, *idx.storing)}
    table.columns = [c for c in table.columns if not (c.hidden and c.computed is not None and c.id not in used)]
