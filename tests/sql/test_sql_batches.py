"""Batch execution (`Operator.batches`, `Transaction.scan_batches`, `RowDecoder.batch`,
`Accumulator.add_batch`): answers compared with sqlite3 on tables whose sizes sit on the edges
of the scan's batches (16, 32, 64, 128, then 256 rows), LIMIT/OFFSET across those edges, the
conflict span a batched scan records, EXPLAIN ANALYZE's figures, and statements failing in
the middle of a batch."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from sqlkv.encoding.key_columns import first_key_values
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.errors import CorruptionError, DataError, SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.encoding.values import decode_columns
from sqlkv.sql.exec.operator import BATCH_ROWS, FIRST_SCAN_BATCH, batch_sizes
from sqlkv.sql.rowstore import codec as codec_module

# where one scan batch ends and the next starts: 16, 48, 112, 240, 496, 752
EDGES = list(itertools.accumulate(itertools.islice(batch_sizes(FIRST_SCAN_BATCH), 6)))
SIZES = sorted({0, 1, BATCH_ROWS - 1, BATCH_ROWS, BATCH_ROWS + 1}
               | {e + d for e in EDGES[:5] for d in (-1, 0, 1)})

SCHEMA = "CREATE TABLE t (id INT PRIMARY KEY, k INT, v INT, s TEXT)"
QUERIES = [
    "SELECT count(*), sum(v), min(v), max(v), avg(v), count(s), min(s), max(s) FROM t",
    "SELECT k, count(*), sum(v), min(s), max(v), avg(v) FROM t GROUP BY k",
    "SELECT id, s FROM t WHERE v > 10 AND k <> 2",
    "SELECT id * 2, v + k, s FROM t WHERE s IS NOT NULL",
    "SELECT count(*) FROM t WHERE v % 3 = 0",
    "SELECT count(*) FROM t",  # no column decoded
    "SELECT id FROM t WHERE id % 5 = 0",  # only the key decoded
    "SELECT DISTINCT k FROM t",
    "SELECT s, id FROM t",
]
LIMITS = [(1, 0), (15, 0), (16, 0), (17, 0), (16, 16), (1, 47), (2, 47), (60, 100), (300, 0), (5, 495)]


def _rows(n: int) -> list[tuple]:
    return [(i, i % 5, (i * 7919) % 101 - 20, None if i % 11 == 0 else f"s{i % 37:03d}")
            for i in range(1, n + 1)]


def _pair(n: int, path: str) -> tuple[Database, Session, sqlite3.Connection]:
    db = Database.open(path)
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    for conn in (s, lite):
        conn.execute(SCHEMA)
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", _rows(n))
    if path != ":memory:":
        db.engine.flush()  # rows from an SSTable, not only the memtable
    return db, s, lite


def _same(s: Session, lite: sqlite3.Connection, sql: str, ordered: bool = False) -> None:
    got = s.execute(sql).fetchall()
    want = lite.execute(sql).fetchall()
    if not ordered:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert [tuple(r) for r in got] == want, sql


@pytest.mark.parametrize("n", SIZES)
def test_batch_edges_match_sqlite(n: int) -> None:
    db, s, lite = _pair(n, ":memory:")
    try:
        for sql in QUERIES:
            _same(s, lite, sql)
        for limit, offset in LIMITS:
            for order in ("", " ORDER BY id DESC"):
                base = "SELECT id, v FROM t WHERE k <> 4" + order
                _same(s, lite, f"{base} LIMIT {limit} OFFSET {offset}", ordered=bool(order))
            _same(s, lite, f"SELECT id, v FROM t LIMIT {limit} OFFSET {offset}", ordered=True)
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("n", [BATCH_ROWS + 1, EDGES[4] + 1])
def test_batch_edges_match_sqlite_on_sstables_and_in_a_transaction(n: int, tmp_path) -> None:
    db, s, lite = _pair(n, str(tmp_path / "db"))
    try:
        s.execute("BEGIN")  # a read-write transaction: spans recorded, writes merged
        for sql in QUERIES:
            _same(s, lite, sql)
        for conn in (s, lite):  # own writes on both sides of batch edges
            conn.execute("DELETE FROM t WHERE id % 16 = 0 OR id = 1")
            conn.execute("UPDATE t SET v = v + 1000 WHERE id % 48 = 47")
            conn.execute("INSERT INTO t VALUES (100000, 1, 1, 'last')")
        for sql in QUERIES:
            _same(s, lite, sql)
        _same(s, lite, "SELECT id, v FROM t ORDER BY id DESC LIMIT 40 OFFSET 10", ordered=True)
        s.execute("COMMIT")
        _same(s, lite, QUERIES[0])
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("on_disk", [False, True])
def test_own_writes_made_while_a_result_streams_are_seen_past_the_current_batch(on_disk: bool, tmp_path) -> None:
    """As the lazy scan did: a write the transaction makes while its SELECT is still being
    read shows in the rows the scan has not read yet (the scan reads the rest merged with the
    writes once the buffer holds any; on the LSM the open `range_reader` is dropped)."""
    db, s, _lite = _pair(EDGES[3], str(tmp_path / "db") if on_disk else ":memory:")
    try:
        s.execute("BEGIN")
        result = iter(s.execute("SELECT id FROM t"))
        first = [next(result) for _ in range(FIRST_SCAN_BATCH)]  # exactly the first batch
        s.execute("INSERT INTO t VALUES (100000, 0, 0, 'new')")
        s.execute(f"DELETE FROM t WHERE id = {EDGES[2]}")
        ids = [r[0] for r in first + list(result)]
        assert ids == [i for i in range(1, EDGES[3] + 1) if i != EDGES[2]] + [100000]
        s.execute("ROLLBACK")
    finally:
        s.close()
        db.close()


def test_scans_over_a_loaded_table_with_scattered_writes_match_sqlite(tmp_path) -> None:
    """The merged scan's usual shape: a table flushed and compacted into one bottom level,
    then updates and deletes scattered over it (an L0 table and the memtable). The batched
    scans (one `range_reader` kept across batches, runs of the big source between the small
    sources' keys) answer as sqlite3 does, and a transaction that began before more writes
    keeps reading its snapshot."""
    n = EDGES[5] + 300
    db, s, lite = _pair(n, str(tmp_path / "db"))
    other = Session(db)
    try:
        db.engine.compact()
        for conn in (s, lite):
            conn.execute("UPDATE t SET v = v + 1000, s = NULL WHERE id % 37 = 5")
            conn.execute("DELETE FROM t WHERE id % 53 = 0 OR id BETWEEN 300 AND 340")
        db.engine.flush()
        for conn in (s, lite):
            conn.execute("UPDATE t SET v = -v WHERE id % 41 = 3")
            conn.execute("DELETE FROM t WHERE id % 97 = 1")
            conn.execute(f"INSERT INTO t VALUES ({n + 5}, 1, 2, 'tail'), (0, 3, 4, 'head')")
        for sql in QUERIES:
            _same(s, lite, sql)
        for limit, offset in LIMITS:
            _same(s, lite, f"SELECT id, v FROM t WHERE k <> 4 ORDER BY id DESC LIMIT {limit} OFFSET {offset}",
                  ordered=True)
            _same(s, lite, f"SELECT id, v FROM t ORDER BY id LIMIT {limit} OFFSET {offset}", ordered=True)
        s.execute("BEGIN")
        before = [s.execute(sql).fetchall() for sql in QUERIES[:3]]
        other.execute("UPDATE t SET v = 7 WHERE id % 7 = 0")
        other.execute("DELETE FROM t WHERE id % 5 = 1")
        assert [s.execute(sql).fetchall() for sql in QUERIES[:3]] == before
        s.execute("COMMIT")
    finally:
        other.close()
        s.close()
        db.close()


def _conflicts(db: Database, scan_sql: str, write_sql: str, own_row: str = "(-1, 0, 0, 'x')") -> bool:
    """Whether a transaction that ran ``scan_sql`` (then wrote ``own_row`` into t, with id -1)
    fails to commit after another transaction committed ``write_sql``."""
    a, b = Session(db), Session(db)
    try:
        a.execute("BEGIN")
        a.execute(scan_sql).fetchall()
        b.execute(write_sql)  # autocommit
        a.execute(f"INSERT INTO t VALUES {own_row}")
        try:
            a.execute("COMMIT")
        except SerializationFailure:
            return True
        a.execute("DELETE FROM t WHERE id = -1")
        return False
    finally:
        a.close()
        b.close()


def test_batched_scan_records_the_span_it_read(tmp_path) -> None:
    db, s, _lite = _pair(2 * BATCH_ROWS, str(tmp_path / "db"))
    s.close()
    try:
        # a full scan depends on the whole table, the rows after the last one included
        assert _conflicts(db, "SELECT count(*) FROM t WHERE v > 0", "INSERT INTO t VALUES (5000, 0, 0, 'n')")
        # under a LIMIT the scan stopped after its first batch: rows past it are not depended on
        limited = "SELECT id FROM t WHERE v > -1000 LIMIT 2"
        assert not _conflicts(db, limited, f"UPDATE t SET v = 0 WHERE id = {2 * BATCH_ROWS - 3}")
        assert _conflicts(db, limited, "UPDATE t SET v = 0 WHERE id = 2")
        # the first batch was read whole (16 rows): its last row is depended on too
        assert _conflicts(db, limited, f"UPDATE t SET v = 0 WHERE id = {FIRST_SCAN_BATCH}")
    finally:
        db.close()


@pytest.mark.parametrize("merged", [False, True])
def test_explain_analyze_counts_are_exact_across_batches(merged: bool, tmp_path) -> None:
    n = EDGES[4] + 7
    db, s, lite = _pair(n, str(tmp_path / "db") if merged else ":memory:")
    try:
        if merged:  # the rows in a table file, scattered updates and deletes in the memtable
            for conn in (s, lite):
                conn.execute("UPDATE t SET v = v + 7 WHERE id % 13 = 2")
                conn.execute("DELETE FROM t WHERE id % 17 = 3")
            n = lite.execute("SELECT count(*) FROM t").fetchone()[0]
        matched = lite.execute("SELECT count(*) FROM t WHERE v > 10").fetchone()[0]
        lines = [r[0] for r in s.execute("EXPLAIN ANALYZE SELECT id FROM t WHERE v > 10").fetchall()]
        scan = next(line for line in lines if "scan t@" in line)
        assert f"rows={n} " in scan and f"kv_keys={n} " in scan and "kv_scans=1" in scan, lines
        assert any(line.strip().startswith("filter") and f"rows={matched} " in line for line in lines), lines
        assert lines[-1].startswith(f"total: rows={matched} "), lines
    finally:
        s.close()
        db.close()


def test_limit_reads_a_bounded_amount_ahead() -> None:
    db, s, _lite = _pair(5000, ":memory:")
    try:
        lines = [r[0] for r in s.execute("EXPLAIN ANALYZE SELECT id FROM t WHERE v > -1000 LIMIT 1").fetchall()]
        keys = int(lines[-1].split("kv_keys=")[1].split()[0])
        assert 1 <= keys <= FIRST_SCAN_BATCH, lines
        lines = [r[0] for r in s.execute("EXPLAIN ANALYZE SELECT id FROM t WHERE v > -1000 LIMIT 100").fetchall()]
        keys = int(lines[-1].split("kv_keys=")[1].split()[0])
        assert 100 <= keys <= 2 * 100 + FIRST_SCAN_BATCH, lines
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("bad", [1, FIRST_SCAN_BATCH, FIRST_SCAN_BATCH + 1, EDGES[3] + 5])
def test_error_in_the_middle_of_a_batch_fails_the_statement_and_changes_nothing(bad: int) -> None:
    db, s, _lite = _pair(EDGES[4], ":memory:")
    try:
        s.execute("UPDATE t SET s = CAST(v AS TEXT)")
        s.execute(f"UPDATE t SET s = 'x' WHERE id = {bad}")
        s.execute("CREATE TABLE u (id INT PRIMARY KEY, n INT)")
        before = s.execute("SELECT count(*), sum(v), min(s) FROM t").fetchall()
        for sql in ["SELECT id, CAST(s AS INT) FROM t WHERE s IS NOT NULL",
                    "SELECT k, sum(CAST(s AS INT)) FROM t WHERE s <> 'zzz' GROUP BY k",
                    "INSERT INTO u SELECT id, CAST(s AS INT) FROM t WHERE s IS NOT NULL",
                    "UPDATE t SET v = CAST(s AS INT) WHERE s IS NOT NULL"]:
            with pytest.raises(DataError, match='invalid input syntax for type INT: "x"'):
                s.execute(sql).fetchall()
        assert s.execute("SELECT count(*) FROM u").fetchall() == [(0,)]
        assert s.execute("SELECT count(*), sum(v), min(s) FROM t").fetchall() == before
    finally:
        s.close()
        db.close()


INT64_MAX = (1 << 63) - 1


@pytest.mark.parametrize("position", [0, FIRST_SCAN_BATCH - 1, FIRST_SCAN_BATCH, 40])
def test_sum_overflow_inside_a_batch_is_an_error_like_sqlite(position: int) -> None:
    """SQLite fails on any intermediate overflow of an integer sum, even when later values
    bring the total back in range; a batch summed at once must too."""
    values = [0] * 60
    values[position] = INT64_MAX
    values[position + 1] = 1
    values[position + 2] = -5
    db = Database.open(":memory:")
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    try:
        for conn in (s, lite):
            conn.execute("CREATE TABLE n (id INT PRIMARY KEY, x INT)")
            conn.executemany("INSERT INTO n VALUES (?, ?)", list(enumerate(values)))
        with pytest.raises(sqlite3.OperationalError, match="integer overflow"):
            lite.execute("SELECT sum(x) FROM n").fetchall()
        with pytest.raises(DataError, match="integer overflow"):
            s.execute("SELECT sum(x) FROM n").fetchall()
        s.execute("UPDATE n SET x = 0 WHERE id = ?", (position + 1,))
        lite.execute("UPDATE n SET x = 0 WHERE id = ?", (position + 1,))
        _same(s, lite, "SELECT sum(x), avg(x), min(x), max(x), count(x) FROM n")
    finally:
        s.close()
        db.close()


def test_mixed_types_and_nulls_across_batches_match_sqlite() -> None:
    db = Database.open(":memory:")
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    rows = [(i, None if i % 3 == 0 else (i * 31) % 97, None if i % 4 == 0 else (i % 50) * 0.5)
            for i in range(1, 400)]
    try:
        for conn in (s, lite):
            conn.execute("CREATE TABLE m (id INT PRIMARY KEY, a INT, f FLOAT)")
            conn.executemany("INSERT INTO m VALUES (?, ?, ?)", rows)
        _same(s, lite, "SELECT count(a), sum(a), min(a), max(a), avg(a), count(f), sum(f), min(f), max(f) FROM m")
        _same(s, lite, "SELECT a % 4, count(*), sum(f), max(a) FROM m GROUP BY a % 4")
        _same(s, lite, "SELECT count(*), sum(a) FROM m WHERE a IS NULL")
    finally:
        s.close()
        db.close()


INDEX_QUERIES = [
    "SELECT id, v FROM t WHERE v BETWEEN -5 AND 60",  # index-only
    "SELECT id, s, k FROM t WHERE v > 0",  # rows fetched by primary key, a batch at a time
    "SELECT id, s FROM t WHERE v > 0 ORDER BY v DESC, id DESC LIMIT 30",  # reverse, limited
    "SELECT id, s FROM t WHERE v >= -20 ORDER BY v, id LIMIT 17 OFFSET 240",
    "SELECT id FROM t WHERE v IN (3, 5, 7)",  # points
    "SELECT v, count(*), max(s) FROM t WHERE v < 50 GROUP BY v",
]


@pytest.mark.parametrize("n", [0, 1, FIRST_SCAN_BATCH + 1, EDGES[3], EDGES[4] + 1])
def test_secondary_index_scans_in_batches_match_sqlite(n: int) -> None:
    db, s, lite = _pair(n, ":memory:")
    try:
        for conn in (s, lite):
            conn.execute("CREATE INDEX t_v ON t (v)")
        assert "index-only" in s.execute("EXPLAIN " + INDEX_QUERIES[0]).fetchall()[-1][0]
        assert "t@t_v" in s.execute("EXPLAIN " + INDEX_QUERIES[1]).fetchall()[-1][0]
        for sql in INDEX_QUERIES:
            _same(s, lite, sql, ordered="ORDER BY" in sql)
        s.execute("BEGIN")
        for conn in (s, lite):
            conn.execute("UPDATE t SET v = v + 1 WHERE id % 3 = 0")
            conn.execute("DELETE FROM t WHERE id % 7 = 0")
        for sql in INDEX_QUERIES:
            _same(s, lite, sql, ordered="ORDER BY" in sql)
        s.execute("ROLLBACK")
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("n", [0, FIRST_SCAN_BATCH + 1, EDGES[3] + 1])
def test_table_with_column_families_streams_its_rows_in_batches(n: int) -> None:
    db = Database.open(":memory:")
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    try:
        s.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, v INT, s TEXT, FAMILY a (id, k), FAMILY b (v, s))")
        lite.execute(SCHEMA)
        for conn in (s, lite):
            conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", _rows(n))
        for sql in QUERIES:
            _same(s, lite, sql)
        _same(s, lite, "SELECT id, v FROM t WHERE k <> 4 ORDER BY id DESC LIMIT 20 OFFSET 5", ordered=True)
    finally:
        s.close()
        db.close()


@pytest.mark.parametrize("key", ["id INT, PRIMARY KEY (id DESC)", "id TEXT PRIMARY KEY", "id FLOAT PRIMARY KEY",
                                 "id INT, s2 INT, PRIMARY KEY (s2, id)", "id INT, PRIMARY KEY (id)"])
def test_primary_keys_of_every_shape_decode_in_batches(key: str) -> None:
    db = Database.open(":memory:")
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    two = "s2" in key
    rows = [(v, i % 3, f"x{i}") + ((i % 4,) if two else ())
            for i, v in enumerate([-(1 << 62), -300, -1, 0, 1, 5, 109, 110, 255, 256, 70000, 1 << 40, (1 << 63) - 1]
                                  + list(range(1000, 1000 + EDGES[2])))]
    if "TEXT" in key:
        rows = [(f"k{r[0]}",) + r[1:] for r in rows]
    elif "FLOAT" in key:
        rows = [(r[0] / 4,) + r[1:] for r in rows]
    cols = "id, v, s" + (", s2" if two else "")
    try:
        s.execute(f"CREATE TABLE d ({key}, v INT, s TEXT)")
        lite.execute(f"CREATE TABLE d (id, v, s{', s2' if two else ''})")
        marks = ", ".join("?" * (4 if two else 3))
        for conn in (s, lite):
            conn.executemany(f"INSERT INTO d ({cols}) VALUES ({marks})", rows)
        _same(s, lite, f"SELECT {cols} FROM d")
        _same(s, lite, "SELECT id, s FROM d WHERE v = 1")
        _same(s, lite, "SELECT s, id FROM d WHERE v <> 1")
    finally:
        s.close()
        db.close()


def test_first_key_values_agree_with_decode_key_and_report_corruption() -> None:
    values = [0, 1, 109, 110, 111, 255, 256, -1, -200, 1 << 40, (1 << 63) - 1, -(1 << 63), "a", "", "x\x00y", 2.5]
    prefix = b"\x8a\x89"
    for desc in (False, True):
        keys = [encode_key([v], [desc], prefix) + b"\x88" for v in values]
        assert first_key_values(keys, len(prefix), desc) == [decode_key(k, 1, [desc], len(prefix))[0][0] for k in keys]
    good = encode_key([5000], [False], prefix)
    for bad in (prefix, good[:-1], prefix + b"\xff\xff"):
        with pytest.raises(CorruptionError) as expected:
            decode_key(bad, 1, [False], len(prefix))
        with pytest.raises(CorruptionError) as got:
            first_key_values([good, bad], len(prefix), False)
        assert str(got.value) == str(expected.value)

    # positive ints decoded inline: a non-canonical length or a value past int64 goes to the
    # decoder, which decides as decode_key does (the same value or the same error)
    odd = [prefix + bytes((0xF5 + 2, 0, 5)), prefix + bytes((0xF5 + 8,)) + b"\xff" * 8,
           prefix + bytes((0xF5 + 8, 0x7F)) + b"\xff" * 7, prefix + bytes((0xF5 + 3, 1, 0))]
    for key in odd:
        try:
            expected_value = [decode_key(key, 1, [False], len(prefix))[0][0]]
        except CorruptionError as exc:
            with pytest.raises(CorruptionError) as got:
                first_key_values([good, key], len(prefix), False)
            assert str(got.value) == str(exc)
        else:
            assert first_key_values([key], len(prefix), False) == expected_value


def test_scans_reading_no_text_column_skip_string_decoding_and_read_the_same_values(monkeypatch) -> None:
    """A batch whose needed columns are never stored as msgpack strings is unpacked with its
    strings left as bytes (`RowDecoder.text` False); the values read are the full decode's."""
    db = Database.open(":memory:")
    s = Session(db)
    try:
        s.execute("CREATE TABLE w (id INT PRIMARY KEY, name TEXT, i INT, f FLOAT, d DECIMAL(10,2), b BOOL, "
                  "y BYTEA, dt DATE, ts TIMESTAMP, tm TIME, iv INTERVAL, u UUID, tags TEXT[])")
        for i in range(1, 300):
            s.execute(
                "INSERT INTO w VALUES (?, ?, ?, ?, ?, ?, ?, DATE '2024-01-01' + ?, "
                "TIMESTAMP '2024-01-01 10:00:00' + INTERVAL '1 hour' * ?, TIME '10:00:00', "
                "INTERVAL '1 day' * ?, '00000000-0000-0000-0000-0000000000' || lpad(CAST(? AS TEXT), 2, '0'), "
                "ARRAY['é', ?])",
                (i, None if i % 7 == 0 else f"ñame-{i}", i * 3, i / 4, i + 0.25, i % 2 == 0, bytes([i % 256]) * 3,
                 i % 30, i, i, i % 100, f"t{i}"))
        flags: list[bool] = []

        def spy(datas, ids, text=True):
            flags.append(text)
            return decode_columns(datas, ids, text)

        monkeypatch.setattr(codec_module, "decode_columns", spy)
        everything = s.execute("SELECT * FROM w").fetchall()
        assert flags and all(flags)
        flags.clear()
        untexted = "id, i, f, d, b, y, dt, ts, tm, iv, u"
        got = s.execute(f"SELECT {untexted} FROM w").fetchall()
        assert flags and not any(flags)
        assert [tuple(r) for r in got] == [tuple(r[:1]) + tuple(r[2:12]) for r in everything]
        assert s.execute("SELECT sum(i), count(y), max(dt) FROM w WHERE f > 10").fetchall() == \
            s.execute("SELECT sum(i), count(y), max(dt) FROM w WHERE f > 10 AND name IS NULL OR f > 10 "
                      "AND name IS NOT NULL").fetchall()
    finally:
        s.close()
        db.close()
