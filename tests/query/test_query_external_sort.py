"""ORDER BY past the sort's memory budget: runs spilled to temporary files and merged
(sqlkv/sql/exec/external_sort.py). The budget is lowered so a few hundred rows spill."""

from __future__ import annotations

import gc
import os
import random
import tempfile

import pytest

from sqlkv.sql.exec import external_sort, spill
from tests.query.oracle import Pair

ROWS = 700


@pytest.fixture
def spilled(monkeypatch):
    """A pair loaded with ROWS rows (ties and NULLs in every column), the sort budget at 64 rows,
    and the list of temporary files the sorts opened."""
    opened: list = []
    real = tempfile.TemporaryFile

    def counting(*args, **kwargs):
        f = real(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr(external_sort, "SORT_MEMORY_ROWS", 64)
    monkeypatch.setattr(external_sort, "BLOCK_ROWS", 10)
    monkeypatch.setattr(spill.tempfile, "TemporaryFile", counting)
    rng = random.Random(11)
    p = Pair()
    p.both("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL)")
    rows = [(i, rng.choice([None, *range(12)]), rng.choice([None, "x", "y", "z", "xy"]),
             rng.choice([None, 0.5, 1.25, -3.0])) for i in range(ROWS)]
    rng.shuffle(rows)
    p.many("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    yield p, opened
    p.close()


@pytest.mark.parametrize("order", [
    "a, id", "a DESC, id", "b, a DESC, id DESC", "c DESC NULLS LAST, b NULLS FIRST, id",
    "a NULLS LAST, c, id DESC", "b DESC, id",
])
def test_a_spilled_sort_orders_as_sqlite_does(spilled, order):
    pair, opened = spilled
    got = pair.check(f"SELECT id, a, b, c FROM t ORDER BY {order}")
    assert len(got) == ROWS
    assert len(opened) == -(-ROWS // 64)  # one run per full batch, and the last partial one
    assert all(f.closed for f in opened), "every run's file is closed once the merge is done"


def test_spilling_keeps_the_in_memory_order_of_ties(spilled, monkeypatch):
    """Equal keys come out in the same order whether the sort spilled or not (the merge breaks
    ties by run order, so it is as stable as the in-memory sort)."""
    pair, opened = spilled
    sql = "SELECT id, a, b FROM t WHERE id % 3 <> 1 ORDER BY a DESC, b"
    spilled_rows = pair.ours(sql)
    assert opened
    monkeypatch.setattr(external_sort, "SORT_MEMORY_ROWS", 10 ** 9)
    before = len(opened)
    assert pair.ours(sql) == spilled_rows
    assert len(opened) == before, "with a large budget nothing spills"


def test_a_small_sort_never_touches_the_disk(spilled):
    pair, opened = spilled
    pair.check("SELECT id, a FROM t WHERE id < 50 ORDER BY a, id")
    assert opened == []


def test_an_abandoned_spilled_sort_closes_its_runs(spilled):
    pair, opened = spilled
    result = pair.session.execute("SELECT id FROM t ORDER BY b, id")
    first = next(iter(result))
    assert first is not None and opened
    result.close()
    del result
    gc.collect()
    assert all(f.closed for f in opened)


def test_spilled_sort_under_limit_offset_and_distinct(spilled):
    pair, _ = spilled
    pair.check("SELECT DISTINCT a, b FROM t ORDER BY b, a")
    pair.check("SELECT id, b FROM t ORDER BY b DESC, id LIMIT 5 OFFSET 300")
    pair.check("SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC, a")


def test_spilled_runs_leave_no_file_behind_even_while_open(spilled, monkeypatch, tmp_path):
    """Runs are anonymous files (spill.py): the temporary directory shows nothing while a spilled
    sort streams, so a process killed mid-sort leaves nothing behind either."""
    pair, opened = spilled
    monkeypatch.setattr(spill.tempfile, "tempdir", str(tmp_path))
    result = iter(pair.session.execute("SELECT id FROM t ORDER BY c, b, id"))
    next(result)
    assert opened and not all(f.closed for f in opened)
    assert os.listdir(tmp_path) == []
    assert len(list(result)) == ROWS - 1
