"""What the shell does with one input, without any terminal handling: the REPL and scripts.

The REPL (`sqlkv.cli.repl`) reads ``SELECT * FROM users WHERE id < 3;`` with prompt-toolkit
and passes the text to `Shell.handle`; ``sqlkv db -f x.sql``, piped input, ``-c`` and the
command-line words of ``sqlkv db .dump`` go to `Shell.run_script`, which cuts the text into
SQL and dot-command lines (`split_script`) and runs them in order. Text starting with ``.``
is a dot command (`sqlkv.cli.dot`); anything else is split into statements, each executed on
the session: with ``.explain on`` its plan is printed first, rows are rendered in the current
mode as they stream (through the pager on a terminal, `sqlkv.cli.pager`), other statements
print a status line (``INSERT 3``) when interactive, ``.timer on`` adds the elapsed time.

Errors print ``Error: <message>`` (interactive) or ``FILE:LINE:COL: <message>`` (scripts).
Interactive input stops at its first error; a script stops there too unless ``.bail off`` /
``--keep-going``. The session and its transaction state carry on (a failed statement undoes
only its own writes).

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
from sqlkv.cli.script import (VERTICAL_END, caret_lines, describe_error, error_location, quoted_string_hint,
                              split_script)
from sqlkv.dbapi.compat import refresh_database
from sqlkv.errors import Error, OperationalError
from sqlkv.cli.pager import paged

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
    bail: bool = False  # scripts: stop at the first error
    echo: bool = False  # print each statement (and dot command) before running it
    changes: bool = False  # print the rows changed by each DML statement
    expand: bool = False  # vertical output for every query
    pager: bool = False  # page long results (on only when stdout is a terminal)
    total_changes: int = 0
    console: TextIO | None = None  # stdout while .output/.once points ``out`` at a file
    once: bool = False  # ``out`` goes back to the console after the next statement
    output_name: str = "stdout"


class Shell:
    """Runs inputs (SQL or dot commands) against a session, writing to ``state.out``/``err``."""

    def __init__(self, state: ShellState) -> None:
        self.state = state
        self.quit_requested = False
        self.exit_code: int | None = None  # ``.exit CODE``: the process's exit status
        self.cancel_requested = False  # set by the REPL's Ctrl-C handler
        self.failed = False  # some statement or command of this run reported an error

    # -- entry points -------------------------------------------------------------------------

    def handle(self, text: str) -> bool:
        """Run one interactive input; False once the user asked to quit."""
        stripped = text.strip()
        if not stripped:
            return not self.quit_requested
        if stripped.startswith("."):
            self.run_dot(stripped)
        else:
            vertical = stripped.endswith(VERTICAL_END)
            if vertical:
                text = stripped[: -len(VERTICAL_END)]
            self.run_sql(text, vertical=vertical)
        self.state.out.flush()
        return not self.quit_requested

    def run_script(self, text: str, source: str) -> bool:
        """Run a script's SQL and dot lines in order; True if everything succeeded.

        Errors say ``SOURCE:LINE:COL``; the script stops at the first one when ``bail`` is set.
        """
        ok = True
        for kind, piece, line in split_script(text):
            if kind == "dot":
                done = self.run_dot(piece, location=(source, line))
            else:
                done = self.run_sql(piece, source=source, first_line=line, vertical=kind == "vertical")
            ok = ok and done
            if (not done and (self.state.bail or self.state.interactive)) or self.quit_requested:
                break
        self.state.out.flush()
        return ok

    def run_dot(self, text: str, location: tuple[str, int] | None = None) -> bool:
        # dot commands (their schema reader, .kv's row store view) load with the first one
        from sqlkv.cli.dot import run_dot_command

        if self.state.echo:
            self.state.out.write(text + "\n")
        failed_before, self.failed = self.failed, False
        run_dot_command(self, text, (location[0], _Located(location[1], 1)) if location else None)
        ok = not self.failed
        self.failed = failed_before or self.failed
        return ok

    def run_sql(self, text: str, source: str | None = None, first_line: int = 1,
                vertical: bool = False) -> bool:
        """Run every statement of ``text``; True if all succeeded.

        ``source`` (a file name, for scripts and ``.read``) makes errors say
        ``FILE:LINE:COL: message``, counting lines from ``first_line``. Interactive input stops
        at its first error; a script stops when ``bail`` is set. ``vertical``: the last
        statement ended in ``\\G`` and is shown one line per column.
        """
        from sqlkv.sql.parse import split_statements  # sqlglot loads with the first statement

        try:
            statements = split_statements(text)
        except Exception as exc:  # noqa: BLE001 - reported like any statement error
            self.report(exc, (source, _Located(first_line, 1)) if source else None)
            return False
        ok = True
        for number, stmt in enumerate(statements, start=1):
            located = (source, _Located(stmt.line + first_line - 1, stmt.col)) if source else None
            if not self.run_statement(stmt.sql, located, vertical=vertical and number == len(statements)):
                ok = False
                if self.state.interactive or self.state.bail:
                    break
            if self.quit_requested:
                break
        return ok

    def run_statement(self, sql: str, located: tuple[str, Any] | None = None,
                      vertical: bool = False) -> bool:
        state = self.state
        if state.echo:
            state.out.write(sql.strip() + ";\n")
        started = time.perf_counter()
        try:
            session = state.session
            if session.db.read_only and not session.in_transaction:
                refresh_database(session.db)  # a reader sees the writer's latest commit
            if state.explain:
                self._print_plan(sql)
            result = session.execute(sql)
            if result.columns is not None:
                self._show_rows(result, vertical)
            else:
                self._after_change(result)
            kind = (getattr(result, "kind", "") or "").upper()
            if kind.startswith(_DDL_PREFIXES):
                state.schema_version += 1
        except BrokenPipeError:
            raise  # the reader went away (`| head`): main() exits quietly
        except Exception as exc:  # noqa: BLE001 - the shell survives every statement error
            self.report(exc, located, sql)
            return False
        finally:
            if state.timer:
                state.out.write(f"Run Time: {time.perf_counter() - started:.3f}s\n")
            self.end_once()
        return True

    # -- output -------------------------------------------------------------------------------

    def _show_rows(self, result: Any, vertical: bool) -> None:
        state = self.state
        names = [col.name for col in result.columns]
        opts = state.render
        if vertical or state.expand:
            opts = RenderOptions(**{**vars(opts), "mode": "vertical"})
        rows = self._until_cancelled(result)
        footer = state.interactive and opts.mode in ("table", "box")
        if state.pager and state.console is None:

            with paged(state.out) as out:
                count = render(names, rows, out, opts)
                if footer:
                    out.write(_row_count(count))
            return
        count = render(names, rows, state.out, opts)
        if footer:
            state.out.write(_row_count(count))

    def _after_change(self, result: Any) -> None:
        state = self.state
        kind = (getattr(result, "kind", "") or "").upper()
        changed = result.rowcount if kind.startswith(_COUNTED) and (result.rowcount or 0) > 0 else 0
        state.total_changes += changed
        if state.interactive:
            state.out.write(self.status_line(result) + "\n")
        if state.changes:
            state.out.write(f"changes: {changed}   total_changes: {state.total_changes}\n")

    def redirect(self, stream: TextIO, name: str, once: bool = False) -> None:
        """Send results to ``stream`` (``.output``/``.once``) until `restore_output`."""
        self.restore_output()
        self.state.console, self.state.out = self.state.out, stream
        self.state.once, self.state.output_name = once, name

    def restore_output(self) -> None:
        state = self.state
        if state.console is None:
            return
        redirected, state.out, state.console = state.out, state.console, None
        state.once, state.output_name = False, "stdout"
        redirected.close()

    def end_once(self) -> None:
        if self.state.once:
            self.restore_output()

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

    def report(self, exc: BaseException, located: tuple[str, Any] | None = None,
               sql: str | None = None) -> None:
        """Print an error; ``located`` = (file, statement) adds ``FILE:LINE:COL:``; a syntax
        error in ``sql`` also shows its line with a caret under the position.

        Interactive errors start with ``Error:``; a script's are ``FILE:LINE:COL: message``.
        """
        self.failed = True
        if not isinstance(exc, Error) and os.environ.get("SQLKV_DEBUG"):
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=self.state.err)
        prefix = "Error: " if self.state.interactive else ""
        if located is not None:
            source, stmt = located
            line, col, message = error_location(stmt, exc)
            self.state.err.write(f"{prefix}{source}:{line}:{col}: {message}\n")
        else:
            self.state.err.write(f"{prefix or 'Error: '}{describe_error(exc)}\n")
        if sql is not None:
            self.state.err.write(caret_lines(sql, exc) + quoted_string_hint(sql, exc))
        self.state.err.flush()


@dataclass
class _Located:
    """Where a statement starts in its script (what `error_location` reads)."""

    line: int
    col: int


def _row_count(count: int) -> str:
    return f"({count} row{'' if count == 1 else 's'})\n"
