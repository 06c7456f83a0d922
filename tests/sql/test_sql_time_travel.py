"""``SELECT ... AS OF SYSTEM TIME`` and ``BEGIN AS OF SYSTEM TIME`` through the driver.

The oracle is sqlite3: the same statements run on both, and after each one sqlite's rows are
recorded with the (injected) time the statement committed at; a read of sqlkv AS OF that time
must return them -- right away, after close and reopen, and after a forced flush and full
compaction. A kill -9 test uses the real clock: every acknowledged commit is visible at its
acknowledgement time, and none before it started.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import sqlkv
from sqlkv.errors import DataError, NotSupportedError, OperationalError, ProgrammingError

START = 1_700_000_000.0
SMALL = dict(memtable_size=4096, block_size=512, target_file_size=4096, level_base_bytes=16384, l0_trigger=2)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def _connect(kind: str, tmp_path, clock: Clock, **options):
    if kind == "memory":
        return sqlkv.connect(":memory:", autocommit=True, clock=clock, **options)
    return sqlkv.connect(str(tmp_path / "db"), autocommit=True, clock=clock, background_processes=False,
                         **SMALL, **options)


def _engine(conn):
    return conn._session.db.engine


def _rows(conn, sql: str, params=()) -> list:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall()


def _random_statement(rng: random.Random) -> tuple[str, tuple]:
    k = rng.randrange(30)
    roll = rng.random()
    if roll < 0.45:
        return "INSERT INTO t VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, n = excluded.n", \
            (k, f"v{rng.randrange(1000)}", rng.randrange(100))
    if roll < 0.7:
        return "UPDATE t SET n = n + ?, v = v || 'x' WHERE k % 5 = ?", (rng.randrange(1, 9), k % 5)
    if roll < 0.9:
        return "DELETE FROM t WHERE k = ?", (k,)
    return "DELETE FROM t WHERE n > ?", (rng.randrange(80, 100),)


def _history(conn, clock: Clock, oracle: sqlite3.Connection, rng: random.Random, count: int) -> list:
    """Run ``count`` random statements one second apart on both; [(commit time, sqlite rows)]."""
    states = []
    for _ in range(count):
        sql, params = _random_statement(rng)
        conn.execute(sql, params)
        oracle.execute(sql, params)
        states.append((clock.now, oracle.execute("SELECT k, v, n FROM t ORDER BY k").fetchall()))
        clock.now += 1.0
    return states


def _check(conn, states: list) -> None:
    for when, expected in states:
        for back in (0.0, -0.5):  # half a second after a commit still reads that commit's state
            at = START + (when - START) - back
            got = _rows(conn, "SELECT k, v, n FROM t AS OF SYSTEM TIME ? ORDER BY k",
                        (str(int(round(at * 1e9))),))
            assert got == expected, f"AS OF {at - START}s"


def _setup(conn, clock: Clock) -> sqlite3.Connection:
    oracle = sqlite3.connect(":memory:")
    for db in (conn, oracle):
        db.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT, n INT)")
    clock.now += 1
    return oracle


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_every_past_state_matches_sqlite(kind, tmp_path):
    clock = Clock()
    conn = _connect(kind, tmp_path, clock, gc_ttl=1000)
    oracle = _setup(conn, clock)
    states = _history(conn, clock, oracle, random.Random(11), 40)
    _check(conn, states)
    if kind == "lsm":  # everything merged: the versions the window needs stay
        _engine(conn).flush()
        _engine(conn).compact()
        _check(conn, states)
    conn.close()


def test_past_states_survive_reopen_and_compaction(tmp_path):
    clock = Clock()
    conn = _connect("lsm", tmp_path, clock, gc_ttl=1000)
    oracle = _setup(conn, clock)
    states = _history(conn, clock, oracle, random.Random(12), 30)
    conn.close()
    conn = _connect("lsm", tmp_path, clock, gc_ttl=1000)
    _check(conn, states)
    states += _history(conn, clock, oracle, random.Random(13), 10)
    _engine(conn).compact()
    conn.close()
    conn = _connect("lsm", tmp_path, clock, gc_ttl=1000)
    _check(conn, states)
    conn.close()


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_reads_use_the_schema_of_then(kind, tmp_path):
    clock = Clock()
    conn = _connect(kind, tmp_path, clock)

    def at(sql: str) -> None:
        conn.execute(sql)
        clock.now += 1

    at("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")  # +0
    at("INSERT INTO t VALUES (1, 'a'), (2, 'b')")  # +1
    at("ALTER TABLE t ADD COLUMN w INT DEFAULT 7")  # +2
    at("CREATE INDEX t_v ON t (v)")  # +3
    at("ALTER TABLE t RENAME TO t_old")  # +4
    at("CREATE TABLE t (x TEXT PRIMARY KEY)")  # +5
    at("INSERT INTO t VALUES ('new')")  # +6
    at("DROP TABLE t_old")  # +7 (one range delete over its keys)
    if kind == "lsm":  # the range delete's tables are within the window: they must stay
        _engine(conn).compact()

    def past(sql: str, when: float):
        return _rows(conn, sql.replace("@", f"AS OF SYSTEM TIME '{dt.datetime.fromtimestamp(START + when).isoformat()}'"))

    assert past("SELECT * FROM t @ ORDER BY k", 1) == [(1, "a"), (2, "b")]
    assert past("SELECT * FROM t @ ORDER BY k", 2) == [(1, "a", 7), (2, "b", 7)]
    assert past("SELECT k FROM t @ WHERE v = 'b'", 3) == [(2,)]  # through the index of then
    assert past("SELECT * FROM t_old @ ORDER BY k", 6) == [(1, "a", 7), (2, "b", 7)]
    assert past("SELECT * FROM t @", 6) == [("new",)]
    with pytest.raises(ProgrammingError, match='relation "t_old" does not exist'):
        past("SELECT * FROM t_old @", 3)
    with pytest.raises(ProgrammingError, match='relation "t_old" does not exist'):
        past("SELECT * FROM t_old @", 7)  # dropped by then (and now)
    with pytest.raises(ProgrammingError, match='column "w" does not exist'):
        past("SELECT w FROM t @", 1)
    assert _rows(conn, "SELECT * FROM t") == [("new",)]  # the present is untouched
    conn.close()


def test_time_forms_and_parameters():
    clock = Clock()
    conn = _connect("memory", None, clock)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    clock.now += 10
    conn.execute("INSERT INTO t VALUES (1)")
    clock.now += 10  # the row was inserted 10 s ago; the table created 20 s ago
    then = START + 5
    forms = [
        ("'-15s'", ()), ("INTERVAL '-15 seconds'", ()), ("'-00:00:15'", ()), ("'-14s1000ms'", ()),
        ("'-0 minutes 15 seconds'", ()),
        (f"'{dt.datetime.fromtimestamp(then).isoformat(sep=' ')}'", ()),  # local time, as now() gives
        (f"'{dt.datetime.fromtimestamp(then, dt.timezone.utc).isoformat()}'", ()),
        (f"{int(then * 1e9)}", ()), ("?", ("-15s",)), ("?", (dt.datetime.fromtimestamp(then),)),
    ]
    for form, params in forms:
        assert _rows(conn, f"SELECT count(*) FROM t AS OF SYSTEM TIME {form}", params) == [(0,)], form
    assert _rows(conn, "SELECT count(*) FROM t AS OF SYSTEM TIME '-5s' WHERE k = ?", (1,)) == [(1,)]
    assert _rows(conn, "SELECT count(*) FROM t AS OF SYSTEM TIME ? WHERE k = ?", ("-5s", 1)) == [(1,)]
    conn.close()


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT * FROM t AS OF SYSTEM TIME '+5s'", DataError, "positive"),
    ("SELECT * FROM t AS OF SYSTEM TIME '2999-01-01 00:00:00'", DataError, "in the future"),
    ("SELECT * FROM t AS OF SYSTEM TIME '-1000s'", OperationalError, "before the GC threshold"),
    ("SELECT * FROM t AS OF SYSTEM TIME '-25s'", OperationalError, "before the database's recorded history"),
    ("SELECT * FROM t AS OF SYSTEM TIME 'yesterday-ish'", DataError, "neither a timestamp"),
    ("SELECT * FROM t AS OF SYSTEM TIME NULL", DataError, "NULL"),
    ("SELECT * FROM t AS OF SYSTEM TIME 'nan'", DataError, "out of range"),
    ("SELECT * FROM t AS OF SYSTEM TIME '-99999999 days'", DataError, "out of range"),
    ("SELECT * FROM t AS OF SYSTEM TIME true", DataError, "needs a timestamp"),
    ("SELECT * FROM t AS OF SYSTEM TIME (SELECT '-1s')", NotSupportedError, "subqueries"),
    ("SELECT * FROM t AS OF SYSTEM TIME", ProgrammingError, "needs a timestamp"),
    ("SELECT * FROM t AS OF SYSTEM TIME '-1s' AS OF SYSTEM TIME '-2s'", ProgrammingError, "syntax error"),
    ("SELECT * FROM (SELECT * FROM t AS OF SYSTEM TIME '-1s') s", NotSupportedError, "top-level"),
    ("INSERT INTO t SELECT k + 10 FROM t AS OF SYSTEM TIME '-1s'", NotSupportedError, "only allowed on SELECT"),
    ("UPDATE t SET k = 5 AS OF SYSTEM TIME '-1s'", NotSupportedError, "only allowed on SELECT"),
    ("DELETE FROM t AS OF SYSTEM TIME '-1s'", NotSupportedError, "only allowed on SELECT"),
    ("CREATE TABLE u AS SELECT * FROM t AS OF SYSTEM TIME '-1s'", NotSupportedError, "only allowed on SELECT"),
    ("SELECT nextval('s') AS OF SYSTEM TIME '-1s'", NotSupportedError, "read-only"),
])
def test_bad_uses_are_refused_and_change_nothing(sql, error, text):
    clock = Clock()
    conn = _connect("memory", None, clock, gc_ttl=100)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("CREATE SEQUENCE s")
    clock.now += 10
    conn.execute("INSERT INTO t VALUES (1)")
    clock.now += 10
    with pytest.raises(error, match=text):
        conn.execute(sql)
    assert _rows(conn, "SELECT k FROM t") == [(1,)]
    assert _rows(conn, "SELECT nextval('s')") == [(1,)]  # the refused nextval did not count


def test_inside_transactions():
    clock = Clock()
    conn = sqlkv.connect(":memory:", clock=clock)  # autocommit off, as PEP 249 has it
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.commit()
    clock.now += 5
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    clock.now += 5
    # first statement of a transaction: it runs alone, read-only, and leaves none open
    assert _rows(conn, "SELECT count(*) FROM t AS OF SYSTEM TIME '-7s'") == [(0,)]
    assert not conn.in_transaction
    conn.execute("INSERT INTO t VALUES (2)")
    with pytest.raises(ProgrammingError, match="inside a transaction that has already begun"):
        conn.execute("SELECT * FROM t AS OF SYSTEM TIME '-1s'")
    conn.commit()
    assert _rows(conn, "SELECT count(*) FROM t") == [(2,)]  # the refusal cost nothing
    conn.commit()
    clock.now += 5
    conn.execute("BEGIN AS OF SYSTEM TIME '-7s'")  # a read-only transaction in the past
    assert _rows(conn, "SELECT k FROM t ORDER BY k") == [(1,)]
    assert _rows(conn, "SELECT count(*) FROM t WHERE k > 0") == [(1,)]
    for sql in ("INSERT INTO t VALUES (3)", "DELETE FROM t", "CREATE TABLE u (a INT)"):
        with pytest.raises(ProgrammingError, match="in a transaction AS OF SYSTEM TIME"):
            conn.execute(sql)
    with pytest.raises(ProgrammingError, match="already begun"):
        conn.execute("SELECT * FROM t AS OF SYSTEM TIME '-1s'")
    conn.commit()
    assert _rows(conn, "SELECT k FROM t ORDER BY k") == [(1,), (2,)]
    conn.commit()
    conn.close()


def test_gc_ttl_zero_turns_time_travel_off():
    conn = sqlkv.connect(":memory:", autocommit=True, gc_ttl=0)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    with pytest.raises(NotSupportedError, match="gc_ttl=0"):
        conn.execute("SELECT * FROM t AS OF SYSTEM TIME '-1s'")
    with pytest.raises(ProgrammingError, match="gc_ttl must be"):
        sqlkv.connect(":memory:", gc_ttl=-5)


def test_window_passed_is_refused_and_compacted_away(tmp_path):
    clock = Clock()
    conn = _connect("lsm", tmp_path, clock, gc_ttl=60)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    conn.execute("INSERT INTO t VALUES (1, 'old')")
    clock.now += 10
    conn.execute("UPDATE t SET v = 'new' WHERE k = 1")
    clock.now += 5
    assert _rows(conn, "SELECT v FROM t AS OF SYSTEM TIME '-10s'") == [("old",)]
    clock.now += 100
    conn.execute("INSERT INTO t VALUES (2, 'later')")
    _engine(conn).compact()
    with pytest.raises(OperationalError, match="GC threshold"):
        conn.execute("SELECT v FROM t AS OF SYSTEM TIME '-110s'")
    assert _rows(conn, "SELECT v FROM t AS OF SYSTEM TIME '-50s' ORDER BY k") == [("new",)]
    conn.close()


CHILD = textwrap.dedent(
    """
    import sys, time
    import sqlkv
    conn = sqlkv.connect(sys.argv[1], autocommit=True, memtable_size=8192, l0_trigger=2)
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v TEXT)")
    i = 0
    while True:
        started = time.time()
        conn.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * (i % 300)))
        print(i, repr(started), repr(time.time()), flush=True)
        i += 1
    """
)


def test_kill_9_keeps_every_acknowledged_commit_at_its_time(tmp_path):
    path = str(tmp_path / "db")
    child = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
    acked = []
    try:
        for line in child.stdout:
            i, started, done = line.split()
            acked.append((int(i), float(started), float(done)))
            if len(acked) >= 150:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    conn = sqlkv.connect(path, autocommit=True)
    ids = {r[0] for r in _rows(conn, "SELECT id FROM t")}
    assert {i for i, _, _ in acked} <= ids
    for i, started, done in acked[::7]:
        seen = {r[0] for r in _rows(conn, "SELECT id FROM t AS OF SYSTEM TIME ?", (repr(int(done * 1e9)),))}
        assert i in seen  # acknowledged before this time
        before = {r[0] for r in _rows(conn, "SELECT id FROM t AS OF SYSTEM TIME ?", (repr(int(started * 1e9)),))}
        assert i not in before and before == set(range(i))  # nothing committed after the time
    conn.close()


def _table_bytes(path) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if n.endswith(".sst"))


def test_a_dropped_table_stays_readable_in_the_window_then_its_space_is_reclaimed(tmp_path):
    clock = Clock()
    conn = _connect("lsm", tmp_path, clock, gc_ttl=60)
    conn.execute("CREATE TABLE big (k INT PRIMARY KEY, pad TEXT)")
    conn.executemany("INSERT INTO big VALUES (?, ?)", [(i, "p" * 100) for i in range(2000)])
    clock.now += 1
    conn.execute("DROP TABLE big")
    clock.now += 1
    _engine(conn).compact()
    kept = _table_bytes(tmp_path / "db")
    assert kept > 200_000
    assert _rows(conn, "SELECT count(*), sum(length(pad)) FROM big AS OF SYSTEM TIME '-1.5s'") == [(2000, 200_000)]
    clock.now += 100  # the window passes the drop
    conn.execute("CREATE TABLE small (k INT PRIMARY KEY)")
    _engine(conn).compact()
    assert _table_bytes(tmp_path / "db") * 20 < kept
    with pytest.raises(OperationalError, match="GC threshold"):
        conn.execute("SELECT count(*) FROM big AS OF SYSTEM TIME '-101.5s'")
    conn.close()


def test_timeline_table_lists_each_commit_and_its_time_reads_it():
    clock = Clock()
    conn = _connect("memory", None, clock)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    for i in range(5):
        clock.now += 0.25
        conn.execute("INSERT INTO t VALUES (?)", (i,))
    clock.now += 1
    samples = _rows(conn, "SELECT commit_time, seq FROM sqlkv_internal.timeline ORDER BY seq")
    assert len(samples) == 6 and [s for _, s in samples] == sorted({s for _, s in samples})
    assert samples[1][0] == dt.datetime.fromtimestamp(START + 0.25)
    for n, (commit_time, _) in enumerate(samples):
        assert _rows(conn, "SELECT count(*) FROM t AS OF SYSTEM TIME ?", (commit_time,)) == [(n,)]
        before = commit_time - dt.timedelta(microseconds=1)
        if n:
            assert _rows(conn, "SELECT count(*) FROM t AS OF SYSTEM TIME ?", (before,)) == [(n - 1,)]
    conn.close()
