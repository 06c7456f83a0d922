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
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, TextIO

from sqlkv.cli.render import RenderOptions, render
from sqlkv.errors import Error


_CHUNK = 1 << 20


class ScriptFileError(Exception):
    """A script file that cannot be read as text; the message is what the user sees."""


def read_script(path: str, stream: Any = None) -> str:
    """The text of the script at ``path`` (or of an open binary ``stream``), as UTF-8.

    Read in chunks so that a device that never ends (``/dev/zero``) or a binary file is refused
    at its first NUL byte instead of filling memory; invalid UTF-8 names the byte offset.
    """
    try:
        if stream is None:
            with open(path, "rb") as fh:
                data = _read_text_bytes(path, fh)
        else:
            data = _read_text_bytes(path, stream)
    except OSError as exc:
        raise ScriptFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScriptFileError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None


def _read_text_bytes(path: str, fh: Any) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := fh.read(_CHUNK):
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise ScriptFileError(f"{path}: not a text file (NUL byte at offset {offset + nul})")
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


@dataclass
class ScriptRun:
    """Where a script's output goes and how it behaves on errors."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    render: RenderOptions = field(default_factory=RenderOptions)
    keep_going: bool = False
    echo: bool = False


_WHERE_IN_STATEMENT = re.compile(r" at line (\d+), column (\d+)")


def error_location(stmt: Any, exc: BaseException) -> tuple[int, int, str]:
    """Line, column and message of an error in the script text.

    A statement knows where it starts. A syntax error says where it is inside the statement
    (its ``line``/``col`` attributes, also " at line 2, column 7" in its message); that is
    moved into the location, so the user
    sees ``script.sql:14:7: syntax error near ...`` pointing at the offending token.
    """
    line = int(getattr(stmt, "line", 1) or 1)
    col = int(getattr(stmt, "col", 1) or 1)
    message = describe_error(exc)
    found = _WHERE_IN_STATEMENT.search(message) if isinstance(exc, Error) else None
    if found:
        message = message[: found.start()] + message[found.end():]
    inner_line, inner_col = getattr(exc, "line", None), getattr(exc, "col", None)
    if isinstance(inner_line, int) and isinstance(inner_col, int):
        inner_col = max(inner_col, 1)
        if inner_line <= 1:
            return line, col + inner_col - 1, message
        return line + inner_line - 1, inner_col, message
    return line, col, message


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
        line, col, message = error_location(None, exc)
        run.err.write(f"{source}:{line}:{col}: {message}\n")
        return 1
    for stmt in statements:
        if run.echo:
            run.out.write(stmt.sql.strip() + "\n")
        try:
            result = session.execute(stmt.sql)
            if result.columns is not None:
                names = [col.name for col in result.columns]
                render(names, result, run.out, run.render)
        except BrokenPipeError:
            raise  # the reader went away (`| head`): main() exits quietly
        except Exception as exc:  # noqa: BLE001 - every failure is reported the same way
            if not isinstance(exc, Error) and os.environ.get("SQLKV_DEBUG"):
                traceback.print_exc(file=run.err)
            line, col, message = error_location(stmt, exc)
            run.err.write(f"{source}:{line}:{col}: {message}\n")
            status = 1
            if not run.keep_going:
                break
    run.out.flush()
    return status
