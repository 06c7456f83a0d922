"""What code ported from Python's sqlite3 module expects of a connection, beyond PEP 249.

`SqliteConveniences` is mixed into `Connection`: ``create_function`` (a scalar function in
this connection's SQL, `sqlkv.sql.expr.userfuncs`), ``set_trace_callback`` (called with each
statement's text before it runs), ``total_changes``, ``isolation_level`` (None is autocommit;
"" and "DEFERRED" are sqlkv's optimistic transactions), ``iterdump`` and ``backup`` (the
schema and rows of one snapshot, as SQL or into another sqlkv connection).

What sqlkv cannot honour is refused with NotSupportedError instead of being ignored:
user aggregates and collations, "IMMEDIATE"/"EXCLUSIVE" isolation (sqlkv transactions take
no locks), ``detect_types`` converters and adapters (values come back typed already: DATE,
TIMESTAMP, DECIMAL, BOOL, BYTES), a ``text_factory`` other than ``str``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlkv.errors import NotSupportedError, OperationalError, ProgrammingError

PARSE_DECLTYPES = 1
PARSE_COLNAMES = 2
_ISOLATION_LEVELS = ("", "DEFERRED")


def check_detect_types(detect_types: int) -> None:
    if detect_types:
        raise NotSupportedError(
            "detect_types is not supported: sqlkv returns DATE, TIMESTAMP, DECIMAL, BOOL and BYTES "
            "values typed already, and has no converters"
        )


def register_adapter(type_: type, adapter: Callable[[Any], Any]) -> None:
    """sqlite3's adapters are not supported: pass values of the SQL types sqlkv knows."""
    raise NotSupportedError("register_adapter is not supported: pass int, float, str, bytes, "
                            "bool, Decimal, date or datetime values")


def register_converter(name: str, converter: Callable[[bytes], Any]) -> None:
    """sqlite3's converters are not supported: columns are typed already."""
    check_detect_types(1)


def check_isolation_level(level: str | None) -> None:
    if level is not None and (not isinstance(level, str) or level.upper() not in _ISOLATION_LEVELS):
        raise NotSupportedError(
            f"isolation_level {level!r} is not supported: use None (autocommit) or '' / 'DEFERRED' "
            "(transactions are optimistic and SERIALIZABLE; IMMEDIATE/EXCLUSIVE locks do not exist)"
        )


def refresh_database(db: Any) -> None:
    """Catch a read-only database up with its writing process (cheap when nothing changed).

    The descriptor cache (and with it every cached plan) is dropped when anything was new,
    since the writer may have changed the schema.
    """
    if not db.read_only:
        return
    engine = db.engine
    core = getattr(engine, "_core", None)
    before = getattr(core, "_seen", None)
    refresh = getattr(engine, "refresh", None)
    if refresh is not None:
        refresh()
    if core is None or getattr(core, "_seen", None) != before:
        db.descriptors.bump()


class SqliteConveniences:
    """sqlite3.Connection's extras, on top of `Connection`'s session and cursor plumbing."""

    row_factory: Any = None
    _trace: Callable[[str], Any] | None = None
    _changes: int = 0

    # provided by Connection
    autocommit: bool
    session: Any

    def _settle_streaming(self, next_user: Any) -> None: ...

    def _check_open(self) -> Any: ...

    # -- statements ---------------------------------------------------------------------------

    def set_trace_callback(self, trace_callback: Callable[[str], Any] | None) -> None:
        """Call ``trace_callback(sql)`` before each statement runs (None: stop tracing)."""
        self._check_open()
        if trace_callback is not None and not callable(trace_callback):
            raise TypeError("trace_callback must be callable or None")
        self._trace = trace_callback

    def _traced(self, sql: str) -> None:
        if self._trace is not None:
            self._trace(sql)

    def _count_changes(self, kind: str, rowcount: int | None) -> None:
        if rowcount and rowcount > 0 and kind.upper() in ("INSERT", "UPDATE", "DELETE", "UPSERT"):
            self._changes += rowcount

    @property
    def total_changes(self) -> int:
        """Rows inserted, updated or deleted through this connection since it was opened."""
        self._check_open()
        return self._changes

    @property
    def isolation_level(self) -> str | None:
        return None if self.autocommit else ""

    @isolation_level.setter
    def isolation_level(self, level: str | None) -> None:
        check_isolation_level(level)
        self.autocommit = level is None

    @property
    def text_factory(self) -> type:
        """TEXT values come back as ``str``; sqlite3's other factories are refused."""
        return str

    @text_factory.setter
    def text_factory(self, factory: Any) -> None:
        if factory is not str:
            raise NotSupportedError(f"text_factory {getattr(factory, '__name__', factory)!r} is not "
                                    "supported: TEXT values are str (store bytes in a BYTES column)")

    # -- functions ----------------------------------------------------------------------------

    def create_function(self, name: str, narg: int, func: Callable[..., Any] | None, *,
                        deterministic: bool = False) -> None:
        """Make ``func`` callable from this connection's SQL as ``name`` (None removes it)."""
        from sqlkv.sql.expr.userfuncs import user_function  # the SQL layer: see sqlkv.dbapi

        session = self._check_open()
        if func is None:
            session.functions.pop(str(name).lower(), None)
        else:
            definition = user_function(name, narg, func, deterministic)
            session.functions[definition.name] = definition
        session.forget_plans()  # cached plans bound the previous definition

    def create_aggregate(self, name: str, n_arg: int, aggregate_class: Any) -> None:
        raise NotSupportedError(f"create_aggregate({name!r}) is not supported: sqlkv has no user "
                                "aggregates yet (compute it in Python over the rows)")

    def create_collation(self, name: str, callable_: Any) -> None:
        raise NotSupportedError(f"create_collation({name!r}) is not supported: sqlkv compares text "
                                'by code point (COLLATE "C") only')

    # -- several processes --------------------------------------------------------------------

    def refresh(self) -> None:
        """Read-only connections: see what the writing process has committed since.

        Statements run outside a transaction do this themselves; an open transaction keeps
        reading its snapshot. A no-op for the writer (its view is always current).
        """
        refresh_database(self._check_open().db)

    # -- copies -------------------------------------------------------------------------------

    def iterdump(self) -> Iterator[str]:
        """The SQL statements that recreate this database: BEGIN, tables, rows, indexes, COMMIT."""
        from sqlkv.dbapi.schema import SchemaReader, dump_lines  # with the catalog: see sqlkv.dbapi

        session = self._check_open()
        self._settle_streaming(None)
        return dump_lines(session, SchemaReader(session))

    def backup(self, target: Any, *, pages: int = -1, progress: Callable[[int, int, int], Any] | None = None,
               name: str = "main", sleep: float = 0.250) -> None:
        """Copy this database's schema and rows (one snapshot) into ``target``, a new, empty
        sqlkv connection. ``pages``/``sleep`` only pace sqlite3's page copy: there is no
        equivalent, and the result is the same; ``progress(0, remaining, total)`` is called
        after each table."""
        from sqlkv.dbapi.schema import SchemaReader, copy_database  # with the catalog: see sqlkv.dbapi

        if name != "main":
            raise NotSupportedError(f"backup of schema {name!r}: sqlkv databases have only 'main'")
        if not isinstance(target, SqliteConveniences):
            raise TypeError("target must be a sqlkv connection")
        if target is self:
            raise ProgrammingError("target cannot be the same connection")
        source_session, target_session = self._check_open(), target._check_open()
        if target_session.in_transaction:
            raise OperationalError("target is in a transaction")
        if SchemaReader(target_session).tables() or SchemaReader(target_session).views():
            raise OperationalError("backup target must be an empty database")
        self._settle_streaming(None)
        target._settle_streaming(None)

        def counted(tables: list[Any]) -> Iterator[Any]:
            for done, table in enumerate(tables, start=1):
                yield table
                if progress is not None:
                    progress(0, len(tables) - done, len(tables))

        copy_database(source_session, target_session, wrap_tables=counted)
