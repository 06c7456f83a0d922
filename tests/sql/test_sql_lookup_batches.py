"""Lookup joins and index scans that read their rows in batches (`IndexLookup.lookup_many`,
`fetched_rows`, `get_many` down to the LSM's multiget.py): answers compared with sqlite3, on
both engines, across batch boundaries, NULL keys, left joins, own writes and deleted rows."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.sql import Database, Session
from sqlkv.sql.exec.join import LOOKUP_BATCH
from sqlkv.sql.exec.lookup import LOOKUP_KEY_ROWS

SCHEMA = [
    "CREATE TABLE c (id INT PRIMARY KEY, name TEXT, code TEXT)",
    "CREATE UNIQUE INDEX c_code ON c (code)",
    "CREATE TABLE o (id INT PRIMARY KEY, cid INT, q INT, code TEXT)",
    "CREATE INDEX o_cid ON o (cid)",
]
CUSTOMERS = LOOKUP_BATCH + 150  # more outer rows than one batch

QUERIES = [
    "SELECT c.id, o.id, o.q FROM c JOIN o ON o.cid = c.id WHERE c.id BETWEEN 5 AND 60 AND o.q > 3",
    "SELECT c.id, o.id FROM c LEFT JOIN o ON o.cid = c.id WHERE c.id < 400",
    "SELECT o.id, c.name FROM o JOIN c ON c.id = o.cid WHERE o.q = 2",
    "SELECT o.id, c.id FROM o LEFT JOIN c ON c.code = o.code WHERE o.id < 900",
    "SELECT c.id, count(o.id) FROM c LEFT JOIN o ON o.cid = c.id GROUP BY c.id",
    "SELECT o.id, o.q FROM o WHERE cid = 7",
    "SELECT o.id FROM o WHERE cid = 7 LIMIT 3",
]


@pytest.fixture(params=["memory", "lsm"])
def pair(request, tmp_path):
    db = Database.open(":memory:" if request.param == "memory" else str(tmp_path / "db"))
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    rng = random.Random(4)
    customers = [(i, f"c{i}", None if i % 9 == 0 else f"k{i}") for i in range(1, CUSTOMERS)]
    orders = [(i, None if i % 17 == 0 else rng.randrange(1, CUSTOMERS + 20), rng.randrange(6),
               None if i % 5 else f"k{rng.randrange(1, CUSTOMERS)}") for i in range(1, 2000)]
    for db_ in (s, lite):
        db_.executemany("INSERT INTO c VALUES (?, ?, ?)", customers)
        db_.executemany("INSERT INTO o VALUES (?, ?, ?, ?)", orders)
    lite.commit()
    if request.param == "lsm":
        db.engine.flush()  # the rows come from tables, not only the memtable
    yield s, lite
    s.close()
    db.close()


def _same(s: Session, lite, sql: str) -> None:
    got = s.execute(sql).fetchall()
    want = lite.execute(sql).fetchall()
    if "LIMIT" in sql:
        assert len(got) == len(want) and set(got) <= set(lite.execute(sql.split(" LIMIT")[0]).fetchall())
    else:
        assert sorted(got, key=repr) == sorted(want, key=repr), sql


def test_batched_lookups_match_sqlite(pair) -> None:
    s, lite = pair
    for sql in QUERIES:
        _same(s, lite, sql)
    plan = "\n".join(r[0] for r in s.execute("EXPLAIN " + QUERIES[0]).fetchall())
    assert "lookup join" in plan


def test_batches_see_own_writes_and_deletes(pair) -> None:
    s, lite = pair
    s.execute("BEGIN")
    for db_ in (s, lite):
        db_.execute("DELETE FROM o WHERE cid BETWEEN 10 AND 20")
        db_.execute("INSERT INTO o VALUES (5000, 12, 5, 'k3'), (5001, 30, 5, NULL)")
        db_.execute("UPDATE c SET name = 'changed' WHERE id = 30")
    for sql in QUERIES:
        _same(s, lite, sql)
    s.execute("ROLLBACK")
    lite.rollback()
    for sql in QUERIES:
        _same(s, lite, sql)


def test_explain_analyze_counts_every_row_read(pair) -> None:
    s, lite = pair
    sql = "SELECT c.id, o.id FROM c JOIN o ON o.cid = c.id WHERE c.id BETWEEN 100 AND 399"
    lines = [r[0] for r in s.execute("EXPLAIN ANALYZE " + sql).fetchall()]
    total = lines[-1]
    matched = lite.execute("SELECT count(*) FROM o WHERE cid BETWEEN 100 AND 399").fetchone()[0]
    # one get per order row found through the index (batched or not, each key is one get)
    assert f"kv_gets={matched} " in total, lines


def test_order_by_indexed_column_limit_reads_little_ahead(pair) -> None:
    s, lite = pair
    s.execute("CREATE INDEX o_q_code ON o (code DESC)")
    for direction in ("ASC", "DESC"):
        sql = f"SELECT id, code, q FROM o WHERE code IS NOT NULL ORDER BY code {direction} LIMIT 10"
        lines = [r[0] for r in s.execute("EXPLAIN ANALYZE " + sql).fetchall()]
        assert not any("sort" in line for line in lines), lines  # the index gives the order
        gets = int(lines[-1].split("kv_gets=")[1].split()[0])
        assert 10 <= gets < 20, lines  # batches of 1, 2, 4, 8 rows: less than twice what is returned
        got = s.execute(sql).fetchall()
        assert [r[1] for r in got] == [r[1] for r in lite.execute(sql).fetchall()]


def test_lookup_join_under_limit_reads_little_ahead(pair) -> None:
    s, _ = pair
    sql = "SELECT c.id, o.id FROM c JOIN o ON o.cid = c.id WHERE c.id >= 1 LIMIT 2"
    assert len(s.execute(sql).fetchall()) == 2
    total = [r[0] for r in s.execute("EXPLAIN ANALYZE " + sql).fetchall()][-1]
    gets = int(total.split("kv_gets=")[1].split()[0])
    assert 2 <= gets <= 3 * 8  # a few small first batches, not 256 customers' orders


def test_keys_with_many_matches_stream_and_match_sqlite(pair) -> None:
    s, lite = pair
    for db_ in (s, lite):
        db_.execute("CREATE TABLE g (id INT PRIMARY KEY, grp INT)")
        db_.execute("CREATE INDEX g_grp ON g (grp)")
        db_.execute("CREATE TABLE pairs (a INT, b INT, v TEXT, PRIMARY KEY (a, b))")
    groups = [(i, 1 if i % 3 else i % 7) for i in range(3 * LOOKUP_KEY_ROWS + 10)]
    pairs = [(a, b, f"{a}.{b}") for a in range(4) for b in range(2 * LOOKUP_KEY_ROWS)]
    for db_ in (s, lite):
        db_.executemany("INSERT INTO g VALUES (?, ?)", groups)
        db_.executemany("INSERT INTO pairs VALUES (?, ?, ?)", pairs)
    lite.commit()
    for sql in ("SELECT c.id, g.id FROM c JOIN g ON g.grp = c.id WHERE c.id < 9",  # grp 1: many rows
                "SELECT c.id, p.b, p.v FROM c JOIN pairs p ON p.a = c.id WHERE c.id < 6",  # a pk prefix
                "SELECT c.id, g.id FROM c LEFT JOIN g ON g.grp = c.id WHERE c.id BETWEEN 1 AND 3"):
        plan = "\n".join(r[0] for r in s.execute("EXPLAIN " + sql).fetchall())
        assert "lookup join" in plan, plan
        _same(s, lite, sql)
