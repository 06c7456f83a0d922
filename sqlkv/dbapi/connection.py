"""The PEP 249 connection: one SQL session on a database, plus transaction control.

``sqlkv.connect("shop.db")`` opens (or joins, within a process) the `Database` for that
directory and starts a `Session` on it with ``autocommit=False``, the PEP 249 default: the
first statement opens a transaction that lasts until ``commit()`` or ``rollback()``. Each
cursor runs its statements through that one session, so every cursor of a connection sees the
same transaction. ``with conn:`` commits when the block succeeds and rolls back when it
raises, like sqlite3; it does not close the connection.

Thread safety is PEP 249 level 1: threads may share the module, not connections. A
connection remembers the thread that made it and refuses calls from any other (as sqlite3
does), unless it was opened with ``check_same_thread=False`` -- then the caller serialises.
"""

from __future__ import annotations

import os
import threading
from threading import get_ident
import time
import weakref
from typing import Any

from sqlkv import errors
from sqlkv.dbapi.compat import SqliteConveniences, check_detect_types, check_isolation_level
from sqlkv.dbapi.cursor import Cursor
from sqlkv.dbapi.reaper import abandoned_connections, gc_running
from sqlkv.errors import InterfaceError, ProgrammingError

_UNSET: Any = object()


class Connection(SqliteConveniences):
    """A PEP 249 connection. Create it with `sqlkv.connect`.

    sqlite3's extras (row_factory, create_function, iterdump, backup, ...) come from
    `SqliteConveniences`.
    """

    # PEP 249 optional extension: the exception classes as connection attributes, so code
    # juggling several drivers can write ``except conn.IntegrityError``.
    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError

    def __init__(self, session: Any, database: str, check_same_thread: bool = True) -> None:
        self._session = session
        self.database = database
        self._closed = False
        self._thread = threading.get_ident() if check_same_thread else None
        self._cursors: weakref.WeakSet[Cursor] = weakref.WeakSet()
        # The cursor whose rows are still being produced lazily by the session, if any.
        self._streaming: Cursor | None = None
        self.row_factory: Any = None  # e.g. sqlkv.Row; new cursors start with it
        # JSONB results as their JSON text instead of dict/list/... (SQLAlchemy's JSON type
        # deserializes text itself, with the engine's json_deserializer)
        self.jsonb_as_text = False
        self._trace = None
        self._changes = 0

    # -- transactions -----------------------------------------------------------------------

    @property
    def autocommit(self) -> bool:
        """True: each statement commits on its own (unless BEGIN). False: commit() needed."""
        return bool(self._check_open().autocommit)

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise ProgrammingError(f"autocommit must be True or False, not {value!r}")
        self._check_open().autocommit = value

    @property
    def in_transaction(self) -> bool:
        """True while a transaction is open (it holds uncommitted writes or reads)."""
        return bool(self._check_open().in_transaction)

    def commit(self) -> None:
        """Commit the open transaction (nothing to do when none is open).

        Rows a cursor has not fetched yet stay fetchable: they are read before the commit.
        """
        session = self._check_open()
        self._settle_streaming(None)
        session.commit()

    def rollback(self) -> None:
        """Roll back the open transaction (nothing to do when none is open).

        Rows a cursor has not fetched yet stay fetchable: they are read before the rollback.
        """
        session = self._check_open()
        self._settle_streaming(None)
        session.rollback()

    def interrupt(self) -> None:
        """Make the statement running on this connection fail with OperationalError.

        Like sqlite3's, this may be called from any thread (that is its purpose).
        """
        if not self._closed:
            self._session.cancel()

    # -- cursors and shortcuts --------------------------------------------------------------

    def cursor(self) -> Cursor:
        self._check_open()
        cursor = Cursor(self)
        self._cursors.add(cursor)
        return cursor

    def execute(self, operation: str, parameters: Any = ()) -> Cursor:
        """Shortcut (as in sqlite3): a new cursor, executed; returns the cursor."""
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Any) -> Cursor:
        return self.cursor().executemany(operation, seq_of_parameters)

    def executescript(self, script: str) -> Cursor:
        return self.cursor().executescript(script)

    # -- lifetime ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the connection; an open transaction is rolled back (PEP 249). Idempotent."""
        if self._closed:
            return
        for cursor in list(self._cursors):
            cursor.close()
        self._closed = True
        self._streaming = None
        session, self._session = self._session, None
        session.close_with_database()

    def __enter__(self) -> Connection:
        self._check_open()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._closed:
            return
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    def __del__(self) -> None:
        # A connection dropped without close() must not keep its transaction or files. When
        # the cyclic garbage collector drops it, that may happen inside sqlkv code holding the
        # very locks close() takes (seen: inside Database.open, holding the registry lock), so
        # the close is handed to the reaper thread (dbapi/reaper.py) instead of run here.
        if self._closed:
            return
        if gc_running.active or self._thread not in (None, threading.get_ident()):
            abandoned_connections.hand_over(self)
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing useful to do at interpreter teardown
            pass

    def _close_abandoned(self) -> None:
        """close() for a connection nobody references any more (any thread may run it)."""
        self._thread = None
        self.close()

    # -- used by cursors --------------------------------------------------------------------

    @property
    def session(self) -> Any:
        """The underlying `sqlkv.sql.session.Session` (for tools built on the driver)."""
        return self._check_open()

    def _check_open(self) -> Any:
        if self._closed:
            raise InterfaceError("cannot use a closed connection")
        if self._thread is not None and self._thread != get_ident():
            raise ProgrammingError(
                "this connection was created in another thread; sqlkv connections are not "
                "shared between threads (threadsafety 1) unless opened with "
                "check_same_thread=False"
            )
        return self._session

    def _forget_cursor(self, cursor: Cursor) -> None:
        self._cursors.discard(cursor)
        if self._streaming is cursor:
            self._streaming = None

    def _settle_streaming(self, next_user: Cursor | None) -> None:
        """Before the session runs anything else, finish the lazily streaming cursor's rows.

        The session produces one statement's rows at a time (a new statement ends the previous
        result, and a cached plan is reused by the same SQL text), so a cursor still holding a
        live result would silently lose rows. Reading its rest into memory now keeps them, and
        they are the rows as of their own statement. A cursor re-executing drops its own.
        """
        streaming, self._streaming = self._streaming, None
        if streaming is not None and streaming is not next_user:
            streaming._buffer_remaining()

    def _streaming_started(self, cursor: Cursor) -> None:
        self._streaming = cursor


_DURABILITY = ("full", "normal", "off")


def connect(
    database: str = ":memory:",
    *,
    autocommit: bool = False,
    durability: str | None = None,
    cache_size: int | None = None,
    read_only: bool = False,
    check_same_thread: bool = True,
    create: bool = True,
    isolation_level: str | None = _UNSET,
    detect_types: int = 0,
    timeout: float = 0.0,
    **options: Any,
) -> Connection:
    """Open a PEP 249 connection to ``database``: ``":memory:"`` or a database directory.

    ``autocommit`` (default False: statements run in a transaction until ``commit()``),
    ``durability`` ("full": fsync every commit, "normal", "off"), ``cache_size`` (bytes of
    block cache), ``read_only``, ``create`` (default True: a missing path or an empty
    directory becomes a new database; never when read-only; a directory holding other files
    is always refused). ``isolation_level`` as in sqlite3: None means autocommit, "" or
    "DEFERRED" transactions (others are NotSupportedError, as is ``detect_types``).
    ``timeout`` (seconds, default 0) waits that long for another process's write lock before
    raising DatabaseLockedError, as sqlite3's does for its locks. Other keyword options go to
    the storage engine, among them ``gc_ttl``: the seconds of history ``AS OF SYSTEM TIME``
    can read (default 600; 0 turns time travel off; not on etcd).
    """
    from sqlkv.sql import Database, Session  # on first connect: `import sqlkv` stays light

    if not isinstance(database, str):
        database = _path_text(database)
    if not isinstance(autocommit, bool):
        raise ProgrammingError(f"autocommit must be True or False, not {autocommit!r}")
    check_detect_types(detect_types)
    if isolation_level is not _UNSET:
        check_isolation_level(isolation_level)
        autocommit = isolation_level is None
    if durability is not None:
        if durability not in _DURABILITY:
            raise ProgrammingError(
                f"durability must be one of {', '.join(_DURABILITY)}, not {durability!r}"
            )
        options["durability"] = durability
    if cache_size is not None:
        options["cache_size"] = cache_size
    if read_only:
        options["read_only"] = True
    if database == ":memory:":
        _refuse_unknown_options(options)
    if not create:
        options["create"] = False
    abandoned_connections.start()
    db = _open_waiting(Database, database, options, _check_timeout(timeout))
    session = Session(db, autocommit=autocommit)
    return Connection(session, database, check_same_thread=check_same_thread)


def _check_timeout(timeout: Any) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ProgrammingError(f"timeout must be a number of seconds >= 0, not {timeout!r}")
    return float(timeout)


def _open_waiting(database_class: Any, path: str, options: dict[str, Any], timeout: float) -> Any:
    """Open ``path``, retrying for up to ``timeout`` seconds while another process holds its lock."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return database_class.open(path, **options)
        except errors.DatabaseLockedError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(0.05, left))


def _refuse_unknown_options(options: dict[str, Any]) -> None:
    """A typo such as ``durabilty=`` fails for ``:memory:`` too, as the LSM does for a directory.

    The in-memory engine has no tuning knobs, so it would otherwise accept anything silently.
    """
    from sqlkv.storage.lsm.engine import _OPTIONS as known  # the LSM loads only when used

    unknown = sorted(set(options) - known)
    if unknown:
        raise InterfaceError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def _path_text(database: Any) -> str:
    try:
        return os.fsdecode(os.fspath(database))
    except TypeError:
        raise ProgrammingError(
            f"database must be ':memory:' or a directory path, not {type(database).__name__}"
        ) from None
