"""Result rendering for the REPL and scripts: table, box, markdown, column, csv, json, line, and
the sqlite3 shell's list, tabs, quote, insert, html and vertical modes (`sqlkv.cli.render_modes`).

``SELECT id, name FROM users`` in table mode comes out as::

    +----+-------+
    | id | name  |
    +----+-------+
    |  1 | alice |
    +----+-------+

`render` takes the column names and a row iterator and writes to a text stream as it goes.
csv, json and line modes stream row by row. The aligned modes (table, box, markdown) need
column widths over every row before printing the first: a result longer than `PAGE_ROWS` is
measured while it is spilled to a temporary file, so a huge result never sits in memory whole. Widths are
measured with ``wcwidth`` (a prompt-toolkit dependency) so CJK text and emoji line up.

This is a small hand-written renderer rather than a library (tabulate, cli_helpers as litecli
uses): those take the whole result as a list before drawing it, while this streams every mode
and spills long aligned results to disk; and sqlite3's modes (insert, quote, list with
.nullvalue, .width) would need adapting anyway.
"""

from __future__ import annotations

import csv
import datetime
import json
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from typing import Any, TextIO

import msgpack
from wcwidth import wcswidth

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb

MODES = ("table", "box", "column", "markdown", "csv", "json", "line", "list", "tabs", "quote",
         "insert", "html", "vertical")
_ALIGNED = ("table", "box", "column", "markdown")
PAGE_ROWS = 1000


@dataclass
class RenderOptions:
    mode: str = "table"
    headers: bool = True
    null: str = "NULL"
    separator: str = "|"  # list mode
    table: str = "table"  # insert mode's target table
    widths: list[int] = field(default_factory=list)  # .width: minimum widths, negative = right


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (CJK and emoji count two)."""
    return _width(text)


def format_value(value: Any, null: str = "NULL") -> str:
    """A value as text for the aligned, line and csv modes."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        # JSON has no inf/nan; text keeps them visible rather than breaking the document.
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, SqlArray):  # an ARRAY is a JSON array
        return [_json_value(v) for v in value]
    if isinstance(value, Jsonb):  # a JSONB document nests as JSON (numbers exact, as text when needed)
        return json.loads(str(value))
    return format_value(value)


def _width(text: str) -> int:
    w = wcswidth(text)
    return len(text) if w < 0 else w  # control characters: fall back to code points


def _is_numeric(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def render(names: list[str], rows: Iterable[tuple], out: TextIO, opts: RenderOptions) -> int:
    """Write ``rows`` under ``names`` to ``out`` in ``opts.mode``; return the row count."""
    # render_modes.py builds on this module's format_value/display_width: the one import
    # that a cycle keeps inside a function
    from sqlkv.cli import render_modes as more

    renderer = {
        "csv": _render_csv,
        "json": _render_json,
        "line": _render_line,
        "list": more.render_list,
        "tabs": more.render_list,
        "quote": more.render_quote,
        "insert": more.render_insert,
        "html": more.render_html,
        "vertical": more.render_vertical,
    }.get(opts.mode, _render_aligned if opts.mode in _ALIGNED else None)
    if renderer is None:
        raise ValueError(f"unknown output mode {opts.mode!r} (choose {', '.join(MODES)})")
    return renderer(names, iter(rows), out, opts)


def _render_csv(names: list[str], rows: Iterator[tuple], out: TextIO, opts: RenderOptions) -> int:
    writer = csv.writer(out, lineterminator="\n")
    if opts.headers:
        writer.writerow(names)
    count = 0
    for row in rows:
        writer.writerow(["" if v is None else format_value(v) for v in row])
        count += 1
    return count


def _render_json(names: list[str], rows: Iterator[tuple], out: TextIO, opts: RenderOptions) -> int:
    """A JSON array of objects, one object per line, written as rows arrive."""
    count = 0
    out.write("[")
    for row in rows:
        obj = {name: _json_value(v) for name, v in zip(names, row)}
        out.write(("," if count else "") + "\n" + json.dumps(obj, ensure_ascii=False))
        count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def _render_line(names: list[str], rows: Iterator[tuple], out: TextIO, opts: RenderOptions) -> int:
    """One ``name = value`` line per column, a blank line between rows (sqlite3's line mode)."""
    label_width = max((_width(n) for n in names), default=0)
    count = 0
    for row in rows:
        if count:
            out.write("\n")
        for name, value in zip(names, row):
            pad = " " * (label_width - _width(name))
            out.write(f"{pad}{name} = {format_value(value, opts.null)}\n")
        count += 1
    return count


@dataclass
class _Frame:
    """The characters drawing one aligned style."""

    top: tuple[str, str, str, str] | None  # left, fill, junction, right
    header_sep: tuple[str, str, str, str] | None
    bottom: tuple[str, str, str, str] | None
    vertical: str


_FRAMES = {
    "table": _Frame(("+", "-", "+", "+"), ("+", "-", "+", "+"), ("+", "-", "+", "+"), "|"),
    "box": _Frame(("┌", "─", "┬", "┐"), ("├", "─", "┼", "┤"), ("└", "─", "┴", "┘"), "│"),
    "markdown": _Frame(None, ("|", "-", "|", "|"), None, "|"),
    "column": _Frame(None, ("", "-", "  ", ""), None, ""),  # sqlite3's column mode
}


def _render_aligned(
    names: list[str], rows: Iterator[tuple], out: TextIO, opts: RenderOptions
) -> int:
    frame = _FRAMES[opts.mode]
    widths = [_width(n) if opts.headers else 1 for n in names]
    if opts.mode == "markdown":
        widths = [max(w, 3) for w in widths]  # a markdown separator needs at least '---'
    for i, wanted in enumerate(opts.widths[: len(widths)]):  # .width N: at least N columns
        widths[i] = max(widths[i], abs(wanted))
    forced_right = [i < len(opts.widths) and opts.widths[i] < 0 for i in range(len(names))]
    lines = _measured_lines(rows, opts, widths)
    _rule(out, frame.top, widths)
    if opts.headers:
        _line(out, frame.vertical, names, widths, forced_right)  # .width -N right-aligns its header too
        _rule(out, frame.header_sep, widths)
    count = 0
    for texts, right in lines:
        _line(out, frame.vertical, texts, widths, [r or f for r, f in zip(right, forced_right)])
        count += 1
    _rule(out, frame.bottom, widths)
    return count


def _measured_lines(rows: Iterator[tuple], opts: RenderOptions, widths: list[int]) -> Iterable[tuple]:
    """Every row's (texts, right-aligned flags), with ``widths`` grown to fit all of them.

    Widths must be known before the first line is printed, so every row is read first. A
    result that fits in one page stays in memory; a longer one is spilled to a temporary
    file (msgpack) as it is measured, so a huge result never sits in memory whole.
    """
    markdown = opts.mode == "markdown"
    page = [_line_of(row, opts.null, markdown, widths) for row in islice(rows, PAGE_ROWS)]
    if len(page) < PAGE_ROWS:
        return page
    spill = tempfile.TemporaryFile()
    packer = msgpack.Packer()
    for item in page:
        spill.write(packer.pack(item))
    for row in rows:
        spill.write(packer.pack(_line_of(row, opts.null, markdown, widths)))
    spill.seek(0)
    return _replay(spill)


def _replay(spill: Any) -> Iterator[tuple]:
    with spill:
        yield from msgpack.Unpacker(spill, use_list=True)


def _line_of(row: tuple, null: str, markdown: bool, widths: list[int]) -> tuple[list[str], list[bool]]:
    texts = _cells(row, null, markdown)
    for i, text in enumerate(texts):
        widths[i] = max(widths[i], _width(text))
    return texts, [_is_numeric(v) for v in row]


def _rule(out: TextIO, chars: tuple[str, str, str, str] | None, widths: list[int]) -> None:
    if chars is None:
        return
    left, fill, junction, right = chars
    if not left:  # column mode: dashes under each name, two spaces apart
        out.write(junction.join(fill * w for w in widths) + "\n")
        return
    out.write(left + junction.join(fill * (w + 2) for w in widths) + right + "\n")


def _line(out: TextIO, vertical: str, cells: list[str], widths: list[int], right: list[bool]) -> None:
    parts = []
    for text, width, align_right in zip(cells, widths, right):
        pad = " " * (width - _width(text))
        parts.append(f"{pad}{text}" if align_right else f"{text}{pad}")
    if not vertical:  # column mode
        out.write("  ".join(parts).rstrip() + "\n")
        return
    out.write(vertical + vertical.join(f" {p} " for p in parts) + vertical + "\n")


def _cells(row: tuple, null: str, markdown: bool) -> list[str]:
    """The row's display texts (newlines escaped to keep one line per row)."""
    texts = [format_value(v, null).replace("\n", "\\n") for v in row]
    if markdown:
        texts = [t.replace("|", "\\|") for t in texts]
    return texts
