"""The shell's dot commands: ``.tables``, ``.schema``, ``.kv`` and the registry of all of them.

Settings (``.mode``, ``.nullvalue``, ``.bail``...) live in `sqlkv.cli.dot_settings`, commands
that touch files (``.output``, ``.import``, ``.dump``, ``.open``, ``.backup``...) in
`sqlkv.cli.dot_files`. Dot commands work the same typed at the prompt, in ``-f`` scripts, in
piped input and as command-line words (``sqlkv shop.db .dump``).

``.kv users 5`` looks ``users`` up in the catalog, scans the first five KV pairs under its
table prefix ``/Table/<id>/`` from an engine snapshot, and prints each key in the key grammar
(``/users/primary/1/0``) beside its decoded value (``{name: "alice"}``), which shows how rows
and index entries are laid out. Every command is a function ``cmd_x(shell, args)`` listed in
`COMMANDS` with its usage and one line of help; unknown commands and bad arguments print a
message and leave the shell running.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from sqlkv.dbapi.schema import SchemaReader, create_index_sql, create_table_sql, create_view_sql
from sqlkv.cli.dot_files import FILE_COMMANDS
from sqlkv.cli.dot_settings import SETTINGS_COMMANDS, DotError
from sqlkv.cli.render import render
from sqlkv.cli.kvview import kv_rows
from sqlkv.cli.stats import dot_stats  # a view over the sqlkv_internal figure tables


def run_dot_command(shell: Any, text: str, located: tuple[str, Any] | None = None) -> None:
    """Parse ``.name args...`` and run it; errors are printed, never raised.

    ``located`` (script name, position) makes a script's errors say ``FILE:LINE:1``.
    """
    try:
        words = shlex.split(text)
    except ValueError as exc:
        shell.report(DotError(f"cannot parse command: {exc}"), located)
        return
    name, args = words[0][1:].lower(), words[1:]
    entry = COMMANDS.get(name)
    if entry is None:
        shell.report(DotError(f'unknown command ".{name}"; try .help'), located)
        return
    try:
        entry[0](shell, args)
    except BrokenPipeError:
        raise  # the reader went away (`| head`): main() exits quietly
    except Exception as exc:  # noqa: BLE001 - the shell must survive every command
        shell.report(exc, located)


def _table(shell: Any, name: str) -> Any:
    table = SchemaReader(shell.state.session).find_table(name)
    if table is None:
        raise DotError(f'relation "{name}" does not exist')
    return table


def _write_table(shell: Any, names: list[str], rows: list[tuple]) -> None:
    """Internal listings are shown as tables (csv/json modes keep their format)."""
    render(names, rows, shell.state.out, shell.state.render)


# -- the commands --------------------------------------------------------------------------


def cmd_help(shell: Any, args: list[str]) -> None:
    """``.help`` lists every command; ``.help mode`` only those whose name starts with ``mode``."""
    wanted = [(name, usage, text) for name, (_, usage, text) in COMMANDS.items()
              if not args or name.startswith(args[0].lstrip(".").lower())]
    if not wanted:
        raise DotError(f'no command matches "{args[0]}"; .help lists them all')
    width = max(len(usage) for _, usage, _ in wanted)
    for _, usage, help_text in wanted:
        shell.state.out.write(f"{usage.ljust(width)}  {help_text}\n")
    if not args:
        shell.state.out.write("Statements end with ';'. Ctrl-C cancels a running statement, Ctrl-D exits.\n")


def cmd_quit(shell: Any, args: list[str]) -> None:
    """``.quit``, or ``.exit CODE`` as in sqlite3: the process exits with CODE."""
    if len(args) > 1 or (args and not re.fullmatch(r"-?\d+", args[0])):
        raise DotError("usage: .exit [CODE]")
    shell.exit_code = int(args[0]) if args else None
    shell.quit_requested = True


def cmd_databases(shell: Any, args: list[str]) -> None:
    """``.databases``: sqlkv has one database per connection, shown as sqlite3 shows ``main``."""
    session = shell.state.session
    access = "r/o" if session.db.read_only else "r/w"
    shell.state.out.write(f"main: {shell.state.database} {access}\n")


def _one_pattern(args: list[str], usage: str) -> None:
    if len(args) > 1:
        raise DotError(f"usage: {usage}")


def cmd_tables(shell: Any, args: list[str]) -> None:
    _one_pattern(args, ".tables [PATTERN]")
    reader = SchemaReader(shell.state.session)
    names = [t.name for t in reader.tables()] + [v.name for v in reader.views()]
    if args:
        matches = like_matcher(args[0])
        names = [n for n in names if matches(n)]
    shell.state.out.write("".join(n + "\n" for n in sorted(names)))


def like_matcher(pattern: str) -> Callable[[str], bool]:
    """A case-insensitive SQL LIKE test (``%`` any run, ``_`` one character), as sqlite3's ``.tables``."""
    parts = ("." if ch == "_" else ".*" if ch == "%" else re.escape(ch) for ch in pattern)
    compiled = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
    return lambda name: compiled.fullmatch(name) is not None


def cmd_schema(shell: Any, args: list[str]) -> None:
    """``.schema``, ``.schema users`` or, as in sqlite3, ``.schema user%`` (a LIKE pattern)."""
    _one_pattern(args, ".schema [PATTERN]")
    reader = SchemaReader(shell.state.session)
    tables, views = reader.tables(), reader.views()
    if args:
        exact = reader.find_table(args[0]) or reader.find_view(args[0])
        matches = (lambda name: name == exact.name) if exact is not None else like_matcher(args[0])
        tables = [t for t in tables if matches(t.name)]
        views = [v for v in views if matches(v.name)]
        if not tables and not views:
            raise DotError(f'relation "{args[0]}" does not exist')
    for table in tables:
        _print_table_ddl(shell, table)
    for view in views:
        shell.state.out.write(create_view_sql(view) + "\n")


def _print_table_ddl(shell: Any, table: Any) -> None:
    reader = SchemaReader(shell.state.session)
    names = {t.id: t for t in reader.tables()}  # the tables foreign keys reference
    sequences = {d.name: d for d, _state in reader.sequences()}
    shell.state.out.write(create_table_sql(table, sequences, names=names) + "\n")
    for index in table.indexes:
        shell.state.out.write(create_index_sql(table, index) + "\n")


def cmd_indexes(shell: Any, args: list[str]) -> None:
    reader = SchemaReader(shell.state.session)
    tables = [_table(shell, args[0])] if args else reader.tables()
    rows = []
    for table in tables:
        for index in table.all_indexes():
            cols = ", ".join(
                table.column_by_id(c).name + (" DESC" if d else "")
                for c, d in zip(index.column_ids, index.descending)
            )
            storing = ", ".join(table.column_by_id(c).name for c in index.storing)
            kind = "primary" if index is table.primary_index else ("unique" if index.unique else
                                                                   "inverted" if index.inverted else "")
            rows.append((table.name, index.name, index.id, kind, cols, storing))
    _write_table(shell, ["table", "index", "id", "kind", "columns", "storing"], rows)


def cmd_stats(shell: Any, args: list[str]) -> None:
    dot_stats(shell, args)


def cmd_kv(shell: Any, args: list[str]) -> None:
    if not args or len(args) > 2:
        raise DotError("usage: .kv TABLE [LIMIT]")
    try:
        limit = int(args[1]) if len(args) == 2 else 20
    except ValueError:
        raise DotError(f"LIMIT must be a number, not {args[1]!r}") from None
    table = _table(shell, args[0])

    rows = kv_rows(shell.state.session, table, limit)
    _write_table(shell, ["key", "value"], rows)


COMMANDS: dict[str, tuple[Callable[[Any, list[str]], None], str, str]] = {
    "help": (cmd_help, ".help", "show this list"),
    "tables": (cmd_tables, ".tables [PATTERN]", "list tables and views (PATTERN: a LIKE pattern)"),
    "schema": (cmd_schema, ".schema [PATTERN]", "show CREATE statements (PATTERN: a name or LIKE pattern)"),
    "indexes": (cmd_indexes, ".indexes [TABLE]", "list indexes with their key columns"),
    "indices": (cmd_indexes, ".indices [TABLE]", "the same as .indexes"),
    "databases": (cmd_databases, ".databases", "the open database's path and access"),
    "kv": (cmd_kv, ".kv TABLE [LIMIT]", "raw KV pairs of a table: keys and decoded values"),
    "stats": (cmd_stats, ".stats [SECTION]", "figures: engine and latencies, or one of compactions, statements, tables, transactions, hot"),
    **SETTINGS_COMMANDS,
    **FILE_COMMANDS,
    "quit": (cmd_quit, ".quit", "exit (also .exit, Ctrl-D)"),
    "exit": (cmd_quit, ".exit [CODE]", "exit, with status CODE"),
}
