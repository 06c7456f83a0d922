"""The fast path of cached one-index-read SELECTs (sql/fastread.py, sql/exec/fastpath.py).

The second execution of ``SELECT ... WHERE pk = ?`` (or an equality on an index) skips the
streaming machinery; every answer is compared with sqlite3 running the same statements, in
autocommit mode and inside transactions, and the session state it leaves (transaction, plan,
statement figures, read set) is checked against what the normal path does."""

from __future__ import annotations

import random
import sqlite3

import pytest

import sqlkv
from sqlkv.errors import ProgrammingError, SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.sql.exec.fastpath import MAX_READY_ROWS

SCHEMA = [
    "CREATE TABLE o (id INT PRIMARY KEY, cust INT, sku TEXT, amount INT, note TEXT)",
    "CREATE INDEX o_cust ON o (cust)",
    "CREATE UNIQUE INDEX o_sku ON o (sku)",
    "CREATE TABLE named (name TEXT PRIMARY KEY, v INT)",
]
ROWS = 600

QUERIES = [
    ("SELECT id, cust, sku, amount, note FROM o WHERE id = ?", lambda r: (r.randrange(-5, ROWS + 5),)),
    ("SELECT * FROM o WHERE id = ?", lambda r: (r.randrange(ROWS),)),
    ("SELECT note, id FROM o WHERE id = ?", lambda r: (r.randrange(ROWS),)),
    ("SELECT amount FROM o WHERE id = ?", lambda r: (r.randrange(ROWS),)),
    ("SELECT id, amount FROM o WHERE sku = ?", lambda r: (f"s{r.randrange(ROWS + 50):04d}",)),
    ("SELECT id, amount FROM o WHERE cust = ?", lambda r: (r.randrange(-1, 25),)),
    ("SELECT v FROM named WHERE name = ?", lambda r: (f"n{r.randrange(40)}",)),
    ("SELECT * FROM o WHERE id = 17", lambda r: ()),
    ("SELECT * FROM o WHERE id = -3", lambda r: ()),
]


@pytest.fixture
def pair():
    db = Database.open()
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    rng = random.Random(3)
    rows = [(i, rng.randrange(20), f"s{i:04d}", rng.randrange(-50, 1000), None if i % 7 == 0 else f"n{i}")
            for i in range(ROWS)]
    s.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
    named = [(f"n{i}", i * 3) for i in range(30)]
    s.executemany("INSERT INTO named VALUES (?, ?)", named)
    lite.executemany("INSERT INTO named VALUES (?, ?)", named)
    yield s, lite
    s.close()
    db.close()


def _same(s: Session, lite, sql: str, params: tuple) -> None:
    got = s.execute(sql, params).fetchall()
    want = lite.execute(sql, params).fetchall()
    assert sorted(got, key=repr) == sorted(want, key=repr), (sql, params)


@pytest.mark.parametrize("autocommit", [True, False])
def test_repeated_index_reads_match_sqlite(pair, autocommit) -> None:
    s, lite = pair
    s.autocommit = autocommit
    rng = random.Random(11)
    for sql, args in QUERIES:
        for _ in range(25):
            _same(s, lite, sql, args(rng))
        assert s.plans.get(sql).read is not None  # the cached plan has the fast path
    if autocommit:
        assert not s.in_transaction  # every read committed its own transaction
    else:
        s.commit()


def test_first_and_second_executions_are_ready(pair) -> None:
    s, _ = pair
    sql = "SELECT sku FROM o WHERE id = ?"
    first = s.execute(sql, (5,))
    assert first.ready == [("s0005",)] and not first.streaming  # planned in the fast read's transaction
    assert list(first) == [("s0005",)]
    second = s.execute(sql, (6,))
    assert second.ready == [("s0006",)] and not second.streaming
    assert list(second) == [("s0006",)] and list(second) == []  # handed out once


def _outcomes(s: Session, statements: list[tuple[str, tuple]]) -> list:
    """Each statement run twice (the second run from the cached plan): rows, or the error."""
    out = []
    for sql, params in statements:
        for _ in range(2):
            try:
                out.append(s.execute(sql, params).fetchall())  # in the order given
            except Exception as exc:  # noqa: BLE001 - the error itself is the outcome compared
                out.append((type(exc).__name__, str(exc)))
    return out


def test_values_of_other_types_and_null_as_the_normal_path(pair, monkeypatch) -> None:
    s, _ = pair
    statements = [(sql, (value,))
                  for sql in ("SELECT id FROM o WHERE id = ?", "SELECT id FROM o WHERE sku = ?",
                              "SELECT id FROM o WHERE cust = ?", "SELECT v FROM named WHERE name = ?")
                  for value in (3, 3.0, 3.5, -0.0, None, "s0003", "n1", "7", "x", True, b"\x01", 2**70)]
    fast = _outcomes(s, statements)
    monkeypatch.setattr("sqlkv.sql.plancache.compile_index_read", lambda plan: None)
    s.forget_plans()
    assert _outcomes(s, statements) == fast
    assert all(s.plans.get(sql).read is None for sql, _ in statements)


def test_long_equality_results_stream_instead(pair) -> None:
    s, lite = pair
    s.execute("CREATE TABLE many (id INT PRIMARY KEY, g INT)")
    lite.execute("CREATE TABLE many (id INT PRIMARY KEY, g INT)")
    s.execute("CREATE INDEX many_g ON many (g)")
    rows = [(i, i % 2) for i in range(2 * MAX_READY_ROWS + 40)]
    s.executemany("INSERT INTO many VALUES (?, ?)", rows)
    lite.executemany("INSERT INTO many VALUES (?, ?)", rows)
    sql = "SELECT id FROM many WHERE g = ?"
    s.execute(sql, (1,)).fetchall()
    result = s.execute(sql, (1,))
    assert result.ready is None  # more rows than the fast path holds: they stream
    assert sorted(result.fetchall()) == sorted(lite.execute(sql, (1,)).fetchall())
    assert s.execute(sql, (2,)).ready == []


def test_reads_see_own_writes_and_rollback(pair) -> None:
    s, _ = pair
    sql = "SELECT amount FROM o WHERE id = ?"
    s.execute(sql, (1,)).fetchall()
    s.execute("BEGIN")
    s.execute("UPDATE o SET amount = 12345 WHERE id = 1")
    s.execute("INSERT INTO o VALUES (9999, 1, 'new', 5, NULL)")
    assert s.execute(sql, (1,)).fetchall() == [(12345,)]
    assert s.execute(sql, (9999,)).fetchall() == [(5,)]
    s.execute("ROLLBACK")
    assert s.execute(sql, (9999,)).fetchall() == []
    assert s.execute(sql, (1,)).fetchall() != [(12345,)]


def test_reads_join_the_read_set(pair) -> None:
    s, _ = pair
    other = Session(s.db)
    sql = "SELECT amount FROM o WHERE id = ?"
    s.execute(sql, (2,)).fetchall()
    s.execute("BEGIN")
    (amount,) = s.execute(sql, (2,)).fetchall()[0]
    other.execute("UPDATE o SET amount = amount + 1 WHERE id = 2")  # commits (autocommit)
    s.execute("UPDATE o SET amount = ? WHERE id = 3", (amount,))
    with pytest.raises(SerializationFailure):
        s.execute("COMMIT")


def test_schema_change_replans(pair) -> None:
    s, _ = pair
    sql = "SELECT * FROM named WHERE name = ?"
    assert s.execute(sql, ("n1",)).fetchall() == [("n1", 3)]
    assert s.execute(sql, ("n1",)).ready == [("n1", 3)]
    other = Session(s.db)
    other.execute("ALTER TABLE named ADD COLUMN extra INT DEFAULT 7")
    assert s.execute(sql, ("n1",)).fetchall() == [("n1", 3, 7)]
    assert s.execute(sql, ("n1",)).fetchall() == [("n1", 3, 7)]
    other.execute("DROP TABLE named")
    with pytest.raises(ProgrammingError, match="named"):
        s.execute(sql, ("n1",))


def test_statement_figures_and_errors(pair) -> None:
    s, _ = pair
    sql = "SELECT note FROM o WHERE id = ?"
    for i in range(10):
        s.execute(sql, (i if i < 8 else ROWS + i,)).fetchall()
    with pytest.raises(ProgrammingError, match="parameter"):
        s.execute(sql, (1, 2))
    count, errors, rows, gets = s.execute(
        "SELECT count, errors, rows, kv_gets FROM sqlkv_internal.statement_stats WHERE statement = ?",
        (sql,)).fetchall()[0]
    assert (count, errors, rows, gets) == (11, 1, 8, 10)
    assert not s.in_transaction


def test_explain_analyze_still_counts_the_get(pair) -> None:
    s, _ = pair
    sql = "SELECT sku FROM o WHERE id = ?"
    s.execute(sql, (4,)).fetchall()
    s.execute(sql, (4,)).fetchall()
    lines = [r[0] for r in s.execute("EXPLAIN ANALYZE " + sql, (4,)).fetchall()]
    assert any(line.strip().startswith("get o@o_pkey") and "kv_gets=1 " in line for line in lines), lines


def test_driver_cursor_takes_ready_rows() -> None:
    conn = sqlkv.connect(":memory:")
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    cur.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(5)])
    for i in range(5):
        cur.execute("SELECT v, id FROM t WHERE id = ?", (i,))
        assert cur.description[0][0] == "v"
        assert cur.fetchone() == (f"v{i}", i) and cur.fetchone() is None
    other = conn.cursor()
    cur.execute("SELECT v FROM t WHERE id = ?", (1,))
    other.execute("SELECT v FROM t WHERE id = ?", (2,))  # another cursor: the first keeps its row
    assert cur.fetchall() == [("v1",)] and other.fetchall() == [("v2",)]
    conn.close()


def test_timestamptz_rows_in_the_session_zone_as_the_normal_path(monkeypatch) -> None:
    s = Session(Database.open())
    s.execute("CREATE TABLE ev (id INT PRIMARY KEY, at TIMESTAMPTZ)")
    s.execute("INSERT INTO ev VALUES (1, '2024-03-01 12:00:00+00'), (2, '2024-07-01 23:30:00+00')")
    statements = [("SELECT at, id FROM ev WHERE id = ?", (i,)) for i in (1, 2, 3)]
    fast = []
    for zone in ("UTC", "Europe/Paris", "America/New_York"):
        s.execute(f"SET TIME ZONE '{zone}'")
        fast += _outcomes(s, statements)
    monkeypatch.setattr("sqlkv.sql.plancache.compile_index_read", lambda plan: None)
    slow = []
    for zone in ("UTC", "Europe/Paris", "America/New_York"):
        s.execute(f"SET TIME ZONE '{zone}'")
        slow += _outcomes(s, statements)
    assert fast == slow
    assert fast[1][0][0].utcoffset() is not None and fast[1][0][0].hour == 12
    assert fast[7][0][0].hour == 13  # 12:00 UTC in Paris


RANGE_STATEMENTS = [
    ("SELECT id, amount FROM o WHERE id BETWEEN ? AND ?", (10, 40)),
    ("SELECT id, amount FROM o WHERE id BETWEEN ? AND ?", (40, 10)),  # empty
    ("SELECT id, amount FROM o WHERE id BETWEEN ? AND ?", (None, 10)),
    ("SELECT id, amount FROM o WHERE id BETWEEN ? AND ?", (2.5, 7.5)),
    ("SELECT id, amount FROM o WHERE id BETWEEN ? AND ?", (0, ROWS)),  # more than the fast path holds
    ("SELECT id FROM o WHERE id > ?", (ROWS - 20,)),
    ("SELECT id FROM o WHERE id < ?", (5,)),
    ("SELECT * FROM o WHERE id IN (?, ?, ?, ?)", (7, 3, 7, ROWS + 9)),
    ("SELECT * FROM o WHERE id IN (?, ?)", (None, 4)),
    ("SELECT id, cust FROM o WHERE cust BETWEEN ? AND ?", (3, 4)),
    ("SELECT id FROM o WHERE sku >= ? AND sku < ?", ("s0100", "s0110")),
    ("SELECT name, v FROM named WHERE name > ?", ("n25",)),
    ("SELECT k, v FROM d WHERE k BETWEEN ? AND ?", (3, 9)),
    ("SELECT k, v FROM d WHERE k IN (?, ?, ?)", (8, 2, 5)),
]


def test_ranges_and_in_lists_as_the_normal_path(pair, monkeypatch) -> None:
    s, lite = pair
    s.execute("CREATE TABLE d (k INT, v TEXT, PRIMARY KEY (k DESC))")
    s.executemany("INSERT INTO d VALUES (?, ?)", [(i, f"d{i}") for i in range(12)])
    fast = _outcomes(s, RANGE_STATEMENTS)
    assert all(s.plans.get(sql).read is not None for sql, _ in RANGE_STATEMENTS)
    monkeypatch.setattr("sqlkv.sql.plancache.compile_index_read", lambda plan: None)
    s.forget_plans()
    assert _outcomes(s, RANGE_STATEMENTS) == fast
    for sql, params in RANGE_STATEMENTS[:12]:  # and sqlite3 agrees (the tables it has)
        assert sorted(s.execute(sql, params).fetchall(), key=repr) == \
            sorted(lite.execute(sql, params).fetchall(), key=repr), (sql, params)


@pytest.mark.parametrize("sql, params, other", [
    ("SELECT id FROM o WHERE id BETWEEN ? AND ?", (100, 120), "INSERT INTO o VALUES (100000, 1, 'x', 1, NULL)"),
    ("SELECT id FROM o WHERE id BETWEEN ? AND ?", (100, 120), "DELETE FROM o WHERE id = 110"),
    ("SELECT id FROM o WHERE cust = ?", (3,), "INSERT INTO o VALUES (100001, 3, 'y', 1, NULL)"),
    ("SELECT * FROM o WHERE id IN (?, ?)", (5, 100002), "INSERT INTO o VALUES (100002, 1, 'z', 1, NULL)"),
])
def test_fast_reads_guard_against_phantoms(pair, sql, params, other) -> None:
    s, _ = pair
    if "100000" in other:  # a key inside the range read, not yet there
        other = other.replace("100000", "115")
        s.execute("DELETE FROM o WHERE id = 115")
    s.execute(sql, params).fetchall()
    s.execute("BEGIN")
    assert s.execute(sql, params).ready is not None  # read through the fast path
    Session(s.db).execute(other)  # commits a write the read depended on
    s.execute("UPDATE o SET amount = 0 WHERE id = 1")
    with pytest.raises(SerializationFailure):
        s.execute("COMMIT")


LIMIT_STATEMENTS = [
    ("SELECT id, sku FROM o ORDER BY sku LIMIT 5", ()),
    ("SELECT id, sku FROM o ORDER BY sku DESC LIMIT 5 OFFSET 2", ()),
    ("SELECT id FROM o ORDER BY id DESC LIMIT 3", ()),
    ("SELECT id FROM o ORDER BY id LIMIT 0", ()),
    ("SELECT id FROM o ORDER BY id LIMIT ?", (4,)),
    ("SELECT id FROM o ORDER BY id LIMIT ? OFFSET ?", (4, ROWS - 2)),
    ("SELECT id FROM o WHERE cust = ? LIMIT 2", (3,)),
    ("SELECT id FROM o WHERE cust = ? LIMIT 2 OFFSET 1", (3,)),
    ("SELECT id FROM o WHERE id BETWEEN ? AND ? LIMIT 300", (0, ROWS)),
    ("SELECT id FROM o WHERE cust = ? LIMIT (SELECT count(*) FROM named) - 27", (3,)),
]


def test_order_by_limit_on_an_index_as_the_normal_path(pair, monkeypatch) -> None:
    s, lite = pair
    fast = _outcomes(s, LIMIT_STATEMENTS)
    for i in (0, 2, 3):  # ORDER BY k LIMIT n: the fast path (with an OFFSET the scan is not limited)
        assert s.plans.get(LIMIT_STATEMENTS[i][0]).read is not None, LIMIT_STATEMENTS[i]
    assert s.plans.get(LIMIT_STATEMENTS[-1][0]).read is None  # a LIMIT computed by a query: not here
    monkeypatch.setattr("sqlkv.sql.plancache.compile_index_read", lambda plan: None)
    s.forget_plans()
    assert _outcomes(s, LIMIT_STATEMENTS) == fast
    for sql, params in LIMIT_STATEMENTS[:6]:
        assert s.execute(sql, params).fetchall() == lite.execute(sql, params).fetchall(), sql
