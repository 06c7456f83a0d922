"""Sequences (CREATE/DROP SEQUENCE, nextval/currval/lastval/setval) and identity columns.

Expectations are PostgreSQL's (SQLite has neither): START/INCREMENT/MINVALUE/MAXVALUE/CYCLE,
currval per session, counters that do not roll back, GENERATED ALWAYS refusing given values.
The counter is advanced by committed compare-and-swap transactions: threads never get the
same value, and a process killed with SIGKILL never hands out a value twice after reopening.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from sqlkv.errors import (
    DataError,
    DependentObjectsStillExist,
    GeneratedAlways,
    NotSupportedError,
    ObjectNotInPrerequisiteState,
    ProgrammingError,
    UndefinedTable,
)
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import open_db, rows

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def s():
    db = Database.open(":memory:")
    yield Session(db)
    db.close()


def one(s: Session, sql: str):
    return rows(s, sql)[0][0]


def test_start_increment_bounds_and_cycle(s):
    s.execute("CREATE SEQUENCE s START 5 INCREMENT BY 2 MAXVALUE 9")
    assert [one(s, "SELECT nextval('s')") for _ in range(3)] == [5, 7, 9]
    with pytest.raises(DataError, match='reached maximum value of sequence "s" \\(9\\)'):
        rows(s, "SELECT nextval('s')")
    s.execute("CREATE SEQUENCE c MINVALUE 1 MAXVALUE 3 CYCLE")
    assert rows(s, "SELECT nextval('c'), nextval('c'), nextval('c'), nextval('c')") == [(1, 2, 3, 1)]
    s.execute("CREATE SEQUENCE d INCREMENT -10 MINVALUE -25")
    assert [one(s, "SELECT nextval('d')") for _ in range(3)] == [-1, -11, -21]
    with pytest.raises(DataError, match="minimum value"):
        rows(s, "SELECT nextval('d')")
    s.execute("CREATE SEQUENCE n NO CYCLE MAXVALUE 2")  # sqlglot alone reads NO CYCLE as CYCLE
    assert [one(s, "SELECT nextval('n')") for _ in range(2)] == [1, 2]
    with pytest.raises(DataError, match="maximum value"):
        rows(s, "SELECT nextval('n')")
    s.execute("CREATE SEQUENCE m NO MINVALUE NO MAXVALUE NO CYCLE")
    assert one(s, "SELECT nextval('m')") == 1
    s.execute("CREATE SEQUENCE IF NOT EXISTS d")
    assert rows(s, "SELECT table_type FROM information_schema.tables WHERE table_name = 'd'") == [("SEQUENCE",)]


def test_currval_lastval_setval(s):
    s.execute("CREATE SEQUENCE s")
    with pytest.raises(ObjectNotInPrerequisiteState, match="not yet defined in this session"):
        rows(s, "SELECT currval('s')")
    assert one(s, "SELECT nextval('s')") == 1
    assert rows(s, "SELECT currval('s'), lastval()") == [(1, 1)]
    assert one(s, "SELECT setval('s', 41)") == 41
    assert one(s, "SELECT nextval('s')") == 42
    rows(s, "SELECT setval('s', 7, false)")
    assert one(s, "SELECT nextval('s')") == 7
    other = Session(s.db)
    with pytest.raises(ObjectNotInPrerequisiteState):  # currval is per session
        rows(other, "SELECT currval('s')")
    assert one(other, "SELECT nextval('s')") == 8
    assert one(s, "SELECT currval('s')") == 7
    with pytest.raises(DataError, match="out of bounds"):
        rows(s, "SELECT setval('s', 0)")


def test_setval_and_nextval_act_without_fetching():
    import sqlkv

    conn = sqlkv.connect(":memory:")
    cur = conn.cursor()
    cur.execute("CREATE SEQUENCE s")
    cur.execute("SELECT setval('s', 100)")  # never fetched, as clients often do
    cur.execute("SELECT nextval('s')")  # never fetched either: the value is used up
    cur.execute("SELECT nextval('s')")
    assert cur.fetchall() == [(102,)]
    conn.close()


def test_counter_does_not_roll_back(s):
    s.execute("CREATE SEQUENCE s")
    s.execute("BEGIN")
    assert one(s, "SELECT nextval('s')") == 1
    s.execute("ROLLBACK")
    assert one(s, "SELECT nextval('s')") == 2  # as in PostgreSQL: a gap, never a reuse


def test_option_and_name_errors(s):
    s.execute("CREATE TABLE t (a INT)")
    for sql, cls, match in [
        ("CREATE SEQUENCE x INCREMENT 0", ProgrammingError, "must not be zero"),
        ("CREATE SEQUENCE x MINVALUE 5 MAXVALUE 5", ProgrammingError, "less than MAXVALUE"),
        ("CREATE SEQUENCE x START 0", ProgrammingError, "between MINVALUE"),
        ("CREATE SEQUENCE x CACHE 10", NotSupportedError, "CACHE"),
        ("CREATE SEQUENCE x AS smallint", NotSupportedError, "AS type"),
        ("CREATE SEQUENCE x OWNED BY t.a", NotSupportedError, "OWNED"),
        ("CREATE SEQUENCE t", ProgrammingError, 'relation "t" already exists'),
        ("SELECT nextval('nope')", UndefinedTable, 'sequence "nope" does not exist'),
        ("SELECT nextval('t')", UndefinedTable, 'sequence "t" does not exist'),
        ("DROP SEQUENCE nope", UndefinedTable, "does not exist"),
    ]:
        with pytest.raises(cls, match=match):
            rows(s, sql)
    s.execute("DROP SEQUENCE IF EXISTS nope")
    s.execute("CREATE SEQUENCE x")
    with pytest.raises(ProgrammingError, match="is a sequence, not a table"):
        rows(s, "SELECT * FROM x")
    s.execute("DROP SEQUENCE x")
    s.execute("CREATE SEQUENCE x START 3")  # a new sequence of that name starts afresh
    assert one(s, "SELECT nextval('x')") == 3


def test_identity_columns(s):
    s.execute("CREATE TABLE t (id INT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10) PRIMARY KEY, v TEXT)")
    s.execute("INSERT INTO t (v) VALUES ('a'), ('b')")
    s.execute("INSERT INTO t VALUES (DEFAULT, 'c')")
    with pytest.raises(GeneratedAlways, match='cannot insert a non-DEFAULT value into column "id"') as e:
        s.execute("INSERT INTO t VALUES (1, 'x')")
    assert e.value.sqlstate == "428C9"
    with pytest.raises(GeneratedAlways):
        s.execute("INSERT INTO t (id, v) SELECT 5, 'y'")
    with pytest.raises(GeneratedAlways, match="can only be updated to DEFAULT"):
        s.execute("UPDATE t SET id = 5")
    assert rows(s, "SELECT * FROM t ORDER BY id") == [(100, "a"), (110, "b"), (120, "c")]
    s.execute("CREATE TABLE u (id INT GENERATED BY DEFAULT AS IDENTITY, v TEXT)")
    s.execute("INSERT INTO u (v) VALUES ('a')")
    s.execute("INSERT INTO u VALUES (50, 'b')")  # BY DEFAULT takes a given value
    s.execute("INSERT INTO u (v) VALUES ('c')")
    assert rows(s, "SELECT * FROM u ORDER BY v") == [(1, "a"), (50, "b"), (2, "c")]
    assert rows(s, "SELECT is_nullable, is_identity, identity_generation, column_default FROM information_schema.columns "
                   "WHERE table_name = 'u' AND column_name = 'id'") == [("NO", "YES", "BY DEFAULT", None)]
    with pytest.raises(DependentObjectsStillExist, match='column "id" of table "u" requires it'):
        s.execute("DROP SEQUENCE u_id_seq")
    s.execute("DROP TABLE u")
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'u_id_seq'") == [(0,)]
    with pytest.raises(ProgrammingError, match="integer type"):
        s.execute("CREATE TABLE w (id TEXT GENERATED ALWAYS AS IDENTITY)")
    with pytest.raises(NotSupportedError, match="ADD COLUMN"):
        s.execute("ALTER TABLE t ADD COLUMN n INT GENERATED ALWAYS AS IDENTITY")
    s.execute("TRUNCATE t")  # RESTART IDENTITY, as TRUNCATE restarts every auto-assigned key
    s.execute("INSERT INTO t (v) VALUES ('again')")
    assert rows(s, "SELECT * FROM t") == [(100, "again")]
    s.execute("ALTER TABLE t DROP COLUMN v")
    s.execute("CREATE TABLE z (k INT PRIMARY KEY, n INT GENERATED BY DEFAULT AS IDENTITY)")
    s.execute("ALTER TABLE z DROP COLUMN n")  # the column's sequence goes with it
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'z_n_seq'") == [(0,)]


def test_threads_never_share_a_value(tmp_path):
    db = open_db("lsm", tmp_path)
    Session(db).execute("CREATE SEQUENCE s")
    got: list[list[int]] = [[], [], []]

    def take(out: list[int]) -> None:
        sess = Session(db)
        for _ in range(150):
            out.append(rows(sess, "SELECT nextval('s')")[0][0])

    threads = [threading.Thread(target=take, args=(out,)) for out in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = sorted(v for out in got for v in out)
    assert values == list(range(1, 451))  # each value once, none skipped without a crash
    db.close()


def test_values_survive_reopen_and_sigkill(tmp_path):
    path = str(tmp_path / "db")
    db = Database.open(path)
    Session(db).execute("CREATE SEQUENCE s INCREMENT 3")
    db.close()
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {REPO!r})
        from sqlkv.sql.session import Database, Session
        s = Session(Database.open({path!r}))
        while True:
            print(list(s.execute("SELECT nextval('s')"))[0][0], flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    seen = []
    try:
        while len(seen) < 200:
            line = proc.stdout.readline()
            assert line, "the writer died before the kill"
            seen.append(int(line))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert len(set(seen)) == len(seen)
    db = Database.open(path)
    after = rows(Session(db), "SELECT nextval('s')")[0][0]
    assert after > max(seen) and (after - 1) % 3 == 0  # printed values are committed; never reused
    db.close()
