"""What the REPL does with one complete input, without any terminal handling.

The REPL (`sqlkv.cli.repl`) reads ``SELECT * FROM users WHERE id < 3;`` with prompt-toolkit
and passes the text to `Shell.handle`. Text starting with ``.`` is a dot command
(`sqlkv.cli.dot`); anything else is split into statements, each executed on the session:
with ``.explain on`` its plan is printed first, rows are rendered in the current mode as they
stream, other statements print a status line (``INSERT 3``), ``.timer on`` adds the elapsed
time. Errors print ``Error: <message>`` and skip the rest of that input; the session and its
transaction state carry on (a failed statement undoes only its own writes).

Keeping this free of prompt-toolkit lets tests and ``.read`` drive the shell directly.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from sqlkv.cli.render import RenderOptions, render
from sqlkv.cli.script import describe_error, error_location
from sqlkv.errors import Error, OperationalError

# Statement kinds that change the schema: the completer's table/column lists are refreshed.
_DDL_PREFIXES = ("CREATE", "DROP", "ALTER", "RENAME", "TRUNCATE")
# Statement kinds whose status line shows the number of affected rows.
_COUNTED = ("INSERT", "UPDATE", "DELETE", "UPSERT", "REPLACE")


@dataclass
class ShellState:
    """Settings the dot commands change, and where output goes."""

    session: Any
    database: str = ":memory:"
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    render: RenderOptions = field(default_factory=RenderOptions)
    timer: bool = False
    explain: bool = False
    schema_version: int = 0  # bumped after DDL so completion reloads names
    interactive: bool = True


class Shell:
    """Runs inputs (SQL or dot commands) against a session, writing to ``state.out``/``err``."""

    def __init__(self, state: ShellState) -> None:
        self.state = state
        self.quit_requested = False
        self.cancel_requested = False  # set by the REPL's Ctrl-C handler

    def handle(self, text: str) -> bool:
        """Run one input; False once the user asked to quit."""
        stripped = text.strip()
        if not stripped:
            return not self.quit_requested
        if stripped.startswith("."):
            from sqlkv.cli.dot import run_dot_command

            run_dot_command(self, stripped)
        else:
            self.run_sql(text)
        self.state.out.flush()
        return not self.quit_requested

    def run_sql(self, text: str, source: str | None = None) -> bool:
        """Run every statement of ``text``; stop at the first error. True if all succeeded.

        ``source`` (a file name, for ``.read``) makes errors say ``FILE:LINE:COL: message``.
        """
        from sqlkv.sql.parse import split_statements

        try:
            statements = split_statements(text)
        except Exception as exc:  # noqa: BLE001 - reported like any statement error
            self.report(exc, (source, None) if source else None)
            return False
        for stmt in statements:
            if not self.run_statement(stmt.sql, (source, stmt) if source else None):
                return False
        return True

    def run_statement(self, sql: str, located: tuple[str, Any] | None = None) -> bool:
        state = self.state
        started = time.perf_counter()
        try:
            if state.explain:
                self._print_plan(sql)
            result = state.session.execute(sql)
            if result.columns is not None:
                names = [col.name for col in result.columns]
                count = render(names, self._until_cancelled(result), state.out, state.render)
                if state.interactive and state.render.mode in ("table", "box"):
                    state.out.write(f"({count} row{'' if count == 1 else 's'})\n")
            elif state.interactive:
                state.out.write(self.status_line(result) + "\n")
            kind = (getattr(result, "kind", "") or "").upper()
            if kind.startswith(_DDL_PREFIXES):
                state.schema_version += 1
        except Exception as exc:  # noqa: BLE001 - the shell survives every statement error
            self.report(exc, located)
            return False
        finally:
            if state.timer:
                state.out.write(f"Run Time: {time.perf_counter() - started:.3f}s\n")
        return True

    def _until_cancelled(self, rows: Any) -> Iterator[tuple]:
        """The result's rows, stopping when Ctrl-C asked to cancel while they print."""
        for row in rows:
            if self.cancel_requested:
                raise OperationalError("statement cancelled")
            yield row

    @staticmethod
    def status_line(result: Any) -> str:
        kind = (getattr(result, "kind", "") or "OK").upper()
        if kind.startswith(_COUNTED) and result.rowcount is not None and result.rowcount >= 0:
            return f"{kind} {result.rowcount}"
        return kind

    def _print_plan(self, sql: str) -> None:
        """``.explain on``: the statement's plan before its results (queries and DML only)."""
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head not in ("SELECT", "WITH", "VALUES", "INSERT", "UPDATE", "DELETE", "UPSERT"):
            return
        plan = self.state.session.execute("EXPLAIN " + sql)
        for row in plan:
            self.state.out.write(f"  {row[0] if len(row) == 1 else ' '.join(map(str, row))}\n")

    def report(self, exc: BaseException, located: tuple[str, Any] | None = None) -> None:
        """Print a statement's error; ``located`` = (file, statement) prefixes ``FILE:LINE:COL:``."""
        if not isinstance(exc, Error) and os.environ.get("SQLKV_DEBUG"):
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=self.state.err)
        if located is not None:
            source, stmt = located
            line, col, message = error_location(stmt, exc)
            self.state.err.write(f"Error: {source}:{line}:{col}: {message}\n")
        else:
            self.state.err.write(f"Error: {describe_error(exc)}\n")
        self.state.err.flush()
