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
colours the input; Tab completes what fits where the cursor is (`sqlkv.cli.complete`). The
completed text goes to `Shell.handle`, which runs it. A statement may end with ``\\G`` instead
of ``;`` for vertical output of that one result. Results taller than the terminal go through
a pager (``.pager off`` to stop; never when stdout is not a terminal).

Ctrl-C at the prompt clears the input. Ctrl-C while a statement runs asks the session to
cancel it (`Session.cancel`; the statement fails with "statement cancelled" and the session
carries on); a second Ctrl-C abandons the statement at once. Ctrl-D, ``.quit``, or ``quit``,
``exit``, ``\\q`` alone on the line (as in litecli and psql) exit; ``help`` shows ``.help``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.lexers import PygmentsLexer
from pygments.lexers.sql import SqlLexer

from sqlkv import __version__
from sqlkv.cli.complete import KEYWORDS, SqlCompleter
from sqlkv.cli.dot import COMMANDS
from sqlkv.cli.render import RenderOptions
from sqlkv.cli.script import statement_complete
from sqlkv.cli.shell import Shell, ShellState
from sqlkv.dbapi.schema import SchemaReader
from sqlkv.cli.progress import is_terminal

__all__ = ["KEYWORDS", "Repl", "SqlCompleter", "statement_complete"]

# Typed alone at the prompt, these do what litecli/psql users expect instead of waiting for a
# ';' that would only make them a syntax error: quit, or show the dot commands.
_QUIT_WORDS = ("quit", "exit", "\\q")
_HELP_WORDS = ("help", "\\?")


def prompt_word(text: str) -> str | None:
    """``quit``/``exit``/``\\q``/``help``/``\\?`` typed alone (a ``;`` may follow), lower-cased."""
    word = text.strip().rstrip(";").strip().lower()
    return word if word in _QUIT_WORDS + _HELP_WORDS else None


HISTORY_FILE = "~/.sqlkv_history"
PROMPT = "sqlkv> "
TXN_PROMPT = "sqlkv*> "
CONTINUATION = "  ...> "

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
            pager=is_terminal(out or sys.stdout),  # never page into a pipe or file
        )
        self.shell = Shell(self.state)
        self._names_cache: tuple[int, dict[str, list[str]]] | None = None
        self._cancel_sent = False
        self.prompt = PromptSession(
            input=input,
            output=output,
            history=history if history is not None else _default_history(),
            lexer=PygmentsLexer(SqlLexer),
            completer=SqlCompleter(self.names, COMMANDS),
            complete_while_typing=False,
            multiline=Condition(lambda: not _ready(self.prompt.default_buffer.text)),
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
        word = prompt_word(text)
        if word in _QUIT_WORDS:
            return False
        if word in _HELP_WORDS:
            text = ".help"
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


def _ready(text: str) -> bool:
    """Enter runs the input (instead of starting a new line) when it is complete."""
    return statement_complete(text) or prompt_word(text) is not None


def _default_history() -> History:
    path = os.path.expanduser(HISTORY_FILE)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        return InMemoryHistory()  # read-only home: keep history for this session only
    return FileHistory(path)
