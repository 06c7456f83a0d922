"""Table statistics (ANALYZE, system table 6, SHOW STATISTICS) and the join method they choose:
figures compared with sqlite3's counts, the transaction rules, durability, the plan through
EXPLAIN, and answers of both join methods compared with sqlite3 on random data (NULL keys,
duplicates, outer joins, stale statistics)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.catalog.catalog import Catalog
from sqlkv.catalog.statistics import statistics_key
from sqlkv.errors import ProgrammingError
from sqlkv.sql import Database, Session
from sqlkv.sql.analyze import DistinctSketch
from sqlkv.sql.exec import hash_spill
from sqlkv.sql.exec import join as join_module
from sqlkv.sql.plan import estimates
from tests.sql.core_support import ENGINES, open_db

SCHEMA = [
    "CREATE TABLE c (id INT PRIMARY KEY, tier INT, name TEXT)",
    "CREATE TABLE o (id INT PRIMARY KEY, cid INT, k2 INT, amount INT)",
    "CREATE INDEX o_cid ON o (cid, k2)",
]


def _load(sessions, customers: int, orders: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    crows = [(i, i % 3, f"n{i}") for i in range(1, customers + 1)]
    orows = [(i, rng.choice([None, *range(1, customers + 1)]) if rng.random() < 0.9 else None,
              rng.randrange(4), rng.randrange(1000)) for i in range(1, orders + 1)]
    for s in sessions:
        s.executemany("INSERT INTO c VALUES (?, ?, ?)", crows)
        s.executemany("INSERT INTO o VALUES (?, ?, ?, ?)", orows)


@pytest.fixture(params=ENGINES)
def pair(request, tmp_path):
    """A session and a sqlite3 connection with the same (empty) tables."""
    db = open_db(request.param, tmp_path)
    s, lite = Session(db), sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql.replace(" INT", " INTEGER"))
    yield s, lite
    s.close()
    db.close()


def _plan(s: Session, sql: str, params=()) -> str:
    return "\n".join(r[0] for r in s.execute("EXPLAIN " + sql, params).fetchall())


def _stats(s: Session, table: str) -> list[tuple]:
    return s.execute(f"SHOW STATISTICS FOR TABLE {table}").fetchall()


# -- the figures ------------------------------------------------------------------------------

def test_analyze_counts_rows_distinct_prefixes_and_nulls_like_sqlite(pair) -> None:
    s, lite = pair
    _load([s, lite], 50, 700)
    s.execute("ANALYZE o")
    got = {(r[0], r[1]): r[2:5] for r in _stats(s, "o")}
    rows = lite.execute("SELECT count(*) FROM o").fetchone()[0]
    cid_distinct = lite.execute("SELECT count(DISTINCT cid) + (count(*) > count(cid)) FROM o").fetchone()[0]
    pair_distinct = lite.execute("SELECT count(*) FROM (SELECT DISTINCT cid, k2 FROM o)").fetchone()[0]
    nulls = lite.execute("SELECT count(*) FROM o WHERE cid IS NULL").fetchone()[0]
    assert nulls > 0  # the data has NULL keys, which count as one distinct value
    # the columns no index leads: distinct values from a sketch, exact below 256 of them
    amount = got.pop(("amount", None))
    amounts = lite.execute("SELECT count(DISTINCT amount) FROM o").fetchone()[0]
    assert amounts > 256 and amount[0] == rows and amount[2] == 0
    assert abs(amount[1] - amounts) <= 0.2 * amounts, (amount, amounts)
    assert got == {("id", "o_pkey"): (rows, rows, 0),
                   ("cid", "o_cid"): (rows, cid_distinct, nulls),
                   ("cid, k2", "o_cid"): (rows, pair_distinct, None),
                   ("k2", None): (rows, 4, 0)}
    assert _stats(s, "c") == []  # only the table named was analyzed


def test_analyze_alone_covers_every_table_and_families_count_once(pair) -> None:
    s, lite = pair
    s.execute("CREATE TABLE f (id INT PRIMARY KEY, a INT, b TEXT, FAMILY f1 (b))")
    s.executemany("INSERT INTO f VALUES (?, ?, ?)", [(i, i, "x" if i % 2 else None) for i in range(40)])
    _load([s, lite], 5, 30)
    s.execute("ANALYSE")  # PostgreSQL's other spelling
    names = {r[0] for r in s.execute("SELECT DISTINCT table_name FROM sqlkv_internal.table_statistics").fetchall()}
    assert names == {"c", "o", "f"}
    assert _stats(s, "f")[0][:4] == ("id", "f_pkey", 40, 40)  # two keys for odd rows, one row each


def test_analyze_refusals_name_what_is_wrong(pair) -> None:
    s, _ = pair
    with pytest.raises(ProgrammingError, match='"nope" does not exist'):
        s.execute("ANALYZE nope")
    with pytest.raises(ProgrammingError, match="at most one table name"):
        s.execute("ANALYZE VERBOSE o")
    with pytest.raises(ProgrammingError, match="at most one table name"):
        s.execute("ANALYZE o (cid)")
    with pytest.raises(ProgrammingError, match="virtual table"):
        s.execute("ANALYZE information_schema.tables")
    with pytest.raises(ProgrammingError, match='"nope" does not exist'):
        s.execute("SHOW STATISTICS FOR TABLE nope")


def test_statistics_are_durable_and_dropped_with_their_table(tmp_path) -> None:
    path = str(tmp_path / "db")
    db = Database.open(path)
    s = Session(db)
    for sql in SCHEMA:
        s.execute(sql)
    _load([s], 10, 100)
    s.execute("ANALYZE")
    before = _stats(s, "o")
    table_id = s.execute("SELECT table_id FROM information_schema.tables WHERE table_name = 'o'").fetchall()[0][0]
    s.close()
    db.close()
    db = Database.open(path)
    s = Session(db)
    assert _stats(s, "o") == before and before
    s.execute("DROP TABLE o")
    txn = db.txn_manager.begin(read_only=True)
    assert txn.get(statistics_key(table_id)) is None
    txn.rollback()
    assert s.execute("SELECT count(*) FROM sqlkv_internal.table_statistics WHERE table_name = 'o'").fetchall() == [(0,)]
    s.close()
    db.close()


def test_analyze_in_a_transaction_reads_committed_rows_and_commits_with_it(pair) -> None:
    s, lite = pair
    _load([s, lite], 5, 20)
    s.execute("BEGIN")
    s.execute("INSERT INTO c VALUES (100, 1, 'uncommitted')")
    s.execute("ANALYZE c")
    assert _stats(s, "c")[0][2] == 5  # the committed rows, not this transaction's insert
    s.execute("ROLLBACK")
    assert _stats(s, "c") == []  # rolled back with the transaction
    s.execute("BEGIN")
    s.execute("ANALYZE c")
    s.execute("COMMIT")
    assert _stats(s, "c")[0][2] == 5


def test_analyze_is_refused_in_the_past(pair) -> None:
    s, _ = pair
    s.execute("BEGIN AS OF SYSTEM TIME '-1us'")
    with pytest.raises(ProgrammingError, match="cannot run ANALYZE in a transaction AS OF SYSTEM TIME"):
        s.execute("ANALYZE")
    s.execute("ROLLBACK")


# -- the plan ----------------------------------------------------------------------------------

JOIN_ALL = "SELECT c.tier, count(*), sum(o.amount) FROM c JOIN o ON o.cid = c.id GROUP BY c.tier"
JOIN_ONE = "SELECT o.id, o.amount FROM c JOIN o ON o.cid = c.id WHERE c.id = ?"


def test_statistics_switch_a_large_join_to_a_hash_join_and_keep_small_ones_lookups(pair) -> None:
    s, lite = pair
    _load([s, lite], 200, 2000)
    # without statistics: the fixed rule (1,000 rows a table) looks every customer up
    assert "lookup join (inner) o@o_cid" in _plan(s, JOIN_ALL)
    s.execute("ANALYZE")  # invalidates the cached plans: the next EXPLAIN plans again
    plan = _plan(s, JOIN_ALL)
    # 200 lookups of ~9 rows (200 x (4 + 9 x 2) = 4,400) against one scan of 2,000 rows
    assert "hash join (inner, build left) on c.id = o.cid [estimated rows" in plan, plan
    assert "cost lookup 4" in plan and "vs hash 20" in plan, plan
    one = _plan(s, JOIN_ONE, (7,))
    assert "lookup join (inner) o@o_cid (cid)" in one and "[estimated rows" in one, one
    for sql, params in ((JOIN_ALL, ()), (JOIN_ONE, (7,))):
        assert sorted(s.execute(sql, params).fetchall()) == sorted(lite.execute(sql, params).fetchall())


def test_a_point_select_reads_no_statistics(pair, monkeypatch) -> None:
    s, lite = pair
    _load([s, lite], 5, 20)
    s.execute("ANALYZE")
    asked: list[int] = []
    original = Catalog.statistics
    monkeypatch.setattr(Catalog, "statistics", lambda self, tid: asked.append(tid) or original(self, tid))
    s.execute("SELECT amount FROM o WHERE id = ?", (3,)).fetchall()
    assert asked == []  # a get by the whole primary key: no estimate to make
    s.execute("SELECT amount FROM o WHERE cid = ?", (3,)).fetchall()
    assert len(asked) == 1  # a choice between o's indexes


# -- answers of both methods against sqlite3 --------------------------------------------------

QUERIES = [
    "SELECT c.id, o.id, o.amount FROM c JOIN o ON o.cid = c.id",
    "SELECT c.id, o.id FROM c LEFT JOIN o ON o.cid = c.id AND o.k2 = 1",
    "SELECT c.id, o.id FROM c JOIN o ON o.cid = c.id AND o.k2 = c.tier WHERE o.amount > 300",
    "SELECT c.tier, count(*), sum(o.amount) FROM c JOIN o ON o.cid = c.id GROUP BY c.tier",
    "SELECT o.id, c.name FROM o LEFT JOIN c ON c.id = o.cid WHERE o.id < 150",
    "SELECT c.id, o.id FROM c JOIN o ON o.cid = c.id WHERE c.tier = 2",
    "SELECT c.id, o.id FROM c JOIN o ON o.cid = c.id WHERE c.id BETWEEN 3 AND 9",
]


@pytest.mark.parametrize("method", ["auto", "lookup", "hash"])
def test_both_join_methods_match_sqlite_on_random_data(pair, monkeypatch, method) -> None:
    s, lite = pair
    rng = random.Random(f"stats-{method}")
    customers = rng.randrange(5, 60)
    _load([s, lite], customers, rng.randrange(50, 400), seed=rng.randrange(1000))
    s.execute("ANALYZE")
    # lookup costs far below/above any scan force one method on every step that has an index
    forced = {"lookup": -1e12, "hash": 1e12}.get(method)
    if forced is not None:
        monkeypatch.setattr(estimates, "PROBE_COST", forced)
        monkeypatch.setattr(estimates, "FETCH_COST", forced)
        s.plans.clear()
    seen = set()
    for sql in QUERIES:
        plan = _plan(s, sql)
        seen.update(word for word in ("lookup join", "hash join") if word in plan)
        assert sorted(s.execute(sql).fetchall(), key=repr) == sorted(lite.execute(sql).fetchall(), key=repr), sql
    if forced is not None:
        assert seen == {f"{method} join"}, seen
    # stale statistics: many more rows than analyzed change nothing in the answers
    more = [(i, rng.choice([None, *range(1, customers + 1)]), rng.randrange(4), rng.randrange(1000))
            for i in range(10_000, 10_600)]
    s.executemany("INSERT INTO o VALUES (?, ?, ?, ?)", more)
    lite.executemany("INSERT INTO o VALUES (?, ?, ?, ?)", more)
    for sql in QUERIES:
        assert sorted(s.execute(sql).fetchall(), key=repr) == sorted(lite.execute(sql).fetchall(), key=repr), sql


# -- the hash join's memory bound ----------------------------------------------------------------

SPILL_QUERIES = [
    "SELECT c.id, o.id, o.amount FROM c JOIN o ON o.k2 = c.tier",
    "SELECT c.id, o.id FROM c LEFT JOIN o ON o.cid = c.tier + 1 AND o.amount > 500",
    "SELECT c.id, o.id FROM c RIGHT JOIN o ON o.cid = c.id AND o.k2 = c.tier",
    "SELECT c.id, o.id FROM c FULL JOIN o ON o.cid = c.id WHERE o.id IS NULL OR o.id < 100",
    "SELECT count(*), sum(o.amount) FROM o JOIN o AS p ON p.k2 = o.k2 AND p.cid = o.cid",
]


@pytest.mark.parametrize("limit", [7, 100_000])
def test_hash_joins_that_spill_to_partitions_match_sqlite(pair, monkeypatch, limit) -> None:
    s, lite = pair
    _load([s, lite], 40, 300, seed=5)
    s.execute("ANALYZE")
    monkeypatch.setattr(estimates, "PROBE_COST", 1e12)  # hash joins wherever there is an equality
    monkeypatch.setattr(estimates, "FETCH_COST", 1e12)
    monkeypatch.setattr(join_module, "HASH_JOIN_MEMORY_ROWS", limit)
    monkeypatch.setattr(hash_spill, "CHUNK_ROWS", 5)  # several pickle records per partition
    spilled: list[str] = []
    original = hash_spill.SpillFiles.__init__
    monkeypatch.setattr(hash_spill.SpillFiles, "__init__",
                        lambda self, name: spilled.append(name) or original(self, name))
    for sql in SPILL_QUERIES:
        assert "hash join" in _plan(s, sql), sql
        got = sorted(s.execute(sql).fetchall(), key=repr)
        assert got == sorted(lite.execute(sql).fetchall(), key=repr), sql
    assert (spilled != []) == (limit == 7)
    # a LIMIT that stops inside the partition pass leaves no file open (anonymous files, closed)
    assert len(s.execute(SPILL_QUERIES[0] + " LIMIT 3").fetchall()) == 3


def test_a_concurrent_analyze_does_not_fail_a_writer_that_planned_with_statistics(pair) -> None:
    s, lite = pair
    _load([s, lite], 20, 200)
    s.execute("ANALYZE")
    other = Session(s.db)
    s.execute("BEGIN")
    s.execute("UPDATE o SET amount = amount + 1 WHERE cid = 3 AND amount > 10")  # planned with o's figures
    other.execute("ANALYZE o")  # commits new figures for o meanwhile
    s.execute("COMMIT")  # the statistics read is in no read set: no serialization failure
    lite.execute("UPDATE o SET amount = amount + 1 WHERE cid = 3 AND amount > 10")
    sql = "SELECT id, amount FROM o ORDER BY id"
    assert s.execute(sql).fetchall() == lite.execute(sql).fetchall()
    other.close()


def test_analyze_handles_desc_partial_expression_and_inverted_indexes(pair) -> None:
    s, lite = pair
    s.execute("CREATE TABLE d (id INT PRIMARY KEY, name TEXT, score INT, tags INT[])")
    s.execute("CREATE INDEX d_score ON d (score DESC, name)")
    s.execute("CREATE INDEX d_some ON d (name) WHERE score > 5")
    s.execute("CREATE INDEX d_lower ON d (lower(name))")
    s.execute("CREATE INVERTED INDEX d_tags ON d (tags)")
    lite.execute("CREATE TABLE d (id INTEGER PRIMARY KEY, name TEXT, score INTEGER)")
    rng = random.Random(3)
    rows = [(i, rng.choice(["Ann", "ann", "Bob", None, "cy"]), rng.choice([None, *range(10)]),
             [rng.randrange(3)]) for i in range(300)]
    s.executemany("INSERT INTO d VALUES (?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO d VALUES (?, ?, ?)", [r[:3] for r in rows])
    s.execute("ANALYZE d")
    got = {(r[1], r[0]): r[2:5] for r in _stats(s, "d")}
    one = lambda sql: lite.execute(sql).fetchone()[0]  # noqa: E731
    some = one("SELECT count(*) FROM d WHERE score > 5")
    assert got == {
        ("d_pkey", "id"): (300, 300, 0),
        ("d_score", "score"): (300, one("SELECT count(DISTINCT coalesce(score, -1)) FROM d"),
                               one("SELECT count(*) FROM d WHERE score IS NULL")),
        ("d_score", "score, name"): (300, one("SELECT count(*) FROM (SELECT DISTINCT score, name FROM d)"), None),
        ("d_some", "name"): (some, one("SELECT count(*) FROM (SELECT DISTINCT name FROM d WHERE score > 5)"),
                             one("SELECT count(*) FROM d WHERE score > 5 AND name IS NULL")),
        ("d_lower", "LOWER(name)"): (300, one("SELECT count(DISTINCT coalesce(lower(name), '-')) FROM d"),
                                     one("SELECT count(*) FROM d WHERE name IS NULL")),
        # columns no index leads (a partial index does not count): sketched, exact when few
        (None, "name"): (300, one("SELECT count(DISTINCT name) FROM d"), one("SELECT count(*) FROM d WHERE name IS NULL")),
        (None, "tags"): (300, len({tuple(r[3]) for r in rows}), 0),
    }  # the inverted index is left out: its entries are elements, not rows


@pytest.mark.parametrize("make", [lambda i: i, lambda i: f"v{i * 7919}", lambda i: float(i) / 3])
def test_distinct_sketch_estimates_many_values_in_bounded_memory(make) -> None:
    sketch = DistinctSketch()
    for rep in range(2):  # every value twice: duplicates change nothing
        for i in range(40_000):
            sketch.add(make(i))
    sketch.add(None)
    assert len(sketch.kept) == DistinctSketch.K and sketch.nulls == 1
    # K = 256 gives a standard error of about 1/sqrt(K - 2) = 6.3%; strings hash differently in
    # every process (PYTHONHASHSEED), so the bound is five standard errors, not a lucky seed's
    assert abs(sketch.estimate() - 40_000) <= 0.32 * 40_000, sketch.estimate()
    few = DistinctSketch()
    for i in range(1000):
        few.add(make(i % 100))
    assert few.estimate() == 100  # exact below K distinct values


def test_distinct_sketch_never_estimates_more_values_than_it_saw() -> None:
    """Every value distinct and just above K: the estimate may overshoot, the count of values
    seen bounds it (an ANALYZE of 1,000 distinct values once said 1,081)."""
    worst = 0
    for offset in range(0, 20_000, 1_000):
        sketch = DistinctSketch()
        for i in range(offset, offset + 1_000):
            sketch.add(i)
        sketch.add(None)
        assert sketch.estimate() <= 1_000
        worst = max(worst, sketch.estimate())
    assert worst >= 900  # still an estimate of the right size
