"""`Result`: what one statement gives back to the driver, the CLI and the test runner.

A SELECT's rows stream: iterating the result pulls them through the operator tree, and
finishing (or closing) it releases the plan and, for an autocommit SELECT, ends its read
transaction. Other statements report ``rowcount`` (-1 when it means nothing) and ``lastrowid``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from sqlkv.sql.context import Column


class Result:
    """The outcome of one statement. Iterate it (lazily) for the rows of a SELECT/RETURNING."""

    def __init__(
        self,
        kind: str,
        columns: list[Column] | None = None,
        rows: Iterable[tuple] | None = None,
        rowcount: int = -1,
        lastrowid: int | None = None,
        on_done: Callable[[], None] | None = None,
        cleanup: Callable[[], None] | None = None,
        ready: list[tuple] | None = None,
    ) -> None:
        self.kind = kind
        self.columns = columns
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self._rows: Iterator[tuple] | None = iter(rows) if rows is not None else None
        self._on_done = on_done
        self._cleanup = cleanup  # releases the plan's context (runs even if never iterated)
        self.produced = 0  # rows handed out so far (statement_stats)
        # rows computed in full already (the session's fast paths): no streaming, no callbacks
        self.ready = ready
        if ready is not None:
            self.produced = len(ready)

    @property
    def streaming(self) -> bool:
        """True while rows remain to be read."""
        return self._rows is not None

    def when_done(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the rows are consumed or the result is closed."""
        self._on_done = callback

    def __iter__(self) -> Iterator[tuple]:
        if self._rows is None:
            ready, self.ready = self.ready, None
            if ready is not None:
                yield from ready
            return
        try:
            for row in self._rows:
                self.produced += 1
                yield row
        finally:
            self._finish()

    def fetchall(self) -> list[tuple]:
        return list(self)

    def _finish(self) -> None:
        self._rows = None
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()
        done, self._on_done = self._on_done, None
        if done is not None:
            done()

    def close(self) -> None:
        if self._rows is not None and hasattr(self._rows, "close"):
            try:
                self._rows.close()  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - closing a generator mid-way is best effort
                pass
        self._finish()

    def __repr__(self) -> str:
        return f"Result({self.kind}, rowcount={self.rowcount})"
