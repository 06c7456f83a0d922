"""Reading SQL scripts: ``sqlkv DB -f script.sql``, ``sqlkv DB < script.sql``, ``-c "..."``.

A script such as::

    CREATE TABLE t (id INT PRIMARY KEY);
    INSERT INTO t VALUES (1), (1);

is cut by `split_script` into runs of SQL and dot-command lines (a line starting with ``.``
where no statement is pending, as the sqlite3 shell reads them); `Shell.run_script` runs them
in order, the SQL through the SQL layer's `split_statements`, whose statements remember where
they start (line 1 col 1, line 2 col 1). Each runs in its own autocommit transaction unless the
script says BEGIN. Rows of queries are rendered as they stream; other statements print nothing.
The duplicate key above stops the script with ``script.sql:2:1: <message>`` on stderr and exit
status 1; the CREATE TABLE stays committed. ``--keep-going`` (or ``.bail off``) reports the
error and goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlkv.errors import Error
from sqlkv.cli.render import display_width


_CHUNK = 1 << 20
# MySQL's terminator for one statement's vertical output: ``SELECT * FROM t\G``.
VERTICAL_END = "\\G"


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
class _Scanner:
    """Where SQL text stands after the characters fed so far: inside a string or comment, and
    whether a statement is pending (significant text after the last top-level ``;``).

    Fed line by line, so a script is scanned once however long its statements are.
    """

    quote: str = ""  # the open quote character, if inside a string or quoted name
    block_comment: bool = False
    pending: bool = False
    saw_end: bool = False  # a top-level ';' was seen

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            if self.quote:
                close = text.find(self.quote, i)
                if close == -1:
                    return
                i = close + 1  # a doubled quote closes and reopens: same effect
                self.quote = "" if not text.startswith(self.quote, i) else self.quote
                if self.quote:
                    i += 1
                continue
            if self.block_comment:
                end = text.find("*/", i)
                if end == -1:
                    return
                self.block_comment, i = False, end + 2
                continue
            ch = text[i]
            if ch in "'\"`":
                self.quote, self.pending = ch, True
            elif text.startswith("--", i):
                newline = text.find("\n", i)
                i = n if newline == -1 else newline
                continue
            elif text.startswith("/*", i):
                self.block_comment = True
                i += 2
                continue
            elif ch == ";":
                self.pending, self.saw_end = False, True
            elif not ch.isspace():
                self.pending = True
            i += 1

    @property
    def at_boundary(self) -> bool:
        """No statement, string or comment is open: the next line may be a dot command."""
        return not (self.quote or self.block_comment or self.pending)


def statement_complete(text: str) -> bool:
    """True when ``text`` is ready to run: empty, a dot command, or ending in a top-level ``;``
    (or ``\\G``, the REPL's vertical-output terminator)."""
    stripped = text.strip()
    if not stripped or stripped.startswith(".") or stripped.endswith(VERTICAL_END):
        return True
    scanner = _Scanner()
    scanner.feed(text)
    return scanner.at_boundary and scanner.saw_end


def split_script(text: str) -> Iterator[tuple[str, str, int]]:
    """``(kind, text, first_line)`` pieces of a script in order: kind "sql", "vertical" or "dot".

    A dot command is a whole line starting with ``.`` (after blanks) where no statement,
    string or comment is open; everything else is SQL, kept in maximal runs so that the SQL
    layer splits and locates its statements. A line ending in ``\\G`` outside any string or
    comment ends a "vertical" run: its last statement (``\\G`` removed) is shown vertically.
    """
    scanner = _Scanner()
    sql: list[str] = []
    sql_start = 1
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if scanner.at_boundary and line.lstrip().startswith("."):
            if sql:
                yield "sql", "".join(sql), sql_start
                sql = []
            yield "dot", line.strip(), number
            continue
        if not sql:
            sql_start = number
        body = line.rstrip()
        if body.endswith(VERTICAL_END):
            scanner.feed(body[: -len(VERTICAL_END)])
            if not (scanner.quote or scanner.block_comment):
                sql.append(body[: -len(VERTICAL_END)] + "\n")
                yield "vertical", "".join(sql), sql_start
                sql, scanner = [], _Scanner()
                continue
            scanner.feed(line[len(body) - len(VERTICAL_END):])
        else:
            scanner.feed(line)
        sql.append(line)
    if sql:
        yield "sql", "".join(sql), sql_start


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


def caret_lines(sql: str, exc: BaseException) -> str:
    """The statement line a syntax error is on, and a caret under its column (as psql shows).

    Empty when the error carries no position. ``line``/``col`` count within ``sql``.
    """
    line, col = getattr(exc, "line", None), getattr(exc, "col", None)
    if not isinstance(line, int) or not isinstance(col, int) or not isinstance(exc, Error):
        return ""
    lines = sql.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1].replace("\t", " ")

    pad = display_width(text[: max(col - 1, 0)])
    return f"  {text}\n  {' ' * pad}^\n"


_MISSING_COLUMN = re.compile(r'column "([^"]*)" does not exist')


def quoted_string_hint(sql: str, exc: BaseException) -> str:
    """A hint for sqlite3 habits: ``WHERE name = "Ann"`` names a column in SQL (SQLite falls back
    to a string when no column has that name; sqlkv, like PostgreSQL, does not)."""
    found = _MISSING_COLUMN.search(str(exc)) if getattr(exc, "sqlstate", "") == "42703" else None
    if found is None or f'"{found.group(1)}"' not in sql:
        return ""
    name = found.group(1).replace("'", "''")
    return f"  hint: double quotes name a column; write the string as '{name}'\n"


def describe_error(exc: BaseException) -> str:
    """The message a user sees: sqlkv errors as they are, anything else marked as a bug."""
    if isinstance(exc, Error):
        return str(exc) or type(exc).__name__
    return f"internal error ({type(exc).__name__}: {exc}); please report it"
