"""Commits by ingestion (sqlkv/txn/bulk.py) against the batch path: the same stored keys and
answers for executemany, multi-row INSERT, INSERT ... SELECT and ``.import``; the same
unique-violation errors; serializable against concurrent writers; all or nothing under kill -9."""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

import sqlkv
from sqlkv.cli.csvimport import import_csv
from sqlkv.encoding.keys import table_prefix
from sqlkv.errors import IntegrityError, SerializationFailure
from sqlkv.storage.kv import prefix_end
from sqlkv.txn import bulk
from sqlkv.txn import manager as manager_module
from sqlkv.txn.manager import TxnManager

THRESHOLD = 200  # small, so test-sized loads ingest
SMALL = dict(memtable_size=16384, block_size=512, target_file_size=8192, level_base_bytes=65536, l0_trigger=2,
             background_processes=False)
SCHEMA = [
    "CREATE TABLE items (id INT PRIMARY KEY, sku TEXT NOT NULL UNIQUE, grp INT, price FLOAT, note TEXT)",
    "CREATE INDEX items_grp ON items (grp DESC, price)",
    "CREATE TABLE copy (id INT PRIMARY KEY, sku TEXT, grp INT, price FLOAT, note TEXT)",
    "CREATE INDEX copy_grp ON copy (grp) STORING (note)",
    "CREATE TABLE log (msg TEXT, n INT)",  # no primary key: a hidden row id
]
ROWS = [(i, f"sku-{(i * 7919) % 100003:06d}", i % 17 if i % 11 else None, (i % 23) / 4,
         None if i % 5 == 0 else f"note {i % 97}") for i in range(1500)]
QUERIES = [
    "SELECT count(*), sum(grp), sum(price) FROM items",
    "SELECT id, sku FROM items WHERE grp = 3 ORDER BY price, id",
    "SELECT id FROM items WHERE sku = 'sku-000700'",
    "SELECT grp, count(*) FROM copy GROUP BY grp ORDER BY grp",
    "SELECT note FROM copy WHERE grp = 5 ORDER BY id",
    "SELECT msg, n FROM log ORDER BY n, msg",
]


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(manager_module, "DEFAULT_INGEST_THRESHOLD", THRESHOLD)


def _connect(path, **options):
    return sqlkv.connect(path, **SMALL, **options)


def _manager(conn) -> TxnManager:
    return TxnManager.for_engine(conn.session.db.engine)


def _user_kvs(conn) -> list:
    """Every stored pair of the user tables (ids from 100 on)."""
    start = table_prefix(100)
    return list(conn.session.db.engine.snapshot().scan(start, prefix_end(table_prefix(10_000))))


def _load(conn, csv_path: str) -> None:
    """Each loading statement into an empty table, each in its own transaction."""
    cur = conn.cursor()
    for sql in SCHEMA:
        cur.execute(sql)
    conn.commit()
    cur.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)  # one transaction
    conn.commit()
    conn.autocommit = True
    cur.execute("INSERT INTO copy SELECT id, sku, grp, price, note FROM items WHERE id % 3 <> 1")
    values = ", ".join(f"('m{i % 13}', {i})" for i in range(400))
    cur.execute(f"INSERT INTO log VALUES {values}")  # one multi-row statement
    import_csv(conn.session, csv_path, "imported")  # creates the table, then one transaction


def _write_csv(path, rows: int) -> str:
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["k", "name", "score"])
        for i in range(rows):
            out.writerow([i, f"name {i % 41}", "" if i % 9 == 0 else i * 0.5])
    return str(path)


def test_ingesting_commits_store_what_batch_commits_store(tmp_path, monkeypatch):
    csv_path = _write_csv(tmp_path / "in.csv", 3000)
    kvs, answers = {}, {}
    for mode in (True, False):
        monkeypatch.setattr(bulk, "ENABLED", mode)
        path = str(tmp_path / f"db{mode}")
        conn = _connect(path)
        _load(conn, csv_path)
        # executemany, INSERT ... SELECT, the multi-row INSERT and the import
        assert _manager(conn).bulk_commits == (4 if mode else 0)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        answers[mode] = [conn.execute(q).fetchall() for q in QUERIES]
        answers[mode].append(conn.execute("SELECT * FROM imported ORDER BY k").fetchall())
        kvs[mode] = _user_kvs(conn)
        conn.close()
        again = _connect(path)
        assert again.execute("CHECK DATABASE").fetchall() == []
        assert _user_kvs(again) == kvs[mode]
        again.close()
    assert kvs[True] == kvs[False]
    assert answers[True] == answers[False]
    oracle = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        if "STORING" not in sql:
            oracle.execute(sql)
    oracle.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    oracle.execute("INSERT INTO copy SELECT id, sku, grp, price, note FROM items WHERE id % 3 <> 1")
    oracle.executemany("INSERT INTO log VALUES (?, ?)", [(f"m{i % 13}", i) for i in range(400)])
    assert answers[True][:len(QUERIES)] == [oracle.execute(q).fetchall() for q in QUERIES]
    imported = answers[True][-1]
    assert len(imported) == 3000 and imported[9] == (9, "name 9", None) and imported[10] == (10, "name 10", 5.0)


def test_small_commits_and_other_engines_keep_the_batch_path(tmp_path):
    conn = _connect(str(tmp_path / "db"))
    conn.execute(SCHEMA[0])
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS[:50])  # 100 keys: below
    conn.commit()
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS[50:])  # not empty any more
    conn.commit()
    assert _manager(conn).bulk_commits == 0
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(1500,)]
    memory = sqlkv.connect(":memory:")
    memory.execute(SCHEMA[0])
    memory.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    memory.commit()
    assert _manager(memory).bulk_commits == 0  # Engine.ingest would only write a batch
    assert memory.execute("SELECT count(*), sum(id) FROM items").fetchall() == [(1500, sum(range(1500)))]


def test_a_transaction_that_also_deletes_keeps_the_batch_path(tmp_path):
    conn = _connect(str(tmp_path / "db"))
    conn.execute(SCHEMA[0])
    conn.commit()
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    conn.execute("DELETE FROM items WHERE id = 7")
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(1499,)]  # read-your-writes
    conn.commit()
    assert _manager(conn).bulk_commits == 0
    assert conn.execute("SELECT count(*) FROM items WHERE id = 7").fetchall() == [(0,)]


def _unique_errors(conn) -> list[str]:
    """The errors of duplicate keys inside the loading transaction and against loaded rows."""
    errors = []
    conn.execute(SCHEMA[0])
    conn.commit()
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    for bad in [(5, "fresh", 1, 1.0, None), (5000, ROWS[3][1], 1, 1.0, None)]:
        with pytest.raises(IntegrityError) as info:
            conn.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", bad)
        errors.append(str(info.value))
    conn.commit()  # the failed statements changed nothing; the load commits
    for bad in [(9, "other", 1, 1.0, None), (6000, ROWS[4][1], 1, 1.0, None)]:
        with pytest.raises(IntegrityError) as info:
            conn.execute("INSERT INTO items VALUES (?, ?, ?, ?, ?)", bad)
        errors.append(str(info.value))
    conn.rollback()
    assert conn.execute("SELECT count(*), sum(id) FROM items").fetchall() == [(1500, sum(range(1500)))]
    assert conn.execute("CHECK DATABASE").fetchall() == []
    return errors


def test_unique_violations_are_reported_at_insert_time_as_before(tmp_path, monkeypatch):
    errors = {}
    for mode in (True, False):
        monkeypatch.setattr(bulk, "ENABLED", mode)
        conn = _connect(str(tmp_path / f"db{mode}"))
        errors[mode] = _unique_errors(conn)
        assert _manager(conn).bulk_commits == (1 if mode else 0)
    assert errors[True] == errors[False]
    assert "items" in errors[True][0] and "sku" in errors[True][1]


def _two(tmp_path, name="db"):
    path = str(tmp_path / name)
    loader, other = _connect(path), _connect(path)
    loader.execute(SCHEMA[0])
    loader.commit()
    loader.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    return loader, other


def test_a_concurrent_insert_of_the_same_key_fails_one_of_the_two(tmp_path):
    loader, other = _two(tmp_path)
    other.execute("INSERT INTO items VALUES (700, 'elsewhere', 1, 1.0, NULL)")
    other.commit()
    with pytest.raises(SerializationFailure):
        loader.commit()
    assert other.execute("SELECT count(*) FROM items").fetchall() == [(1,)]


def test_a_writer_that_read_the_table_before_an_ingesting_commit_restarts(tmp_path):
    loader, other = _two(tmp_path)
    other.execute("SELECT count(*) FROM items").fetchall()  # a read of the table, then a write
    other.execute("INSERT INTO items VALUES (100000, 'late', 1, 1.0, NULL)")
    loader.commit()
    assert _manager(loader).bulk_commits == 1
    with pytest.raises(SerializationFailure):
        other.commit()
    assert loader.execute("SELECT count(*), count(DISTINCT sku) FROM items").fetchall() == [(1500, 1500)]
    assert loader.execute("CHECK DATABASE").fetchall() == []


def test_a_concurrent_insert_of_another_key_makes_the_load_use_the_batch_path(tmp_path):
    loader, other = _two(tmp_path)
    other.execute("INSERT INTO items VALUES (100000, 'elsewhere', 1, 1.0, NULL)")
    other.commit()
    loader.commit()  # no conflict (disjoint keys), but the table is no longer empty
    assert _manager(loader).bulk_commits == 0
    assert loader.execute("SELECT count(*), count(DISTINCT id) FROM items").fetchall() == [(1501, 1501)]
    assert loader.execute("CHECK DATABASE").fetchall() == []


def test_as_of_system_time_sees_the_load_appear_at_its_commit(tmp_path):
    now = [1_700_000_000.0]
    conn = _connect(str(tmp_path / "db"), gc_ttl=1000, clock=lambda: now[0])
    conn.execute(SCHEMA[0])
    conn.execute("INSERT INTO items VALUES (-1, 'before', 0, 0.0, NULL)")
    conn.commit()
    before = now[0] = now[0] + 10
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    now[0] += 10
    conn.commit()
    after = now[0] = now[0] + 10
    assert _manager(conn).bulk_commits == 0  # the table was not empty: batch
    conn.execute("CREATE TABLE more (k INT PRIMARY KEY)")
    conn.commit()
    mid = now[0] = now[0] + 10
    conn.executemany("INSERT INTO more VALUES (?)", [(i,) for i in range(500)])
    now[0] += 10
    conn.commit()
    now[0] += 10
    assert _manager(conn).bulk_commits == 1
    conn.autocommit = True

    def count(table, at):
        return conn.execute(f"SELECT count(*) FROM {table} AS OF SYSTEM TIME {int(at * 1e9)}").fetchall()[0][0]

    assert (count("items", before), count("items", after)) == (1, 1501)
    assert (count("more", mid), count("more", now[0])) == (0, 500)
    engine = conn.session.db.engine
    engine.flush()
    engine.compact()
    assert (count("more", mid), count("more", now[0])) == (0, 500)


CRASH_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import sqlkv
    from sqlkv.storage.lsm import ingest
    from sqlkv.storage.lsm.sstable import builder
    from sqlkv.txn import manager
    manager.DEFAULT_INGEST_THRESHOLD = 200
    path, point = sys.argv[1], sys.argv[2]
    finishes = [0]
    original_finish, original_install = builder.TableBuilder.finish, ingest._install
    def finish(self, *args):
        finishes[0] += 1
        if point == "tables_half_written" and finishes[0] == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return original_finish(self, *args)
    def install(*args):
        if point == "before_install":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original_install(*args)
        if point == "after_install":
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    conn = sqlkv.connect(path, target_file_size=8192, background_processes=False)
    conn.execute("CREATE TABLE keep (id INT PRIMARY KEY, v TEXT)")
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, v TEXT)")
    conn.execute("CREATE INDEX ix ON t (k)")
    conn.execute("INSERT INTO keep VALUES (1, 'committed before')")
    conn.commit()
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 97, "v%d" % i) for i in range(3000)])
    builder.TableBuilder.finish, ingest._install = finish, install
    sys.stdout.write("committing\\n"); sys.stdout.flush()
    conn.execute("CREATE TABLE u (id INT PRIMARY KEY)")  # a descriptor too: a few keys in a busy span
    conn.executemany("INSERT INTO u VALUES (?)", [(i,) for i in range(3000)])
    conn.commit()
    sys.stdout.write("committed\\n"); sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize("point", ["tables_half_written", "before_install", "after_install", "acknowledged"])
def test_kill_during_an_ingesting_commit_is_all_or_nothing(tmp_path, point):
    path = str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.run([sys.executable, "-c", CRASH_CHILD, path, point], capture_output=True, env=env,
                           timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    said = child.stdout.decode().split()
    conn = _connect(path)
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert conn.execute("SELECT v FROM keep").fetchall() == [("committed before",)]
    loaded = conn.execute("SELECT count(*), count(DISTINCT k) FROM t").fetchall()[0]
    tables = {row[0] for row in conn.execute("SHOW TABLES").fetchall()}
    if point in ("after_install", "acknowledged"):
        assert said == (["committing", "committed"] if point == "acknowledged" else ["committing"])
        assert loaded == (3000, 97)
        assert conn.execute("SELECT count(*), sum(id) FROM u").fetchall() == [(3000, sum(range(3000)))]
    else:
        assert said == ["committing"]
        assert loaded == (0, 0) and "u" not in tables
    conn.execute("INSERT INTO t VALUES (5000, 1, 'after the crash')")  # the database works on
    conn.commit()
    expected = 1 + (sum(1 for i in range(3000) if i % 97 == 1) if loaded[0] else 0)
    assert conn.execute("SELECT count(*) FROM t WHERE k = 1").fetchall() == [(expected,)]
    leftovers = [n for n in os.listdir(path) if n.endswith(".sst")]
    version_tables = conn.session.db.engine._core.version.file_numbers()
    assert len(leftovers) == len(version_tables)  # no table of the lost ingestion is left behind


def test_concurrent_loaders_and_writers_lose_and_duplicate_nothing(tmp_path):
    """Two loaders of overlapping id ranges and a row-at-a-time writer, all at once, retrying
    on 40001: every committed row is there once, and rows no commit wrote are not."""
    path = str(tmp_path / "db")
    setup = _connect(path)
    setup.execute(SCHEMA[0])
    setup.commit()
    committed: dict[str, list[int]] = {}
    failures: list[BaseException] = []

    def run(name, batches):
        conn = _connect(path)
        done = []
        try:
            for ids in batches:
                for _attempt in range(50):
                    try:
                        conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)",
                                         [(i, f"{name}-{i}", i % 7, 1.0, None) for i in ids])
                        conn.commit()
                        done.extend(ids)
                        break
                    except SerializationFailure:
                        conn.rollback()
                    except IntegrityError:  # another thread committed one of these ids first
                        conn.rollback()
                        break
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)
        committed[name] = done

    threads = [threading.Thread(target=run, args=("a", [range(0, 1200)])),
               threading.Thread(target=run, args=("b", [range(1000, 2200)])),
               threading.Thread(target=run, args=("w", [[i] for i in range(2100, 2300, 3)]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, failures
    expected = {i: name for name, ids in committed.items() for i in ids}
    assert sum(len(ids) for ids in committed.values()) == len(expected)  # no id committed twice
    rows = setup.execute("SELECT id, sku FROM items ORDER BY id").fetchall()
    assert rows == [(i, f"{expected[i]}-{i}") for i in sorted(expected)]
    assert committed["a"] or committed["b"]
    assert setup.execute("CHECK DATABASE").fetchall() == []


def test_import_of_a_big_csv_commits_by_ingestion_at_the_default_threshold(tmp_path, monkeypatch):
    monkeypatch.setattr(manager_module, "DEFAULT_INGEST_THRESHOLD", bulk.DEFAULT_THRESHOLD)
    rows = bulk.DEFAULT_THRESHOLD + 2500
    csv_path = _write_csv(tmp_path / "big.csv", rows)
    conn = _connect(str(tmp_path / "db"), autocommit=True)
    assert import_csv(conn.session, csv_path, "big") == rows
    assert _manager(conn).bulk_commits == 1
    got = conn.execute("SELECT count(*), sum(k), count(score), sum(score) FROM big").fetchall()
    with_score = [i for i in range(rows) if i % 9]
    assert got == [(rows, sum(range(rows)), len(with_score), sum(i * 0.5 for i in with_score))]
    assert conn.execute("SELECT name FROM big WHERE k = 12345").fetchall() == [(f"name {12345 % 41}",)]
    assert conn.execute("CHECK DATABASE").fetchall() == []


@pytest.mark.parametrize("empty_it", ["DELETE FROM items", "TRUNCATE items"])
def test_a_load_into_a_table_emptied_before_sees_none_of_the_old_rows(tmp_path, empty_it):
    conn = _connect(str(tmp_path / "db"))
    conn.execute(SCHEMA[0])
    conn.execute(SCHEMA[1])
    conn.commit()
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", ROWS)
    conn.commit()
    conn.execute(empty_it)
    conn.commit()
    second = [(i, f"again-{i}", i % 5, 2.0, "second") for i in range(500, 2500)]
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", second)
    conn.commit()
    assert _manager(conn).bulk_commits == 2  # the emptied table's spans hold nothing visible
    for engine_step in (lambda e: None, lambda e: e.flush(), lambda e: e.compact()):
        engine_step(conn.session.db.engine)
        assert conn.execute("SELECT * FROM items ORDER BY id").fetchall() == second
        assert conn.execute("SELECT id FROM items WHERE grp = 3 ORDER BY price, id").fetchall() == \
            [(r[0],) for r in second if r[2] == 3]
        assert conn.execute("CHECK DATABASE").fetchall() == []
