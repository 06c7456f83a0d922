"""The sqlite3 shell's line-at-a-time output modes: list, tabs, quote, insert, html, column, vertical.

``SELECT id, name FROM users`` in each (headers on)::

    list      id|name              1|alice
    tabs      id<TAB>name          1<TAB>alice
    quote     'id','name'          1,'alice'
    insert                         INSERT INTO "table" VALUES(1,'alice');
    html      <TR><TH>id</TH>...   <TR><TD>1</TD><TD>alice</TD></TR>
    vertical  *** 1. row ***       id: 1 / name: alice (MySQL's \\G, the shell's ``.expand on``)

Every one of them streams: a row is written as it arrives, so a huge result never sits in
memory. ``column`` (sqlite3's aligned mode without a frame) lives with the framed modes in
`sqlkv.cli.render` because it needs every width first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TextIO

from sqlkv.dbapi.schema import quote_ident, sql_literal
from sqlkv.cli.render import display_width, format_value


def render_list(names: list[str], rows: Iterator[tuple], out: TextIO, opts: Any) -> int:
    """Values separated by ``opts.separator`` (``|``; a tab for ``tabs``), NULL as ``.nullvalue``."""
    sep = "\t" if opts.mode == "tabs" else opts.separator
    if opts.headers:
        out.write(sep.join(names) + "\n")
    count = 0
    for row in rows:
        out.write(sep.join(format_value(v, opts.null) for v in row) + "\n")
        count += 1
    return count


def render_quote(names: list[str], rows: Iterator[tuple], out: TextIO, opts: Any) -> int:
    """Each value as a SQL literal, comma separated (sqlite3's quote mode)."""
    if opts.headers:
        out.write(",".join(sql_literal(n) for n in names) + "\n")
    count = 0
    for row in rows:
        out.write(",".join(sql_literal(v) for v in row) + "\n")
        count += 1
    return count


def render_insert(names: list[str], rows: Iterator[tuple], out: TextIO, opts: Any) -> int:
    """One INSERT per row into ``opts.table`` (``.mode insert TABLE``); reads back with ``.read``."""
    target = quote_ident(opts.table)
    columns = "(" + ",".join(quote_ident(n) for n in names) + ")" if opts.headers else ""
    count = 0
    for row in rows:
        out.write(f"INSERT INTO {target}{columns} VALUES({','.join(sql_literal(v) for v in row)});\n")
        count += 1
    return count


_HTML_ESCAPES = str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&#39;"})


def render_html(names: list[str], rows: Iterator[tuple], out: TextIO, opts: Any) -> int:
    """Table rows of HTML, one cell a line (no <TABLE> wrapper), escaped as sqlite3 does."""
    if opts.headers:
        out.write("<TR>" + "\n".join(f"<TH>{n.translate(_HTML_ESCAPES)}</TH>" for n in names) + "\n</TR>\n")
    count = 0
    for row in rows:
        cells = "\n".join(f"<TD>{format_value(v, opts.null).translate(_HTML_ESCAPES)}</TD>" for v in row)
        out.write(f"<TR>{cells}\n</TR>\n")
        count += 1
    return count


def render_vertical(names: list[str], rows: Iterator[tuple], out: TextIO, opts: Any) -> int:
    """One block per row, one ``name: value`` line per column (MySQL's ``\\G``, psql's ``\\x``)."""
    label_width = max((display_width(n) for n in names), default=0)
    count = 0
    for row in rows:
        count += 1
        out.write(f"{'*' * 27} {count}. row {'*' * 27}\n")
        for name, value in zip(names, row):
            pad = " " * (label_width - display_width(name))
            out.write(f"{pad}{name}: {format_value(value, opts.null)}\n")
    return count
