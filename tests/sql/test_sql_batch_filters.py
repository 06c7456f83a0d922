"""Batch filters (`sqlkv/sql/expr/batch_filters.py`): a WHERE of column-op-constant
comparisons, and ANDs of them, filters a batch with one comprehension. The rows kept must be
exactly those sqlite3 returns, NULLs, every operator, strings and floats included, and the
batch form must exist where it should (else the optimisation silently vanished)."""

from __future__ import annotations

import sqlite3

import pytest

from sqlkv.sql import Database, Session
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.expr import CompileEnv, compile_predicate
from sqlkv.sql.expr.batch_filters import batch_filter
from sqlkv.sql.parse_operators import parse_expression
from sqlkv.sql.types import SqlType

ROWS = [(i, None if i % 7 == 0 else i % 13, None if i % 5 == 0 else f"s{i % 11:02d}",
         None if i % 9 == 0 else (i % 17) / 4) for i in range(1, 700)]
WHERES = [f"k {op} 6" for op in ("=", "<>", "<", "<=", ">", ">=")] + [
    "s > 's05'", "s = 's03'", "f >= 2.25", "f < 1",
    "k > 3 AND s <> 's04'", "k >= 2 AND k < 9 AND f > 0.5",
    "k > 3 AND (s IS NULL OR f > 2)",  # a part without a batch form: row by row
    "k = NULL", "6 < k",
]


@pytest.fixture(scope="module")
def pair():
    db = Database.open(":memory:")
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, s TEXT, f FLOAT)")
    lite.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k INT, s TEXT, f REAL)")
    for conn in (s, lite):
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", ROWS)
    yield s, lite
    s.close()
    db.close()


@pytest.mark.parametrize("where", WHERES)
def test_filtered_rows_match_sqlite(pair, where: str) -> None:
    s, lite = pair
    sql = f"SELECT id, k, s, f FROM t WHERE {where}"
    got = sorted(tuple(r) for r in s.execute(sql).fetchall())
    assert got == sorted(lite.execute(sql).fetchall()), sql
    count = f"SELECT count(*), sum(k) FROM t WHERE {where}"
    assert tuple(s.execute(count).fetchall()[0]) == lite.execute(count).fetchall()[0]


SCOPE = Scope([Column("k", "t", SqlType("INT")), Column("s", "t", SqlType("TEXT"))])
BATCH = [(k, s) for k in (None, -1, 0, 3, 6, 7, 100) for s in (None, "", "a", "b")]


@pytest.mark.parametrize("where, batched", [
    ("k > 3", True), ("k <> 6", True), ("s = 'a'", True), ("k >= 0 AND s < 'b'", True),
    ("k > 0 AND k < 7 AND s <> ''", True), ("k + 1 > 3", False), ("k > 3 OR s = 'a'", False),
    ("k > 3 AND k + 1 < 7", False),
])
def test_batch_filter_keeps_what_the_row_predicate_keeps(where: str, batched: bool) -> None:
    pred = compile_predicate(parse_expression(where), SCOPE, CompileEnv())
    keep = batch_filter(pred)
    assert keep(BATCH) == [row for row in BATCH if pred(row)]
    assert keep([]) == []
    assert hasattr(pred, "batch_filter") == batched
