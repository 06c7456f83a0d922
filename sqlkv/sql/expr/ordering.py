"""The SQL total order used by ORDER BY, DISTINCT-by-sort and index comparisons.

``ORDER BY price DESC NULLS LAST, name`` asks `sort_key(True, False)` and `sort_key(False, True)`
for one key function per column; the sort operator builds ``(k1(row[i]), k2(row[j]))`` per row
and lets Python's sort compare the tuples. NULLs sort first ascending (SQLite and CockroachDB agree).
Values of different kinds (which strict typing keeps out of one column) still get a total order:
NULL < BOOL < numbers < TEXT < BYTES < DATE/TIMESTAMP.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from functools import total_ordering
from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb

_RANK = {bool: 1, int: 2, float: 2, Decimal: 2, str: 3, bytes: 4, dt.date: 5, dt.datetime: 5,
         SqlArray: 6, Jsonb: 7}  # arrays order themselves (PostgreSQL's order: sqlkv/encoding/arrays.py)


def _rank(v: object) -> int:
    return _RANK.get(type(v), 9)


def _comparable(v: object) -> object:
    if type(v) is dt.date:
        return dt.datetime(v.year, v.month, v.day)
    return v


def compare_values(a: object, b: object) -> int:
    """-1, 0 or 1: SQL order of two values (None first; mixed kinds ordered by kind)."""
    if a is None or b is None:
        return (a is not None) - (b is not None)
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 5:
        a, b = _comparable(a), _comparable(b)
    if ra == 9:
        a, b = repr(a), repr(b)
    return -1 if a < b else (1 if a > b else 0)  # type: ignore[operator]


@total_ordering
class Descending:
    """Wraps a value so that Python's ascending sort orders it descending."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and self.value == other.value

    def __lt__(self, other: Descending) -> bool:
        return other.value < self.value

    def __hash__(self) -> int:
        return hash(self.value)


def sort_key(desc: bool, nulls_first: bool) -> Callable[[object], tuple]:
    """A key function for one sort column.

    The key is ``(group, value)``: group 0 sorts before 1 before 2; NULLs take group 0 or 2 so
    they land first or last whatever the direction. Non-NULL values are ``(1, kind, value)``
    so mixed kinds never meet in a Python comparison.
    """
    null_key = (0,) if nulls_first else (2,)
    if desc:
        def key_desc(v: object) -> tuple:
            if v is None:
                return null_key
            rank = _rank(v)
            if rank == 2:  # numbers: negate instead of wrapping (no Python-level __lt__ calls)
                return (1, -2, -v)
            return (1, -rank, Descending(_comparable(v)))

        return key_desc

    def key_asc(v: object) -> tuple:
        if v is None:
            return null_key
        return (1, _rank(v), _comparable(v))

    return key_asc
