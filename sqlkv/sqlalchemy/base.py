"""`SqlkvDialect`: SQLAlchemy's view of the sqlkv driver.

``create_engine("sqlkv:///shop.db")`` loads this class through the ``sqlalchemy.dialects``
entry point; `connect_arguments` turns the URL into ``sqlkv.connect("shop.db", ...)``. The pool
hands each SQLAlchemy Connection one driver connection (``autocommit=False``: the first statement
opens a transaction, SQLAlchemy's ``commit()`` ends it). Statements are compiled by
`sqlkv.sqlalchemy.compiler` to qmark SQL; the session parses and plans each SQL text once.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from sqlalchemy import pool
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import default
from sqlalchemy.schema import Index

import sqlkv
from sqlkv.sqlalchemy.compiler import (
    BYTES, INTERVAL, SqlkvCompiler, SqlkvDDLCompiler, SqlkvTypeCompiler, sequence_literal,
)
from sqlkv.sqlalchemy.json import COLSPECS as JSON_COLSPECS
from sqlkv.sqlalchemy.reflection import ReflectionMixin
from sqlkv.sqlalchemy.url import connect_arguments

# Alembic finds a dialect's migration support by the dialect's module importing it; without
# Alembic installed there is nothing to register (an error inside migrations.py still shows)
if importlib.util.find_spec("alembic") is not None:
    import sqlkv.sqlalchemy.migrations  # noqa: F401

ISOLATION_LEVEL = "SERIALIZABLE"  # the only one: optimistic, conflicts surface at COMMIT


class SqlkvExecutionContext(default.DefaultExecutionContext):
    def fire_sequence(self, seq: Any, type_: Any) -> Any:
        """A Sequence default run before the INSERT (executemany, or no RETURNING)."""
        return self._execute_scalar(f"SELECT nextval({sequence_literal(self.identifier_preparer, seq)})", type_)


class SqlkvDialect(ReflectionMixin, default.DefaultDialect):
    name = "sqlkv"
    driver = "sqlkv"
    supports_statement_cache = True
    default_paramstyle = "qmark"

    statement_compiler = SqlkvCompiler
    execution_ctx_cls = SqlkvExecutionContext
    ddl_compiler = SqlkvDDLCompiler
    type_compiler_cls = SqlkvTypeCompiler

    supports_native_boolean = True
    supports_native_decimal = True
    supports_native_enum = False
    supports_native_uuid = True  # UUID columns; the driver takes and returns uuid.UUID
    supports_sequences = True  # CREATE SEQUENCE, nextval('s'): a Sequence() default or column
    sequences_optional = True  # Sequence(optional=True) on an integer key: SERIAL instead
    supports_identity_columns = True  # Identity() without options: SERIAL
    supports_comments = False
    supports_schemas = False
    supports_alter = True  # ALTER TABLE ADD/DROP CONSTRAINT: foreign keys of table cycles (use_alter)
    supports_is_distinct_from = True
    supports_server_side_cursors = False
    supports_multivalues_insert = True
    supports_default_values = True
    supports_default_metavalue = True
    supports_empty_insert = False
    supports_simple_order_by_label = True
    tuple_in_values = False  # (a, b) IN ((1, 2), ...): sqlkv has no IN (VALUES ...) for rows
    postfetch_lastrowid = True  # cursor.lastrowid: the assigned INTEGER PRIMARY KEY
    insert_returning = True
    update_returning = True
    delete_returning = True
    # executemany() refuses statements returning rows: insertmanyvalues batches those into multi-row INSERTs
    use_insertmanyvalues = True
    use_insertmanyvalues_wo_returning = False  # executemany: one statement, planned once, true rowcount
    insertmanyvalues_max_parameters = 32700

    colspecs = {sqltypes.LargeBinary: BYTES, sqltypes.Interval: INTERVAL, **JSON_COLSPECS}

    # sqlkv_inverted=True: CREATE INVERTED INDEX (an ARRAY or JSONB column; keys.md "Inverted indexes")
    construct_arguments = [(Index, {"where": None, "include": None, "inverted": False})]

    def __init__(self, json_serializer: Any = None, json_deserializer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._json_serializer = json_serializer  # SQLAlchemy's JSON type uses them (None: json.dumps/loads)
        self._json_deserializer = json_deserializer

    def on_connect(self) -> Any:
        def connected(dbapi_connection: Any) -> None:
            dbapi_connection.jsonb_as_text = True  # JSON's result processor deserializes text (json.py)

        return connected

    @classmethod
    def import_dbapi(cls) -> Any:
        return sqlkv

    @classmethod
    def get_pool_class(cls, url: Any) -> type[pool.Pool]:
        # every connect(":memory:") is a new, empty database: the engine keeps one
        if connect_arguments(url)[0] == ":memory:":
            return pool.StaticPool
        return pool.QueuePool

    def create_connect_args(self, url: Any) -> tuple[list[Any], dict[str, Any]]:
        database, options = connect_arguments(url)
        # The pool hands connections from thread to thread (one at a time), as SQLAlchemy's
        # sqlite dialect does for files: the driver's same-thread check would refuse that.
        options.setdefault("check_same_thread", False)
        return [database], options

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        return tuple(int(p) for p in sqlkv.__version__.split(".") if p.isdigit())

    def _get_default_schema_name(self, connection: Any) -> None:
        return None

    # -- transactions ---------------------------------------------------------------------

    def get_isolation_level_values(self, dbapi_conn: Any) -> list[str]:
        return [ISOLATION_LEVEL, "AUTOCOMMIT"]

    def get_isolation_level(self, dbapi_connection: Any) -> str:
        return ISOLATION_LEVEL

    def get_default_isolation_level(self, dbapi_conn: Any) -> str:
        return ISOLATION_LEVEL

    def set_isolation_level(self, dbapi_connection: Any, level: str) -> None:
        # "AUTOCOMMIT": each statement is its own (still SERIALIZABLE) transaction
        dbapi_connection.autocommit = level == "AUTOCOMMIT"

    def detect_autocommit_setting(self, dbapi_conn: Any) -> bool:
        return bool(dbapi_conn.autocommit)

    def is_disconnect(self, e: Exception, connection: Any, cursor: Any) -> bool:
        return isinstance(e, sqlkv.InterfaceError) and "closed connection" in str(e)
