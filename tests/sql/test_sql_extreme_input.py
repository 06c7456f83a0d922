"""Bad or extreme input is an answer or a PEP 249 error with a message, never InternalError,
RecursionError or a hang: the cases a stress run once found, and the classes they stand for."""

from __future__ import annotations

import sqlite3
import threading
from decimal import Decimal

import pytest

import sqlkv
from sqlkv.errors import DataError, InternalError, OperationalError, ProgrammingError


@pytest.fixture
def conn():
    c = sqlkv.connect(":memory:", autocommit=True, check_same_thread=False)
    c.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, d DECIMAL)")
    c.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 10, Decimal(i) / 4) for i in range(100)])
    yield c
    c.close()


RESULTS = [
    ("SELECT x''", (), b""),
    ("SELECT x'00ff'", (), b"\x00\xff"),
    ("SELECT round(DECIMAL '1e30', 3)", (), Decimal("1000000000000000000000000000000.000")),
    ("SELECT round(1e308, 5)", (), 1e308),
    ("SELECT round(DECIMAL '123.456', -5)", (), Decimal(0)),
    ("SELECT trunc(DECIMAL '-1.999', 1)", (), Decimal("-1.9")),
    ("SELECT DECIMAL '1e30' % DECIMAL '1.25'", (), Decimal(0)),
    ("SELECT DECIMAL '1e30' + 1", (), Decimal("1000000000000000000000000000001")),
    ("SELECT DECIMAL '123456789012345678901234567890' * 10", (), Decimal("1234567890123456789012345678900")),
    ("SELECT " + "9" * 5000, (), Decimal("9" * 5000)),
    ("SELECT count(*) FROM t LIMIT 9223372036854775807 OFFSET 0", (), 100),
    ("SELECT count(*) FROM (SELECT id FROM t LIMIT 9223372036854775807 OFFSET 1) AS s", (), 99),
]


@pytest.mark.parametrize("sql,params,expected", RESULTS)
def test_extreme_values_give_results(conn, sql, params, expected):
    assert conn.execute(sql, params).fetchone()[0] == expected


ERRORS = [
    ("SELECT power(2.0, 9223372036854775808)", (), DataError, "overflow"),
    ("SELECT DATE '9999-12-31' + 1", (), DataError, "out of range"),
    ("SELECT TIMESTAMP '9999-12-31 23:00:00' + INTERVAL '2 hours'", (), DataError, "out of range"),
    ("DELETE @ FROM t WHERE TRUE", (), ProgrammingError, ""),
    ("SELECT ~ ?", (2.5,), ProgrammingError, "INT"),
    ("SELECT ? + 1", (Decimal("sNaN"),), DataError, "signaling NaN"),
    ("INSERT INTO t VALUES (1000, ?, 0)", (Decimal("1E+999999"),), DataError, "out of range"),
    ("SELECT CAST(? AS INT)", (Decimal("-1E+999999"),), DataError, "out of range"),
    ("SELECT DECIMAL '1e131000' * DECIMAL '1e131000'", (), DataError, "overflow"),
    # a Python int past 64 bits binds as DECIMAL (as the same digits written in SQL do)
    ("SELECT ~ ?", (2**70,), ProgrammingError, "INT"),
    ("INSERT INTO t VALUES (1000, ?, 0)", (2**63,), DataError, "out of range"),
    # extra aggregate arguments were dropped silently
    ("SELECT count(*, *) FROM t", (), ProgrammingError, r"count\(\) takes at most one"),
    ("SELECT count(v, id) FROM t", (), ProgrammingError, r"count\(\) takes at most one"),
    ("SELECT group_concat(v, ',', 3) FROM t", (), ProgrammingError, "at most two"),
    ("SELECT total(v, 1) FROM t", (), ProgrammingError, "at most one"),
]


@pytest.mark.parametrize("value", [Decimal("1E+999999"), Decimal("-1E+999999"), 1e300,
                                   Decimal("9223372036854775807.5"), 2**64])
@pytest.mark.parametrize("op", ["=", "<", "<=", ">", ">=", "<>"])
@pytest.mark.parametrize("column", ["id", "v"])
def test_key_spans_with_numbers_beyond_int64(conn, value, op, column):
    # A span bound past INT's range used to run int(Decimal('1E+999999')) (minutes, then an
    # InternalError); it is now clamped: no key equals it, and every key is on one side of it.
    conn.execute("CREATE INDEX t_v ON t (v)")
    conn.execute("INSERT INTO t VALUES (?, ?, 0), (?, ?, 0)", (2**63 - 1, 2**63 - 1, -(2**63), -(2**63)))
    rows = sorted(r[0] for r in conn.execute(f"SELECT id FROM t WHERE {column} {op} ?", (value,)))
    compare = {"=": "__eq__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__", "<>": "__ne__"}[op]
    values = {r[0]: r[1] for r in conn.execute("SELECT id, v FROM t")}
    expected = sorted(i for i, v in values.items()
                      if getattr(Decimal(i if column == "id" else v), compare)(Decimal(value)))
    assert rows == expected


@pytest.mark.parametrize("sql,params,error,words", ERRORS)
def test_impossible_operations_are_clear_errors(conn, sql, params, error, words):
    with pytest.raises(error, match=f"(?i){words}"):
        conn.execute(sql, params).fetchall()
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (100,)  # nothing changed


def _sqlite_rows(sql: str) -> list[tuple]:
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, d REAL)")
    lite.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 10, i / 4) for i in range(100)])
    return sorted(lite.execute(sql).fetchall())


@pytest.mark.parametrize("sql", [
    # sqlite3 (the oracle) stops at expression depth 1000; longer chains are checked below
    "SELECT id FROM t WHERE " + " AND ".join(f"v <> {i}" for i in range(3, 990)),
    "SELECT id FROM t WHERE " + " OR ".join(f"id = {i * 7}" for i in range(990)),
    "SELECT id FROM t WHERE id IN (" + ",".join(str(i * 3) for i in range(10000)) + ")",
    "SELECT id FROM t WHERE v NOT IN (" + ",".join(str(i) for i in range(2, 2000)) + ")",
    "SELECT id, " + " + ".join(["v"] * 990) + " FROM t",
    "SELECT id, " + "(" * 90 + "v" + ")" * 90 + " FROM t",  # sqlite3's parser stops near 100
    "SELECT id, " + "abs(" * 20 + "v - 5" + ")" * 20 + " FROM t",
])
def test_generated_sql_of_realistic_depth_works(conn, sql):
    assert sorted(conn.execute(sql).fetchall()) == _sqlite_rows(sql)


def test_chains_of_thousands_of_terms_work(conn):
    ors = " OR ".join(f"id = {i * 7}" for i in range(5000))
    assert conn.execute(f"SELECT count(*) FROM t WHERE {ors}").fetchone() == (len(range(0, 100, 7)),)
    ands = " AND ".join(f"v <> {i}" for i in range(3, 5000))
    assert conn.execute(f"SELECT count(*) FROM t WHERE {ands}").fetchone() == (30,)
    assert conn.execute("SELECT " + " + ".join(["2"] * 5000)).fetchone() == (10000,)


def test_hundreds_of_nesting_levels_work(conn):
    assert conn.execute("SELECT " + "(" * 500 + "41 + 1" + ")" * 500).fetchone() == (42,)
    assert conn.execute("SELECT " + "lower(" * 500 + "'ABC'" + ")" * 500).fetchone() == ("abc",)
    assert conn.execute("SELECT " + "NOT " * 501 + "(v > 3) FROM t WHERE id = 5").fetchone() == (False,)


def test_nested_subqueries_of_realistic_depth_work(conn):
    sql = "SELECT " + "(SELECT " * 100 + "max(v) FROM t" + ")" * 100
    assert conn.execute(sql).fetchone() == (9,)


@pytest.mark.parametrize("sql", [
    "SELECT " + "(" * 100_000 + "1" + ")" * 100_000,
    "SELECT " + "lower(" * 20_000 + "'a'" + ")" * 20_000,
    "SELECT " + "(SELECT " * 5000 + "1" + ")" * 5000,
    "SELECT " + "NOT " * 50_000 + "TRUE",
    "SELECT " + " + ".join(["1"] * 100_000),
])
def test_absurd_depth_is_a_programming_error(conn, sql):
    with pytest.raises(ProgrammingError, match="nested too deeply"):
        conn.execute(sql).fetchall()
    assert conn.execute("SELECT 1 + 1").fetchone() == (2,)


def test_a_huge_in_list_matches_sqlite(conn):
    values = list(range(0, 40000, 3)) + list(range(0, 40000, 3))  # duplicates too
    sql = f"SELECT id FROM t WHERE id IN ({','.join(map(str, values))})"
    assert sorted(conn.execute(sql).fetchall()) == _sqlite_rows(sql)
    params = f"SELECT id FROM t WHERE id IN ({','.join('?' * 5000)})"
    got = conn.execute(params, [i * 2 for i in range(5000)]).fetchall()
    assert sorted(got) == [(i,) for i in range(0, 100, 2)]


@pytest.mark.parametrize("sql", [
    # a nested loop whose inner side is long: checked by rows visited, not outer rows
    "SELECT a.id, b.id FROM big a, big b ORDER BY a.id * b.id DESC LIMIT 3",
    "SELECT count(*) FROM big a JOIN big b ON a.k = b.k JOIN big c ON b.k = c.k",
    "SELECT a.id + b.id, count(*) FROM big a, big b GROUP BY 1",
])
def test_interrupt_stops_joins_sorts_and_aggregations(sql):
    conn = sqlkv.connect(":memory:", autocommit=True, check_same_thread=False)
    conn.execute("CREATE TABLE big (id INT PRIMARY KEY, k INT)")
    conn.executemany("INSERT INTO big VALUES (?, ?)", [(i, i % 2) for i in range(6000)])
    timer = threading.Timer(0.3, conn.interrupt)
    timer.start()
    try:
        with pytest.raises(OperationalError, match="cancelled"):
            conn.execute(sql).fetchall()  # minutes of work unless the interrupt stops it
    finally:
        timer.cancel()
    assert conn.execute("SELECT count(*) FROM big").fetchone() == (6000,)
    conn.close()


def test_no_internal_error_for_the_reported_cases(conn):
    """The statements of the original report, in one place: none may be InternalError."""
    cases = [sql for sql, _p, _e in RESULTS] + [sql for sql, p, _e, _w in ERRORS if not p]
    for sql in cases:
        try:
            conn.execute(sql).fetchall()
        except InternalError as exc:  # pragma: no cover - the failure being guarded against
            pytest.fail(f"{sql[:60]}: {exc}")
        except sqlkv.Error:
            pass


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a*)*b", "(?:x|(a+))*b", "(a{2,})+c", "^(\\w+\\s?)*$", "(x?a+)+c", "((,a+)*)+c", "(a.*)+c"],
)
def test_catastrophic_regular_expressions_are_refused_not_run(conn, pattern):
    """Python's matcher backtracks exponentially on these and cannot be interrupted: (a+)+$ on
    34 a's and a '!' ran for minutes, holding the GIL so interrupt() could not act."""
    subject = "a" * 34 + "!"
    for sql in ("SELECT regexp_replace(?, ?, 'x')", "SELECT ? ~ ?"):
        with pytest.raises(DataError, match="atomic group"):
            conn.execute(sql, (subject, pattern)).fetchall()


def test_a_catastrophic_similar_to_pattern_is_refused(conn):
    with pytest.raises(DataError, match="atomic group"):  # (a%)+ is (a.*)+: 22 a's took a second
        conn.execute("SELECT ? SIMILAR TO '(a%)+c'", ("a" * 40,)).fetchall()


@pytest.mark.parametrize(
    "pattern, subject, expected",
    [("^[a-z]+(,[a-z]+)*$", "ab,cd,ef", True), ("(foo|bar)+", "xbarfoo", True), ("(?>a+)+b", "aab", True),
     ("(a++)+b", "aaa", False), ("(ab)+c", "ababc", True), ("(a{1,5})+$", "aaaaaaa", True),
     ("^.*$", "anything", True), ("(x.?)+", "xx", True)],
)
def test_ordinary_repetition_still_matches(conn, pattern, subject, expected):
    assert conn.execute("SELECT ? ~ ?", (subject, pattern)).fetchone() == (expected,)


@pytest.mark.parametrize(
    "frame, error",
    [("ORDER BY s RANGE BETWEEN 1 PRECEDING AND CURRENT ROW", "column type TEXT"),
     ("ORDER BY dt RANGE BETWEEN CURRENT ROW AND 2 FOLLOWING", "column type DATE"),
     ("ORDER BY v, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW", "exactly one ORDER BY"),
     ("ORDER BY v GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW", "GROUPS")],
)
def test_window_frames_the_executor_cannot_compute_are_refused(frame, error):
    """A RANGE offset over a TEXT key was InternalError (str - int); GROUPS offsets were
    computed as RANGE offsets: a wrong answer."""
    c = sqlkv.connect(":memory:")
    c.execute("CREATE TABLE w (id INT PRIMARY KEY, v INT, s TEXT, dt DATE)")
    c.execute("INSERT INTO w VALUES (1, 0, 'a', DATE '2020-01-01'), (2, 10, 'b', DATE '2020-01-02')")
    with pytest.raises(sqlkv.Error, match=error) as info:
        c.execute(f"SELECT sum(id) OVER ({frame}) FROM w").fetchall()
    assert not isinstance(info.value, InternalError)


def test_groups_frames_without_offsets_match_sqlite():
    rows = [(i, (i % 3) * 10) for i in range(1, 11)]
    sql = ("SELECT a, sum(a) OVER (ORDER BY b GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), "
           "sum(a) OVER (ORDER BY b RANGE BETWEEN 10 PRECEDING AND CURRENT ROW) FROM w ORDER BY a")
    results = []
    for db in (sqlkv.connect(":memory:"), sqlite3.connect(":memory:")):
        db.execute("CREATE TABLE w (a INT PRIMARY KEY, b INT)")
        db.executemany("INSERT INTO w VALUES (?, ?)", rows)
        results.append(db.execute(sql).fetchall())
    assert results[0] == results[1]
