"""Reflection: what ``inspect(engine)`` and ``MetaData.reflect()`` read, from sqlkv's catalog.

Every answer is one query on an ``information_schema`` virtual table (`sqlkv.sql.virtual`) with
``WHERE table_name = ?``, which the planner pushes into the virtual scan, so reflecting one table
never walks the others. sqlkv has one unnamed schema: a ``schema=`` argument is refused.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from sqlalchemy import exc, text, util
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import reflection

from sqlkv.sqlalchemy.compiler import BYTES, INTERVAL

# information_schema.columns.data_type -> SQLAlchemy type (INT is sqlkv's 64-bit integer)
_TYPES: dict[str, Any] = {
    "INT": sqltypes.INTEGER,
    "INT2": sqltypes.SMALLINT,
    "INT4": sqltypes.INTEGER,
    "FLOAT": sqltypes.FLOAT,
    "DECIMAL": sqltypes.NUMERIC,
    "TEXT": sqltypes.TEXT,
    "VARCHAR": sqltypes.VARCHAR,
    "CHAR": sqltypes.CHAR,
    "BOOL": sqltypes.BOOLEAN,
    "BYTES": BYTES,
    "DATE": sqltypes.DATE,
    "TIMESTAMP": sqltypes.TIMESTAMP,
    "TIME": sqltypes.TIME,
    "UUID": sqltypes.UUID,
    "JSONB": sqltypes.JSON,  # issue 15: JSON is an alias of JSONB
    "INTERVAL": INTERVAL,
    "TIMESTAMPTZ": functools.partial(sqltypes.TIMESTAMP, timezone=True),
}
_TYPE_SQL = re.compile(r"^(\w+)(?:\((\d+)(?:,\s*(\d+))?\))?$")


def reflected_type(data_type: str) -> Any:
    """``DECIMAL(10,2)`` -> NUMERIC(10, 2), ``TEXT[]`` -> ARRAY(TEXT); an unknown name is
    NullType, with a warning."""
    if data_type.strip().endswith("[]"):
        return sqltypes.ARRAY(reflected_type(data_type.strip()[:-2]))
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
    def get_sequence_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        """Every sequence, the ones identity columns own included (as PostgreSQL lists them)."""
        return self._names_of_type(connection, "SEQUENCE", schema)

    @reflection.cache
    def has_sequence(self, connection: Any, sequence_name: str, schema: str | None = None, **kw: Any) -> bool:
        if schema is not None:
            return False
        return bool(self._rows(connection, "SELECT 1 FROM information_schema.tables WHERE table_name = :s AND "
                                           "table_type = 'SEQUENCE'", s=sequence_name))

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
            "SELECT column_name, data_type, is_nullable, column_default, is_identity, generation_expression, "
            "identity_generation FROM information_schema.columns WHERE table_name = :t AND NOT is_hidden "
            "ORDER BY ordinal_position", t=table_name)
        if not rows:
            if table_name in self.get_view_names(connection, schema, **kw):
                return self._view_columns(connection, table_name)
            self._require_table(connection, table_name, schema)
        extras = self._generated_and_identity(connection, table_name) if any(r[5] or r[6] for r in rows) else {}
        columns = []
        for name, data_type, nullable, default, identity, _expression, _generation in rows:
            column = {"name": name, "type": reflected_type(data_type), "nullable": nullable == "YES",
                      "default": default, "autoincrement": identity == "YES"}
            columns.append({**column, **extras.get(name, {})})
        return columns

    def _generated_and_identity(self, connection: Any, table_name: str) -> dict[str, dict]:
        """``computed`` and ``identity`` entries of get_columns, from the table's descriptor (and
        its identity sequences' descriptors: their start, increment, bounds and cycle)."""
        descriptors = {
            name: json.loads(text_)
            for name, text_ in self._rows(connection, "SELECT name, descriptor FROM sqlkv_internal.descriptors "
                                                      "WHERE name = :t OR kind = 'sequence'", t=table_name)
        }
        table = descriptors[table_name]
        sequences = {tuple(d["owner"]): d for d in descriptors.values()
                     if d.get("kind") == "sequence" and d.get("owner")}
        extras: dict[str, dict] = {}
        for column in table["columns"]:
            if column.get("computed") is not None:
                extras[column["name"]] = {"computed": {"sqltext": column["computed"],
                                                       "persisted": not column.get("virtual", False)}}
            elif column.get("identity"):
                sequence = sequences.get((table["id"], column["id"]), {})
                extras[column["name"]] = {"identity": {
                    "always": column["identity"] == "ALWAYS", "start": sequence.get("start"),
                    "increment": sequence.get("increment"), "minvalue": sequence.get("min"),
                    "maxvalue": sequence.get("max"), "cycle": sequence.get("cycle"), "cache": 1}}
        return extras

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
        rows = self._rows(connection, "SELECT index_name, is_unique, is_primary, predicate, index_type FROM "
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
        rows = self._index_rows(connection, table_name, schema)
        # the index a FOREIGN KEY creates when none leads with its columns comes back with the
        # constraint: reflecting it too would make create_all() build it twice
        fk_indexes = {f"{table_name}_auto_index_{fk['name']}"
                      for fk in self.get_foreign_keys(connection, table_name, schema, **kw)}
        # an expression's key column is hidden, generated from the expression (constraints.md)
        expressions = dict(self._rows(connection, "SELECT column_name, generation_expression FROM "
                                                  "information_schema.columns WHERE table_name = :t AND is_hidden "
                                                  "AND generation_expression IS NOT NULL", t=table_name))
        out = []
        for name, unique, primary, predicate, index_type in rows:
            if primary or name in fk_indexes:
                continue
            keys = [(expressions.get(c, c), c in expressions, d) for c, d, storing in columns[name] if not storing]
            index: dict[str, Any] = {
                "name": name,
                "column_names": [None if is_expression else c for c, is_expression, _d in keys],
                "unique": bool(unique),
                "dialect_options": {},
            }
            if any(is_expression for _c, is_expression, _d in keys):
                index["expressions"] = [c for c, _e, _d in keys]
            sorting = {c: ("desc",) for c, _e, d in keys if d}
            if sorting:
                index["column_sorting"] = sorting
            # STORING columns: PostgreSQL's INCLUDE, under the same option name (a list, maybe empty)
            index["dialect_options"]["sqlkv_include"] = [c for c, _d, storing in columns[name] if storing]
            if index_type == "inverted":
                index["dialect_options"]["sqlkv_inverted"] = True
            if predicate is not None:
                index["dialect_options"]["sqlkv_where"] = predicate
            elif unique and "expressions" not in index:
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
    def get_table_comment(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> dict:
        self._require_table(connection, table_name, schema)
        # sqlkv stores no comments: COMMENT ON / SetTableComment are refused; a model's comment=
        # is left out of CREATE TABLE, as dialects without comments do (SQLAlchemy's own suite
        # declares commented tables whatever the dialect supports)
        return {"text": None}

    @reflection.cache
    def get_foreign_keys(self, connection: Any, table_name: str, schema: str | None = None,
                         **kw: Any) -> list[dict]:
        _refuse_schema(schema)
        rules = self._rows(connection, "SELECT constraint_name, referenced_table_name, update_rule, delete_rule "
                                       "FROM information_schema.referential_constraints WHERE table_name = :t "
                                       "ORDER BY constraint_name", t=table_name)
        if not rules:
            self._require_table(connection, table_name, schema)
            return []
        pairs: dict[str, list[tuple[str, str]]] = {}
        for name, column, referenced in self._rows(
                connection, "SELECT constraint_name, column_name, referenced_column_name FROM "
                            "information_schema.key_column_usage WHERE table_name = :t AND referenced_table_name "
                            "IS NOT NULL ORDER BY constraint_name, ordinal_position", t=table_name):
            pairs.setdefault(name, []).append((column, referenced))
        return [
            {
                "name": name,
                "constrained_columns": [c for c, _r in pairs[name]],
                "referred_schema": None,
                "referred_table": referred_table,
                "referred_columns": [r for _c, r in pairs[name]],
                # NO ACTION is the default: left out, as PostgreSQL's dialect does
                "options": {option: rule for option, rule in (("onupdate", on_update), ("ondelete", on_delete))
                            if rule and rule != "NO ACTION"},
            }
            for name, referred_table, on_update, on_delete in rules
        ]
