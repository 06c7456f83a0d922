"""SQL transactions: BEGIN/COMMIT/ROLLBACK, savepoints, statement atomicity, DDL rollback,
the anomalies SERIALIZABLE must prevent, and concurrent bank transfers checked after reopen."""

from __future__ import annotations

import random
import threading

import pytest

from sqlkv.errors import IntegrityError, ProgrammingError, SerializationFailure
from sqlkv.sql import Database, Session
from tests.sql.core_support import ENGINES, open_db, rows


@pytest.fixture(params=ENGINES)
def db(request, tmp_path):
    database = open_db(request.param, tmp_path)
    yield database
    database.close()


def test_commit_and_rollback_statements(db):
    s, other = Session(db), Session(db)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("BEGIN")
    assert s.in_transaction
    s.execute("INSERT INTO t VALUES (1)")
    assert rows(other, "SELECT * FROM t") == []  # not visible before COMMIT
    s.execute("COMMIT")
    assert not s.in_transaction
    assert rows(other, "SELECT * FROM t") == [(1,)]
    s.execute("START TRANSACTION")
    s.execute("INSERT INTO t VALUES (2)")
    s.execute("ROLLBACK")
    assert rows(s, "SELECT * FROM t") == [(1,)]
    s.execute("BEGIN")
    with pytest.raises(ProgrammingError, match="already a transaction"):
        s.execute("BEGIN")
    s.execute("END")


def test_failed_statement_in_transaction_undoes_only_itself(db):
    s = Session(db)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b INT UNIQUE)")
    s.execute("BEGIN")
    s.execute("INSERT INTO t VALUES (1, 1)")
    with pytest.raises(IntegrityError):
        s.execute("INSERT INTO t VALUES (2, 2), (3, 1)")
    s.execute("INSERT INTO t VALUES (4, 4)")
    s.execute("COMMIT")
    assert rows(s, "SELECT * FROM t") == [(1, 1), (4, 4)]
    assert rows(s, "CHECK DATABASE") == []


def test_savepoints(db):
    s = Session(db)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("BEGIN")
    s.execute("INSERT INTO t VALUES (1)")
    s.execute("SAVEPOINT one")
    s.execute("INSERT INTO t VALUES (2)")
    s.execute("SAVEPOINT two")
    s.execute("INSERT INTO t VALUES (3)")
    s.execute("ROLLBACK TO SAVEPOINT one")
    assert rows(s, "SELECT * FROM t") == [(1,)]
    s.execute("INSERT INTO t VALUES (5)")
    with pytest.raises(ProgrammingError, match='savepoint "two" does not exist'):
        s.execute("RELEASE SAVEPOINT two")
    s.execute("RELEASE one")
    s.execute("COMMIT")
    assert rows(s, "SELECT * FROM t") == [(1,), (5,)]


def test_ddl_rolls_back(db):
    s = Session(db)
    s.execute("CREATE TABLE keep (a INT PRIMARY KEY)")
    s.execute("BEGIN")
    s.execute("CREATE TABLE gone (a INT PRIMARY KEY)")
    s.execute("INSERT INTO gone VALUES (1)")
    s.execute("CREATE INDEX keep_a ON keep (a)")
    s.execute("DROP TABLE keep")
    assert rows(s, "SELECT * FROM gone") == [(1,)]
    s.execute("ROLLBACK")
    with pytest.raises(ProgrammingError, match='relation "gone" does not exist'):
        s.execute("SELECT * FROM gone")
    assert rows(s, "SELECT * FROM keep") == []
    assert rows(s, "SELECT index_name FROM information_schema.indexes WHERE table_name = 'keep'") == [("keep_pkey",)]


def test_autocommit_off_keeps_one_transaction(db):
    s = Session(db, autocommit=False)
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1)")
    assert s.in_transaction
    s.rollback()
    with pytest.raises(ProgrammingError):
        Session(db).execute("SELECT * FROM t")
    s.execute("CREATE TABLE t (a INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1)")
    s.commit()
    assert rows(Session(db), "SELECT * FROM t") == [(1,)]


def _two(db):
    a, b = Session(db), Session(db)
    return a, b


def test_lost_update_is_prevented(db):
    a, b = _two(db)
    a.execute("CREATE TABLE c (id INT PRIMARY KEY, n INT)")
    a.execute("INSERT INTO c VALUES (1, 0)")
    for s in (a, b):
        s.execute("BEGIN")
    na = rows(a, "SELECT n FROM c WHERE id = 1")[0][0]
    nb = rows(b, "SELECT n FROM c WHERE id = 1")[0][0]
    a.execute("UPDATE c SET n = ? WHERE id = 1", (na + 1,))
    b.execute("UPDATE c SET n = ? WHERE id = 1", (nb + 1,))
    a.execute("COMMIT")
    with pytest.raises(SerializationFailure):
        b.execute("COMMIT")
    assert not b.in_transaction
    assert rows(a, "SELECT n FROM c") == [(1,)]


def test_write_skew_is_prevented(db):
    a, b = _two(db)
    a.execute("CREATE TABLE doctors (id INT PRIMARY KEY, on_call BOOLEAN)")
    a.execute("INSERT INTO doctors VALUES (1, TRUE), (2, TRUE)")
    for s, me in ((a, 1), (b, 2)):
        s.execute("BEGIN")
        assert rows(s, "SELECT count(*) FROM doctors WHERE on_call") == [(2,)]
    a.execute("UPDATE doctors SET on_call = FALSE WHERE id = 1")
    b.execute("UPDATE doctors SET on_call = FALSE WHERE id = 2")
    a.execute("COMMIT")
    with pytest.raises(SerializationFailure):
        b.execute("COMMIT")
    assert rows(a, "SELECT count(*) FROM doctors WHERE on_call") == [(1,)]


def test_read_skew_is_prevented(db):
    a, b = _two(db)
    a.execute("CREATE TABLE acct (id INT PRIMARY KEY, bal INT)")
    a.execute("INSERT INTO acct VALUES (1, 50), (2, 50)")
    a.execute("BEGIN")
    x = rows(a, "SELECT bal FROM acct WHERE id = 1")[0][0]
    b.execute("BEGIN")
    b.execute("UPDATE acct SET bal = bal - 10 WHERE id = 1")
    b.execute("UPDATE acct SET bal = bal + 10 WHERE id = 2")
    b.execute("COMMIT")
    y = rows(a, "SELECT bal FROM acct WHERE id = 2")[0][0]
    assert x + y == 100  # one snapshot: the total is consistent
    a.execute("INSERT INTO acct VALUES (3, ?)", (x + y,))
    with pytest.raises(SerializationFailure):
        a.execute("COMMIT")


def test_phantom_is_prevented(db):
    a, b = _two(db)
    a.execute("CREATE TABLE orders (id INT PRIMARY KEY, amount INT)")
    a.execute("CREATE INDEX orders_amount ON orders (amount)")
    a.execute("CREATE TABLE report (k INT PRIMARY KEY, big INT)")
    a.execute("INSERT INTO orders VALUES (1, 5), (2, 50)")
    a.execute("BEGIN")
    big = rows(a, "SELECT count(*) FROM orders WHERE amount > 10")[0][0]
    b.execute("INSERT INTO orders VALUES (3, 70)")  # autocommit: lands inside a's range
    a.execute("INSERT INTO report VALUES (1, ?)", (big,))
    with pytest.raises(SerializationFailure):
        a.execute("COMMIT")


def test_unique_insert_race(db):
    a, b = _two(db)
    a.execute("CREATE TABLE u (id INT PRIMARY KEY, email TEXT UNIQUE)")
    for s in (a, b):
        s.execute("BEGIN")
    a.execute("INSERT INTO u VALUES (1, 'x@y')")
    b.execute("INSERT INTO u VALUES (2, 'x@y')")
    a.execute("COMMIT")
    with pytest.raises(SerializationFailure):
        b.execute("COMMIT")
    assert rows(a, "SELECT * FROM u") == [(1, "x@y")]
    assert rows(a, "CHECK DATABASE") == []


def _transfer_worker(db, n_accounts, n_transfers, seed, done, errors):
    s = Session(db)
    rnd = random.Random(seed)
    try:
        completed = 0
        while completed < n_transfers:
            src, dst = rnd.sample(range(n_accounts), 2)
            amount = rnd.randint(1, 20)
            try:
                s.execute("BEGIN")
                bal = rows(s, "SELECT bal FROM accounts WHERE id = ?", (src,))[0][0]
                if bal >= amount:
                    s.execute("UPDATE accounts SET bal = bal - ? WHERE id = ?", (amount, src))
                    s.execute("UPDATE accounts SET bal = bal + ? WHERE id = ?", (amount, dst))
                s.execute("INSERT INTO transfers (src, dst, amount) VALUES (?, ?, ?)", (src, dst, amount if bal >= amount else 0))
                s.execute("COMMIT")
                completed += 1
            except SerializationFailure:
                if s.in_transaction:
                    s.rollback()
        done.append(completed)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


@pytest.mark.parametrize("kind", ENGINES)
def test_bank_transfers_from_threads_survive_reopen(kind, tmp_path):
    db = open_db(kind, tmp_path)
    s = Session(db)
    n_accounts, n_threads, per_thread = 6, 4, 25
    s.execute("CREATE TABLE accounts (id INT PRIMARY KEY, bal INT NOT NULL CHECK (bal >= 0))")
    s.execute("CREATE TABLE transfers (id INTEGER PRIMARY KEY, src INT, dst INT, amount INT)")
    s.executemany("INSERT INTO accounts VALUES (?, 100)", [(i,) for i in range(n_accounts)])
    done: list[int] = []
    errors: list[Exception] = []
    threads = [
        threading.Thread(target=_transfer_worker, args=(db, n_accounts, per_thread, i, done, errors))
        for i in range(n_threads)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(done) == n_threads * per_thread

    def verify(session):
        assert rows(session, "SELECT sum(bal) FROM accounts") == [(100 * n_accounts,)]
        assert rows(session, "SELECT count(*) FROM transfers") == [(n_threads * per_thread,)]
        moved = rows(session, "SELECT id, bal FROM accounts ORDER BY id")
        net = {i: 100 for i in range(n_accounts)}
        for src, dst, amount in rows(session, "SELECT src, dst, amount FROM transfers"):
            net[src] -= amount
            net[dst] += amount
        assert moved == sorted(net.items())
        assert rows(session, "CHECK DATABASE") == []

    verify(s)
    if kind == "lsm":
        s.close()
        db.close()
        db = Database.open(str(tmp_path / "db"))
        verify(Session(db))
    db.close()


def test_writes_into_a_concurrently_dropped_table_fail(db):
    a, b = _two(db)
    a.execute("CREATE TABLE t (x INT PRIMARY KEY)")
    a.execute("INSERT INTO t VALUES (1)")  # warm plan and descriptor caches
    a.execute("BEGIN")
    a.execute("INSERT INTO t VALUES (2)")
    b.execute("DROP TABLE t")
    with pytest.raises(SerializationFailure):
        a.execute("COMMIT")
    b.execute("CREATE TABLE t (x INT PRIMARY KEY)")
    assert rows(b, "SELECT * FROM t") == []
    assert rows(b, "SELECT count(*) FROM sqlkv_internal.kv") == [(0,)]
