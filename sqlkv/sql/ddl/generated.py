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

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.ddl.indexes import immutable_expression


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
        node = sqlglot.parse_one(col.computed)
        for ref in node.find_all(sqlglot.exp.Column):
            used = table.find_column(ref.name)
            if used is not None and used.computed is not None:
                raise ProgrammingError(f'a generation expression cannot use generated column "{used.name}" ({where})')
        col.computed, _type = immutable_expression(node, table, env, "a generation expression", where)


def uses_column(table: TableDescriptor, column: str) -> str | None:
    """The name of a generated column whose expression uses ``column``, if any."""
    for col in table.columns:
        if col.computed is not None and any(
                c.name.lower() == column.lower() for c in sqlglot.parse_one(col.computed).find_all(sqlglot.exp.Column)):
            return col.name
    return None
