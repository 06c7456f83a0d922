"""The sqlkv_internal figure tables, each checked against a workload whose effect is known."""

from __future__ import annotations

import json

import pytest

from sqlkv.cli.stats import run as stats_main
from sqlkv.encoding.keys import index_prefix
from sqlkv.errors import ProgrammingError, SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.sql.stmtstats import normalize
from sqlkv.sql.parse import parse_statement
from sqlkv.storage.kv import prefix_end

TABLES = ["engine_stats", "latencies", "compactions", "statement_stats", "table_stats", "transactions",
          "hot_ranges"]


@pytest.fixture(params=["memory", "lsm"])
def db(request, tmp_path):
    path = ":memory:" if request.param == "memory" else str(tmp_path / "db")
    database = Database.open(path)
    yield database
    database.close()


@pytest.fixture
def lsm(tmp_path):
    database = Database.open(str(tmp_path / "db"))
    yield database
    database.close()


def figure(session, name: str):
    rows = session.execute("SELECT value FROM sqlkv_internal.engine_stats WHERE name = ?", (name,)).fetchall()
    assert len(rows) == 1, name
    return rows[0][0]


def test_every_table_answers_any_sql(db) -> None:
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    for table in TABLES:
        count = s.execute(f"SELECT count(*) FROM sqlkv_internal.{table}").fetchall()[0][0]
        assert count >= 0
    rows = s.execute("SELECT name FROM sqlkv_internal.engine_stats WHERE name LIKE 'txn.%' ORDER BY name").fetchall()
    assert ("txn.commits",) in rows


@pytest.mark.parametrize("table", TABLES)
def test_figure_tables_are_read_only(table: str) -> None:
    s = Session(Database.open(":memory:"))
    name = f"sqlkv_internal.{table}"
    for sql in (f"INSERT INTO {name} SELECT * FROM {name}", f"DELETE FROM {name}",
                f"UPDATE {name} SET {s.execute(f'SELECT * FROM {name}').columns[0].name} = NULL",
                f"DROP TABLE {name}", f"CREATE INDEX x ON {name} ({s.execute(f'SELECT * FROM {name}').columns[0].name})",
                f"ALTER TABLE {name} ADD COLUMN z INT", f"CREATE TABLE {name} (a INT PRIMARY KEY)"):
        with pytest.raises(ProgrammingError, match=name.split(".")[1] + "|reserved"):
            s.execute(sql)


@pytest.mark.parametrize("spelling", ['"sqlkv_internal"."{t}"', 'sqlkv_internal."{t}"', 'SQLKV_INTERNAL.{T}'])
def test_figure_tables_are_read_only_however_spelled(spelling: str) -> None:
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    s.execute("INSERT INTO t VALUES (1, 'a')")
    for table in TABLES:
        name = spelling.format(t=table, T=table.upper())
        column = s.execute(f"SELECT * FROM {name}").columns[0].name
        for sql in (f"INSERT INTO {name} ({column}) VALUES (NULL)", f"UPDATE {name} SET {column} = NULL",
                    f"DELETE FROM {name} WHERE true", f"TRUNCATE {name}", f"DROP TABLE IF EXISTS {name}",
                    f"DROP VIEW {name}", f"CREATE INDEX x ON {name} ({column})",
                    f"ALTER TABLE {name} RENAME TO mine", f"ALTER TABLE {name} DROP COLUMN {column}",
                    f"CREATE TABLE {name} (a INT PRIMARY KEY)", f"CREATE VIEW {name} AS SELECT 1"):
            with pytest.raises(ProgrammingError, match=f"(?i){table}"):
                s.execute(sql)
        # reading them inside DML is fine, and changes only the target
        s.execute(f"UPDATE t SET v = 'b' FROM (SELECT count(*) AS n FROM {name}) x WHERE x.n >= 0")
    assert s.execute("SELECT v FROM t").fetchall() == [("b",)]
    assert s.execute("SELECT count(*) FROM sqlkv_internal.engine_stats").fetchall()[0][0] > 0


def test_absent_key_lookups_raise_bloom_useful(lsm) -> None:
    s = Session(lsm)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    s.executemany("INSERT INTO t VALUES (?, 'x')", [(i,) for i in range(0, 2000, 2)])
    lsm.engine.flush()
    s.execute("SELECT * FROM t WHERE id = 1").fetchall()  # plan and descriptors cached
    useful, false_pos = figure(s, "bloom_useful"), figure(s, "bloom_false_positives")
    n = 300
    for i in range(3, 2 * n + 3, 2):
        assert s.execute("SELECT * FROM t WHERE id = ?", (i,)).fetchall() == []
    gained = figure(s, "bloom_useful") - useful
    assert gained + figure(s, "bloom_false_positives") - false_pos == n
    assert gained >= 0.9 * n
    useful, false_pos = figure(s, "bloom_useful"), figure(s, "bloom_false_positives")
    assert figure(s, "bloom_false_positive_rate") == pytest.approx(false_pos / (useful + false_pos), abs=1e-4)
    lsm.close()
    lsm = Database.open(lsm.path)  # bloom counts persist across a restart
    try:
        assert figure(Session(lsm), "bloom_useful") == useful
    finally:
        lsm.close()


def test_forced_compaction_appears_in_compactions(lsm) -> None:
    s = Session(lsm)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    for round_ in range(3):
        s.executemany("INSERT INTO t VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
                      [(i, round_) for i in range(300)])
        lsm.engine.flush()
    assert s.execute("SELECT count(*) FROM sqlkv_internal.compactions").fetchall() == [(0,)]
    lsm.engine.compact()
    rows = s.execute("SELECT kind, level, output_level, input_files, input_bytes, output_bytes "
                     "FROM sqlkv_internal.compactions ORDER BY started").fetchall()
    assert len(rows) == figure(s, "compactions") >= 1
    kind, level, output_level, inputs, in_bytes, out_bytes = rows[0]
    assert (kind, level) == ("merge", 0) and output_level >= 1 and inputs >= 3
    assert 0 < out_bytes < in_bytes
    started, since = s.execute("SELECT started, since FROM sqlkv_internal.compactions").fetchall()[0]
    assert since <= started  # the log lists the compactions since this open


def test_statement_stats_count_executions_rows_and_kv(db) -> None:
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i % 3) for i in range(50)])
    for i in range(7):
        assert len(s.execute("SELECT * FROM t WHERE id = ?", (i * 10,)).fetchall()) == (1 if i < 5 else 0)
    s.execute("SELECT id FROM t WHERE v = 1").fetchall()
    s.execute("SELECT id FROM t WHERE v = 2").fetchall()
    with pytest.raises(Exception):
        s.execute("INSERT INTO t VALUES (1, 1)")
    rows = {r[0]: r[1:] for r in s.execute(
        "SELECT statement, count, errors, rows, kv_gets, kv_scans, kv_keys_read, kv_puts, retries "
        "FROM sqlkv_internal.statement_stats").fetchall()}
    assert rows["SELECT * FROM t WHERE id = ?"] == (7, 0, 5, 7, 0, 0, 0, 0)
    count, errors, nrows, gets, scans, keys, puts, retries = rows["SELECT id FROM t WHERE v = ?"]
    assert (count, errors, nrows, scans, keys, puts) == (2, 0, 33, 2, 100, 0)  # two full scans of 50 rows
    # executemany (one execution of 50 rows) and the duplicate, one text once normalized
    assert rows["INSERT INTO t VALUES (?, ...)"][:3] == (2, 1, 50)
    assert rows["INSERT INTO t VALUES (?, ...)"][6] == 51  # the failed insert buffered one put, undone
    latency = s.execute("SELECT total_ms, mean_ms, p50_ms, p99_ms, max_ms FROM sqlkv_internal.statement_stats "
                        "WHERE statement = 'SELECT * FROM t WHERE id = ?'").fetchall()[0]
    total, mean, p50, p99, high = latency
    assert 0 < p50 <= p99 <= high <= total
    since, last_run = s.execute("SELECT since, last_run FROM sqlkv_internal.statement_stats "
                                "WHERE statement = 'SELECT * FROM t WHERE id = ?'").fetchall()[0]
    assert since <= last_run
    assert mean == pytest.approx(total / 7, rel=1e-3)


def test_serialization_failure_appears_with_its_conflicting_span(db) -> None:
    s1, s2 = Session(db), Session(db)
    s1.execute("CREATE TABLE acct (id INT PRIMARY KEY, balance INT)")
    s1.execute("INSERT INTO acct VALUES (1, 100), (2, 50)")
    s1.execute("BEGIN")
    assert s1.execute("SELECT balance FROM acct WHERE id = 1").fetchall() == [(100,)]
    s1.execute("UPDATE acct SET balance = 0 WHERE id = 2")
    open_rows = s2.execute("SELECT txn_id, read_only, reads, writes FROM sqlkv_internal.transactions "
                           "WHERE state = 'open' AND NOT read_only").fetchall()
    assert len(open_rows) == 1 and open_rows[0][3] == 1  # s1's one buffered write
    s2.execute("UPDATE acct SET balance = 200 WHERE id = 1")
    with pytest.raises(SerializationFailure):
        s1.execute("COMMIT")
    rows = s2.execute("SELECT conflict_key, conflict_span, reason, conflict_seq > snapshot_seq "
                      "FROM sqlkv_internal.transactions WHERE state = 'serialization failure'").fetchall()
    assert rows == [("/acct/acct_pkey/1/0", "/acct/acct_pkey/1/0", "read conflicts with a write", True)]
    assert s2.execute("SELECT retries, errors FROM sqlkv_internal.statement_stats WHERE statement = 'COMMIT'"
                      ).fetchall() == [(1, 1)]
    assert figure(s2, "txn.aborts") == 1


def test_scan_conflict_names_the_scanned_span(db) -> None:
    s1, s2 = Session(db), Session(db)
    s1.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s1.execute("INSERT INTO t VALUES (1, 1), (5, 5)")
    s1.execute("BEGIN")
    assert s1.execute("SELECT count(*) FROM t").fetchall() == [(2,)]
    s1.execute("INSERT INTO t VALUES (9, 9)")
    s2.execute("INSERT INTO t VALUES (3, 3)")
    with pytest.raises(SerializationFailure):
        s1.execute("COMMIT")
    key, span = s2.execute("SELECT conflict_key, conflict_span FROM sqlkv_internal.transactions "
                           "WHERE state = 'serialization failure'").fetchall()[0]
    assert key == "/t/t_pkey/3/0"
    assert span == "/t/t_pkey"  # the whole-table scan that met the insert


def test_table_stats_keys_reads_writes(db) -> None:
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s.execute("CREATE INDEX t_v ON t (v)")
    s.execute("CREATE TABLE u (id INT PRIMARY KEY)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(400)])
    s.execute("INSERT INTO u VALUES (1)")
    if db.path != ":memory:":
        db.engine.flush()
    for i in range(20):
        s.execute("SELECT v FROM t WHERE id = ?", (i,)).fetchall()
    s.execute("SELECT id FROM t WHERE v < 10").fetchall()
    rows = {(r[0], r[1]): r[2:] for r in s.execute(
        "SELECT table_name, index_name, keys, reads, writes, key_span FROM sqlkv_internal.table_stats").fetchall()}
    keys, reads, writes, span = rows[("t", "t_pkey")]
    assert writes == 400 and span == "/t/t_pkey"
    assert reads == 400 + 20  # the inserts' uniqueness checks, then the point reads
    assert rows[("t", "t_v")][1:3] == (10, 400)  # one scan of 10 index entries; 400 entries written
    assert rows[("u", "u_pkey")][2] == 1
    sizes = dict(s.execute("SELECT index_name, bytes FROM sqlkv_internal.table_stats").fetchall())
    assert 0 < sizes["u_pkey"] < sizes["t_v"] < sizes["t_pkey"]  # one key < 400 entries < 400 rows
    if db.path == ":memory:":
        assert keys == 400 and rows[("t", "t_v")][0] == 400 and rows[("u", "u_pkey")][0] == 1
        prefix = index_prefix(_table_id(s, "t"), 1)
        assert sizes["t_pkey"] == sum(len(k) + len(v) for k, v in db.engine.scan(prefix, prefix_end(prefix)))
    else:
        assert abs(keys - 400) <= 40 and rows[("u", "u_pkey")][0] == 1
    only = s.execute("SELECT index_name FROM sqlkv_internal.table_stats WHERE table_name = 'u'").fetchall()
    assert only == [("u_pkey",)]


def _table_id(session, name: str) -> int:
    return session.execute("SELECT id FROM sqlkv_internal.namespace WHERE name = ?", (name,)).fetchall()[0][0]


def test_hot_ranges_rank_the_busiest_index_first(db) -> None:
    s = Session(db)
    s.execute("CREATE TABLE cold (id INT PRIMARY KEY)")
    s.execute("CREATE TABLE hot (id INT PRIMARY KEY)")
    s.executemany("INSERT INTO cold VALUES (?)", [(i,) for i in range(5)])
    s.executemany("INSERT INTO hot VALUES (?)", [(i,) for i in range(100)])
    for i in range(50):
        s.execute("SELECT * FROM hot WHERE id = ?", (i,)).fetchall()
    rows = s.execute("SELECT key_span, table_name, reads, writes FROM sqlkv_internal.hot_ranges").fetchall()
    assert rows[0] == ("/hot/hot_pkey", "hot", 150, 100)
    assert ("/cold/cold_pkey", "cold", 5, 5) in rows
    table_id = _table_id(s, "cold")
    s.execute("DROP TABLE cold")
    rows = s.execute("SELECT key_span, table_name, index_name, reads FROM sqlkv_internal.hot_ranges "
                     "WHERE reads = 5").fetchall()
    assert rows == [(f"/Table/{table_id}/1", None, None, 5)]


def test_hot_ranges_forget_reads_older_than_the_window(db, monkeypatch) -> None:
    import time

    import sqlkv.txn.figures as figures

    s = Session(db)
    s.execute("CREATE TABLE old (id INT PRIMARY KEY)")
    s.execute("CREATE TABLE new (id INT PRIMARY KEY)")
    s.executemany("INSERT INTO old VALUES (?)", [(i,) for i in range(10)])
    monkeypatch.setattr(figures, "WINDOW_SECONDS", 0.05)
    for _ in range(2):  # two window marks after the reads of old: they fall out of the ranking
        time.sleep(0.06)
        s.execute("SELECT count(*) FROM sqlkv_internal.hot_ranges").fetchall()
    s.executemany("INSERT INTO new VALUES (?)", [(i,) for i in range(3)])
    names = [r[0] for r in s.execute("SELECT table_name FROM sqlkv_internal.hot_ranges").fetchall()]
    assert "new" in names and "old" not in names
    totals = dict(s.execute("SELECT table_name, writes FROM sqlkv_internal.table_stats").fetchall())
    assert totals == {"old": 10, "new": 3}  # table_stats keeps counting since the open


def test_counters_persist_and_say_since_when(tmp_path) -> None:
    path = str(tmp_path / "db")
    db = Database.open(path)
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1)")
    written, since = s.execute("SELECT value, since FROM sqlkv_internal.engine_stats "
                               "WHERE name = 'user_bytes_written'").fetchall()[0]
    db.close()
    db = Database.open(path)
    try:
        s = Session(db)
        again, since_again = s.execute("SELECT value, since FROM sqlkv_internal.engine_stats "
                                       "WHERE name = 'user_bytes_written'").fetchall()[0]
        assert (again, since_again) == (written, since) and written > 0
        cache_since = s.execute("SELECT since FROM sqlkv_internal.engine_stats "
                                "WHERE name = 'block_cache.hits'").fetchall()[0][0]
        assert cache_since > since  # per-process figures count from this open
    finally:
        db.close()


def test_latencies_table(lsm) -> None:
    s = Session(lsm)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    for i in range(5):
        s.execute("INSERT INTO t VALUES (?)", (i,))
    rows = {r[0]: r[1:] for r in s.execute("SELECT * FROM sqlkv_internal.latencies").fetchall()}
    assert set(rows) == {"commit", "get", "scan", "flush", "wal_fsync"}
    count, mean, p50, p90, p99, high, _since, note = rows["commit"]
    assert count == 6 and note is None  # CREATE TABLE and five INSERTs
    assert p50 <= p90 <= p99 <= high
    assert rows["wal_fsync"][0] >= 6
    assert rows["flush"][0] == 0 and rows["flush"][1] is None  # nothing flushed yet: no figures
    lsm.engine.flush()
    assert latency(s, "flush")[0] == 1
    s.execute("SELECT * FROM t WHERE id = 1").fetchall()  # plan and descriptors cached
    gets, scans = latency(s, "get")[0], latency(s, "scan")[0]
    for i in range(16 * 4):  # one get in SAMPLE_EVERY (16) is timed
        s.execute("SELECT * FROM t WHERE id = ?", (i % 5,)).fetchall()
    for _ in range(3):
        s.execute("SELECT count(*) FROM t WHERE id > 1").fetchall()
    assert latency(s, "get")[0] - gets == 4
    assert latency(s, "scan")[0] - scans >= 3
    assert "one get in 16" in latency(s, "get")[-1]


def latency(session, operation: str) -> tuple:
    return session.execute("SELECT count, p50_ms, p99_ms, max_ms, note FROM sqlkv_internal.latencies "
                           "WHERE operation = ?", (operation,)).fetchall()[0]


def test_figures_an_engine_lacks_say_so() -> None:
    s = Session(Database.open(":memory:"))
    rows = dict(s.execute("SELECT name, text FROM sqlkv_internal.engine_stats WHERE value IS NULL").fetchall())
    for name in ("levels", "write_amplification", "bloom_useful", "bloom_false_positive_rate",
                 "block_cache.hits", "pending_compaction_bytes", "write_stall_seconds", "memtable_bytes"):
        assert rows[name] == "not applicable: the memory engine does not keep this figure"
    notes = dict(s.execute("SELECT operation, note FROM sqlkv_internal.latencies WHERE count IS NULL").fetchall())
    assert set(notes) == {"get", "scan", "flush", "wal_fsync"}
    assert notes["flush"] == "not applicable: the memory engine does not time flush"


def test_lsm_figures_follow_a_known_workload(tmp_path) -> None:
    """Levels, memtable, flush/compaction bytes, amplification, pending compaction bytes, stalls."""
    db = Database.open(str(tmp_path / "db"), background_threads=False, l0_trigger=2, l0_slowdown=2)
    try:
        s = Session(db)
        s.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        levels = int(figure(s, "levels"))
        assert levels >= 2 and figure(s, "level.0.files") == 0 and figure(s, f"level.{levels - 1}.files") == 0
        empty_mem = figure(s, "memtable_bytes")
        s.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 100) for i in range(200)])
        assert figure(s, "memtable_bytes") - empty_mem >= 200 * 100
        db.engine.flush()
        assert figure(s, "memtable_bytes") < 200 * 100 and figure(s, "flushes") == 1
        assert figure(s, "immutable_memtables") == 0 and figure(s, "immutable_memtable_bytes") == 0
        assert figure(s, "level.0.files") == 1 and figure(s, "level.0.bytes") > 0
        assert figure(s, "pending_compaction_bytes") == 0  # one L0 table, below the trigger of 2
        s.executemany("INSERT INTO t VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
                      [(i, "y" * 100) for i in range(200)])
        db.engine.flush()
        assert figure(s, "level.0.files") == 2
        assert figure(s, "pending_compaction_bytes") == figure(s, "level.0.bytes") > 0  # at the trigger
        # L0 at the slowdown threshold (2): the next write is delayed, and the delay is counted
        stalls, stalled = figure(s, "write_stalls"), figure(s, "write_stall_seconds")
        s.execute("INSERT INTO t VALUES (1000, 'z')")
        assert figure(s, "write_stalls") == stalls + 1 and figure(s, "write_stall_seconds") > stalled
        user, flushed = figure(s, "user_bytes_written"), figure(s, "flush_bytes_written")
        assert figure(s, "write_amplification") == pytest.approx(flushed / user, abs=1e-3)
        db.engine.compact()
        assert figure(s, "level.0.files") == 0 and figure(s, "compactions") >= 1
        compacted = figure(s, "compaction_bytes_written")
        assert compacted > 0
        assert figure(s, "write_amplification") == pytest.approx(
            (figure(s, "flush_bytes_written") + compacted) / figure(s, "user_bytes_written"), abs=1e-3)
        total = sum(figure(s, f"level.{i}.bytes") for i in range(levels))
        assert figure(s, "total_bytes") == total
        assert figure(s, "space_amplification") == pytest.approx(total / figure(s, "live_bytes_estimate"), abs=1e-3)
    finally:
        db.close()


def test_block_cache_and_read_amplification_follow_gets(tmp_path) -> None:
    path = str(tmp_path / "db")
    db = Database.open(path)
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 50) for i in range(500)])
    db.engine.flush()  # the rows in one table file
    db.close()
    db = Database.open(path)
    try:
        s = Session(db)
        s.execute("SELECT v FROM t WHERE id = 1").fetchall()  # descriptors and plan cached, block read
        hits, misses = figure(s, "block_cache.hits"), figure(s, "block_cache.misses")
        gets, probed = figure(s, "gets_reaching_tables"), figure(s, "tables_probed")
        for _ in range(10):
            assert s.execute("SELECT v FROM t WHERE id = 1").fetchall() == [("x" * 50,)]
        assert figure(s, "block_cache.misses") == misses  # the block is cached now
        assert figure(s, "block_cache.hits") - hits >= 10
        assert figure(s, "gets_reaching_tables") - gets == 10
        assert figure(s, "tables_probed") - probed == 10  # one table file: one probe per get
        assert figure(s, "read_amplification") == pytest.approx(
            figure(s, "tables_probed") / figure(s, "gets_reaching_tables"), abs=1e-3)
    finally:
        db.close()


def test_explain_analyze_times_operators() -> None:
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i % 5) for i in range(100)])
    lines = [r[0] for r in s.execute("EXPLAIN ANALYZE SELECT v, count(*) FROM t GROUP BY v ORDER BY v").fetchall()]
    assert all(" time=" in line for line in lines)
    scan = next(line for line in lines if line.lstrip().startswith("scan t@t_pkey"))
    assert "rows=100 " in scan and "kv_scans=1 kv_keys=100 rows/batch=100.0" in scan
    times = [float(line.split(" time=")[1].split("ms")[0]) for line in lines[:-1]]
    assert times == sorted(times, reverse=True)  # inclusive: a parent's time covers its child's


def explain_lines(session, sql: str) -> list[str]:
    return [r[0] for r in session.execute("EXPLAIN ANALYZE " + sql).fetchall()]


def line_of(lines: list[str], start: str) -> str:
    return next(line for line in lines if line.lstrip().startswith(start))


def test_explain_analyze_lookup_join_shows_its_own_kv_requests() -> None:
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT)")
    s.execute("CREATE TABLE b (id INT PRIMARY KEY, aid INT)")
    s.execute("CREATE INDEX b_aid ON b (aid)")
    s.executemany("INSERT INTO a VALUES (?, ?)", [(i, i % 7) for i in range(70)])
    s.executemany("INSERT INTO b VALUES (?, ?)", [(i, i % 10) for i in range(30)])  # 3 rows per aid < 10
    lines = explain_lines(s, "SELECT a.id, b.id FROM a JOIN b ON a.id = b.aid WHERE a.v = 3")
    join = line_of(lines, "lookup join")
    # a.v = 3 keeps 10 rows of a (ids 3, 10, ..., 66); only a.id = 3 has rows in b: 3 of them
    assert "rows=3 " in join
    assert "kv_scans=10 " in join  # one index scan of b_aid per row of a that reached the join
    assert "kv_gets=3 " in join  # one primary-key get per index entry found
    scan = line_of(lines, "scan a@a_pkey")
    assert "kv_scans=1 kv_keys=70 " in scan
    assert lines[-1].endswith("kv_gets=3 kv_scans=11 kv_keys=76 kv_puts=0")  # 70 + 3 entries + 3 rows


def test_explain_analyze_dml_lines_show_rows_time_and_puts() -> None:
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s.execute("CREATE INDEX t_v ON t (v)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(20)])
    update = explain_lines(s, "UPDATE t SET v = v + 100 WHERE id < 5")
    assert "rows=5 " in update[0] and " time=" in update[0]
    assert update[0].endswith("kv_puts=15)")  # 5 rows, and per row one index entry deleted, one put
    assert update[-1].endswith("kv_puts=15")
    insert = explain_lines(s, "INSERT INTO t SELECT id + 100, v FROM t WHERE id < 3")
    assert "rows=3 " in insert[0] and "kv_puts=6" in insert[0]
    assert "rows=3 " in line_of(insert, "project")  # the INSERT's source is timed too
    delete = explain_lines(s, "DELETE FROM t WHERE id >= 100")
    assert "rows=3 " in delete[0] and "kv_puts=6" in delete[0]
    assert s.execute("SELECT count(*) FROM t").fetchall() == [(20,)]  # ANALYZE really ran them


def test_explain_analyze_subquery_lines_have_figures() -> None:
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    s.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(10)])
    lines = explain_lines(s, "SELECT id FROM t WHERE id IN (SELECT v FROM t WHERE v < 4)")
    assert all(" time=" in line for line in lines if not line.lstrip().startswith(("subquery", "total")))
    sub = lines[lines.index(next(x for x in lines if x.lstrip().startswith("subquery"))) + 1:]
    assert "rows=4 " in sub[0]


def test_normalize_a_command_the_tokenizer_keeps_whole() -> None:
    """EXPLAIN and SHOW reach the tokenizer as a word and one string holding the rest: the rest
    is normalized as a statement (its literals, not its last character, become ``?``)."""
    assert normalize("EXPLAIN SELECT * FROM t WHERE id IN (1, 2, 3)") == "EXPLAIN SELECT * FROM t WHERE id IN (?, ...)"
    assert normalize("EXPLAIN ANALYZE  SELECT 'a' FROM t") == "EXPLAIN ANALYZE SELECT ? FROM t"
    assert normalize("SHOW COLUMNS FROM users") == "SHOW COLUMNS FROM users"
    assert normalize("SHOW t") == "SHOW t"


def test_normalize() -> None:
    assert normalize("SELECT * FROM t WHERE a = 'it''s'  AND b IN (1, 2.5, -3);") == \
        "SELECT * FROM t WHERE a = ? AND b IN (?, ...)"
    assert normalize("INSERT INTO t VALUES (1, x'ab')") == "INSERT INTO t VALUES (?, ...)"
    assert normalize("SELECT ? + 1") == "SELECT ? + ?"


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t WHERE a = 'it''s'  AND b IN (1, 2.5, -3);",
    "  ;; INSERT INTO t VALUES (1, x'ab') ;",
    "SELECT ? + 1 -- a comment 5\n",
    "UPDATE t SET v = 'q' || 'x' WHERE id = -7",
    "EXPLAIN SELECT count(*) FROM t WHERE id IN (1, 2, 3)",
    "EXPLAIN ANALYZE SELECT a FROM t WHERE a = 'x'",
    "SHOW COLUMNS FROM t",
])
def test_the_parser_normalizes_as_the_statistics_do(sql) -> None:
    """The normalized text the parser makes from its tokens is `normalize` of the statement's
    text, and the statistics entry the statement counts into is keyed by it."""
    stmt = parse_statement(sql)
    assert stmt.normalized == normalize(stmt.sql)
    s = Session(Database.open(":memory:"))
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a TEXT, b FLOAT, v TEXT)")
    try:
        result = s.execute(sql, (1,) if "?" in sql else ())
        if result.columns is not None:
            result.fetchall()  # a result's figures are recorded once its rows are read
    except Exception:  # noqa: BLE001 - a failing statement is counted too
        pass
    statements = [r[0] for r in s.execute("SELECT statement FROM sqlkv_internal.statement_stats")]
    assert stmt.normalized in statements


def test_sqlkv_stats_command(tmp_path, capsys) -> None:
    path = str(tmp_path / "db")
    db = Database.open(path)
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    s.execute("INSERT INTO t VALUES (1), (2)")
    db.engine.compact()
    db.close()
    assert stats_main([path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"engine", "latencies", "compactions", "statements", "tables", "transactions", "hot"}
    engine = {r["name"]: r["value"] for r in doc["engine"]}
    assert engine["engine"] == "lsm" and engine["flushes"] >= 1 and isinstance(engine["flushes"], int)
    assert [r["keys"] for r in doc["tables"] if r["table_name"] == "t"] == [2]
    assert stats_main([path, "--section", "engine"]) == 0
    assert "user_bytes_written" in capsys.readouterr().out
    assert stats_main([str(tmp_path / "nope")]) == 1
    assert "no such database" in capsys.readouterr().err


def test_a_recording_engine_passes_the_figures_through(tmp_path) -> None:
    from sqlkv.storage.lsm import open_lsm
    from sqlkv.storage.recording import RecordingEngine

    db = Database(str(tmp_path), RecordingEngine(open_lsm(str(tmp_path / "db"))), None)
    try:
        s = Session(db)
        s.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        s.execute("INSERT INTO t VALUES (1), (2)")
        db.engine.compact()
        notes = dict(s.execute("SELECT operation, note FROM sqlkv_internal.latencies").fetchall())
        assert not any((note or "").startswith("not applicable") for note in notes.values())
        assert s.execute("SELECT count(*) > 0 FROM sqlkv_internal.compactions").fetchall() == [(True,)]
        assert s.execute("SELECT keys FROM sqlkv_internal.table_stats").fetchall() == [(2,)]
    finally:
        db.close()
