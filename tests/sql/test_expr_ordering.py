"""compare_values and sort_key: the SQL order used by ORDER BY, checked against sqlite3."""

from __future__ import annotations

import datetime as dt
import functools
import sqlite3
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.sql.expr import compare_values, sort_key

values = st.one_of(st.none(), st.integers(-50, 50), st.floats(-50, 50, allow_nan=False))


def sqlite_order(vals: list, desc: bool, nulls_first: bool) -> list:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (v)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in vals])
    direction = "DESC" if desc else "ASC"
    nulls = "FIRST" if nulls_first else "LAST"
    return [r[0] for r in con.execute(f"SELECT v FROM t ORDER BY v {direction} NULLS {nulls}")]


@settings(max_examples=200, deadline=None)
@given(vals=st.lists(values, max_size=20), desc=st.booleans(), nulls_first=st.booleans())
def test_sort_key_orders_like_sqlite(vals, desc, nulls_first):
    ours = sorted(vals, key=sort_key(desc, nulls_first))
    expected = sqlite_order(vals, desc, nulls_first)
    # equal numbers (1 and 1.0) may appear in either order: compare as numbers
    assert [None if v is None else float(v) for v in ours] == [None if v is None else float(v) for v in expected]


@given(vals=st.lists(values, max_size=20))
def test_compare_values_agrees_with_sort_key(vals):
    by_cmp = sorted(vals, key=functools.cmp_to_key(compare_values))
    by_key = sorted(vals, key=sort_key(False, True))
    assert [compare_values(a, b) for a, b in zip(by_cmp, by_key)] == [0] * len(vals)


def test_compare_values_mixed_kinds_and_temporal():
    assert compare_values(None, 1) == -1 and compare_values(1, None) == 1 and compare_values(None, None) == 0
    assert compare_values(1, Decimal("1.0")) == 0
    assert compare_values(2, 1.5) == 1
    assert compare_values("a", "b") == -1
    assert compare_values(dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 1)) == -1
    assert compare_values(10, "a") == -1  # numbers before text, as in SQLite
    assert compare_values(b"a", "z") == 1  # bytes after text


def test_desc_sort_of_text_and_dates():
    words = ["pear", None, "apple", "fig"]
    assert sorted(words, key=sort_key(True, False)) == ["pear", "fig", "apple", None]
    days = [dt.date(2024, 5, 1), dt.date(2023, 1, 1), None]
    assert sorted(days, key=sort_key(False, True)) == [None, dt.date(2023, 1, 1), dt.date(2024, 5, 1)]
