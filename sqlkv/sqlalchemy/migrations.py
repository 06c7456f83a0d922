"""Alembic support: the migration "impl" Alembic looks up by dialect name.

Imported by `sqlkv.sqlalchemy.base` when Alembic is installed. sqlkv's DDL is transactional
(a table created in a rolled-back transaction never existed), so a failed migration leaves
nothing behind.
"""

from __future__ import annotations

from alembic.ddl.impl import DefaultImpl


class SqlkvImpl(DefaultImpl):
    __dialect__ = "sqlkv"
    transactional_ddl = True
