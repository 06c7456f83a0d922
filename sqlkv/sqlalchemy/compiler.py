"""How SQLAlchemy constructs become sqlkv SQL: types, DDL, and the INSERT ... ON CONFLICT clauses.

``Table("users", md, Column("id", Integer, primary_key=True), Column("email", String(80)))``
becomes ``CREATE TABLE users (id SERIAL NOT NULL, email VARCHAR(80), PRIMARY KEY (id))``: the
table's autoincrement column is SERIAL (sqlkv assigns max(key)+1), strings and numbers keep their
SQL names, binary types are BYTES, DateTime is TIMESTAMP, Interval is INTERVAL (timedelta), Uuid
is UUID, JSON is JSONB (json.py). What sqlkv lacks (ARRAY, TIME WITH TIME ZONE) is a CompileError
raised before any statement reaches the database.
"""

from __future__ import annotations

import datetime
import math
import re
from decimal import Decimal
from typing import Any

from sqlalchemy import exc, schema
from sqlalchemy import types as sqltypes
from sqlalchemy.sql import coercions, compiler, elements, roles, type_api
from sqlalchemy.sql.expression import cast as sql_cast
from sqlalchemy.sql.sqltypes import _AbstractInterval


class BYTES(sqltypes.LargeBinary):
    """sqlkv's binary type (``BYTES``/``BLOB``): values are Python ``bytes``."""

    __visit_name__ = "BYTES"


class INTERVAL(type_api.NativeForEmulated, _AbstractInterval):
    """sqlkv's INTERVAL as ``datetime.timedelta``, as psycopg reads PostgreSQL's: the driver binds a
    timedelta as days and microseconds, and a month read back counts 30 days."""

    __visit_name__ = "INTERVAL"
    native = True

    @classmethod
    def adapt_emulated_to_native(cls, interval: Any, **kw: Any) -> INTERVAL:
        return cls()

    @property
    def _type_affinity(self) -> Any:
        return sqltypes.Interval

    def as_generic(self, allow_nulltype: bool = False) -> Any:
        return sqltypes.Interval(native=True)

    @property
    def python_type(self) -> type:
        return datetime.timedelta

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        def process(value: Any) -> datetime.timedelta | None:
            if value is None:
                return None
            return datetime.timedelta(days=value.months * 30 + value.days, microseconds=value.micros)

        return process

    def literal_processor(self, dialect: Any) -> Any:
        def process(value: datetime.timedelta) -> str:
            micros = value.seconds * 1_000_000 + value.microseconds
            return f"CAST('{value.days} days {micros} microseconds' AS INTERVAL)"

        return process


class SqlkvTypeCompiler(compiler.GenericTypeCompiler):
    def visit_ARRAY(self, type_: Any, **kw: Any) -> str:
        if getattr(type_, "dimensions", None) not in (None, 1):
            raise exc.CompileError("sqlkv arrays have one dimension")
        return self.process(type_.item_type, **kw) + "[]"

    def visit_BYTES(self, type_: Any, **kw: Any) -> str:
        return "BYTES"

    visit_large_binary = visit_BLOB = visit_BINARY = visit_VARBINARY = visit_BYTES

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:
        # TIMESTAMPTZ values come back aware, in the session time zone (grammar-notes/sql.md)
        return "TIMESTAMPTZ" if getattr(type_, "timezone", False) else "TIMESTAMP"

    visit_datetime = visit_TIMESTAMP = visit_DATETIME

    def visit_TIME(self, type_: Any, **kw: Any) -> str:
        if getattr(type_, "timezone", False):
            raise exc.CompileError("sqlkv's TIME is without time zone: Time(timezone=True) has no sqlkv type")
        return "TIME"

    visit_time = visit_TIME

    def visit_INTERVAL(self, type_: Any, **kw: Any) -> str:
        return "INTERVAL"

    visit_interval = visit_INTERVAL

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:
        return "FLOAT"  # always 64-bit: a precision would be a promise sqlkv does not keep

    def visit_CLOB(self, type_: Any, **kw: Any) -> str:
        return "TEXT"

    def visit_NVARCHAR(self, type_: Any, **kw: Any) -> str:
        return self.visit_VARCHAR(type_, **kw)

    def visit_NCHAR(self, type_: Any, **kw: Any) -> str:
        return self.visit_CHAR(type_, **kw)

    def visit_JSON(self, type_: Any, **kw: Any) -> str:
        return "JSONB"  # issue 15: JSON is JSONB in sqlkv (sqlkv/sqlalchemy/json.py)

    visit_json = visit_JSONB = visit_JSON


_NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")
_SERIAL = {"BIGINT": "BIGSERIAL", "SMALLINT": "SMALLSERIAL"}


def _identity_options(options: Any, defaults: bool) -> list[str]:
    """A sequence's options in sqlkv's order. An identity column's parser takes no NO MINVALUE,
    NO MAXVALUE, NO CYCLE or CACHE: being the defaults, they are left out (``defaults=False``)."""
    values = [("START WITH", options.start), ("INCREMENT BY", options.increment), ("MINVALUE", options.minvalue),
              ("MAXVALUE", options.maxvalue)] + ([("CACHE", options.cache)] if defaults else [])
    text = [f"{name} {value:d}" for name, value in values if value is not None]
    if defaults:
        text += [f"NO {name}" for name in ("MINVALUE", "MAXVALUE") if getattr(options, f"no{name.lower()}")]
    if options.cycle or (defaults and options.cycle is not None):
        text.append("CYCLE" if options.cycle else "NO CYCLE")
    return text


class SqlkvDDLCompiler(compiler.DDLCompiler):
    def get_column_specification(self, column: Any, **kw: Any) -> str:
        colspec = self.preparer.format_column(column)
        type_sql = self.dialect.type_compiler_instance.process(column.type, type_expression=column)
        if self._is_serial(column):
            colspec += " " + _SERIAL.get(type_sql, "SERIAL")
        else:
            colspec += " " + type_sql
            default = self.get_column_default_string(column)
            if default is not None:
                colspec += " DEFAULT " + default
        if column.computed is not None:
            colspec += " " + self.process(column.computed)
        if column.identity is not None:
            colspec += " " + self.process(column.identity)
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
        """The table's autoincrement column with no default, identity or sequence of its own:
        sqlkv assigns its value (max(key)+1)."""
        return (
            column.identity is None
            and column.table is not None
            and column is column.table._autoincrement_column
            and column.server_default is None
            and (column.default is None or (isinstance(column.default, schema.Sequence) and column.default.optional))
        )

    def get_identity_options(self, identity_options: Any) -> str:
        # sqlkv's parser takes the options in this order (START before INCREMENT), as it writes them
        return " ".join(_identity_options(identity_options, defaults=True))

    def visit_identity_column(self, identity: Any, **kw: Any) -> str:
        if identity.cache not in (None, 1):
            raise exc.CompileError(f"sqlkv sequences do not cache: Identity(cache={identity.cache})")
        text = "GENERATED %s AS IDENTITY" % ("ALWAYS" if identity.always else "BY DEFAULT")
        options = _identity_options(identity, defaults=False)
        return text + (f" ({' '.join(options)})" if options else "")

    def visit_set_table_comment(self, create: Any, **kw: Any) -> str:
        raise exc.CompileError(f'sqlkv stores no comments: cannot comment table "{create.element.name}"')

    visit_drop_table_comment = visit_set_column_comment = visit_drop_column_comment = visit_set_table_comment

    def visit_create_index(self, create: Any, include_schema: bool = False, include_table_schema: bool = True,
                           **kw: Any) -> str:
        text = super().visit_create_index(create, include_schema=include_schema,
                                          include_table_schema=include_table_schema, **kw)
        index = create.element
        options = index.dialect_options["sqlkv"]
        if options["inverted"]:
            text = text.replace("CREATE INDEX", "CREATE INVERTED INDEX", 1)
        if options["include"]:
            names = [c if isinstance(c, str) else c.name for c in options["include"]]
            text += " STORING (" + ", ".join(self.preparer.quote(n) for n in names) + ")"
        if options["where"] is not None:
            where = coercions.expect(roles.DDLExpressionRole, options["where"])
            text += " WHERE " + self.sql_compiler.process(where, include_table=False, literal_binds=True)
        return text


def sequence_literal(preparer: Any, sequence: Any) -> str:
    """The sequence's name as the string literal nextval() takes (quoted inside if need be)."""
    return "'" + preparer.format_sequence(sequence).replace("'", "''") + "'"


class SqlkvCompiler(compiler.SQLCompiler):
    def render_literal_value(self, value: Any, type_: Any) -> str:
        # a bare 15.7563 is FLOAT in sqlkv (grammar-notes/expressions.md): a NUMERIC literal is spelled exactly
        if (isinstance(value, (Decimal, float)) and type_._type_affinity is sqltypes.Numeric
                and math.isfinite(value)):
            return f"CAST('{value}' AS DECIMAL)"
        return super().render_literal_value(value, type_)

    # JSON element access (issue 15): `->` / `#>` give JSONB; a typed accessor (as_integer()...)
    # reads the element's text with `->>` / `#>>` and CASTs it, as on PostgreSQL
    def _json_access(self, binary: Any, json_op: str, text_op: str, cast_applied: bool, **kw: Any) -> str:
        if not cast_applied and binary.type._type_affinity is not sqltypes.JSON:
            return self.process(sql_cast(binary, binary.type), _json_cast_applied=True, **kw)
        kw["eager_grouping"] = True
        return self._generate_generic_binary(binary, text_op if cast_applied else json_op, **kw)

    def visit_json_getitem_op_binary(self, binary: Any, operator: Any, _json_cast_applied: bool = False,
                                     **kw: Any) -> str:
        return self._json_access(binary, " -> ", " ->> ", _json_cast_applied, **kw)

    def visit_json_path_getitem_op_binary(self, binary: Any, operator: Any, _json_cast_applied: bool = False,
                                          **kw: Any) -> str:
        return self._json_access(binary, " #> ", " #>> ", _json_cast_applied, **kw)

    def visit_sequence(self, sequence: Any, **kw: Any) -> str:
        return f"nextval({sequence_literal(self.preparer, sequence)})"

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
        return "FROM " + self._extra_froms(extra_froms, from_hints, **kw)

    def delete_extra_from_clause(self, delete_stmt: Any, from_table: Any, extra_froms: Any, from_hints: Any,
                                 **kw: Any) -> str:
        return "USING " + self._extra_froms(extra_froms, from_hints, **kw)

    def _extra_froms(self, extra_froms: Any, from_hints: Any, **kw: Any) -> str:
        kw["asfrom"] = True
        return ", ".join(t._compiler_dispatch(self, fromhints=from_hints, **kw) for t in extra_froms)

    def get_select_precolumns(self, select: Any, **kw: Any) -> str:
        if select._distinct_on:  # select.distinct(col, ...): PostgreSQL's DISTINCT ON, which sqlkv runs
            return "DISTINCT ON (" + ", ".join(self.process(c, **kw) for c in select._distinct_on) + ") "
        return "DISTINCT " if select._distinct else ""

    def visit_postgresql_distinct_on(self, element: Any, **kw: Any) -> str | None:
        """``select(...).ext(distinct_on(col))`` (sqlkv.sqlalchemy.distinct_on, PostgreSQL's construct)."""
        if self.stack[-1]["selectable"]._distinct_on:
            raise exc.CompileError("Cannot mix select.ext(distinct_on(...)) and select.distinct(...)")
        if not element._distinct_on:
            return None
        return "ON (" + ", ".join(self.process(c, **kw) for c in element._distinct_on) + ")"

    # ARRAY subscripts and slices, 1-based as in PostgreSQL: col[i], col[i:j]
    def visit_getitem_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return f"{self.process(binary.left, **kw)}[{self.process(binary.right, **kw)}]"

    def visit_slice(self, element: Any, **kw: Any) -> str:
        return f"{self.process(element.start, **kw)}:{self.process(element.stop, **kw)}"

    # regular expressions as in PostgreSQL: ~ and ~* (flags "i"), other flags inline as (?flags)
    def _regexp_match(self, operator: str, binary: Any, **kw: Any) -> str:
        flags = binary.modifiers["flags"]
        if flags is None or flags == "i":
            return self._generate_generic_binary(binary, f" {operator}{'*' if flags else ''} ", **kw)
        flags_sql = self.render_literal_value(flags, sqltypes.STRINGTYPE)
        return (f"{self.process(binary.left, **kw)} {operator} "
                f"CONCAT('(?', {flags_sql}, ')', {self.process(binary.right, **kw)})")

    def visit_regexp_match_op_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return self._regexp_match("~", binary, **kw)

    def visit_not_regexp_match_op_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        return self._regexp_match("!~", binary, **kw)

    def visit_regexp_replace_op_binary(self, binary: Any, operator: Any, **kw: Any) -> str:
        arguments = [self.process(binary.left, **kw), self.process(binary.right, **kw)]
        if binary.modifiers["flags"] is not None:
            arguments.append(self.render_literal_value(binary.modifiers["flags"], sqltypes.STRINGTYPE))
        return f"REGEXP_REPLACE({', '.join(arguments)})"
