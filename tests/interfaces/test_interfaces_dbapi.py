"""The PEP 249 surface of ``sqlkv.connect``, checked against sqlite3's driver where it has one."""

from __future__ import annotations

import datetime
import sqlite3
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlkv
from sqlkv import errors


@pytest.fixture
def conn():
    c = sqlkv.connect(":memory:")
    yield c
    c.close()


def _pair(schema: str) -> tuple[sqlkv.Connection, sqlite3.Connection]:
    mine = sqlkv.connect(":memory:", autocommit=True)
    oracle = sqlite3.connect(":memory:", isolation_level=None)
    mine.execute(schema)
    oracle.execute(schema)
    return mine, oracle


# -- module globals and exceptions ----------------------------------------------------------


def test_module_globals_follow_pep_249() -> None:
    assert sqlkv.apilevel == "2.0"
    assert sqlkv.threadsafety in (0, 1, 2, 3)
    assert sqlkv.paramstyle in ("qmark", "numeric", "named", "format", "pyformat")


def test_exception_hierarchy_is_pep_249s() -> None:
    assert issubclass(sqlkv.Warning, Exception)
    assert issubclass(sqlkv.Error, Exception)
    assert issubclass(sqlkv.InterfaceError, sqlkv.Error)
    assert issubclass(sqlkv.DatabaseError, sqlkv.Error)
    for cls in (sqlkv.DataError, sqlkv.OperationalError, sqlkv.IntegrityError,
                sqlkv.InternalError, sqlkv.ProgrammingError, sqlkv.NotSupportedError):
        assert issubclass(cls, sqlkv.DatabaseError)
    assert sqlkv.Error is errors.Error


def test_exceptions_are_connection_attributes(conn: sqlkv.Connection) -> None:
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError",
                 "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
                 "NotSupportedError"):
        assert getattr(conn, name) is getattr(sqlkv, name)


# -- results compared with sqlite3 ------------------------------------------------------------


ROWS = st.lists(
    st.tuples(st.integers(-1000, 1000), st.text(max_size=8), st.one_of(st.none(), st.integers(-50, 50))),
    max_size=25,
    unique_by=lambda r: r[0],
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, low=st.integers(-1000, 1000))
def test_results_and_rowcounts_match_sqlite3(rows: list[tuple], low: int) -> None:
    mine, oracle = _pair("CREATE TABLE t (k INTEGER PRIMARY KEY, s TEXT, n INTEGER)")
    try:
        cur = mine.cursor()
        cur.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        ocur = oracle.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        assert cur.rowcount == ocur.rowcount == len(rows)
        queries = [
            ("SELECT k, s, n FROM t WHERE k >= ? ORDER BY k", (low,)),
            ("SELECT n, COUNT(*) FROM t GROUP BY n ORDER BY n", ()),
            ("SELECT k FROM t WHERE n IS NULL ORDER BY k DESC", ()),
            ("SELECT s FROM t WHERE k = :k", {"k": low}),
        ]
        for sql, params in queries:
            assert cur.execute(sql, params).fetchall() == oracle.execute(sql, params).fetchall(), sql
        cur.execute("UPDATE t SET n = 0 WHERE k < ?", (low,))
        assert cur.rowcount == oracle.execute("UPDATE t SET n = 0 WHERE k < ?", (low,)).rowcount
        cur.execute("DELETE FROM t WHERE n = 0")
        assert cur.rowcount == oracle.execute("DELETE FROM t WHERE n = 0").rowcount
        assert (cur.execute("SELECT * FROM t ORDER BY k").fetchall()
                == oracle.execute("SELECT * FROM t ORDER BY k").fetchall())
    finally:
        mine.close()
        oracle.close()


def test_fetch_methods_walk_one_result(conn: sqlkv.Connection) -> None:
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    cur.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    cur.execute("SELECT k FROM t ORDER BY k")
    assert cur.arraysize == 1
    assert cur.fetchone() == (0,)
    assert cur.fetchmany() == [(1,)]
    assert cur.fetchmany(3) == [(2,), (3,), (4,)]
    cur.arraysize = 2
    assert cur.fetchmany() == [(5,), (6,)]
    assert next(iter(cur)) == (7,)
    assert cur.fetchall() == [(8,), (9,)]
    assert cur.fetchone() is None
    assert cur.fetchmany(5) == []
    assert cur.fetchall() == []
    assert [r for r in cur.execute("SELECT k FROM t WHERE k < 3 ORDER BY k")] == [(0,), (1,), (2,)]


def test_two_cursors_keep_their_own_results(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, str(i)) for i in range(5)])
    a = conn.execute("SELECT k FROM t ORDER BY k")
    b = conn.execute("SELECT v FROM t ORDER BY k DESC")
    assert a.fetchone() == (0,)
    assert b.fetchone() == ("4",)
    assert a.fetchall() == [(1,), (2,), (3,), (4,)]


# -- description, type objects, constructors ---------------------------------------------------


def test_description_has_seven_items_and_comparable_type_codes(conn: sqlkv.Connection) -> None:
    conn.execute(
        "CREATE TABLE t (i INT PRIMARY KEY, f FLOAT, d DECIMAL(8,2), s VARCHAR(20), b BYTES,"
        " day DATE, ts TIMESTAMP, flag BOOL)"
    )
    cur = conn.execute("SELECT * FROM t")
    assert [d[0] for d in cur.description] == ["i", "f", "d", "s", "b", "day", "ts", "flag"]
    assert all(len(d) == 7 for d in cur.description)
    codes = [d[1] for d in cur.description]
    assert codes[0] == sqlkv.NUMBER and codes[1] == sqlkv.NUMBER and codes[2] == sqlkv.NUMBER
    assert codes[3] == sqlkv.STRING and codes[3] != sqlkv.NUMBER
    assert codes[4] == sqlkv.BINARY
    assert codes[5] == sqlkv.DATETIME and codes[6] == sqlkv.DATETIME
    assert cur.description[3][3] == 20  # internal_size: VARCHAR width
    assert cur.description[2][4:6] == (8, 2)  # precision, scale
    assert sqlkv.STRING != sqlkv.NUMBER


def test_statements_without_rows_have_no_description(conn: sqlkv.Connection) -> None:
    cur = conn.cursor()
    assert cur.description is None and cur.rowcount == -1
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    assert cur.description is None
    cur.execute("INSERT INTO t VALUES (1), (2)")
    assert cur.description is None and cur.rowcount == 2
    cur.execute("SELECT k FROM t")
    assert cur.description is not None


def test_constructors_round_trip_through_a_table(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, day DATE, ts TIMESTAMP, raw BYTES, note TEXT)")
    ticks = 1_700_000_000
    values = (1, sqlkv.Date(2024, 2, 29), sqlkv.Timestamp(2024, 2, 29, 13, 45, 7, 250),
              sqlkv.Binary(b"\x00\xffabc"), "x")
    conn.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", values)
    conn.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", (2, sqlkv.DateFromTicks(ticks),
                 sqlkv.TimestampFromTicks(ticks), sqlkv.Binary(bytearray(b"z")), None))
    rows = conn.execute("SELECT * FROM t ORDER BY k").fetchall()
    assert rows[0] == values
    local = time.localtime(ticks)
    assert rows[1][1] == datetime.date(*local[:3])
    assert rows[1][2] == datetime.datetime(*local[:6])
    assert rows[1][3] == b"z"
    assert sqlkv.TimeFromTicks(ticks) == datetime.time(*local[3:6])
    assert sqlkv.Time(1, 2, 3) == datetime.time(1, 2, 3)


def test_decimal_and_bool_parameters(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, price DECIMAL(10,2), ok BOOL)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?)", (1, Decimal("12.30"), True))
    assert conn.execute("SELECT price, ok FROM t").fetchone() == (Decimal("12.30"), True)


def test_lastrowid_matches_sqlite3() -> None:
    mine, oracle = _pair("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    try:
        for value in ("a", "b"):
            cur = mine.execute("INSERT INTO t (v) VALUES (?)", (value,))
            ocur = oracle.execute("INSERT INTO t (v) VALUES (?)", (value,))
            assert cur.lastrowid == ocur.lastrowid
        assert mine.execute("SELECT id FROM t WHERE v = 'b'").fetchone() == (cur.lastrowid,)
    finally:
        mine.close()
        oracle.close()


# -- transactions --------------------------------------------------------------------------


def test_commit_makes_writes_visible_to_other_connections(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    writer = sqlkv.connect(path)
    writer.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    writer.commit()
    writer.execute("INSERT INTO t VALUES (1)")
    assert writer.in_transaction
    reader = sqlkv.connect(path, autocommit=True)
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)
    writer.commit()
    assert not writer.in_transaction
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)
    reader.close()
    writer.close()


def test_rollback_discards_and_close_rolls_back(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.execute("INSERT INTO t VALUES (2)")
    conn.rollback()
    assert conn.execute("SELECT k FROM t").fetchall() == [(1,)]
    conn.execute("INSERT INTO t VALUES (3)")
    conn.close()  # uncommitted: PEP 249 says rolled back
    again = sqlkv.connect(path)
    assert again.execute("SELECT k FROM t ORDER BY k").fetchall() == [(1,)]
    again.close()


def test_context_manager_commits_or_rolls_back(conn: sqlkv.Connection) -> None:
    with conn:
        conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    with pytest.raises(sqlkv.IntegrityError):
        with conn:
            conn.execute("INSERT INTO t VALUES (2)")
            conn.execute("INSERT INTO t VALUES (1)")
    assert conn.execute("SELECT k FROM t").fetchall() == [(1,)]
    assert not conn.closed


def test_autocommit_is_settable(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path, autocommit=True)
    assert conn.autocommit is True
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    conn.autocommit = False
    conn.execute("INSERT INTO t VALUES (2)")
    assert conn.in_transaction
    conn.rollback()
    assert conn.execute("SELECT k FROM t").fetchall() == [(1,)]
    with pytest.raises(sqlkv.ProgrammingError):
        conn.autocommit = "yes"  # type: ignore[assignment]
    conn.close()


def test_failed_statement_keeps_the_transaction(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlkv.IntegrityError):
        conn.execute("INSERT INTO t VALUES (2), (1)")
    conn.execute("INSERT INTO t VALUES (3)")
    conn.commit()
    assert conn.execute("SELECT k FROM t ORDER BY k").fetchall() == [(1,), (3,)]


def test_executescript_runs_every_statement(conn: sqlkv.Connection) -> None:
    cur = conn.executescript(
        "CREATE TABLE t (k INT PRIMARY KEY, v TEXT);"
        "INSERT INTO t VALUES (1, 'a;b'), (2, 'c');"
        "SELECT v FROM t ORDER BY k;"
    )
    assert cur.fetchall() == [("a;b",), ("c",)]


def test_executemany_takes_a_generator_and_sums_rowcount(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    cur = conn.executemany("INSERT INTO t VALUES (?, ?)", ((i, f"v{i}") for i in range(50)))
    assert cur.rowcount == 50
    cur.executemany("UPDATE t SET v = 'x' WHERE k < ?", [(10,), (20,)])
    assert cur.rowcount == 30
    assert conn.execute("SELECT count(*) FROM t WHERE v = 'x'").fetchone() == (20,)


# -- misuse ----------------------------------------------------------------------------------


def test_closed_cursor_and_connection_refuse_work() -> None:
    conn = sqlkv.connect()
    cur = conn.cursor()
    cur.close()
    cur.close()  # idempotent
    with pytest.raises(sqlkv.InterfaceError, match="closed cursor"):
        cur.execute("SELECT 1")
    other = conn.cursor()
    conn.close()
    conn.close()
    for call in (lambda: other.execute("SELECT 1"), conn.cursor, conn.commit, conn.rollback,
                 lambda: conn.execute("SELECT 1")):
        with pytest.raises(sqlkv.InterfaceError, match="closed"):
            call()


def test_fetch_without_a_result_set_is_an_error(conn: sqlkv.Connection) -> None:
    cur = conn.cursor()
    with pytest.raises(sqlkv.ProgrammingError, match="no result set"):
        cur.fetchone()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    with pytest.raises(sqlkv.ProgrammingError):
        cur.fetchall()


def test_bad_parameters_are_programming_errors(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    with pytest.raises(sqlkv.ProgrammingError):
        conn.execute("INSERT INTO t VALUES (?, ?)", (1,))
    with pytest.raises(sqlkv.ProgrammingError):
        conn.execute("INSERT INTO t VALUES (?, ?)", (1, "a", "b"))
    with pytest.raises(sqlkv.ProgrammingError, match="parameter 2 has unsupported type set"):
        conn.execute("INSERT INTO t VALUES (?, ?)", (1, {"a"}))
    with pytest.raises(sqlkv.DataError, match='ARRAY.* is not valid for column "v" of type TEXT'):
        conn.execute("INSERT INTO t VALUES (?, ?)", (1, ["a"]))  # a list binds as an ARRAY
    with pytest.raises(sqlkv.ProgrammingError, match="sequence or a mapping"):
        conn.execute("INSERT INTO t VALUES (?, ?)", "ab")
    with pytest.raises(sqlkv.ProgrammingError, match="must be a str"):
        conn.execute(b"SELECT 1")  # type: ignore[arg-type]
    with pytest.raises(sqlkv.ProgrammingError):
        conn.executemany("SELECT k FROM t WHERE k = ?", [(1,)])
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_sql_errors_surface_as_pep_249_exceptions(conn: sqlkv.Connection) -> None:
    with pytest.raises(sqlkv.ProgrammingError, match="nope"):
        conn.execute("SELECT * FROM nope")
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(3) NOT NULL)")
    with pytest.raises(sqlkv.IntegrityError):
        conn.execute("INSERT INTO t VALUES (1, NULL)")
    with pytest.raises(sqlkv.DataError, match='"v"'):
        conn.execute("INSERT INTO t VALUES (1, 'toolong')")


def test_connect_option_errors() -> None:
    with pytest.raises(sqlkv.ProgrammingError, match="durability"):
        sqlkv.connect(":memory:", durability="sometimes")
    with pytest.raises(sqlkv.ProgrammingError, match="autocommit"):
        sqlkv.connect(":memory:", autocommit=1)  # type: ignore[arg-type]


def test_connection_belongs_to_its_thread(conn: sqlkv.Connection) -> None:
    failures: list[BaseException] = []

    def use() -> None:
        try:
            conn.execute("SELECT 1")
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    worker = threading.Thread(target=use)
    worker.start()
    worker.join()
    assert len(failures) == 1 and isinstance(failures[0], sqlkv.ProgrammingError)


def test_shared_connection_when_asked(tmp_path: Path) -> None:
    conn = sqlkv.connect(str(tmp_path / "db"), check_same_thread=False, autocommit=True)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    worker = threading.Thread(target=lambda: conn.execute("INSERT INTO t VALUES (7)"))
    worker.start()
    worker.join()
    assert conn.execute("SELECT k FROM t").fetchall() == [(7,)]
    conn.close()


def test_cursor_extras(conn: sqlkv.Connection) -> None:
    cur = conn.cursor()
    assert cur.connection is conn
    cur.setinputsizes([10, None])
    cur.setoutputsize(100)
    cur.setoutputsize(100, 0)
    with cur:
        pass
    assert cur.closed


def test_durable_options_reopen(tmp_path: Path) -> None:
    path = tmp_path / "db"
    conn = sqlkv.connect(path, durability="full", cache_size=1 << 20)  # a PathLike is accepted
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    ro = sqlkv.connect(str(path), read_only=True)
    assert ro.execute("SELECT k FROM t").fetchall() == [(1,)]
    with pytest.raises(sqlkv.OperationalError, match="read-only"):
        ro.execute("INSERT INTO t VALUES (2)")  # refused here or, at the latest, at commit
        ro.commit()
    assert ro.execute("SELECT k FROM t").fetchall() == [(1,)]
    ro.close()


def test_interrupt_from_another_thread_stops_a_long_query(conn: sqlkv.Connection) -> None:
    conn.execute("CREATE TABLE n (i INT PRIMARY KEY)")
    conn.executemany("INSERT INTO n VALUES (?)", [(i,) for i in range(300)])
    cur = conn.execute("SELECT count(*) FROM n a, n b, n c")  # 27 million rows if not stopped
    timer = threading.Timer(0.5, conn.interrupt)
    timer.start()
    try:
        with pytest.raises(sqlkv.OperationalError, match="cancel"):
            cur.fetchall()
    finally:
        timer.cancel()
    assert conn.execute("SELECT count(*) FROM n").fetchone() == (300,)


def test_unknown_connect_option_is_refused_for_memory_too(tmp_path) -> None:
    for database in (":memory:", str(tmp_path / "db")):
        with pytest.raises(sqlkv.InterfaceError, match="durabilty"):
            sqlkv.connect(database, durabilty="off")
    sqlkv.connect(":memory:", memtable_size=1 << 20).close()


def test_time_and_uuid_parameters_bind_as_their_types() -> None:
    import uuid

    conn = sqlkv.connect(":memory:")
    assert conn.execute("SELECT ?, typeof(?)", (datetime.time(13, 45), datetime.time(1))).fetchall() == [
        (datetime.time(13, 45), "time")]
    u = uuid.uuid4()
    assert conn.execute("SELECT :u, typeof(:u)", {"u": u}).fetchall() == [(u, "uuid")]
    # TIME is without time zone: an aware time is refused, not silently shifted
    with pytest.raises(sqlkv.NotSupportedError, match=r"parameter 1 is a timezone-aware datetime.time"):
        conn.execute("SELECT ?", (datetime.time(13, 45, tzinfo=datetime.timezone.utc),))
    with pytest.raises(sqlkv.NotSupportedError, match=r"parameter :t is a timezone-aware"):
        conn.execute("SELECT :t", {"t": datetime.time(13, 45, tzinfo=datetime.timezone.utc)})


def test_subclasses_of_storable_types_bind_as_their_base_value() -> None:
    """SQLAlchemy binds quoted_name (a str subclass), pandas a Timestamp (a datetime subclass)."""
    import enum

    class Name(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    class Stamp(datetime.datetime):
        pass

    conn = sqlkv.connect(":memory:")
    conn.execute("CREATE TABLE t (name TEXT PRIMARY KEY, level INT, at TIMESTAMP)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?)", (Name("users"), Level.HIGH, Stamp(2020, 1, 2, 3, 4, 5, 6)))
    row = conn.execute("SELECT name, level, at FROM t WHERE name = :n", {"n": Name("users")}).fetchone()
    assert row == ("users", 3, datetime.datetime(2020, 1, 2, 3, 4, 5, 6))
    assert [type(v) for v in row] == [str, int, datetime.datetime]
    conn.close()


def test_rowcount_stays_readable_after_close_as_in_sqlite3() -> None:
    conn, oracle = sqlkv.connect(":memory:"), sqlite3.connect(":memory:")
    for c in (conn, oracle):
        c.execute("CREATE TABLE t (a INT)")
    cur, ocur = conn.cursor(), oracle.cursor()
    for c in (cur, ocur):
        c.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
        c.close()
    assert cur.rowcount == ocur.rowcount == 3
    with pytest.raises(sqlkv.InterfaceError):
        cur.execute("SELECT 1")
    conn.close()
    oracle.close()


@pytest.mark.parametrize("autocommit", [False, True])
def test_another_connections_schema_change_replans_cached_statements(tmp_path, autocommit) -> None:
    """Prepared statements a connection repeats (the session's cached plans and fast reads)
    follow a schema change another connection commits: a transaction that began before it
    keeps the schema of its snapshot, the next one plans again, a dropped table is a
    ProgrammingError naming it."""
    path = str(tmp_path / "db")
    a = sqlkv.connect(path, autocommit=autocommit)
    b = sqlkv.connect(path, autocommit=True)
    cur = a.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    cur.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')")
    a.commit()
    select, update = "SELECT * FROM t WHERE id = ?", "UPDATE t SET v = ? WHERE id = ?"
    for _ in range(3):  # cached after the first: the next ones take the fast paths
        assert cur.execute(select, (1,)).fetchall() == [(1, "one")]
        cur.execute(update, ("uno", 2))
        assert cur.rowcount == 1
    if not autocommit:  # an open transaction: its snapshot's schema until it ends
        b.execute("ALTER TABLE t ADD COLUMN w INT DEFAULT 7")
        assert cur.execute(select, (1,)).fetchall() == [(1, "one")]
        with pytest.raises(errors.OperationalError):  # it read the schema b changed: 40001
            a.commit()
    else:
        b.execute("ALTER TABLE t ADD COLUMN w INT DEFAULT 7")
    assert cur.execute(select, (1,)).fetchall() == [(1, "one", 7)]
    assert [d[0] for d in cur.description] == ["id", "v", "w"]
    cur.execute(update, ("dos", 2))
    a.commit()
    assert b.execute("SELECT v, w FROM t WHERE id = 2").fetchall() == [("dos", 7)]
    b.execute("DROP TABLE t")
    with pytest.raises(errors.ProgrammingError, match='relation "t" does not exist'):
        cur.execute(select, (1,))
    a.close()
    b.close()


def test_a_cursor_used_from_another_thread_is_refused(tmp_path) -> None:
    """check_same_thread (the default, as in sqlite3): a statement run from another thread is a
    ProgrammingError naming the rule, a closed connection's cursor an InterfaceError -- the
    checks `Cursor.execute` makes inline."""
    conn = sqlkv.connect(str(tmp_path / "db"))
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    errors = []

    def run() -> None:
        try:
            cur.execute("SELECT id FROM t WHERE id = ?", (1,))
        except Exception as exc:  # noqa: BLE001 - the error is what is checked
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert len(errors) == 1 and isinstance(errors[0], sqlkv.ProgrammingError)
    assert "another thread" in str(errors[0])
    assert cur.execute("SELECT id FROM t").fetchall() == []
    conn.close()
    with pytest.raises(sqlkv.InterfaceError):
        cur.execute("SELECT id FROM t")
