"""Fixtures for the query tests: an emp/dept schema loaded into sqlkv and sqlite3 alike."""

from __future__ import annotations

import pytest

from tests.query.oracle import Pair

EMP = [
    (1, "ann", 10, 5000, None), (2, "bob", 10, 4000, 1), (3, "cid", 20, 3000, 1),
    (4, "dan", 20, 3000, 3), (5, "eve", 30, None, 3), (6, "fay", None, 2500, 2),
    (7, "gus", 10, 4000, 2), (8, "hal", 40, 1000, None),
]
DEPT = [(10, "sales", "nyc"), (20, "eng", "sf"), (30, "ops", "nyc"), (50, "hr", None)]


@pytest.fixture
def pair():
    p = Pair()
    p.both("CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT, dept INTEGER, salary INTEGER, boss INTEGER)")
    p.both("CREATE TABLE dept (id INTEGER PRIMARY KEY, dname TEXT, city TEXT)")
    p.many("INSERT INTO emp VALUES (?, ?, ?, ?, ?)", EMP)
    p.many("INSERT INTO dept VALUES (?, ?, ?)", DEPT)
    yield p
    p.close()
