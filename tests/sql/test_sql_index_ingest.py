"""CREATE INDEX by bulk ingestion (sqlkv/sql/ddl/index_ingest.py) against the transactional
backfill: the same keys, the same errors, nothing left by a failure or a crash, and writes made
during the backfill reach the index."""

from __future__ import annotations

import datetime
import decimal
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import uuid

import pytest

import sqlkv
from sqlkv.errors import IntegrityError, OperationalError
from sqlkv.sql.database import Database
from sqlkv.catalog import pending_builds
from sqlkv.sql.ddl import index_ingest
from sqlkv.storage.kv import prefix_end
from sqlkv.encoding.keys import index_prefix, table_prefix

ROWS = [(i, (i * 37) % 101 if i % 13 else None, f"name{(i * 7) % 50}", float(i % 9) / 4, i % 3 == 0)
        for i in range(3000)]
INDEXES = [
    "CREATE INDEX ix_k ON t (k)",
    "CREATE INDEX ix_kd ON t (k DESC, name)",
    "CREATE INDEX ix_st ON t (name) STORING (x)",
    "CREATE INDEX ix_part ON t (x) WHERE flag",
    "CREATE INDEX ix_expr ON t ((k * 2))",
    "CREATE UNIQUE INDEX ux_id ON t (k, id)",
]
QUERIES = [
    "SELECT id FROM t WHERE k = 5 ORDER BY id",
    "SELECT k, name FROM t WHERE k BETWEEN 10 AND 20 ORDER BY k DESC, name, id",
    "SELECT name, x FROM t WHERE name = 'name7' ORDER BY id",
    "SELECT id FROM t WHERE flag AND x > 1 ORDER BY id",
    "SELECT id FROM t WHERE k * 2 = 40 ORDER BY id",
    "SELECT count(*) FROM t WHERE k IS NULL",
]


def _open(path):
    return sqlkv.connect(path, autocommit=True)


def _db(path) -> Database:
    return Database._registry[os.path.realpath(path)]


def _load(conn):
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, name TEXT, x FLOAT, flag BOOL)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)


def _table_kvs(path):
    db = _db(path)
    start = table_prefix(100)
    return list(db.engine.snapshot().scan(start, prefix_end(start)))


@pytest.fixture
def small_runs(monkeypatch):
    monkeypatch.setattr(index_ingest, "RUN_ENTRIES", 700)  # several spilled runs to merge
    monkeypatch.setattr(index_ingest, "_SPILL_CHUNK", 64)  # ... each of several lists
    monkeypatch.setattr(index_ingest, "BATCH_ROWS", 256)  # several batches of table rows


def _ingests(path) -> int:
    return _db(path).engine._core.ingest_counters["ingests"]


def test_ingested_indexes_equal_transactional_ones(tmp_path, monkeypatch, small_runs):
    paths = {}
    for mode in (True, False):
        monkeypatch.setattr(index_ingest, "ENABLED", mode)
        path = paths[mode] = str(tmp_path / f"db{mode}")
        conn = _open(path)
        _load(conn)
        before = _ingests(path)
        for sql in INDEXES:
            conn.execute(sql)
        assert _ingests(path) - before == (len(INDEXES) if mode else 0)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        conn.close()
    reopened = {mode: _open(path) for mode, path in paths.items()}
    for again in reopened.values():
        assert again.execute("CHECK DATABASE").fetchall() == []
    assert _table_kvs(paths[True]) == _table_kvs(paths[False])
    oracle = sqlite3.connect(":memory:")
    oracle.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, name TEXT, x FLOAT, flag BOOL)")
    oracle.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
    conn = reopened[True]
    for q in QUERIES:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + q).fetchall())
        assert "@ix_" in plan or "count" in q, plan
        assert conn.execute(q).fetchall() == oracle.execute(q).fetchall(), q


def _bloom_bits_by_index(path, index_ids) -> dict[int, set[int]]:
    """Per index id of table 100: the bloom filter sizes (in bits) of the tables holding it."""
    core = _db(path).engine._core
    out: dict[int, set[int]] = {}
    for index_id in index_ids:
        prefix = index_prefix(100, index_id)
        for info in (info for level in core.version.levels for info in level):
            if info.smallest.startswith(prefix) and info.largest.startswith(prefix):
                reader = core.readers[info.number]
                reader.load()
                out.setdefault(index_id, set()).add(reader._bloom_nbits)
    return out


def test_only_a_unique_index_is_ingested_with_a_bloom_filter(tmp_path):
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    conn.execute("CREATE INDEX ix_k ON t (k)")  # index id 2
    conn.execute("CREATE UNIQUE INDEX ux_kn ON t (k, name)")  # id 3 (k and name repeat; the pairs do not)
    conn.execute("CREATE INDEX ix_st ON t (name) STORING (x)")  # id 4
    bits = _bloom_bits_by_index(path, (2, 3, 4))
    assert bits[2] == bits[4] == {0} and 0 not in bits[3], bits
    oracle = sqlite3.connect(":memory:")
    oracle.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, name TEXT, x FLOAT, flag BOOL)")
    oracle.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
    for q in ("SELECT id FROM t WHERE k = 5 ORDER BY id", "SELECT x FROM t WHERE name = 'name7' ORDER BY id",
              "SELECT id FROM t WHERE k = 37 AND name = 'name7'", "SELECT id FROM t WHERE k = 37 AND name = 'name8'",
              "SELECT id FROM t WHERE k = 74 AND id = 2", "SELECT id FROM t WHERE k = 73 AND id = 2"):
        assert conn.execute(q).fetchall() == oracle.execute(q).fetchall(), q
    # later writes: a duplicate is still refused by the unique index, updates move entries
    with pytest.raises(IntegrityError, match="ux_kn"):
        conn.execute("INSERT INTO t VALUES (5000, 37, 'name7', 1.0, true)")  # row 1's (k, name)
    conn.execute("UPDATE t SET k = 1000 WHERE id = 7")
    assert conn.execute("SELECT id FROM t WHERE k = 1000").fetchall() == [(7,)]
    assert conn.execute("CHECK DATABASE").fetchall() == []


ODD_TABLES = [
    # a DESC composite primary key: the entry's key ends with its bytes, cut from the row key
    ("CREATE TABLE t (a INT, b TEXT, k INT, s TEXT, x FLOAT, PRIMARY KEY (a DESC, b))",
     "INSERT INTO t VALUES (?, ?, ?, ?, ?)"),
    # two families: the tuple path (one row is several pairs)
    ("CREATE TABLE t (a INT, b TEXT, k INT, s TEXT, x FLOAT, PRIMARY KEY (a DESC, b), "
     "FAMILY f1 (a, b, k, s), FAMILY f2 (x))", "INSERT INTO t VALUES (?, ?, ?, ?, ?)"),
]
ODD_ROWS = [(i * 7919 - 10**12 if i % 5 else i, f"b\x00{i % 3}", (-1) ** i * i**3 if i % 11 else None,
             f"s{i % 17}\x00z" if i % 4 else None, -0.0 if i % 6 == 0 else i / 3 - 50) for i in range(900)]
ODD_INDEXES = [
    "CREATE INDEX o_k ON t (k)",
    "CREATE INDEX o_kd ON t (k DESC, s DESC)",
    "CREATE INDEX o_sx ON t (s) STORING (x, k) WHERE x > 0",
    "CREATE INDEX o_x ON t (x)",
    "CREATE INDEX o_kb ON t (k) STORING (b, x)",  # a primary key column stored: decoded from the row key
    "CREATE INDEX o_ba ON t (b, a)",
    "CREATE UNIQUE INDEX o_u ON t (s, a, b)",
]


@pytest.mark.parametrize("create, insert", ODD_TABLES)
def test_odd_keys_ingest_as_the_transactional_path_writes_them(tmp_path, monkeypatch, small_runs, create, insert):
    """Negative and large ints, NUL bytes in strings, -0.0, NULLs ascending and descending, a
    DESC composite primary key, STORING with a predicate: the ingested entries are the bytes
    the transactional backfill writes, and CHECK DATABASE finds every index whole."""
    _same_kvs_both_ways(tmp_path, monkeypatch, create, insert, ODD_ROWS, ODD_INDEXES)


def _same_kvs_both_ways(tmp_path, monkeypatch, create: str, insert: str, rows: list, indexes: list) -> None:
    """Build ``indexes`` by ingestion and transactionally; the stored pairs are equal and
    CHECK DATABASE finds every index whole."""
    contents = {}
    for mode in (True, False):
        monkeypatch.setattr(index_ingest, "ENABLED", mode)
        path = str(tmp_path / f"db{mode}")
        conn = _open(path)
        conn.execute(create)
        conn.executemany(insert, rows)
        before = _ingests(path)
        for sql in indexes:
            conn.execute(sql)
        assert _ingests(path) - before == (len(indexes) if mode else 0)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        contents[mode] = _table_kvs(path)
        conn.close()
    assert contents[True] == contents[False]


TYPED_TABLE = ("CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL, dt DATE, ts TIMESTAMP, u UUID, "
               "s TEXT, f FLOAT, i INT, b BYTES)")
TYPED_ROWS = [(n, decimal.Decimal(n * 37 % 101) / 8 if n % 7 else None, datetime.date(2000, 1, 1 + n % 28),
               datetime.datetime(2020, 5, 1, n % 24, n % 60, 0, n), uuid.UUID(int=(n * 7919) % 1000),
               f"é{n % 13}\x00€" if n % 5 else None, (n % 17) / 3 - 2, n % 9 - 4 if n % 11 else None,
               bytes([n % 256, 0]) if n % 3 else None) for n in range(900)]
TYPED_INDEXES = [
    "CREATE INDEX y_d ON t (d)",  # columns read with the row's strings left undecoded (raw unpack)
    "CREATE INDEX y_dt ON t (dt, i DESC)",
    "CREATE INDEX y_ts ON t (ts DESC) STORING (u)",
    "CREATE INDEX y_u ON t (u, f)",
    "CREATE INDEX y_fs ON t (f) STORING (s)",  # a string read: the normal unpack
    "CREATE INDEX y_b ON t (b, i)",
    "CREATE INDEX y_s ON t (s)",
    "CREATE UNIQUE INDEX y_uq ON t (u) STORING (s, d)",  # unique, batched: the value holds id, s, d
    "CREATE UNIQUE INDEX y_ud ON t (i DESC, id)",  # NULLs in i: those rows' keys end with the id
]


def test_typed_columns_ingest_as_the_transactional_path_writes_them(tmp_path, monkeypatch, small_runs):
    """Decimal, date, timestamp, UUID, float, bytes and text columns (non-ASCII text with NULs
    beside the indexed columns): the ingested entries are the transactional path's bytes."""
    _same_kvs_both_ways(tmp_path, monkeypatch, TYPED_TABLE, "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        TYPED_ROWS, TYPED_INDEXES)


def _leftovers(path, index_id: int) -> list:
    snap = _db(path).engine.snapshot()
    start = index_prefix(100, index_id)
    pending = pending_builds.PENDING
    return list(snap.scan(start, prefix_end(start))) + list(snap.scan(pending, prefix_end(pending)))


def _loaded(tmp_path, monkeypatch, ingest: bool):
    """``(path, connection)`` of a database holding ``t`` with `ROWS`, whose CREATE INDEX
    ingests or not."""
    monkeypatch.setattr(index_ingest, "ENABLED", ingest)
    path = str(tmp_path / f"db{ingest}")
    conn = _open(path)
    _load(conn)
    return path, conn


def test_unique_violation_is_reported_alike_and_leaves_nothing(tmp_path, monkeypatch, small_runs):
    errors = {}
    for mode in (True, False):
        path, conn = _loaded(tmp_path, monkeypatch, mode)
        with pytest.raises(IntegrityError) as info:
            conn.execute("CREATE UNIQUE INDEX ux ON t (name, flag)")
        errors[mode] = str(info.value)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        assert _leftovers(path, 2) == []
        conn.execute("CREATE UNIQUE INDEX ux ON t (id, name)")  # the name is free, the next build works
        assert conn.execute("CHECK DATABASE").fetchall() == []
        assert conn.execute("SELECT count(*) FROM t WHERE id = 7 AND name = 'name49'").fetchall() == [(1,)]
    assert errors[True] == errors[False]
    assert "Key (name, flag)=(" in errors[True]


CRASH_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import sqlkv
    from sqlkv.sql.ddl import index_ingest
    path, point, unique = sys.argv[1], sys.argv[2], sys.argv[3] == "unique"
    target = {"after_ingest": "_ingest_checked", "while_sorting": "_sorted_runs"}[point]
    original = getattr(index_ingest, target)
    def killing(*args):
        if point == "while_sorting":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original(*args)
        sys.stdout.write("ingested\\n"); sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(index_ingest, target, killing)
    conn = sqlkv.connect(path, autocommit=True)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 97, "v%d" % i) for i in range(5000)])
    sys.stdout.write("loaded\\n"); sys.stdout.flush()
    conn.execute("CREATE UNIQUE INDEX ix ON t (k, v)" if unique else "CREATE INDEX ix ON t (k, v)")
    sys.stdout.write("returned\\n"); sys.stdout.flush()
    """
)


@pytest.mark.parametrize("kind", ["unique", "plain"])  # (key, ordinal, value) entries, or keys alone
@pytest.mark.parametrize("point", ["after_ingest", "while_sorting"])
def test_kill_during_backfill_leaves_no_index_and_a_later_build_works(tmp_path, point, kind):
    path = str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.run([sys.executable, "-c", CRASH_CHILD, path, point, kind], capture_output=True, env=env,
                           timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    lines = child.stdout.decode().split()
    assert lines == (["loaded", "ingested"] if point == "after_ingest" else ["loaded"])
    conn = _open(path)  # opening collects the abandoned build
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert _leftovers(path, 2) == []
    with pytest.raises(Exception):
        conn.execute("SELECT * FROM t@ix")
    conn.execute("CREATE INDEX ix ON t (k, v)")
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert conn.execute("SELECT count(*) FROM t WHERE k = 5").fetchall() == [(sum(1 for i in range(5000) if i % 97 == 5),)]
    assert "@ix" in "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM t WHERE k = 5").fetchall())


def test_writes_during_the_backfill_reach_the_index(tmp_path, monkeypatch):
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    original = index_ingest._sorted_runs
    outcome: dict = {}

    def writer():
        other = _open(path)
        for _attempt in range(50):
            try:
                other.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", (99999, 5, "late", 1.0, True))
                other.execute("DELETE FROM t WHERE id = 13")  # k = 13*37 % 101 = 77
                outcome["done"] = True
                return
            except OperationalError as exc:  # the 40001 of a write held by the fence: re-run it
                outcome.setdefault("restarts", []).append(str(exc))

    thread = threading.Thread(target=writer)

    def runs_while_writing(*args):
        thread.start()
        thread.join(0.5)  # the writer is held by the fence meanwhile
        outcome["held"] = thread.is_alive()
        return original(*args)

    monkeypatch.setattr(index_ingest, "_sorted_runs", runs_while_writing)
    conn.execute("CREATE INDEX ix ON t (k)")
    thread.join(30)
    assert outcome.get("done") and outcome["held"], outcome
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert conn.execute("SELECT id FROM t WHERE k = 5 AND id > 90000").fetchall() == [(99999,)]
    assert conn.execute("SELECT id FROM t WHERE k = 77 AND id = 13").fetchall() == []
    assert "@ix" in "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM t WHERE k = 5").fetchall())


def test_two_builds_on_one_table_at_once_get_their_own_ids(tmp_path, monkeypatch):
    """A second CREATE INDEX starting (and finishing) while the first is sorting: each keeps
    its reserved id, both are published, and neither's entries are touched by the other."""
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    original = index_ingest._sorted_runs
    second: dict = {}

    def build_second():
        try:
            _open(path).execute("CREATE INDEX ix_b ON t (name, k)")
            second["ok"] = True
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            second["error"] = exc

    def runs_with_a_second_build(*args):
        if not second:
            second["started"] = True
            thread = threading.Thread(target=build_second)
            thread.start()
            thread.join(30)
        return original(*args)

    monkeypatch.setattr(index_ingest, "_sorted_runs", runs_with_a_second_build)
    conn.execute("CREATE INDEX ix_a ON t (k)")
    assert second.get("ok"), second
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert _leftovers(path, 99) == []  # no pending marker is left
    for q, name in (("SELECT id FROM t WHERE k = 5 ORDER BY id", "@ix_a"),
                    ("SELECT id FROM t WHERE name = 'name3' ORDER BY id", "@ix_b")):
        assert name in "\n".join(r[0] for r in conn.execute("EXPLAIN " + q).fetchall())
        oracle = sqlite3.connect(":memory:")
        oracle.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, name TEXT, x FLOAT, flag BOOL)")
        oracle.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
        assert conn.execute(q).fetchall() == oracle.execute(q).fetchall()


def test_check_database_during_a_build_accepts_its_pending_range(tmp_path, monkeypatch):
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    original = index_ingest._ingest_checked
    seen: dict = {}

    def ingest_then_check(manager, *args):
        result = original(manager, *args)
        seen["pending"] = _leftovers(path, 2) != []  # entries and marker exist, index not public
        seen["problems"] = _open(path).execute("CHECK DATABASE").fetchall()
        return result

    monkeypatch.setattr(index_ingest, "_ingest_checked", ingest_then_check)
    conn.execute("CREATE INDEX ix ON t (k)")
    assert seen == {"pending": True, "problems": []}


def test_inside_a_transaction_the_build_stays_transactional(tmp_path):
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    before = _ingests(path)
    conn.execute("BEGIN")
    conn.execute("CREATE INDEX ix ON t (k)")
    conn.execute("ROLLBACK")
    assert _ingests(path) == before
    assert "@ix" not in "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM t WHERE k = 5").fetchall())
    assert _leftovers(path, 2) == [] and conn.execute("CHECK DATABASE").fetchall() == []


@pytest.mark.parametrize("meanwhile, error", [
    ("CREATE TABLE u (a INT PRIMARY KEY); CREATE INDEX ix ON u (a)", "already exists"),
    ("ALTER TABLE t ADD COLUMN extra INT", "SQLSTATE 40001"),
])
def test_a_build_overtaken_by_other_ddl_fails_and_leaves_nothing(tmp_path, monkeypatch, meanwhile, error):
    path = str(tmp_path / "db")
    conn = _open(path)
    _load(conn)
    original = index_ingest._sorted_runs

    def runs_after_other_ddl(*args):
        other = _open(path)
        for sql in meanwhile.split("; "):
            other.execute(sql)
        return original(*args)

    monkeypatch.setattr(index_ingest, "_sorted_runs", runs_after_other_ddl)
    with pytest.raises(sqlkv.Error, match=error):
        conn.execute("CREATE INDEX ix ON t (k)")
    monkeypatch.setattr(index_ingest, "_sorted_runs", original)
    assert _leftovers(path, 2) == []
    assert conn.execute("CHECK DATABASE").fetchall() == []
    conn.execute("CREATE INDEX ix_again ON t (k)")
    assert conn.execute("CHECK DATABASE").fetchall() == []
    assert conn.execute("SELECT count(*) FROM t WHERE k = 5").fetchall() == [(sum(1 for r in ROWS if r[1] == 5),)]


class _Consumer:
    """A manager whose ingest reads every pair (as the engine does) and keeps them."""

    def __init__(self):
        self.pairs = None

    def ingest(self, pairs, start, end, point_reads):
        self.pairs = list(pairs)
        assert all(a < b for (a, _), (b, _) in zip(self.pairs, self.pairs[1:])), "not strictly ascending"


@pytest.mark.parametrize("seed", range(8))
def test_repeated_keys_report_the_first_row_repeating_an_earlier_one(seed):
    """`_ingest_checked` on sorted lists of ``(key, ordinal, value)``: without repeats every
    pair is ingested; with them nothing is, and the reported ordinal is the smallest second
    ordinal of any group of equal keys, wherever the lists are cut (a repeat across two
    lists, inside one, several groups)."""
    import random
    from sqlkv.sql.ddl.index_ingest import _ingest_checked

    class _Unique:
        unique, storing_positions = True, []

    rng = random.Random(seed)
    n = rng.randrange(1, 400) if seed else 6
    keys = [b"k%03d" % rng.randrange(n * 3 if seed % 2 else n // 2 + 1) for _ in range(n)]
    if not seed:  # one repeat, across the cut between two lists
        keys = [b"a", b"b", b"c", b"c", b"d", b"e"]
    entries = sorted(((key, ordinal, b"v%d" % ordinal) for ordinal, key in enumerate(keys)))
    cuts = sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(0, 12)))) if seed else [3]
    lists = [entries[a:b] for a, b in zip([0, *cuts], [*cuts, n])]
    seconds = [entries[i][1] for i in range(1, n) if entries[i][0] == entries[i - 1][0]
               and (i == 1 or entries[i - 2][0] != entries[i][0])]
    manager = _Consumer()
    got = _ingest_checked(manager, iter(lists), b"", b"\xff", _Unique(), False)
    if seconds:
        assert got == min(seconds)
    else:
        assert got is None and manager.pairs == [(key, value) for key, _o, value in entries]


def test_a_table_under_a_memtable_of_updates_and_deletes_ingests_as_the_transactional_path(
        tmp_path, monkeypatch, small_runs):
    """The backfill reads a compacted table under a memtable of scattered updates and deletes
    (the LSM's two-source column merge, storage/lsm/column_scan.py): the entries are the
    transactional path's, CHECK DATABASE finds every index whole, and queries agree with
    sqlite3."""
    changes = [("UPDATE t SET k = k + 1000, name = 'upd' WHERE id % 17 = 3", ()),
               ("DELETE FROM t WHERE id % 23 = 5", ()),
               ("INSERT INTO t VALUES (?, ?, ?, ?, ?)", (5000, 7, "new", 0.5, True))]
    contents = {}
    for mode in (True, False):
        path, conn = _loaded(tmp_path, monkeypatch, mode)
        _db(path).engine.compact()  # the rows in a level, then the changes in the memtable
        for sql, args in changes:
            conn.execute(sql, args)
        assert _db(path).engine._core.mem.entries  # the changes are still in the memtable
        for sql in INDEXES:
            conn.execute(sql)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        contents[mode] = _table_kvs(path)
        if mode:
            oracle = sqlite3.connect(":memory:")
            oracle.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, name TEXT, x FLOAT, flag BOOL)")
            oracle.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", ROWS)
            for sql, args in changes:
                oracle.execute(sql, args)
            for q in QUERIES + ["SELECT id, name FROM t WHERE k > 1000 ORDER BY k, id"]:
                assert conn.execute(q).fetchall() == oracle.execute(q).fetchall(), q
        conn.close()
    assert contents[True] == contents[False]
