"""Column batches (`sqlkv/sql/exec/columnar.py`): a scan feeding only filters and aggregates
hands out column lists. Its answers, errors, EXPLAIN ANALYZE figures and conflict spans must
be the row path's (run by turning the columnar path off) and sqlite3's, over random tables
with NULLs, floats and strings, rows in a table file and updates and deletes in the memtable,
and in a transaction with its own writes; and the path must really be taken where it should
be (else the optimisation silently vanished)."""

from __future__ import annotations

import math
import random
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sqlkv.errors import CorruptionError, DataError
from sqlkv.sql import Database, Session
from sqlkv.sql.exec import aggregate as aggregate_module
from sqlkv.sql.exec import columnar
from sqlkv.encoding.values import encode_row_value
from sqlkv.sql.rowstore.codec import RowDecoder, codec_for
from sqlkv.txn.transaction import Transaction
from tests.sql.test_sql_batches import _conflicts as conflicts

SCHEMA = "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, f FLOAT, s TEXT)"
LITE_SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, a INT, b INT, f REAL, s TEXT)"
INT64_MAX = (1 << 63) - 1


def _random_rows(seed: int, n: int) -> list[tuple]:
    """``n`` rows drawn from small domains holding the queries' constants (so every comparison
    meets equal, smaller and larger values), NULLs, and a few huge ints (SUM overflows)."""
    rng = random.Random(seed)
    ints = [None, -3, -2, -1, 0, 2, 3, 4, 7, 19, INT64_MAX // 3, -(INT64_MAX // 3)]
    weights = [3, 2, 3, 2, 2, 2, 3, 2, 2, 2, 0.05, 0.05]
    return [(rng.choices(ints, weights)[0], rng.choices(ints, weights)[0],
             rng.choice([None, -1.0, 0.0, 0.25, 0.5, 0.75, 2.0]),
             rng.choice([None, "", "a", "ab", "abc", "b", "é", "zz"])) for _ in range(n)]


TERMS = st.tuples(st.sampled_from(["a", "b", "f", "s", "id"]), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
CONSTANTS = {"a": "3", "b": "-2", "f": "0.5", "s": "'ab'", "id": "200"}
AGGREGATES = ["count(*)", "count(a)", "sum(a)", "sum(b)", "min(s)", "max(s)", "avg(b)", "min(f)",
              "max(a)", "sum(f)", "count(DISTINCT a)", "total(b)"]


def _where(terms: list[tuple[str, str]]) -> str:
    return " AND ".join(f"{c} {op} {CONSTANTS[c]}" for c, op in terms)


def _query(aggs: list[str], keys: list[str], terms: list[tuple[str, str]]) -> str:
    select = ", ".join(keys + aggs)
    sql = f"SELECT {select} FROM t"
    if terms:
        sql += " WHERE " + _where(terms)
    if keys:
        sql += " GROUP BY " + ", ".join(keys)
    return sql


@contextmanager
def _opened(path: str = ":memory:") -> Iterator[tuple[Database, Session, sqlite3.Connection]]:
    """A database, a session on it and an in-memory sqlite3 to compare with."""
    db = Database.open(path)
    s = Session(db)
    try:
        yield db, s, sqlite3.connect(":memory:")
    finally:
        s.close()
        db.close()


def _row_path(monkeypatch) -> None:
    monkeypatch.setattr(aggregate_module, "column_groups", lambda *args: None)


def _run(s: Session, sql: str):
    try:
        return sorted((tuple(r) for r in s.execute(sql).fetchall()), key=repr)
    except DataError as exc:
        return ("error", str(exc))


def _close(a, b, abs_tol: float = 1e-9) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=abs_tol)
    return a == b


def _float_sum_error(rows: list[tuple]) -> float:
    """How far sqlite3's floating-point avg() may be from the exact one: it adds the ints as
    doubles, so near a huge int each addition can lose up to half an ulp of it (sqlkv's avg of
    INT is exact: with +-INT64_MAX/3 cancelling, sqlite3 3.40 answers 0.0 where the mean is 3.06)."""
    biggest = max((abs(v) for r in rows for v in r[:2] if v is not None), default=0)
    return max(1e-9, len(rows) * math.ulp(float(biggest)))


def _load(s: Session, lite: sqlite3.Connection, rows: list[tuple], db: Database) -> None:
    for conn in (s, lite):
        conn.execute(SCHEMA if conn is s else LITE_SCHEMA)
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [(i + 1, *r) for i, r in enumerate(rows)])
    db.engine.flush()  # the rows in a table file; the writes below stay in the memtable
    for conn in (s, lite):
        conn.execute("DELETE FROM t WHERE id % 7 = 3")
        conn.execute("UPDATE t SET a = 5, s = 'b' WHERE id % 11 = 4")
        conn.execute("INSERT INTO t VALUES (100000, 9, NULL, 2.5, 'zz')")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1 << 30), n=st.integers(0, 800), aggs=st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=4),
       keys=st.lists(st.sampled_from(["a", "s", "f"]), max_size=2, unique=True),
       terms=st.lists(TERMS, max_size=3))
@example(seed=888, n=110, aggs=["avg(b)"], keys=[], terms=[])  # huge ints cancel: sqlite3's float avg is 0.0
def test_columnar_answers_are_the_row_paths_and_sqlites(monkeypatch, seed, n, aggs, keys, terms) -> None:
    sql = _query(aggs, keys, terms)
    rows = _random_rows(seed, n)
    with tempfile.TemporaryDirectory() as path:
        db = Database.open(path)
        s = Session(db)
        lite = sqlite3.connect(":memory:")
        try:
            _load(s, lite, rows, db)
            got = _run(s, sql)
            with monkeypatch.context() as m:
                _row_path(m)
                assert _run(s, sql) == got, sql  # exactly the row path's values (and errors)
            if got and got[0] == "error":
                assert "overflow" in got[1], (sql, got)
                return
            want = sorted(lite.execute(sql).fetchall(), key=repr)
            assert len(got) == len(want), sql
            for g, w in zip(got, want):
                assert all(_close(x, y, _float_sum_error(rows)) for x, y in zip(g, w)), (sql, g, w)
        finally:
            s.close()
            db.close()


@pytest.fixture()
def loaded(tmp_path):
    db = Database.open(str(tmp_path / "db"))
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    rows = [(i % 23 - 5, None if i % 9 == 0 else i * 3, (i % 8) / 2, None if i % 5 == 0 else f"s{i % 6}")
            for i in range(1, 1500)]
    _load(s, lite, rows, db)
    yield db, s, lite
    s.close()
    db.close()


BENCH_SHAPES = [
    "SELECT count(*), sum(b) FROM t WHERE a > 10",
    "SELECT s, count(*), sum(a), min(b), max(b), avg(b) FROM t GROUP BY s",
    "SELECT count(*), sum(b), min(id), max(id) FROM t WHERE a >= 0 AND b < 2000",
    "SELECT count(*) FROM t",
]


@pytest.mark.parametrize("sql", BENCH_SHAPES)
def test_the_columnar_path_builds_no_rows(loaded, monkeypatch, sql: str) -> None:
    db, s, lite = loaded
    want = sorted(lite.execute(sql).fetchall(), key=repr)

    def no_rows(self, pairs):
        raise AssertionError("a row batch was built")

    monkeypatch.setattr(RowDecoder, "batch", no_rows)
    assert _run(s, sql) == want


@pytest.mark.parametrize("sql", BENCH_SHAPES)
def test_the_columnar_scan_reads_key_and_value_lists_not_pairs(loaded, monkeypatch, sql: str) -> None:
    """Forward, the scan takes `Transaction.scan_columns`' lists (the storage builds no pair)."""
    db, s, lite = loaded
    want = sorted(lite.execute(sql).fetchall(), key=repr)

    def no_pairs(self, *args):
        raise AssertionError("the columnar scan read pairs")

    monkeypatch.setattr(Transaction, "scan_batches", no_pairs)
    assert _run(s, sql) == want


def test_a_backward_span_is_read_as_lists_of_its_pairs(loaded) -> None:
    db, _s, _lite = loaded
    with db.txn_manager.begin() as txn:
        start, end = b"", None
        forward = [p for keys, values in columnar._span_lists(txn, start, end, False) for p in zip(keys, values)]
        backward = [p for keys, values in columnar._span_lists(txn, start, end, True) for p in zip(keys, values)]
    assert len(forward) > 1000 and backward == forward[::-1]


@pytest.mark.parametrize("sql", [
    "SELECT count(*), sum(b) FROM t WHERE a + 1 > 10",  # no column terms: rows
    "SELECT sum(a + b) FROM t",  # an argument that is not a column
    "SELECT count(*) FILTER (WHERE a > 2), sum(b) FROM t",
])
def test_other_shapes_keep_the_row_path(loaded, monkeypatch, sql: str) -> None:
    db, s, lite = loaded
    calls = []
    real = RowDecoder.batch
    monkeypatch.setattr(RowDecoder, "batch", lambda self, pairs: calls.append(1) or real(self, pairs))
    got = _run(s, sql)
    assert calls, sql
    if "FILTER" not in sql:
        assert got == sorted(lite.execute(sql).fetchall(), key=repr)


def _analyzed(s: Session, sql: str) -> list[str]:
    lines = [r[0] for r in s.execute("EXPLAIN ANALYZE " + sql).fetchall()]
    return [" ".join(part for part in line.split() if not part.startswith("time=")) for line in lines]


@pytest.mark.parametrize("sql", BENCH_SHAPES)
def test_explain_analyze_figures_are_the_row_paths(loaded, monkeypatch, sql: str) -> None:
    _db, s, _lite = loaded
    got = _analyzed(s, sql)
    with monkeypatch.context() as m:
        _row_path(m)
        assert _analyzed(s, sql) == got
    matched = _lite_count(loaded[2], sql)
    assert any(line.startswith("filter") and f"rows={matched}" in line for line in got) or "WHERE" not in sql


def _lite_count(lite: sqlite3.Connection, sql: str) -> int:
    where = sql.split(" WHERE ")[1].split(" GROUP BY")[0] if " WHERE " in sql else "1"
    return lite.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]


def _conflicts(db: Database, scan_sql: str, write_sql: str) -> bool:
    return conflicts(db, scan_sql, write_sql, "(-1, 0, 0, 0, 'x')")


@pytest.mark.parametrize("row_path", [False, True])
def test_a_columnar_aggregate_depends_on_the_whole_table(loaded, monkeypatch, row_path: bool) -> None:
    db, _s, _lite = loaded
    if row_path:
        _row_path(monkeypatch)
    assert _conflicts(db, BENCH_SHAPES[0], "UPDATE t SET a = 50 WHERE id = 1")  # a row it did not keep
    assert _conflicts(db, BENCH_SHAPES[1], "INSERT INTO t VALUES (200000, 1, 1, 1, 'q')")  # after the last
    assert not _conflicts(db, BENCH_SHAPES[0], "CREATE TABLE other (x INT PRIMARY KEY)")


def test_own_writes_in_a_transaction_are_aggregated(loaded) -> None:
    _db, s, lite = loaded
    s.execute("BEGIN")
    for conn in (s, lite):
        conn.execute("UPDATE t SET a = a + 30 WHERE id % 4 = 1")
        conn.execute("DELETE FROM t WHERE id % 10 = 2")
    for sql in BENCH_SHAPES:
        assert _run(s, sql) == sorted(lite.execute(sql).fetchall(), key=repr), sql
    s.execute("ROLLBACK")
    lite.rollback()


def test_a_corrupt_value_is_reported_not_aggregated(loaded) -> None:
    db, s, _lite = loaded
    codec = codec_for(s.catalog().get_table("t"))
    txn = db.txn_manager.begin()
    txn.put(codec.row_key((8, None, None, None, None)), b"\x84\x04\xc1")  # 0xc1: never used
    txn.commit()
    fresh = Session(db)  # begun after the damage
    try:
        for sql in BENCH_SHAPES[:3]:
            with pytest.raises(CorruptionError, match="corrupt row value"):
                fresh.execute(sql).fetchall()
    finally:
        fresh.close()


def test_column_batches_of_other_operators_are_cut_from_their_rows(loaded) -> None:
    """A child that is not a scan or filter (here a join) hands its rows over as columns."""
    _db, s, lite = loaded
    sql = "SELECT count(*), sum(x.b) FROM t x JOIN t y ON x.id = y.id + 1 WHERE x.a > 2"
    assert _run(s, sql) == sorted(lite.execute(sql).fetchall(), key=repr)
    assert columnar.columns_of_rows([(1, "a"), (2, None)], [1]).columns == {1: ["a", None]}


def test_rows_stored_as_maps_and_as_arrays_older_than_the_schema_read_back(tmp_path) -> None:
    """A table whose values are of every age: maps (as sqlkv wrote them before slots), slot
    arrays written before a column was added (shorter) and after one was dropped (holding its
    old value), read by scans, the columnar path, point reads and GROUP BY as sqlite3 reads
    the same rows."""
    db = Database.open(str(tmp_path / "db"))
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    try:
        rows = _random_rows(5, 600)
        for conn in (s, lite):
            conn.execute(SCHEMA if conn is s else LITE_SCHEMA)
            conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [(i + 1, *r) for i, r in enumerate(rows)])
        codec = codec_for(s.catalog().get_table("t"))
        txn = db.txn_manager.begin()
        for row in s.execute("SELECT * FROM t WHERE id % 4 = 0").fetchall():  # back to maps
            txn.put(codec.row_key(tuple(row)), encode_row_value(
                {cid: row[p] for cid, p in codec.stored_columns if row[p] is not None}))
        txn.commit()
        db.engine.flush()
        s.close()
        s = Session(db)  # begun after the raw writes
        for conn in (s, lite):
            conn.execute("ALTER TABLE t ADD COLUMN g INT")
            conn.execute("UPDATE t SET g = id % 5 WHERE id % 3 = 0")
            conn.execute("ALTER TABLE t DROP COLUMN b")
            conn.execute("INSERT INTO t (id, a, f, s, g) VALUES (5000, 1, 0.5, 'new', 4)")
        queries = [
            "SELECT * FROM t", "SELECT id, g, s FROM t WHERE g > 1", "SELECT count(*), sum(g), max(a) FROM t",
            "SELECT g, count(*), sum(a), min(s) FROM t GROUP BY g", "SELECT count(*) FROM t WHERE a >= 3 AND g <> 2",
            "SELECT a, g, s FROM t WHERE id = 8", "SELECT a, g, s FROM t WHERE id = 9", "SELECT a, g FROM t WHERE id = 5000",
        ]
        for sql in queries:
            got = sorted((tuple(r) for r in s.execute(sql).fetchall()), key=repr)
            assert got == sorted(lite.execute(sql).fetchall(), key=repr), sql
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("schema, lite_schema", [
    ("CREATE TABLE w (id INT PRIMARY KEY, a INT, b INT, c INT AS (a + b) VIRTUAL)",
     "CREATE TABLE w (id INTEGER PRIMARY KEY, a INT, b INT, c INT AS (a + b) VIRTUAL)"),
    ("CREATE TABLE w (id INT PRIMARY KEY, a INT, b INT, c INT, FAMILY f1 (id, a), FAMILY f2 (b, c))",
     "CREATE TABLE w (id INTEGER PRIMARY KEY, a INT, b INT, c INT)"),
])
def test_tables_the_columnar_path_leaves_to_rows_answer_the_same(monkeypatch, schema: str, lite_schema: str) -> None:
    """A VIRTUAL column (computed from the row) or several column families: the row path,
    with the same answers as sqlite3."""
    with _opened() as (_db, s, lite):
        for conn, ddl in ((s, schema), (lite, lite_schema)):
            conn.execute(ddl)
            conn.executemany("INSERT INTO w (id, a, b) VALUES (?, ?, ?)",
                             [(i, None if i % 6 == 0 else i % 7, i % 4) for i in range(1, 400)])
            if "FAMILY" in schema and conn is s or conn is lite and "VIRTUAL" not in lite_schema:
                conn.execute("UPDATE w SET c = a * 2 WHERE id % 3 = 0")
        monkeypatch.setattr(columnar, "_scan_columns", lambda *args: pytest.fail("read as columns"))
        for sql in ["SELECT count(*), sum(c), max(a) FROM w WHERE b > 1", "SELECT b, count(*), sum(c) FROM w GROUP BY b"]:
            assert _run(s, sql) == sorted(lite.execute(sql).fetchall(), key=repr), sql


def test_a_table_whose_column_ids_grew_sparse_writes_maps_and_reads_both() -> None:
    """After many ADD/DROP COLUMNs the stored ids are sparse: new values are maps (no run of
    nils), older slot arrays still read back."""
    with _opened() as (_db, s, lite):
        for conn in (s, lite):
            conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INT, s TEXT)")
            conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(i, i % 5, f"s{i % 3}") for i in range(1, 200)])
        for i in range(30):
            s.execute(f"ALTER TABLE t ADD COLUMN x{i} INT")
            s.execute(f"ALTER TABLE t DROP COLUMN x{i}")
        for conn in (s, lite):
            conn.execute("ALTER TABLE t ADD COLUMN g INT")
            conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(i, i % 4, None, i % 2) for i in range(200, 400)])
            conn.execute("UPDATE t SET g = 7 WHERE id % 10 = 0")
        assert codec_for(s.catalog().get_table("t")).value_width is None  # ids 2, 3 and 34: maps
        for sql in ["SELECT * FROM t", "SELECT g, count(*), sum(a), max(s) FROM t GROUP BY g",
                    "SELECT count(*), sum(a) FROM t WHERE g >= 0", "SELECT a, s, g FROM t WHERE id = 150"]:
            assert _run(s, sql) == sorted(lite.execute(sql).fetchall(), key=repr), sql
