"""Several processes, one etcd database: serializable invariants hold across clients.

Each test starts client processes (spawned, each with its own engine and connections) that run
conflicting transactions with retries, then checks invariants no serial order could break.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

import sqlkv
from sqlkv.errors import ProgrammingError, SerializationFailure
from tests.etcd import workloads

PROCS = 3


def run_clients(fn, args_list):
    """Run ``fn(*args, start=barrier)`` in one process per args; all start their loops together."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(len(args_list))
        with ProcessPoolExecutor(max_workers=len(args_list), mp_context=ctx) as pool:
            futures = [pool.submit(fn, *args, start=barrier) for args in args_list]
            return [f.result(timeout=300) for f in futures]


def setup(url, *statements, params_rows=()):
    conn = sqlkv.connect(url)
    cur = conn.cursor()
    for sql in statements:
        cur.execute(sql)
    for sql, rows in params_rows:
        cur.executemany(sql, rows)
    conn.commit()
    return conn


def query(conn, sql, params=()):
    cur = conn.cursor()
    cur.execute(sql, params)
    rows = cur.fetchall()
    conn.commit()
    return rows


def test_bank_transfers_from_processes_keep_money_and_ledger(etcd_url):
    accounts = 6
    conn = setup(
        etcd_url,
        "CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)",
        "CREATE TABLE ledger (id TEXT PRIMARY KEY, src INT, dst INT, amount INT)",
        params_rows=[("INSERT INTO accounts VALUES (?, 100)", [(i,) for i in range(accounts)])],
    )
    results = run_clients(workloads.bank_worker, [(etcd_url, w, 25, accounts, w) for w in range(PROCS)])
    acked = {t for r in results for t in r["acked"]}
    print("serialization retries:", [r["retries"] for r in results])
    assert all(not r["unknown"] for r in results)  # no fault injected: every outcome is known
    ledger = query(conn, "SELECT id, src, dst, amount FROM ledger")
    assert {row[0] for row in ledger} == acked  # every acknowledged transfer, nothing else
    expected = [100] * accounts
    for _, src, dst, amount in ledger:
        expected[src] -= amount
        expected[dst] += amount
    balances = query(conn, "SELECT id, balance FROM accounts ORDER BY id")
    assert [b for _, b in balances] == expected
    assert sum(expected) == 100 * accounts and min(expected) >= 0
    conn.close()


def test_write_skew_between_processes_is_prevented(etcd_url):
    shifts = 12
    conn = setup(
        etcd_url,
        "CREATE TABLE doctors (shift INT, id INT, on_call BOOL, PRIMARY KEY (shift, id))",
        params_rows=[("INSERT INTO doctors VALUES (?, ?, true)", [(s, d) for s in range(shifts) for d in range(PROCS)])],
    )
    went_off = run_clients(workloads.doctor_worker, [(etcd_url, d, shifts) for d in range(PROCS)])
    on_call = dict(query(conn, "SELECT shift, count(*) FROM doctors WHERE on_call GROUP BY shift"))
    assert all(on_call.get(s, 0) >= 1 for s in range(shifts)), on_call
    # every shift had PROCS doctors on call; exactly the ones who reported going off did
    assert sum(on_call.values()) == shifts * PROCS - sum(went_off)
    conn.close()


def test_phantom_inserts_cannot_overbook(etcd_url):
    rooms, capacity = 2, 5
    conn = setup(
        etcd_url,
        "CREATE TABLE bookings (id TEXT PRIMARY KEY, room INT)",
        "CREATE INDEX bookings_room ON bookings (room)",
    )
    booked = run_clients(workloads.booking_worker, [(etcd_url, w, 6, rooms, capacity) for w in range(PROCS)])
    counts = dict(query(conn, "SELECT room, count(*) FROM bookings GROUP BY room"))
    assert counts == {r: capacity for r in range(rooms)}  # 18 attempts for 10 places: all taken, none over
    assert sum(booked) == rooms * capacity
    conn.close()


def test_unique_race_exactly_one_insert_wins(etcd_url):
    emails = 6
    conn = setup(etcd_url, "CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE)")
    outcomes = run_clients(workloads.unique_worker, [(etcd_url, w, emails) for w in range(PROCS)])
    for e in range(emails):
        assert Counter(o[e] for o in outcomes) == {"ok": 1, "dup": PROCS - 1}
    rows = query(conn, "SELECT email, count(*) FROM users GROUP BY email ORDER BY email")
    assert rows == [(f"e{e}@x", 1) for e in range(emails)]
    conn.close()


def test_descriptor_and_row_ids_are_never_reused_across_clients(etcd_url):
    conn = setup(
        etcd_url,
        "CREATE TABLE shared (id INTEGER PRIMARY KEY, who TEXT)",
        "CREATE TABLE shared_serial (id SERIAL PRIMARY KEY, who TEXT)",
    )
    ids = run_clients(workloads.ddl_worker, [(etcd_url, w, 3, 8) for w in range(PROCS)])
    flat = [i for chunk in ids for i in chunk]
    assert len(set(flat)) == len(flat) == 8 * PROCS
    for table in ("shared", "shared_serial"):
        mine = sorted(i for t, i in flat if t == table)
        assert sorted(r[0] for r in query(conn, f"SELECT id FROM {table}")) == mine
        assert len(mine) == 4 * PROCS
    for w in range(PROCS):
        for t in range(3):
            name = f"t_{w}_{t}"
            # a table that shared its id with another would see the other's rows too
            assert query(conn, f"SELECT k, owner FROM {name}") == [(1, name)]
    conn.close()


def test_schema_changes_are_seen_by_other_clients(etcd_url):
    a = sqlkv.connect(etcd_url)
    b = sqlkv.connect(etcd_url + "&page_size=100")  # another Database object: its own caches
    with pytest.raises(ProgrammingError, match="t"):
        query(b, "SELECT * FROM t")
    b.rollback()
    setup(etcd_url, "CREATE TABLE t (k INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    assert query(b, "SELECT * FROM t") == [(1,)]
    ca = a.cursor()
    ca.execute("ALTER TABLE t ADD COLUMN v TEXT DEFAULT 'x'")
    a.commit()
    assert query(b, "SELECT * FROM t") == [(1, "x")]
    # a write that began before a concurrent DROP cannot commit into the dropped table
    cb = b.cursor()
    cb.execute("INSERT INTO t VALUES (2, 'y')")
    ca.execute("DROP TABLE t")
    a.commit()
    with pytest.raises(SerializationFailure):
        b.commit()
    b.rollback()
    with pytest.raises(ProgrammingError, match="t"):
        query(b, "SELECT * FROM t")
    a.close()
    b.close()


def test_older_transaction_cannot_leave_a_stale_descriptor_in_the_cache(etcd_url):
    """Client B learns of A's CREATE INDEX through a newer transaction; a transaction of B's
    that is older than the index reads the old descriptor, which must stay out of B's cache,
    or B's next INSERT would skip the index."""
    from sqlkv.catalog.catalog import Catalog
    from sqlkv.sql import Database, Session

    a, b = Database.open(etcd_url), Database.open(etcd_url + "&page_size=100")
    sa, sb = Session(a), Session(b)
    sa.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    assert list(sb.execute("SELECT * FROM t")) == []
    old = b.txn_manager.begin()
    sa.execute("CREATE INDEX t_v ON t (v)")
    newer = b.txn_manager.begin()
    assert [i.name for i in Catalog(newer, b.descriptors).get_table("t").indexes] == ["t_v"]
    assert [i.name for i in Catalog(old, b.descriptors).get_table("t").indexes] == []  # its snapshot's schema
    old.rollback()
    newer.rollback()
    sb.execute("INSERT INTO t VALUES (1, 'x')")
    assert list(sa.execute("CHECK DATABASE")) == []
    assert list(sa.execute("SELECT k FROM t WHERE v = 'x'")) == [(1,)]
    for session, db in ((sa, a), (sb, b)):
        session.close()
        db.close()


def test_a_drop_is_seen_by_other_clients_even_after_its_tombstones_are_purged(etcd_url):
    a = sqlkv.connect(etcd_url)
    b = sqlkv.connect(etcd_url + "&page_size=100")  # its own Database and caches
    setup(etcd_url, "CREATE TABLE t (k INT PRIMARY KEY)", "INSERT INTO t VALUES (1)",
          "CREATE VIEW v AS SELECT k FROM t")
    assert query(b, "SELECT * FROM v") == [(1,)]  # b caches the view's descriptor
    ca = a.cursor()
    ca.execute("DROP VIEW v")  # point deletes only: tombstones, no range delete
    a.commit()
    a.session.db.engine.compact()  # ... and the tombstones are purged before b looks again
    with pytest.raises(ProgrammingError, match='relation "v" does not exist'):
        query(b, "SELECT * FROM v")
    b.rollback()
    a.close()
    b.close()


def test_schema_check_rides_on_the_snapshot_round_trip(etcd_url):
    """After another client's write, an autocommit point SELECT costs two requests: the
    snapshot (which also tells whether the schema changed) and the read. After another
    client's ALTER the same two requests see the new column."""
    a = setup(etcd_url, "CREATE TABLE t (k INT PRIMARY KEY, v TEXT)", "INSERT INTO t VALUES (1, 'x')")
    b = sqlkv.connect(etcd_url + "&page_size=100")
    assert query(b, "SELECT v FROM t WHERE k = 1") == [("x",)]
    engine = b.session.db.engine
    for change, expected in (("UPDATE t SET v = 'y' WHERE k = 1", ("y",)),
                             ("ALTER TABLE t ADD COLUMN w INT DEFAULT 7", ("y", 7))):
        ca = a.cursor()
        ca.execute(change)
        a.commit()
        before = engine.stats()["requests"]
        columns = "v" if len(expected) == 1 else "v, w"
        assert query(b, f"SELECT {columns} FROM t WHERE k = 1") == [expected]
        if len(expected) == 1:
            assert engine.stats()["requests"] - before == 2
    a.close()
    b.close()
