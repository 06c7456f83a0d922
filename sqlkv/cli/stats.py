"""``.stats`` in the REPL and ``sqlkv stats DATABASE``: views over the sqlkv_internal figure tables.

Both only run SELECTs over ``sqlkv_internal.*`` (sqlkv/sql/observe.py): what they print is what
any SQL client can query. ``.stats`` shows the engine figures and the latencies; ``.stats
SECTION`` one of the other tables. ``sqlkv stats DATABASE`` opens a database directory read-only (so
it runs beside the process holding the write lock; an etcd:// URL opens as any client) and prints every section, or, with ``--json``,
one JSON object ``{section: [row objects]}`` for scripts. A fresh process has run no statement
yet, so there the statement and transaction sections hold only its own figures; the engine's
cumulative counters persist with the database and say since when they count.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
from typing import Any, TextIO

from sqlkv.cli.dot_settings import DotError
from sqlkv.cli.render import RenderOptions, render
from sqlkv.cli.script import describe_error
from sqlkv.cli.sessions import close_session, open_session_with
from sqlkv.errors import Error
from sqlkv.storage.etcd import is_etcd_url

# section -> the query behind it
SECTIONS = {
    # figures the engine does not keep (their text says "not applicable...") are left out
    "engine": "SELECT name, coalesce(CAST(value AS TEXT), text) AS value, since "
              "FROM sqlkv_internal.engine_stats WHERE coalesce(text, '') NOT LIKE 'not applicable%'",
    "latencies": "SELECT * FROM sqlkv_internal.latencies",
    "compactions": "SELECT * FROM sqlkv_internal.compactions ORDER BY started",
    "statements": "SELECT statement, count, errors, retries, mean_ms, p50_ms, p99_ms, rows, kv_gets, kv_scans, "
                  "kv_puts FROM sqlkv_internal.statement_stats ORDER BY total_ms DESC",
    "tables": "SELECT * FROM sqlkv_internal.table_stats ORDER BY table_name, index_name",
    "transactions": "SELECT * FROM sqlkv_internal.transactions",
    "hot": "SELECT * FROM sqlkv_internal.hot_ranges LIMIT 20",
}
DEFAULT_SECTIONS = ("engine", "latencies")


def query_section(session: Any, section: str) -> tuple[list[str], list[tuple]]:
    """Column names and rows of one section, read through SQL."""
    result = session.execute(SECTIONS[section])
    rows = list(result)
    return [c.name for c in result.columns], rows


def print_sections(session: Any, sections: tuple[str, ...], out: TextIO, opts: RenderOptions) -> None:
    for i, section in enumerate(sections):
        names, rows = query_section(session, section)
        if len(sections) > 1:
            out.write(("\n" if i else "") + f"-- {section}\n")
        render(names, _tidy(rows), out, opts)


def _tidy(rows: list[tuple]) -> list[tuple]:
    """Whole floats as integers ('12', not '12.0'): most figures are counts."""
    return [tuple(_integral(v) for v in row) for row in rows]


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.endswith(".0") and value[:-2].lstrip("-").isdigit():
        return value[:-2]
    return value


def dot_stats(shell: Any, args: list[str]) -> None:
    """``.stats [SECTION]``: engine figures and latencies, or one of SECTIONS."""
    if len(args) > 1 or (args and args[0].lower() not in SECTIONS):
        raise DotError(f"usage: .stats [{'|'.join(SECTIONS)}]")
    sections = (args[0].lower(),) if args else DEFAULT_SECTIONS
    print_sections(shell.state.session, sections, shell.state.out, shell.state.render)


def run(argv: list[str]) -> int:
    """``sqlkv stats DATABASE [--json]``."""
    parser = argparse.ArgumentParser(prog="sqlkv stats",
                                     description="print a database's figures (the sqlkv_internal tables)")
    parser.add_argument("database", help="database directory, or an etcd:// URL")
    parser.add_argument("--json", action="store_true", help="one JSON object {section: [rows]}")
    parser.add_argument("--section", action="append", choices=list(SECTIONS),
                        help="only these sections (repeatable; default: all)")
    args = parser.parse_args(argv)
    etcd = is_etcd_url(args.database)
    if not etcd and not os.path.isdir(args.database):
        sys.stderr.write(f"sqlkv stats: {args.database}: no such database directory\n")
        return 1
    sections = tuple(args.section or SECTIONS)
    # a directory opens read-only (beside a process holding the write lock); etcd has no such lock
    options = {} if etcd else {"read_only": True}
    try:
        session = open_session_with(args.database, create=False, **options)
        try:
            if args.json:
                doc = {}
                for section in sections:
                    doc[section] = json_section(session, section)
                sys.stdout.write(json.dumps(doc, indent=1) + "\n")
            else:
                print_sections(session, sections, sys.stdout, RenderOptions())
        finally:
            close_session(session)
    except Error as exc:
        sys.stderr.write(f"sqlkv stats: {args.database}: {describe_error(exc)}\n")
        return 1
    return 0


def json_section(session: Any, section: str) -> list[dict[str, Any]]:
    """One section as row objects; an engine figure's value is its number, else its text."""
    if section == "engine":
        rows = session.execute("SELECT name, value, text, since FROM sqlkv_internal.engine_stats")
        return [{"name": name, "value": _json(text if value is None else value), "since": _json(since)}
                for name, value, text, since in rows]
    names, rows = query_section(session, section)
    return [dict(zip(names, (_json(v) for v in row))) for row in rows]


def _json(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return _integral(value) if isinstance(value, float) else value
