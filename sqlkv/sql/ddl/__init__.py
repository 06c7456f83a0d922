"""DDL: CREATE/DROP TABLE, CREATE/DROP INDEX (with backfill), ALTER TABLE, CREATE/DROP VIEW.

``CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE)`` is turned by `create_table`
(tables.py) into a `TableDescriptor`: columns get ids 1, 2; the primary index ``users_pkey``
(id 1) holds ``id``; the column-level UNIQUE becomes the unique secondary index
``users_email_key`` (id 2). A table without a PRIMARY KEY gets a hidden, auto-assigned
``rowid`` column as its key; a single INT primary-key column auto-assigns max+1 when omitted
(like SQLite's INTEGER PRIMARY KEY). The descriptor is written through the `Catalog` in the
statement's transaction, so DDL is transactional: a ROLLBACK makes the table vanish.

``CREATE UNIQUE INDEX ... ON users (name)`` (indexes.py) writes the descriptor and backfills
one entry per existing row in the same transaction; a duplicate raises IntegrityError and the
statement's savepoint removes every entry written so far. ``ADD COLUMN`` (alter.py) with a
non-NULL DEFAULT rewrites each row's family-0 value (a backfill); without a default nothing is
rewritten (absent = NULL). DROP and CREATE VIEW are in views.py, names and the clauses DDL
refuses in names.py, CREATE TABLE ... AS in create_as.py.
"""

from __future__ import annotations

from sqlkv.errors import NotSupportedError
from sqlkv.sql.ddl.alter import alter_table
from sqlkv.sql.ddl.create_as import create_table_as
from sqlkv.sql.ddl.indexes import create_index
from sqlkv.sql.ddl.sequences import create_sequence, drop_sequence
from sqlkv.sql.ddl.tables import create_table
from sqlkv.sql.ddl.views import create_view, drop
from sqlkv.sql.parse import ParsedStatement


def execute_ddl(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    kind = stmt.kind
    if kind == "CREATE TABLE" and ast.expression is not None:  # CREATE TABLE ... AS query
        create_table_as(ast, catalog, env)
    elif kind == "CREATE TABLE":
        create_table(stmt, catalog, env)
    elif kind == "CREATE INDEX":
        create_index(stmt, catalog, env)
    elif kind == "CREATE VIEW":
        create_view(ast, catalog, env)
    elif kind == "CREATE SEQUENCE":
        create_sequence(ast, catalog, env)
    elif kind == "DROP SEQUENCE":
        drop_sequence(ast, catalog)
    elif kind.startswith("DROP "):
        drop(ast, catalog, env)
    elif kind == "ALTER TABLE":
        alter_table(ast, catalog, env)
    else:
        raise NotSupportedError(f"unsupported statement: {kind}")
