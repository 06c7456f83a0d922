"""A hash join reads both inputs through their batches (`counted_flat`: the scans' batched
read and column-wise decode): answers equal sqlite3's across batch edges, EXPLAIN ANALYZE
counts each input's rows and keys exactly, and the join's scans record the spans they read."""

from __future__ import annotations

import sqlite3

import pytest

from sqlkv.errors import SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.sql.exec import join as join_module
from sqlkv.sql.exec.operator import BATCH_ROWS
from sqlkv.sql.plan import estimates

JOINS = [
    "SELECT c.id, o.id, o.amount FROM c JOIN o ON o.cid = c.id",
    "SELECT c.tier, count(*), sum(o.amount) FROM c JOIN o ON o.cid = c.id GROUP BY c.tier",
    "SELECT c.id, o.id FROM c LEFT JOIN o ON o.cid = c.id AND o.amount > 50",
    "SELECT c.id, o.id FROM c RIGHT JOIN o ON o.cid = c.id",
]


def _open(orders: int, path: str = ":memory:") -> tuple[Database, Session, sqlite3.Connection]:
    db = Database.open(path)
    s, lite = Session(db), sqlite3.connect(":memory:")
    customers = [(i, i % 3) for i in range(1, 41)]
    rows = [(i, None if i % 13 == 0 else i % 45, i % 97) for i in range(1, orders + 1)]
    for conn in (s, lite):
        conn.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, tier INTEGER)")
        conn.execute("CREATE TABLE o (id INTEGER PRIMARY KEY, cid INTEGER, amount INTEGER)")
        conn.executemany("INSERT INTO c VALUES (?, ?)", customers)
        conn.executemany("INSERT INTO o VALUES (?, ?, ?)", rows)
    return db, s, lite


@pytest.fixture(autouse=True)
def hash_joins(monkeypatch):
    monkeypatch.setattr(estimates, "PROBE_COST", 1e12)  # a hash join wherever there is an equality
    monkeypatch.setattr(estimates, "FETCH_COST", 1e12)


@pytest.mark.parametrize("orders", [0, 1, BATCH_ROWS - 1, BATCH_ROWS + 1, 3 * BATCH_ROWS + 5])
@pytest.mark.parametrize("spill", [False, True])
def test_hash_joins_over_batches_match_sqlite(orders: int, spill: bool, monkeypatch) -> None:
    if spill:
        monkeypatch.setattr(join_module, "HASH_JOIN_MEMORY_ROWS", 7)
    db, s, lite = _open(orders)
    try:
        s.execute("ANALYZE")
        for sql in JOINS:
            plan = "\n".join(r[0] for r in s.execute("EXPLAIN " + sql).fetchall())
            assert "hash join" in plan or orders < BATCH_ROWS, plan  # tiny inputs may look up
            got = sorted((tuple(r) for r in s.execute(sql).fetchall()), key=repr)
            assert got == sorted(lite.execute(sql).fetchall(), key=repr), sql
        limited = s.execute(JOINS[0] + " LIMIT 5").fetchall()
        assert len(limited) == min(5, lite.execute(f"SELECT count(*) FROM ({JOINS[0]})").fetchone()[0])
    finally:
        s.close()
        db.close()


def test_explain_analyze_counts_each_input_exactly() -> None:
    n = 2 * BATCH_ROWS + 3
    db, s, _lite = _open(n)
    try:
        s.execute("ANALYZE")
        lines = [r[0] for r in s.execute("EXPLAIN ANALYZE " + JOINS[1]).fetchall()]
        scan_o = next(line for line in lines if "scan o@" in line)
        scan_c = next(line for line in lines if "scan c@" in line)
        assert f"rows={n} " in scan_o and f"kv_keys={n} " in scan_o and "kv_scans=1" in scan_o, lines
        assert "rows=40 " in scan_c and "kv_keys=40 " in scan_c, lines
    finally:
        s.close()
        db.close()


def test_a_hash_join_depends_on_every_row_of_both_inputs(tmp_path) -> None:
    db, s, _lite = _open(2 * BATCH_ROWS, str(tmp_path / "db"))
    s.execute("ANALYZE")
    s.close()
    try:
        for write in ("INSERT INTO o VALUES (100000, 1, 1)", f"UPDATE o SET amount = 0 WHERE id = {2 * BATCH_ROWS}",
                      "UPDATE c SET tier = 9 WHERE id = 40"):
            reader, writer = Session(db), Session(db)
            try:
                reader.execute("BEGIN")
                reader.execute(JOINS[1]).fetchall()
                reader.execute("INSERT INTO c VALUES (1000, 0)")  # a read-write transaction
                writer.execute(write)
                with pytest.raises(SerializationFailure):
                    reader.execute("COMMIT")
            finally:
                reader.close()
                writer.close()
    finally:
        db.close()
