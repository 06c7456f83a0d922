"""GROUP BY accumulators: the same-type shortcuts of SUM/AVG/MIN/MAX (exec/aggregate.py) give
sqlite3's answers, including where a group's values change type midway."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.errors import DataError
from sqlkv.sql import Database, Session

QUERY = ("SELECT g, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v), AVG(v) FROM t GROUP BY g")
TEXT_QUERY = "SELECT g, MIN(s), MAX(s), COUNT(s) FROM t GROUP BY g"


def _values(kind: str, rng: random.Random) -> list:
    if kind == "ints":
        return [rng.randrange(-10**6, 10**6) for _ in range(40)]
    if kind == "ints then floats":
        return [rng.randrange(-100, 100) for _ in range(20)] + [rng.uniform(-100, 100) for _ in range(20)]
    if kind == "floats then ints":
        return [rng.uniform(-5, 5) for _ in range(20)] + [rng.randrange(-5, 5) for _ in range(20)]
    if kind == "nulls and ints":
        return [None if i % 3 else rng.randrange(50) for i in range(40)]
    return [None] * 5


def _normal(rows: list) -> list:
    return sorted([tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows], key=repr)


def test_group_by_accumulators_match_sqlite() -> None:
    rng = random.Random(9)
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, g TEXT, v FLOAT, s TEXT)")
    lite.execute("CREATE TABLE t (id INT PRIMARY KEY, g TEXT, v REAL, s TEXT)")
    rows = []
    for kind in ("ints", "ints then floats", "floats then ints", "nulls and ints", "all null"):
        for v in _values(kind, rng):
            text = None if rng.random() < 0.2 else rng.choice(["b", "a", "ab", "", "z", "B"])
            rows.append((len(rows), kind, v, text))
    s.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    assert _normal(s.execute(QUERY).fetchall()) == _normal(lite.execute(QUERY).fetchall())
    assert _normal(s.execute(TEXT_QUERY).fetchall()) == _normal(lite.execute(TEXT_QUERY).fetchall())


def test_integer_columns_sum_exactly_and_overflow_is_an_error() -> None:
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    for db in (s, lite):
        db.execute("CREATE TABLE n (id INT PRIMARY KEY, g INT, v INT)")
    rows = [(i, i % 4, (i * 7919) % 100_003 - 50_000) for i in range(400)]
    s.executemany("INSERT INTO n VALUES (?, ?, ?)", rows)
    lite.executemany("INSERT INTO n VALUES (?, ?, ?)", rows)
    sql = "SELECT g, SUM(v), MIN(v), MAX(v), AVG(v) FROM n GROUP BY g"
    assert _normal(s.execute(sql).fetchall()) == _normal(lite.execute(sql).fetchall())
    s.execute("INSERT INTO n VALUES (1000, 9, 9223372036854775807), (1001, 9, 1)")
    with pytest.raises(DataError, match="overflow"):
        s.execute("SELECT g, SUM(v) FROM n GROUP BY g").fetchall()
