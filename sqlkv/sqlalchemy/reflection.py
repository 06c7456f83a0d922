"""Reflection: what ``inspect(engine)`` and ``MetaData.reflect()`` read, from sqlkv's catalog.

Every answer is one query on an ``information_schema`` virtual table (`sqlkv.sql.virtual`) with
``WHERE table_name = ?``, which the planner pushes into the virtual scan, so reflecting one table
never walks the others. sqlkv has one unnamed schema: a ``schema=`` argument is refused.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlalchemy import exc, text, util
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import reflection

from sqlkv.sqlalchemy.compiler import BYTES

# information_schema.columns.data_type -> SQLAlchemy type (INT is sqlkv's 64-bit integer)
_TYPES: dict[str, Any] = {
    "INT": sqltypes.INTEGER,
    "FLOAT": sqltypes.FLOAT,
    "DECIMAL": sqltypes.NUMERIC,
    "TEXT": sqltypes.TEXT,
    "VARCHAR": sqltypes.VARCHAR,
    "CHAR": sqltypes.CHAR,
    "BOOL": sqltypes.BOOLEAN,
    "BYTES": BYTES,
    "DATE": sqltypes.DATE,
    "TIMESTAMP": sqltypes.TIMESTAMP,
    "TIMESTAMPTZ": functools.partial(sqltypes.TIMESTAMP, timezone=True),
    "INT2": sqltypes.SMALLINT,
    "INT4": sqltypes.INTEGER,
}
_TYPE_SQL = re.compile(r"^(\w+)(?:\((\d+)(?:,\s*(\d+))?\))?$")


def reflected_type(data_type: str) -> Any:
    """``DECIMAL(10,2)`` -> NUMERIC(10, 2); an unknown name is NullType, with a warning."""
    match = _TYPE_SQL.match(data_type.strip())
    cls = _TYPES.get(match.group(1).upper()) if match else None
    if cls is None:
        util.warn(f"sqlkv type {data_type!r} has no SQLAlchemy equivalent here; reflected as NullType")
        return sqltypes.NULLTYPE
    args = [int(a) for a in match.groups()[1:] if a is not None]
    return cls(*args)


def _refuse_schema(schema: str | None) -> None:
    if schema is not None:
        raise NotImplementedError(f"sqlkv has one unnamed schema; schema={schema!r} is not supported")


class ReflectionMixin:
    """The ``get_*`` methods of `SqlkvDialect` (a mixin over DefaultDialect)."""

    def _rows(self, connection: Any, sql: str, **params: Any) -> list[Any]:
        return connection.execute(text(sql), params).fetchall()

    def _require_table(self, connection: Any, table_name: str, schema: str | None) -> None:
        if not self.has_table(connection, table_name, schema):
            raise exc.NoSuchTableError(table_name)

    @reflection.cache
    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        if schema is not None:
            return False  # sqlkv has no named schemas, so none holds a table
        return bool(self._rows(connection, "SELECT 1 FROM information_schema.tables WHERE table_name = :t",
                               t=table_name))

    @reflection.cache
    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._names_of_type(connection, "BASE TABLE", schema)

    @reflection.cache
    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        return self._names_of_type(connection, "VIEW", schema)

    def _names_of_type(self, connection: Any, table_type: str, schema: str | None) -> list[str]:
        _refuse_schema(schema)
        rows = self._rows(connection, "SELECT table_name FROM information_schema.tables WHERE table_type = :k "
                                      "ORDER BY table_name", k=table_type)
        return [r[0] for r in rows]

    @reflection.cache
    def get_columns(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[dict]:
        _refuse_schema(schema)
        rows = self._rows(
            connection,
            "SELECT column_name, data_type, is_nullable, column_default, is_identity FROM information_schema.columns "
            "WHERE table_name = :t AND NOT is_hidden ORDER BY ordinal_position", t=table_name)
        if not rows:
            if table_name in self.get_view_names(connection, schema, **kw):
                return self._view_columns(connection, table_name)
            self._require_table(connection, table_name, schema)
        return [
            {
                "name": name,
                "type": reflected_type(data_type),
                "nullable": nullable == "YES",
                "default": default,
                "autoincrement": identity == "YES",
            }
            for name, data_type, nullable, default, identity in rows
        ]

    def _view_columns(self, connection: Any, view_name: str) -> list[dict]:
        """A view's columns are known once its query is planned: ask for its (empty) result."""
        quoted = self.identifier_preparer.quote_identifier(view_name)
        description = connection.exec_driver_sql(f"SELECT * FROM {quoted} LIMIT 0").cursor.description
        return [
            {"name": d[0], "type": reflected_type(d[1]) if d[1] else sqltypes.NULLTYPE, "nullable": True,
             "default": None, "autoincrement": False}
            for d in description
        ]

    @reflection.cache
    def get_view_definition(self, connection: Any, view_name: str, schema: str | None = None, **kw: Any) -> str:
        _refuse_schema(schema)
        rows = self._rows(connection, "SELECT view_definition FROM information_schema.views WHERE table_name = :v",
                          v=view_name)
        if not rows:
            raise exc.NoSuchTableError(view_name)
        return rows[0][0]

    def _index_columns(self, connection: Any, table_name: str) -> dict[str, list[tuple]]:
        rows = self._rows(
            connection,
            "SELECT index_name, column_name, is_descending, is_storing FROM information_schema.index_columns "
            "WHERE table_name = :t ORDER BY index_name, ordinal_position", t=table_name)
        by_index: dict[str, list[tuple]] = {}
        for index_name, column, descending, storing in rows:
            by_index.setdefault(index_name, []).append((column, descending, storing))
        return by_index

    def _index_rows(self, connection: Any, table_name: str, schema: str | None) -> list[tuple]:
        _refuse_schema(schema)
        rows = self._rows(connection, "SELECT index_name, is_unique, is_primary, predicate FROM "
                                      "information_schema.indexes WHERE table_name = :t ORDER BY index_name",
                          t=table_name)
        if not rows:
            self._require_table(connection, table_name, schema)
        return rows

    @reflection.cache
    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        primary = [r[0] for r in self._index_rows(connection, table_name, schema) if r[2]]
        visible = {c["name"] for c in self.get_columns(connection, table_name, schema, **kw)}
        columns = [c for c, _d, storing in self._index_columns(connection, table_name).get(primary[0], [])
                   if not storing] if primary else []
        if not columns or not set(columns) <= visible:  # no declared key: the hidden rowid
            return {"constrained_columns": [], "name": None}
        return {"constrained_columns": columns, "name": primary[0]}

    @reflection.cache
    def get_indexes(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> list[dict]:
        columns = self._index_columns(connection, table_name)
        out = []
        for name, unique, primary, predicate in self._index_rows(connection, table_name, schema):
            if primary:
                continue
            keys = [(c, d) for c, d, storing in columns[name] if not storing]
            index: dict[str, Any] = {
                "name": name,
                "column_names": [c for c, _d in keys],
                "unique": bool(unique),
                "dialect_options": {},
            }
            sorting = {c: ("desc",) for c, d in keys if d}
            if sorting:
                index["column_sorting"] = sorting
            storing = [c for c, _d, storing in columns[name] if storing]
            if storing:  # STORING columns: PostgreSQL's INCLUDE, under the same option name
                index["dialect_options"]["sqlkv_include"] = storing
            if predicate is not None:
                index["dialect_options"]["sqlkv_where"] = predicate
            elif unique:
                # sqlkv keeps UNIQUE constraints as unique indexes: reflect them once, as constraints
                index["duplicates_constraint"] = name
            out.append(index)
        return out

    @reflection.cache
    def get_unique_constraints(self, connection: Any, table_name: str, schema: str | None = None,
                               **kw: Any) -> list[dict]:
        return [
            {"name": i["name"], "column_names": i["column_names"]}
            for i in self.get_indexes(connection, table_name, schema, **kw)
            if i.get("duplicates_constraint")
        ]

    @reflection.cache
    def get_check_constraints(self, connection: Any, table_name: str, schema: str | None = None,
                              **kw: Any) -> list[dict]:
        _refuse_schema(schema)
        rows = self._rows(connection, "SELECT constraint_name, check_clause FROM information_schema.check_constraints "
                                      "WHERE table_name = :t ORDER BY constraint_name", t=table_name)
        if not rows:
            self._require_table(connection, table_name, schema)
        return [{"name": name, "sqltext": clause} for name, clause in rows]

    @reflection.cache
    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None,
                         **kw: Any) -> list[dict]:
        self._require_table(connection, table_name, schema)
        return []  # sqlkv has no foreign keys yet
