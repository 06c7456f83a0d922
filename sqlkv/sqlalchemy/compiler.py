"""How SQLAlchemy constructs become sqlkv SQL: types, DDL, and the INSERT ... ON CONFLICT clauses.

``Table("users", md, Column("id", Integer, primary_key=True), Column("email", String(80)))``
becomes ``CREATE TABLE users (id SERIAL NOT NULL, email VARCHAR(80), PRIMARY KEY (id))``: the
table's autoincrement column is SERIAL (sqlkv assigns max(key)+1), strings and numbers keep their
SQL names, binary types are BYTES, DateTime is TIMESTAMP. What sqlkv lacks (TIME, JSON, foreign
keys, computed columns, identity options) is a CompileError naming the column, raised before any
statement reaches the database.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from sqlalchemy import exc, schema
from sqlalchemy import types as sqltypes
from sqlalchemy.sql import coercions, compiler, elements, roles


class BYTES(sqltypes.LargeBinary):
    """sqlkv's binary type (``BYTES``/``BLOB``): values are Python ``bytes``."""

    __visit_name__ = "BYTES"


class SqlkvTypeCompiler(compiler.GenericTypeCompiler):
    def visit_BYTES(self, type_: Any, **kw: Any) -> str:
        return "BYTES"

    visit_large_binary = visit_BLOB = visit_BINARY = visit_VARBINARY = visit_BYTES

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        # TIMESTAMPTZ values come back aware, in the session time zone (grammar-notes/sql.md)
        return "TIMESTAMPTZ" if getattr(type_, "timezone", False) else "TIMESTAMP"

    visit_datetime = visit_TIMESTAMP = visit_DATETIME

    def visit_TIME(self, type_: Any, **kw: Any) -> str:
        raise exc.CompileError("sqlkv has no TIME type: store a TIMESTAMP, or the time as TEXT")

    visit_time = visit_TIME

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        return "FLOAT"  # always 64-bit: a precision would be a promise sqlkv does not keep

    def visit_CLOB(self, type_: Any, **kw: Any) -> str:
        return "TEXT"

    def visit_NVARCHAR(self, type_: Any, **kw: Any) -> str:
        return self.visit_VARCHAR(type_, **kw)

    def visit_NCHAR(self, type_: Any, **kw: Any) -> str:
        return self.visit_CHAR(type_, **kw)


_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
_SERIAL = {"BIGINT": "BIGSERIAL", "SMALLINT": "SMALLSERIAL"}


class SqlkvDDLCompiler(compiler.DDLCompiler):
    def get_column_specification(self, column: Any, **kw: Any) -> str:
        self._refuse_unsupported(column)
        colspec = self.preparer.format_column(column)
        if self._is_serial(column):
            type_sql = self.dialect.type_compiler_instance.process(column.type, type_expression=column)
            colspec += " " + _SERIAL.get(type_sql, "SERIAL")
        else:
            colspec += " " + self.dialect.type_compiler_instance.process(column.type, type_expression=column)
            default = self.get_column_default_string(column)
            if default is not None:
                colspec += " DEFAULT " + default
        if not column.nullable:
            colspec += " NOT NULL"
        return colspec

    def get_column_default_string(self, column: Any) -> str | None:
        # server_default="0" is an untyped literal in PostgreSQL; sqlkv types text strictly, so a
        # number given as a string for a numeric column is written as the number it spells
        default = column.server_default
        if (isinstance(default, schema.DefaultClause) and isinstance(default.arg, str)
                and isinstance(column.type, sqltypes.Numeric | sqltypes.Integer) and _NUMBER.match(default.arg)):
            return default.arg.strip()
        return super().get_column_default_string(column)

    @staticmethod
    def _is_serial(column: Any) -> bool:
        """The table's autoincrement column, with no default of its own: sqlkv assigns its value."""
        if column.identity is not None:
            return True
        return (
            column.table is not None
            and column is column.table._autoincrement_column
            and column.server_default is None
            and (column.default is None or (isinstance(column.default, schema.Sequence) and column.default.optional))
        )

    @staticmethod
    def _refuse_unsupported(column: Any) -> None:
        where = f'column "{column.name}" of table "{column.table.name}"'
        if column.computed is not None:
            raise exc.CompileError(f"sqlkv has no computed (GENERATED ALWAYS AS) columns: {where}")
        identity = column.identity
        if identity is not None:
            custom = [
                name for name in ("start", "increment", "minvalue", "maxvalue", "cycle", "cache", "order")
                if getattr(identity, name, None) not in (None, False, 1 if name in ("start", "increment") else None)
            ]
            if custom or identity.always:
                raise exc.CompileError(
                    f"sqlkv identity columns take no options (they are max(key)+1, as SERIAL): {where} "
                    f"has {', '.join(custom or ['ALWAYS'])}"
                )

    def visit_foreign_key_constraint(self, constraint: Any, **kw: Any) -> str | None:
        if self.dialect.ignore_foreign_keys:
            return None  # left out of CREATE TABLE, as asked (create_engine(..., ignore_foreign_keys=True))
        cols = ", ".join(c.name for c in constraint.columns) or "?"
        raise exc.CompileError(
            f"sqlkv does not support foreign keys yet (table {constraint.table.name!r}, columns {cols}); "
            "create_engine(..., ignore_foreign_keys=True) leaves them out of CREATE TABLE, unenforced"
        )

    def visit_computed_column(self, generated: Any, **kw: Any) -> str:
        raise exc.CompileError("sqlkv has no computed columns")

    def visit_create_index(self, create: Any, include_schema: bool = False, include_table_schema: bool = True,
                           **kw: Any) -> str:
        text = super().visit_create_index(create, include_schema=include_schema,
                                          include_table_schema=include_table_schema, **kw)
        index = create.element
        options = index.dialect_options["sqlkv"]
        if options["include"]:
            names = [c if isinstance(c, str) else c.name for c in options["include"]]
            text += " STORING (" + ", ".join(self.preparer.quote(n) for n in names) + ")"
        if options["where"] is not None:
            where = coercions.expect(roles.DDLExpressionRole, options["where"])
            text += " WHERE " + self.sql_compiler.process(where, include_table=False, literal_binds=True)
        return text


class SqlkvCompiler(compiler.SQLCompiler):
    def render_literal_value(self, value: Any, type_: Any) -> str:
        # a bare 15.7563 is FLOAT in sqlkv (grammar-notes/expressions.md): a NUMERIC literal is spelled exactly
        if (isinstance(value, (Decimal, float)) and type_._type_affinity is sqltypes.Numeric
                and math.isfinite(value)):
            return f"CAST('{value}' AS DECIMAL)"
        return super().render_literal_value(value, type_)

    def visit_frame_clause(self, frameclause: Any, **kw: Any) -> str:
        # sqlkv needs constant frame offsets: render them into the SQL (at execution: the plan stays cached)
        return super().visit_frame_clause(frameclause, **{**kw, "literal_execute": True})

    def visit_on_conflict_do_nothing(self, on_conflict: Any, **kw: Any) -> str:
        return "ON CONFLICT " + self._conflict_target(on_conflict, **kw) + "DO NOTHING"

    def visit_on_conflict_do_update(self, on_conflict: Any, **kw: Any) -> str:
        target = self._conflict_target(on_conflict, **kw)
        values = dict(on_conflict.update_values_to_set)  # already coerced to SQL expressions
        assignments = []
        for column in self.statement.table.c:
            key = column.key if column.key in values else column
            if key not in values:
                continue
            value = values.pop(key)
            if isinstance(value, elements.BindParameter) and value.type._isnull:
                value = value._with_binary_element_type(column.type)
            rendered = self.process(value.self_group(), is_upsert_set=True, use_schema=False, **kw)
            assignments.append(f"{self.preparer.quote(column.name)} = {rendered}")
        if values:
            names = ", ".join(str(k) for k in values)
            raise exc.CompileError(f"ON CONFLICT DO UPDATE sets unknown columns of {self.statement.table.name}: {names}")
        text = f"ON CONFLICT {target}DO UPDATE SET " + ", ".join(assignments)
        if on_conflict.update_whereclause is not None:
            text += " WHERE " + self.process(on_conflict.update_whereclause, include_table=True, use_schema=False,
                                             **kw)
        return text

    def _conflict_target(self, on_conflict: Any, **kw: Any) -> str:
        if on_conflict.constraint_target is not None:
            return f"ON CONSTRAINT {self.preparer.quote(on_conflict.constraint_target)} "
        if on_conflict.inferred_target_elements:
            if on_conflict.inferred_target_whereclause is not None:
                raise exc.CompileError("sqlkv does not support ON CONFLICT (cols) WHERE ... (index_where)")
            cols = ", ".join(
                self.preparer.quote(c) if isinstance(c, str) else self.process(c, include_table=False, use_schema=False)
                for c in on_conflict.inferred_target_elements
            )
            return f"({cols}) "
        return ""

    def update_from_clause(self, update_stmt: Any, from_table: Any, extra_froms: Any, from_hints: Any,
                           **kw: Any) -> str:
        raise exc.CompileError("sqlkv does not support UPDATE ... FROM (several tables in one UPDATE)")

    def delete_extra_from_clause(self, delete_stmt: Any, from_table: Any, extra_froms: Any, from_hints: Any,
                                 **kw: Any) -> str:
        raise exc.CompileError("sqlkv does not support DELETE ... USING (several tables in one DELETE)")
