"""The interactive shell: ``sqlkv [DATABASE]`` on a terminal.

A session looks like::

    sqlkv> SELECT name
      ...>   FROM users WHERE id < 3;
    +-------+
    | name  |
    ...

prompt-toolkit reads the input: Enter inserts a newline until the text is a complete
statement (ends with ``;`` outside quotes and comments) or a dot command, so statements span
lines naturally and land in the history (``~/.sqlkv_history``) whole. Pygments' SQL lexer
colours the input; Tab completes keywords, table names, and the columns of the tables the
statement mentions (``alias.`` completes that table's columns). The completed text goes to
`Shell.handle`, which runs it.

Ctrl-C at the prompt clears the input. Ctrl-C while a statement runs asks the session to
cancel it (`Session.cancel`; the statement fails with "statement cancelled" and the session
carries on); a second Ctrl-C abandons the statement at once. Ctrl-D or ``.quit`` exits.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.lexers import PygmentsLexer
from pygments.lexers.sql import SqlLexer

from sqlkv import __version__
from sqlkv.cli.dot import COMMANDS
from sqlkv.dbapi.schema import SchemaReader
from sqlkv.cli.render import RenderOptions
from sqlkv.cli.shell import Shell, ShellState

HISTORY_FILE = "~/.sqlkv_history"
PROMPT = "sqlkv> "
TXN_PROMPT = "sqlkv*> "
CONTINUATION = "  ...> "

KEYWORDS = sorted(set(
    """SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET DISTINCT AS AND OR NOT NULL IS IN
    BETWEEN LIKE EXISTS CASE WHEN THEN ELSE END JOIN INNER LEFT RIGHT FULL OUTER CROSS ON USING
    UNION INTERSECT EXCEPT ALL WITH RECURSIVE VALUES INSERT INTO UPDATE SET DELETE UPSERT
    RETURNING CREATE TABLE INDEX UNIQUE VIEW DROP ALTER ADD COLUMN RENAME TO PRIMARY KEY
    FOREIGN REFERENCES CHECK DEFAULT CONSTRAINT STORING FAMILY IF BEGIN COMMIT ROLLBACK
    SAVEPOINT RELEASE TRANSACTION EXPLAIN ANALYZE ASC DESC NULLS FIRST LAST TRUE FALSE CAST
    INT INTEGER BIGINT SMALLINT FLOAT REAL DOUBLE DECIMAL NUMERIC TEXT VARCHAR CHAR BOOL BOOLEAN
    BYTES BLOB DATE TIMESTAMP COUNT SUM AVG MIN MAX COALESCE NULLIF ABS LOWER UPPER LENGTH
    SUBSTR ROUND OVER PARTITION ROW_NUMBER RANK DENSE_RANK NOW CURRENT_TIMESTAMP""".split()
))


def statement_complete(text: str) -> bool:
    """True when ``text`` is ready to run: empty, a dot command, or ending in a top-level ``;``."""
    stripped = text.strip()
    if not stripped or stripped.startswith("."):
        return True
    last = ""  # the last significant character outside strings and comments
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            close = text.find(ch, i + 1)
            while close != -1 and close + 1 < n and text[close + 1] == ch:  # doubled quote
                close = text.find(ch, close + 2)
            if close == -1:
                return False  # an unterminated string: keep reading
            last, i = ch, close + 1
        elif text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline == -1 else newline
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                return False
            i = end + 2
        else:
            if not ch.isspace():
                last = ch
            i += 1
    return last == ";"


class SqlCompleter(Completer):
    """Keywords, table names, and columns of the tables the statement mentions."""

    def __init__(self, names: Callable[[], dict[str, list[str]]]) -> None:
        self.names = names

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if re.fullmatch(r"\s*\.\w*", before):
            word = before.strip()
            for name in COMMANDS:
                if ("." + name).startswith(word.lower()):
                    yield Completion("." + name, start_position=-len(word))
            return
        tables = self.names()
        dotted = re.search(r"([A-Za-z_]\w*)\.(\w*)$", before)
        if dotted:
            owner = _resolve_alias(document.text, dotted.group(1), tables)
            prefix = dotted.group(2)
            for column in tables.get(owner, []):
                if column.lower().startswith(prefix.lower()):
                    yield Completion(column, start_position=-len(prefix))
            return
        word = re.search(r"\w*$", before).group()
        if not word:
            return
        low = word.lower()
        seen: set[str] = set()
        for column in _mentioned_columns(document.text, tables):
            if column.lower().startswith(low) and column not in seen:
                seen.add(column)
                yield Completion(column, start_position=-len(word), display_meta="column")
        for table in sorted(tables):
            if table.lower().startswith(low) and table not in seen:
                seen.add(table)
                yield Completion(table, start_position=-len(word), display_meta="table")
        for keyword in KEYWORDS:
            if keyword.lower().startswith(low):
                text = keyword.lower() if word.islower() else keyword
                yield Completion(text, start_position=-len(word), display_meta="keyword")


def _lower_map(tables: dict[str, list[str]]) -> dict[str, str]:
    return {name.lower(): name for name in tables}


def _resolve_alias(text: str, name: str, tables: dict[str, list[str]]) -> str:
    """The table that ``name`` denotes in ``text``: itself, or the table it aliases."""
    by_lower = _lower_map(tables)
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    pattern = rf"\b([A-Za-z_]\w*)\s+(?:AS\s+)?{re.escape(name)}\b"
    for match in re.finditer(pattern, text, re.IGNORECASE):
        if match.group(1).lower() in by_lower:
            return by_lower[match.group(1).lower()]
    return name


def _mentioned_columns(text: str, tables: dict[str, list[str]]) -> list[str]:
    """Columns of the tables named in ``text``; of every table when it names none yet."""
    words = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", text)}
    named = [columns for table, columns in tables.items() if table.lower() in words]
    return [column for columns in (named or list(tables.values())) for column in columns]


class Repl:
    """The prompt loop around a `Shell`. ``input``/``output`` are for tests (pipe + dummy)."""

    def __init__(
        self,
        session: Any,
        database: str = ":memory:",
        render: RenderOptions | None = None,
        *,
        input: Any = None,  # noqa: A002 - prompt-toolkit's own parameter name
        output: Any = None,
        out: TextIO | None = None,
        err: TextIO | None = None,
        history: History | None = None,
    ) -> None:
        self.state = ShellState(
            session=session, database=database, out=out or sys.stdout, err=err or sys.stderr,
            render=render or RenderOptions(),
        )
        self.shell = Shell(self.state)
        self._names_cache: tuple[int, dict[str, list[str]]] | None = None
        self._cancel_sent = False
        self.prompt = PromptSession(
            input=input,
            output=output,
            history=history if history is not None else _default_history(),
            lexer=PygmentsLexer(SqlLexer),
            completer=SqlCompleter(self.names),
            complete_while_typing=False,
            multiline=Condition(lambda: not statement_complete(self.prompt.default_buffer.text)),
            prompt_continuation=lambda width, line_number, wrap_count: CONTINUATION,
        )

    def banner(self) -> str:
        if self.state.database == ":memory:":
            where = "a transient in-memory database (nothing is saved; run `sqlkv PATH` to use a file)"
        else:
            where = f"database {self.state.database}"
        return f"sqlkv {__version__}: connected to {where}.\nEnter .help for commands; end statements with ';'.\n"

    def names(self) -> dict[str, list[str]]:
        """Table -> column names for completion, reloaded after DDL."""
        version = self.state.schema_version
        if self._names_cache is None or self._names_cache[0] != version:
            try:
                names = SchemaReader(self.state.session).names()
            except Exception:  # noqa: BLE001 - completion must never break the prompt
                names = {}
            self._names_cache = (version, names)
        return self._names_cache[1]

    def run(self) -> int:
        self.state.out.write(self.banner())
        self.state.out.flush()
        while True:
            try:
                in_txn = bool(getattr(self.state.session, "in_transaction", False))
                text = self.prompt.prompt(TXN_PROMPT if in_txn else PROMPT)
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt: drop the input, stay
            except EOFError:
                break  # Ctrl-D
            if not self.execute(text):
                break
        return 0

    def execute(self, text: str) -> bool:
        """Run one input with Ctrl-C turned into a cancel request; False when quitting."""
        self._cancel_sent = False
        self.shell.cancel_requested = False
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self._on_sigint) if in_main else None
        try:
            return self.shell.handle(text)
        except KeyboardInterrupt:
            self.state.err.write("Error: interrupted\n")
            return True
        finally:
            if in_main:
                signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self._cancel_sent:
            raise KeyboardInterrupt  # second Ctrl-C: stop waiting for a polite cancel
        self._cancel_sent = True
        self.shell.cancel_requested = True
        self.state.session.cancel()


def _default_history() -> History:
    path = os.path.expanduser(HISTORY_FILE)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        return InMemoryHistory()  # read-only home: keep history for this session only
    return FileHistory(path)
