"""Alembic support: the migration "impl" Alembic looks up by dialect name.

Imported by `sqlkv.sqlalchemy.base` when Alembic is installed. sqlkv's DDL is transactional
(a table created in a rolled-back transaction never existed), so a failed migration leaves
nothing behind. ``alter_column`` speaks PostgreSQL's ALTER TABLE (TYPE, SET/DROP NOT NULL,
SET/DROP DEFAULT, RENAME a TO b), which sqlkv runs; comments are refused (sqlkv stores none).
"""

from __future__ import annotations

from typing import Any

from alembic.ddl.base import ColumnComment
from alembic.ddl.impl import DefaultImpl
from sqlalchemy import exc
from sqlalchemy.ext.compiler import compiles


class SqlkvImpl(DefaultImpl):
    __dialect__ = "sqlkv"
    transactional_ddl = True
    # INTEGER and BIGINT are both sqlkv's 64-bit INT (reflected as INTEGER): autogenerate must
    # not see a BigInteger column as changed
    type_synonyms = DefaultImpl.type_synonyms + ({"INTEGER", "BIGINT"},)


@compiles(ColumnComment, "sqlkv")
def _refuse_column_comment(element: Any, compiler: Any, **kw: Any) -> str:
    raise exc.CompileError(f'sqlkv stores no comments: cannot comment column "{element.column_name}" of table '
                           f'"{element.table_name}"')
