"""The PEP 249 cursor: runs statements on its connection's session and hands rows out lazily.

``cur.execute("SELECT name FROM users WHERE id > ?", (10,))`` checks the cursor and its
connection are open, validates the parameters (`adapt_parameters`), and calls
``Session.execute``; the session parses (or takes its cached plan for this SQL text), runs
the statement and returns a `Result` whose rows are produced on demand. The cursor keeps the
result's iterator: ``fetchone`` pulls one row, ``fetchmany`` ``arraysize`` rows, so a large
SELECT is never materialised unless ``fetchall`` is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Any

from sqlkv.dbapi.compat import refresh_database
from sqlkv.dbapi.types import (
    adapt_parameters,
    adapted_stream,
    array_positions,
    arrays_as_lists,
    description_entry,
    jsonb_as_python,
    jsonb_positions,
)
from sqlkv.errors import InterfaceError, ProgrammingError

if TYPE_CHECKING:
    from sqlkv.dbapi.connection import Connection


class Cursor:
    """A PEP 249 cursor. Create it with ``Connection.cursor()``."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.arraysize = 1
        self._closed = False
        self._rows: Iterator[tuple] | None = None
        self._result: Any = None  # the session Result whose rows _rows reads (closed on reset)
        self._description: tuple[tuple, ...] | None = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        # a cached plan hands out the same columns list every execution: build its
        # description once (see `_take`)
        self._described: tuple[Any, tuple[tuple, ...], list[int], list[int], bool] | None = None
        self.row_factory: Any = connection.row_factory  # sqlite3: fetched rows go through it

    # -- attributes -------------------------------------------------------------------------

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def description(self) -> tuple[tuple, ...] | None:
        """One 7-item tuple per result column of the last statement; None if it had no rows."""
        return self._description

    @property
    def closed(self) -> bool:
        return self._closed

    # -- execution --------------------------------------------------------------------------

    def execute(self, operation: str, parameters: Any = ()) -> Cursor:
        """Run one statement with ``?`` (sequence) or ``:name`` (mapping) parameters."""
        # Written out (no helper calls for the checks that pass): a prepared point SELECT
        # spends a fifth of its time in the driver
        if self._closed:
            raise InterfaceError("cannot use a closed cursor")
        connection = self._connection
        thread = connection._thread
        if connection._closed or thread is not None and thread != get_ident():
            connection._check_open()  # raises
        session = connection._session
        params = adapt_parameters(parameters) if parameters.__class__ is not tuple or parameters else ()
        sql = operation if type(operation) is str else self._check_sql(operation)
        if connection._streaming is not None:
            connection._settle_streaming(self)
        if self._result is not None:
            self._reset()
        else:  # what _reset leaves, should the statement fail
            self._rows = self._description = None
            self.rowcount = -1
        if connection._trace is not None:
            connection._trace(sql)
        if session.db.read_only and not session.in_transaction:
            refresh_database(session.db)  # a reader sees the writer's latest commit (WAL mode)
        result = session.execute(sql, params)
        self._take(result)
        return self

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> Cursor:
        """Run one statement for every parameter set: parsed and planned once, one batch.

        ``rowcount`` is the total of affected rows. Statements returning rows are refused.
        """
        session = self._check_open()
        sql = self._check_sql(operation)
        self._connection._settle_streaming(self)
        self._reset()
        self._connection._traced(sql)
        # A generator keeps huge parameter streams out of memory; each set is validated (a
        # chunk at a time) before it runs
        params_stream = adapted_stream(seq_of_parameters)
        result = session.executemany(sql, params_stream)
        if result.columns is not None:
            raise ProgrammingError("executemany() cannot run a statement that returns rows")
        self._take(result)
        return self

    def executescript(self, script: str) -> Cursor:
        """Run several ``;``-separated statements (no parameters); rows of the last are kept."""
        session = self._check_open()
        sql = self._check_sql(script)
        self._connection._settle_streaming(self)
        self._reset()
        last = None
        last_rows: list[tuple] = []
        for result in self._traced_script(session, sql):
            # The next statement runs when the loop asks for it, so read this one's rows now:
            # they must show the data at their point in the script.
            if last is not None:  # the last one is counted by _take
                self._connection._count_changes(last.kind or "", last.rowcount)
            last = result
            last_rows = list(result) if result.columns is not None else []
        if last is not None:
            self._take(last, iter(last_rows))
        return self

    def _traced_script(self, session: Any, sql: str) -> Iterator[Any]:
        """Each statement of a script run in turn, shown to the trace callback first."""
        if self._connection._trace is None:
            yield from session.execute_script(sql)
            return
        from sqlkv.sql.parse import split_statements  # loaded by connect() already; `import sqlkv` stays light

        for piece in split_statements(sql):
            self._connection._traced(piece.sql)
            yield session.execute(piece.sql)

    # -- fetching ---------------------------------------------------------------------------

    def fetchone(self) -> Any:
        """The next row (through ``row_factory`` if set), or None when the result is exhausted."""
        rows = self._check_rows()
        row = next(rows, None)
        if row is None or self.row_factory is None:
            return row
        return self.row_factory(self, row)

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        """Up to ``size`` (default ``arraysize``) next rows; fewer or none at the end."""
        rows = self._check_rows()
        count = self.arraysize if size is None else size
        if count < 0:
            raise ProgrammingError(f"fetchmany() size must be >= 0, got {count}")
        out = []
        for row in rows:
            out.append(row)
            if len(out) >= count:
                break
        return self._made(out)

    def fetchall(self) -> list[Any]:
        """All remaining rows."""
        rows = self._rows
        if rows is None or self._closed:
            rows = self._check_rows()  # raises
        else:
            self._connection._check_open()
        if self.row_factory is None:
            return list(rows)
        return self._made(list(rows))

    def _made(self, rows: list[tuple]) -> list[Any]:
        factory = self.row_factory
        return rows if factory is None else [factory(self, row) for row in rows]

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    # -- housekeeping -----------------------------------------------------------------------

    def setinputsizes(self, sizes: Sequence[Any]) -> None:
        """Accepted and ignored (PEP 249 allows it): sqlkv needs no size hints."""
        self._check_open()

    def setoutputsize(self, size: int, column: int | None = None) -> None:
        """Accepted and ignored (PEP 249 allows it)."""
        self._check_open()

    def close(self) -> None:
        """Drop the pending result. Any later use raises InterfaceError. Idempotent.

        ``rowcount`` stays readable, as in sqlite3: SQLAlchemy closes a cursor that returned no
        rows before the caller asks ``result.rowcount`` (pandas' to_sql sums those).
        """
        if not self._closed:
            rowcount = self.rowcount
            self._reset()
            self.rowcount = rowcount
            self._closed = True
            self._connection._forget_cursor(self)

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _check_open(self) -> Any:
        if self._closed:
            raise InterfaceError("cannot use a closed cursor")
        return self._connection._check_open()

    @staticmethod
    def _check_sql(operation: Any) -> str:
        if not isinstance(operation, str):
            raise ProgrammingError(f"SQL must be a str, not {type(operation).__name__}")
        return operation

    def _check_rows(self) -> Iterator[tuple]:
        self._check_open()
        if self._rows is None:
            raise ProgrammingError("no result set: the last statement returned no rows")
        return self._rows

    def _reset(self) -> None:
        result, self._result = self._result, None
        if result is not None:
            # releases the plan the result reads through, even if it was never iterated
            result.close()
        self._rows = None
        self._description = None
        self.rowcount = -1

    def _take(self, result: Any, rows: Iterator[tuple] | None = None) -> None:
        """Adopt a session Result: description, counts, and its (lazy) rows."""
        ready = result.ready
        if ready is not None and rows is None and result.rowcount == -1 and result.lastrowid is None:
            described = self._described  # a repeated fast read: its rows as they are
            if described is not None and described[0] is result.columns and described[4]:
                self.rowcount = -1
                self._description = described[1]
                self._rows = iter(ready)
                return
        rowcount = result.rowcount
        self.rowcount = rowcount = -1 if rowcount is None else rowcount
        if rowcount > 0:  # -1 for a SELECT: nothing changed
            self._connection._count_changes(result.kind or "", rowcount)
        if result.lastrowid is not None:
            self.lastrowid = result.lastrowid
        columns = result.columns
        if columns is None:
            self._rows = None
            self._description = None
        else:
            described = self._described
            if described is not None and described[0] is columns:
                self._description, jsonb_columns, array_columns = described[1], described[2], described[3]
            else:
                self._description = tuple(description_entry(col) for col in result.columns)
                jsonb_columns = jsonb_positions(result.columns)
                array_columns = array_positions(result.columns)
                # the columns, their description, the JSONB and ARRAY positions, and whether
                # the rows go out as the session made them (neither to convert)
                self._described = (result.columns, self._description, jsonb_columns, array_columns,
                                   not jsonb_columns and not array_columns)
            if rows is None and result.ready is not None:
                # computed in full: nothing streams
                self._rows = iter(arrays_as_lists(result.ready, array_columns) if array_columns else result.ready)
            elif rows is None:
                self._rows = iter(arrays_as_lists(iter(result), array_columns))
                self._result = result
                self._connection._streaming_started(self)
            else:
                self._rows = iter(arrays_as_lists(rows, array_columns))
            if jsonb_columns:  # JSONB values as Python (or JSON text), issue 15
                self._rows = jsonb_as_python(self._rows, jsonb_columns, self._connection.jsonb_as_text)

    def _buffer_remaining(self) -> None:
        """Read the rest of a lazy result now (another statement is about to run)."""
        if self._rows is not None:
            self._rows = iter(list(self._rows))
            self._result = None  # read to its end: already finished
