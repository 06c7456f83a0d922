"""Output modes: csv and json read back to the same values, aligned modes line up, paging."""

from __future__ import annotations

import csv
import datetime
import io
import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.cli import render as render_module
from sqlkv.cli.render import RenderOptions, format_value, render
from wcwidth import wcswidth

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
VALUE = st.one_of(st.none(), st.integers(-10**12, 10**12), TEXT, st.booleans(),
                  st.floats(allow_nan=False, allow_infinity=False))
ROWS = st.lists(st.tuples(VALUE, VALUE, VALUE), max_size=20)
NAMES = ["a", "b c", "ünï"]


def _draw(rows: list[tuple], mode: str, **kw: object) -> str:
    out = io.StringIO()
    count = render(NAMES, rows, out, RenderOptions(mode=mode, **kw))
    assert count == len(rows)
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(rows=ROWS)
def test_csv_reads_back(rows: list[tuple]) -> None:
    back = list(csv.reader(io.StringIO(_draw(rows, "csv"))))
    assert back[0] == NAMES
    assert back[1:] == [["" if v is None else format_value(v) for v in row] for row in rows]


@settings(max_examples=60, deadline=None)
@given(rows=ROWS)
def test_json_reads_back(rows: list[tuple]) -> None:
    assert json.loads(_draw(rows, "json")) == [dict(zip(NAMES, row)) for row in rows]


@settings(max_examples=60, deadline=None)
@given(rows=ROWS, mode=st.sampled_from(["table", "box", "markdown"]))
def test_aligned_modes_have_equal_display_widths(rows: list[tuple], mode: str) -> None:
    lines = _draw(rows, mode).splitlines()
    assert len({wcswidth(line) for line in lines}) == 1
    body = lines[3:-1] if mode in ("table", "box") else lines[2:]
    assert len(body) == len(rows)


def test_special_values_are_readable() -> None:
    row = (None, b"\x00\xff", Decimal("1.50"), datetime.datetime(2024, 1, 2, 3, 4, 5), True)
    assert [format_value(v) for v in row] == ["NULL", "\\x00ff", "1.50", "2024-01-02 03:04:05", "true"]
    out = io.StringIO()
    render(["x"], [("a|b",)], out, RenderOptions(mode="markdown"))
    assert "a\\|b" in out.getvalue()
    out = io.StringIO()
    render(["n"], [(float("inf"),), (Decimal("2.5"),)], out, RenderOptions(mode="json"))
    assert json.loads(out.getvalue()) == [{"n": "inf"}, {"n": "2.5"}]


@pytest.mark.parametrize("mode", ["table", "box", "markdown"])
def test_long_results_stay_aligned_past_the_first_page(monkeypatch, mode: str) -> None:
    """Widths cover every row, not the first page (issue 13: later rows misaligned)."""
    monkeypatch.setattr(render_module, "PAGE_ROWS", 3)
    rows = [(i, "x" * i, None if i % 2 else Decimal(i) / 4) for i in range(8)]
    out = io.StringIO()
    assert render(["n", "s", "d"], iter(rows), out, RenderOptions(mode=mode)) == 8
    lines = out.getvalue().splitlines()
    assert len({wcswidth(line) for line in lines}) == 1
    body = lines[3:-1] if mode != "markdown" else lines[2:]
    assert [int(line.replace("│", "|").split("|")[1]) for line in body] == list(range(8))


def test_line_mode_and_headers() -> None:
    assert _draw([(1, "x", None)], "line") == "  a = 1\nb c = x\nünï = NULL\n"
    assert _draw([(1, "x", None)], "csv", headers=False) == "1,x,\n"
