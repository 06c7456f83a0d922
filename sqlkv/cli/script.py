"""Running SQL scripts: ``sqlkv DB -f script.sql``, ``sqlkv DB < script.sql``, ``-c "..."``.

A script such as::

    CREATE TABLE t (id INT PRIMARY KEY);
    INSERT INTO t VALUES (1), (1);

is split by the SQL layer's `split_statements` into statements that remember where they start
(line 1 col 1, line 2 col 1). Each runs in its own autocommit transaction unless the script
says BEGIN. Rows of queries are rendered as they stream; other statements print nothing. The
duplicate key above stops the script with ``script.sql:2:1: <message>`` on stderr and exit
status 1; the CREATE TABLE stays committed. ``keep_going`` reports the error and goes on.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, TextIO

from sqlkv.cli.render import RenderOptions, render
from sqlkv.errors import Error


@dataclass
class ScriptRun:
    """Where a script's output goes and how it behaves on errors."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    render: RenderOptions = field(default_factory=RenderOptions)
    keep_going: bool = False
    echo: bool = False


def error_location(stmt: Any, exc: BaseException) -> tuple[int, int]:
    """Line and column of an error in the script text.

    A statement knows where it starts; an error that knows its position inside the statement
    (``line``/``col`` attributes, 1-based, as parse errors carry) is placed exactly.
    """
    line, col = int(getattr(stmt, "line", 1)), int(getattr(stmt, "col", 1))
    inner_line = getattr(exc, "line", None)
    inner_col = getattr(exc, "col", None)
    if isinstance(inner_line, int) and isinstance(inner_col, int) and inner_line >= 1:
        if inner_line == 1:
            return line, col + max(inner_col, 1) - 1
        return line + inner_line - 1, max(inner_col, 1)
    return line, col


def describe_error(exc: BaseException) -> str:
    """The message a user sees: sqlkv errors as they are, anything else marked as a bug."""
    if isinstance(exc, Error):
        return str(exc) or type(exc).__name__
    return f"internal error ({type(exc).__name__}: {exc}); please report it"


def run_statements(session: Any, text: str, source: str, run: ScriptRun) -> int:
    """Run every statement of ``text``; return the exit status (0 ok, 1 an error happened)."""
    from sqlkv.sql.parse import split_statements

    status = 0
    try:
        statements = split_statements(text)
    except Error as exc:
        line, col = error_location(None, exc)
        run.err.write(f"{source}:{line}:{col}: {describe_error(exc)}\n")
        return 1
    for stmt in statements:
        if run.echo:
            run.out.write(stmt.sql.strip() + "\n")
        try:
            result = session.execute(stmt.sql)
            if result.columns is not None:
                names = [col.name for col in result.columns]
                render(names, result, run.out, run.render)
        except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
            if not isinstance(exc, Error) and os.environ.get("SQLKV_DEBUG"):
                traceback.print_exc(file=run.err)
            line, col = error_location(stmt, exc)
            run.err.write(f"{source}:{line}:{col}: {describe_error(exc)}\n")
            status = 1
            if not run.keep_going:
                break
    run.out.flush()
    return status
