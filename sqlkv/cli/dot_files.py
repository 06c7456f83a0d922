"""Dot commands that read, write or switch files: ``.output``/``.once``, ``.read``, ``.import``,
``.dump``, ``.open``, ``.backup``/``.save``, and ``.shell``/``.system``.

``.once result.csv`` sends the next statement's output to ``result.csv`` and then back to the
terminal; ``.output report.txt`` sends everything until a bare ``.output``. ``.backup copy.db``
writes a new database directory holding the same schema and rows (the rows of a single
snapshot), the way ``.dump`` piped into ``sqlkv copy.db`` would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from sqlkv.cli.csvimport import import_csv
from sqlkv.cli.dot_settings import DotError
from sqlkv.cli.script import ScriptFileError, read_script
from sqlkv.cli.sessions import close_session, open_session_with
from sqlkv.dbapi.schema import SchemaReader, copy_database, dump_lines
from sqlkv.cli.progress import is_terminal, progress


def _open_for_writing(path: str) -> Any:
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise DotError(f"cannot write {path}: {exc.strerror or exc}") from None


def cmd_output(shell: Any, args: list[str]) -> None:
    if len(args) > 1:
        raise DotError("usage: .output [FILE]  (no FILE: back to stdout)")
    if not args or args[0] in ("stdout", "-"):
        shell.restore_output()
        return
    shell.redirect(_open_for_writing(args[0]), args[0])


def cmd_once(shell: Any, args: list[str]) -> None:
    if len(args) != 1:
        raise DotError("usage: .once FILE")
    shell.redirect(_open_for_writing(args[0]), args[0], once=True)


READ_NESTING_LIMIT = 25  # as sqlite3's shell: a script that reads itself stops here


def cmd_read(shell: Any, args: list[str]) -> None:
    if len(args) != 1:
        raise DotError("usage: .read FILE")
    depth = getattr(shell, "read_depth", 0)
    if depth >= READ_NESTING_LIMIT:
        raise DotError(f".read of {args[0]} nested more than {READ_NESTING_LIMIT} deep (scripts that "
                       f"read each other in a cycle?)")
    try:
        text = read_script(args[0])
    except ScriptFileError as exc:
        raise DotError(str(exc)) from None
    shell.read_depth = depth + 1
    try:
        if not shell.run_script(text, args[0]):
            shell.failed = True
    finally:
        shell.read_depth = depth


def cmd_dump(shell: Any, args: list[str]) -> None:
    if len(args) > 1:
        raise DotError("usage: .dump [FILE]")
    out = _open_for_writing(args[0]) if args else shell.state.out
    session = shell.state.session
    reader = SchemaReader(session)
    try:
        with progress("dumping", quiet=is_terminal(out)) as bar:  # not over the dump itself
            tables = reader.tables()
            for line in dump_lines(session, reader, tables=bar(tables, total=len(tables))):
                out.write(line + "\n")
    finally:
        if out is not shell.state.out:
            out.close()
    shell.end_once()


def cmd_import(shell: Any, args: list[str]) -> None:
    if len(args) != 2:
        raise DotError("usage: .import FILE.csv TABLE")

    path, table = args
    if not os.path.exists(path):
        raise DotError(f"cannot read {path}: no such file")
    if os.path.isdir(path):
        raise DotError(f"cannot read {path}: Is a directory")
    count = import_csv(shell.state.session, path, table, progress=True)
    shell.state.schema_version += 1
    if shell.state.interactive:
        shell.state.out.write(f"imported {count} row{'' if count == 1 else 's'} into {table}\n")


def cmd_open(shell: Any, args: list[str]) -> None:
    """``.open [--readonly] PATH``: close this database and continue on another."""
    read_only = "--readonly" in args
    rest = [a for a in args if a != "--readonly"]
    if len(rest) != 1:
        raise DotError("usage: .open [--readonly] PATH  (:memory: for a new in-memory database)")
    new = open_session_with(rest[0], read_only=read_only)  # fails before the old one closes
    old, shell.state.session = shell.state.session, new
    shell.state.database = rest[0]
    shell.state.schema_version += 1
    close_session(old, shell.state.err)


def cmd_backup(shell: Any, args: list[str]) -> None:
    if len(args) != 1:
        raise DotError("usage: .backup PATH  (a new database directory)")
    target_path = args[0]
    if os.path.exists(target_path) and (not os.path.isdir(target_path) or os.listdir(target_path)):
        raise DotError(f"cannot back up to {target_path}: it exists and is not empty")
    target = open_session_with(target_path)
    try:
        with progress(f"backing up to {target_path}") as bar:
            copy_database(shell.state.session, target, wrap_tables=lambda t: bar(t, total=len(t)))
    finally:
        close_session(target, shell.state.err)


def cmd_shell(shell: Any, args: list[str]) -> None:
    if not args:
        raise DotError("usage: .shell COMMAND ARGS...")
    command = " ".join(args)
    shell.state.out.flush()
    if shell.state.out is sys.stdout:  # straight to the terminal, so an editor or pager works
        completed = subprocess.run(command, shell=True, check=False)
    else:  # .output FILE (or a test's buffer): the command's output goes there too
        completed = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
        shell.state.out.write(completed.stdout)
        shell.state.err.write(completed.stderr)
    if completed.returncode:
        raise DotError(f"command exited with status {completed.returncode}: {' '.join(args)}")


FILE_COMMANDS: dict[str, tuple[Any, str, str]] = {
    "output": (cmd_output, ".output [FILE]", "send output to FILE (no FILE: back to stdout)"),
    "once": (cmd_once, ".once FILE", "send the next statement's output to FILE"),
    "read": (cmd_read, ".read FILE", "run the statements and dot commands in FILE"),
    "import": (cmd_import, ".import FILE.csv TABLE", "load CSV rows into TABLE (created with inferred types)"),
    "dump": (cmd_dump, ".dump [FILE]", "SQL that recreates the database"),
    "open": (cmd_open, ".open [--readonly] PATH", "close this database and open PATH"),
    "backup": (cmd_backup, ".backup PATH", "copy the database into a new directory PATH"),
    "save": (cmd_backup, ".save PATH", "the same as .backup"),
    "shell": (cmd_shell, ".shell CMD ARGS...", "run a command of the system shell"),
    "system": (cmd_shell, ".system CMD ARGS...", "the same as .shell"),
}
