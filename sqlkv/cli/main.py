"""The ``sqlkv`` command: REPL, script runner, and the test/check/bench subcommands.

``sqlkv shop.db -c "SELECT count(*) FROM orders"`` parses its arguments here, opens the
database directory (``:memory:`` when none is given), starts an autocommit `Session` and hands
the text to `Shell.run_script`, which prints the result; any error makes the exit status 1.
Words after the database are run like ``-c`` after the ``-c``/``-f`` options, as the sqlite3
shell does: ``sqlkv shop.db .dump``, ``sqlkv shop.db ".import x.csv t" "SELECT count(*) FROM t"``.
Without any of those it reads a script from stdin when stdin is not a terminal, and otherwise
starts the interactive REPL (`sqlkv.cli.repl`).

The first argument selects a subcommand only when it is one of ``test``, ``check``,
``stats``, ``bench``; anything else is the database path (write ``./test`` for a database named test).
Subcommands import their modules lazily, so a missing one is a clear message, not a crash.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from sqlkv.cli.render import MODES, RenderOptions
from sqlkv.cli.script import ScriptFileError, describe_error, read_script
from sqlkv.cli.sessions import close_session, open_session_with
from sqlkv.cli.shell import Shell, ShellState
from sqlkv.errors import DatabaseLockedError, Error

SUBCOMMANDS = ("test", "check", "bench", "stats")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sqlkv`` console script; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in SUBCOMMANDS:
            return _run_subcommand(args)
        # options may come after the database, between command words too (`sqlkv db --mode csv "SELECT 1"`)
        return _run_database(_database_parser().parse_intermixed_args(args))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """Exit quietly when stdout's reader closed the pipe (`sqlkv db -c ... | head`), as Unix tools do.

    Python's own flush at exit would hit the closed pipe again and print a traceback, so stdout is
    pointed at /dev/null first. The status is 128 + SIGPIPE, what a tool killed by the signal reports.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + 13


# -- sqlkv [DATABASE] ------------------------------------------------------------------------


class _TaggedAppend(argparse.Action):
    """Append ``(tag, value)`` to a list shared by several options, keeping their relative order."""

    def __init__(self, *args: Any, tag: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tag = tag

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        items = list(getattr(namespace, self.dest) or [])
        items.append((self.tag, values))
        setattr(namespace, self.dest, items)


def _database_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sqlkv",
        description="SQL over an ordered key-value store. Without -c/-f: an interactive shell "
        "(or a script read from stdin when it is not a terminal).",
        epilog="subcommands: sqlkv test FILES... | sqlkv check DATABASE | sqlkv stats DATABASE [--json] | "
        "sqlkv bench {kv,sql,expr,layouts} ...",
    )
    parser.add_argument(
        "database", nargs="?", default=":memory:",
        help=("database directory (created if missing), or an etcd cluster: "
              "etcd://host:port[,host:port...]/name; default: a temporary in-memory database"),
    )
    parser.add_argument(
        "commands", nargs="*", metavar="COMMAND",
        help="SQL or dot commands run after -c/-f, in order (sqlkv db .dump)",
    )
    # -c and -f share one list so that they run in the order given on the command line
    parser.add_argument("-c", "--command", dest="sources", action=_TaggedAppend, tag="command",
                        default=[], metavar="SQL",
                        help="run these ;-separated statements and exit (repeatable)")
    parser.add_argument("-f", "--file", dest="sources", action=_TaggedAppend, tag="file",
                        default=[], metavar="FILE",
                        help="run the statements in FILE and exit (repeatable)")
    parser.add_argument("--mode", choices=MODES, default="table", help="output mode (default: table)")
    parser.add_argument("--headers", action=argparse.BooleanOptionalAction, default=True,
                        help="print column names (default: on)")
    parser.add_argument("--keep-going", action="store_true",
                        help="report errors and continue instead of stopping at the first one")
    parser.add_argument("--echo", action="store_true", help="print each statement before running it")
    parser.add_argument("--durability", choices=("full", "normal", "off"),
                        help="fsync policy of the storage engine")
    parser.add_argument("--cache-size", type=int, metavar="BYTES", help="block cache size")
    parser.add_argument("--read-only", action="store_true", help="open the database read-only")
    return parser


def open_session(path: str, args: argparse.Namespace | None = None) -> Any:
    """Open ``path`` and return an autocommit `Session` on it."""
    options: dict[str, Any] = {}
    if args is not None:
        if args.durability:
            options["durability"] = args.durability
        if args.cache_size is not None:
            options["cache_size"] = args.cache_size
        if args.read_only:
            options["read_only"] = True
    return open_session_with(path, **options)


def _run_database(args: argparse.Namespace) -> int:
    try:
        session = open_session(args.database, args)
    except Error as exc:
        message = describe_error(exc)
        named = args.database in message  # most open errors already name the path: don't say it twice
        sys.stderr.write(f"sqlkv: {message}\n" if named else f"sqlkv: {args.database}: {message}\n")
        if isinstance(exc, DatabaseLockedError) and not args.read_only:
            sys.stderr.write("sqlkv: (--read-only opens it beside the writer, to read)\n")
        return 1
    render = RenderOptions(mode=args.mode, headers=args.headers)
    shell = Shell(ShellState(session=session, database=args.database, render=render,
                             interactive=False, bail=not args.keep_going, echo=args.echo))
    repl = None
    try:
        sources = args.sources + [("command", text) for text in args.commands]
        if sources:
            return _run_sources(shell, sources)
        if not sys.stdin.isatty():
            try:
                text = read_script("<stdin>", sys.stdin.buffer)
            except ScriptFileError as exc:
                sys.stderr.write(f"sqlkv: {exc}\n")
                return 1
            return _status(shell, shell.run_script(text, "<stdin>"))
        from sqlkv.cli.repl import Repl  # prompt_toolkit (~0.25 s) only for an interactive terminal

        repl = Repl(session, args.database, render=render)
        status = repl.run()
        return status if repl.shell.exit_code is None else repl.shell.exit_code & 0xFF
    finally:
        current = repl.shell if repl is not None else shell  # .open may have switched sessions
        current.restore_output()
        close_session(current.state.session)


def _status(shell: Shell, ok: bool) -> int:
    if shell.exit_code is not None:
        return shell.exit_code & 0xFF  # `.exit CODE` decides, as in sqlite3
    return 0 if ok and not shell.failed else 1


def _run_sources(shell: Shell, tagged: list[tuple[str, str]]) -> int:
    sources: list[tuple[str, str]] = []
    for kind, value in tagged:  # every file is read before anything runs
        if kind == "command":
            sources.append(("<command>", value))
            continue
        try:
            sources.append((value, read_script(value)))
        except ScriptFileError as exc:
            sys.stderr.write(f"sqlkv: {exc}\n")
            return 1
    for name, text in sources:
        if not shell.run_script(text, name) and shell.state.bail:
            break
        if shell.quit_requested:
            break
    return _status(shell, not shell.failed)


# -- sqlkv test | check | bench ----------------------------------------------------------------


def _run_subcommand(args: list[str]) -> int:
    name, rest = args[0], args[1:]
    if name == "test":
        return _delegate("sqlkv.cli.slt", rest)
    if name == "check":
        return _run_check(rest)
    if name == "stats":
        return _delegate("sqlkv.cli.stats", rest)
    parser = argparse.ArgumentParser(prog="sqlkv bench", description="benchmarks against sqlite3")
    parser.add_argument("suite", choices=("kv", "sql", "expr", "layouts"),
                        help="kv: the storage engine; sql: SQL vs sqlite3; expr: compiled expressions; "
                             "layouts: packed vs exploded ARRAY columns")
    known, extra = parser.parse_known_args(rest[:1])
    return _delegate(f"sqlkv.bench.{known.suite}", extra + rest[1:])


def _run_check(argv: list[str]) -> int:
    """``sqlkv check DATABASE``: every index entry matches its row and vice versa."""
    parser = argparse.ArgumentParser(prog="sqlkv check",
                                     description="check a database: rows against their index entries")
    parser.add_argument("database", help="database directory")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.database):
        sys.stderr.write(f"sqlkv check: {args.database}: no such database directory\n")
        return 1
    try:
        from sqlkv.sql.check import check_database  # the SQL layer loads when a command needs it

        # read-only: never creates, and runs beside a writing process
        session = open_session_with(args.database, create=False, read_only=True)
        try:
            problems = check_database(session)
        finally:
            close_session(session)
    except Error as exc:
        sys.stderr.write(f"sqlkv check: {args.database}: {describe_error(exc)}\n")
        return 1
    for problem in problems:
        sys.stdout.write(problem + "\n")
    if problems:
        sys.stdout.write(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found\n")
        return 1
    sys.stdout.write(f"{args.database}: ok\n")
    return 0


def _delegate(module_name: str, argv: list[str]) -> int:
    """``module.run(argv)``, the module imported now: each subcommand loads only what it needs."""
    status = importlib.import_module(module_name).run(argv)
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
