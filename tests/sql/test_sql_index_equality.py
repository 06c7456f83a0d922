"""Equality reads on secondary indexes and lookup joins through short prefix reads
(`Transaction.read_prefix`, lsm/shortread.py) with the row's key cut from the entry key
(`scan.pk_suffix_prefixes`), on the memory engine and on the LSM with entries spread over its
tables and memtable.

Answers are compared with sqlite3 running the same statements (NULLs, misses, duplicates,
values of other types, own uncommitted writes, a rolled-back transaction), reads in the past
with sqlite's rows of then, and the conflict span a read-write transaction records must be
exactly the index prefix read: a commit into it fails the transaction, one beside it does not."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.errors import SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.storage.kv import prefix_end

SMALL = dict(memtable_size=8192, block_size=512, target_file_size=8192, level_base_bytes=32768,
             l0_trigger=2, background_processes=False)
SCHEMA = [
    "CREATE TABLE o (id INT PRIMARY KEY, cust INT, sku TEXT, q INT, code TEXT)",
    "CREATE INDEX o_cust ON o (cust)",
    "CREATE INDEX o_sku ON o (sku)",
    "CREATE INDEX o_cust_sku ON o (cust DESC, sku)",
    "CREATE UNIQUE INDEX o_code ON o (code)",  # mostly NULL: entries of both forms
    "CREATE TABLE c (id INT PRIMARY KEY, name TEXT)",
]
ROWS = 700
QUERIES = [
    ("SELECT id, q FROM o WHERE cust = ?", lambda r: (r.choice([None, -1, 3.0, 3.5] + list(range(22))),)),
    ("SELECT id, cust, q FROM o WHERE sku = ?",
     lambda r: (r.choice([None, "zz"] + [f"s{i}" for i in range(60)]),)),
    ("SELECT * FROM o WHERE cust = ? AND sku = ?", lambda r: (r.randrange(22), f"s{r.randrange(60)}")),
    ("SELECT id, sku FROM o WHERE code = ?",
     lambda r: (r.choice([None, "k0", "nope"] + [f"k{i}" for i in range(0, ROWS, 9)]),)),
    ("SELECT id, q FROM o WHERE cust = ? LIMIT 2", lambda r: (r.randrange(22),)),
    ("SELECT id, sku FROM o WHERE cust IS NULL", lambda r: ()),
    ("SELECT id FROM o WHERE cust IS NULL AND sku = ?", lambda r: (f"s{r.randrange(60)}",)),
]
FILTERED = [  # not the fast path (a filter above the scan): the scan's batches read the prefixes
    ("SELECT id, q FROM o WHERE cust = ? AND q > 2", lambda r: (r.choice([None, 3.5] + list(range(22))),)),
    ("SELECT id, sku FROM o WHERE cust IN (?, ?) AND sku <> 's1'", lambda r: (r.randrange(22), r.randrange(22))),
    ("SELECT cust, sku FROM o WHERE cust = ? AND sku = ? AND q < 4",
     lambda r: (r.randrange(22), f"s{r.randrange(60)}")),
    ("SELECT o.id, c.name FROM o JOIN c ON c.id = o.cust WHERE o.sku = ?", lambda r: (f"s{r.randrange(60)}",)),
    ("SELECT o.id FROM o WHERE o.sku = ? AND EXISTS (SELECT 1 FROM o o2 WHERE o2.cust = o.cust AND o2.q = ?)",
     lambda r: (f"s{r.randrange(60)}", r.randrange(6))),
]
JOINS = [
    "SELECT c.id, c.name, o.id, o.sku FROM c JOIN o ON o.cust = c.id WHERE c.id BETWEEN ? AND ? AND o.q > 2",
    "SELECT c.id, o.id FROM c LEFT JOIN o ON o.cust = c.id WHERE c.id BETWEEN ? AND ?",
]


def _row(i: int, rng: random.Random) -> tuple:
    return (i, None if i % 13 == 0 else rng.randrange(22), f"s{rng.randrange(60)}", rng.randrange(6),
            f"k{i}" if i % 9 == 0 else None)


@pytest.fixture(params=["memory", "lsm"])
def pair(request, tmp_path):
    path = ":memory:" if request.param == "memory" else str(tmp_path / "db")
    db = Database.open(path, **({} if request.param == "memory" else SMALL))
    s = Session(db)
    lite = sqlite3.connect(":memory:", isolation_level=None)
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    rng = random.Random(5)
    rows = [_row(i, rng) for i in range(ROWS)]
    customers = [(i, f"c{i}") for i in range(-1, 24)]
    for target in (s, lite):
        target.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows[:500])
        target.executemany("INSERT INTO c VALUES (?, ?)", customers)
    if request.param == "lsm":
        db.engine.flush()
        db.engine.compact()  # the first rows in the levels ...
    for target in (s, lite):
        target.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows[500:])  # ... the rest above
        target.execute("UPDATE o SET cust = 3, sku = 's1' WHERE id % 50 = 7")  # versions over versions
        target.execute("DELETE FROM o WHERE id % 61 = 2")
    yield s, lite
    s.close()
    db.close()


def _same(s: Session, lite, sql: str, params: tuple) -> None:
    got = s.execute(sql, params).fetchall()
    want = lite.execute(sql, params).fetchall()
    if "LIMIT" in sql:
        whole = lite.execute(sql.split(" LIMIT")[0], params).fetchall()
        assert len(got) == len(want) and set(got) <= set(whole), (sql, params)
    else:
        assert sorted(got, key=repr) == sorted(want, key=repr), (sql, params)


def _ready(s: Session, sql: str, params: tuple) -> bool:
    """Whether ``sql`` ran by the fast path (rows computed at once)."""
    return s.execute(sql, params).ready is not None


@pytest.mark.parametrize("autocommit", [True, False])
def test_equality_reads_and_joins_match_sqlite(pair, autocommit) -> None:
    s, lite = pair
    s.autocommit = autocommit
    rng = random.Random(8)
    for sql, args in QUERIES + FILTERED:
        for _ in range(40):
            _same(s, lite, sql, args(rng))
        assert _ready(s, sql, args(rng)) == ((sql, args) not in FILTERED), sql
    for sql in JOINS:
        for _ in range(15):
            lo = rng.randrange(-2, 22)
            _same(s, lite, sql, (lo, lo + rng.randrange(6)))
    if not autocommit:
        s.commit()


def test_own_writes_then_rollback(pair) -> None:
    """A transaction reads the index entries it wrote, moved and deleted (and the joins
    see them); after ROLLBACK neither engine has them."""
    s, lite = pair
    reads = [("SELECT id, q FROM o WHERE cust = ?", (3,)), ("SELECT id, cust FROM o WHERE sku = ?", ("new",)),
             ("SELECT id FROM o WHERE cust = ? AND sku = ?", (3, "new")),
             ("SELECT id, sku FROM o WHERE code = ?", ("k900",))]
    for sql, params in reads:
        _same(s, lite, sql, params)  # planned and cached
    for target in (s, lite):
        target.execute("BEGIN")
        target.execute("INSERT INTO o VALUES (900, 3, 'new', 1, 'k900')")  # a new entry in each index
        target.execute("UPDATE o SET sku = 'new' WHERE id IN (10, 20)")  # entries moved between prefixes
        target.execute("DELETE FROM o WHERE cust = 3 AND id % 2 = 0")
    for sql, params in reads:
        assert _ready(s, sql, params), sql
        _same(s, lite, sql, params)
    _same(s, lite, JOINS[0], (2, 4))
    for target in (s, lite):
        target.execute("ROLLBACK")
    for sql, params in reads:
        _same(s, lite, sql, params)


def _cust_span(s: Session, cust: int) -> tuple[bytes, bytes]:
    table = s.state.catalog().get_table("o")
    index = next(i for i in table.indexes if i.name == "o_cust")
    start = encode_key([cust], [False], index_prefix(table.id, index.id))
    return start, prefix_end(start)


@pytest.mark.parametrize("sql", ["SELECT id, q FROM o WHERE cust = ?",  # the fast path
                                 "SELECT id, q FROM o WHERE cust = ? AND q >= 0"])  # a filter above
def test_conflict_span_is_exactly_the_prefix(pair, sql) -> None:
    s, _ = pair
    s.execute(sql, (5,)).fetchall()
    for other, fails in (("INSERT INTO o VALUES (901, 6, 'x', 1, NULL)", False),  # the next prefix
                         ("INSERT INTO o VALUES (902, 4, 'x', 1, NULL)", False),  # the one before
                         ("INSERT INTO o VALUES (903, 5, 'x', 1, NULL)", True)):  # a phantom
        s.execute("BEGIN")
        result = s.execute(sql, (5,))
        assert (result.ready is not None) == ("AND" not in sql)
        assert result.fetchall()
        txn = s.state.txn
        spans = txn._reads.key_spans().ranges
        assert list(zip(spans.starts, spans.ends)) == [_cust_span(s, 5)]
        Session(s.db).execute(other)
        s.execute("UPDATE c SET name = name || 'w' WHERE id = 1")  # a write: the commit is checked
        if fails:
            with pytest.raises(SerializationFailure):
                s.execute("COMMIT")
        else:
            s.execute("COMMIT")


def test_lookup_join_conflicts_on_the_prefixes_it_read(pair) -> None:
    s, _ = pair
    sql = JOINS[0]
    s.execute("BEGIN")
    s.execute(sql, (7, 8)).fetchall()
    Session(s.db).execute("INSERT INTO o VALUES (904, 9, 'x', 5, NULL)")  # beside what was read
    s.execute("UPDATE c SET name = name || 'w' WHERE id = 1")
    s.execute("COMMIT")
    s.execute("BEGIN")
    s.execute(sql, (7, 8)).fetchall()
    Session(s.db).execute("INSERT INTO o VALUES (905, 8, 'x', 5, NULL)")  # a new match for c.id = 8
    s.execute("UPDATE c SET name = name || 'w' WHERE id = 1")
    with pytest.raises(SerializationFailure):
        s.execute("COMMIT")


def test_reads_in_the_past(tmp_path) -> None:
    """BEGIN AS OF SYSTEM TIME: the equality reads and the joins return sqlite's rows of
    then, whatever was written since."""
    now = [1_700_000_000.0]
    db = Database.open(str(tmp_path / "db"), clock=lambda: now[0], **SMALL)
    s = Session(db)
    lite = sqlite3.connect(":memory:", isolation_level=None)
    rng = random.Random(6)
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    rows = [_row(i, rng) for i in range(ROWS)]
    customers = [(i, f"c{i}") for i in range(24)]
    for target in (s, lite):
        target.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
        target.executemany("INSERT INTO c VALUES (?, ?)", customers)
    reads = [("SELECT id, q FROM o WHERE cust = ?", (c,)) for c in range(0, 22, 3)]
    reads += [("SELECT id, cust FROM o WHERE sku = ?", (f"s{k}",)) for k in range(0, 60, 7)]
    reads += [(JOINS[0], (c, c + 2)) for c in range(0, 22, 5)]
    then = [sorted(lite.execute(sql, params).fetchall(), key=repr) for sql, params in reads]
    now[0] += 10
    s.execute("UPDATE o SET cust = 3, sku = 's7' WHERE id % 3 = 0")
    s.execute("DELETE FROM o WHERE id % 4 = 1")
    db.engine.flush()
    now[0] += 10
    s.execute("BEGIN AS OF SYSTEM TIME '-15s'")
    for _ in range(2):  # the joins' lookups are prefix reads of the snapshot of then
        assert [sorted(s.execute(sql, params).fetchall(), key=repr) for sql, params in reads] == then
    s.execute("COMMIT")
    s.close()
    db.close()


def test_lookup_join_reads_the_first_outer_row_alone(pair) -> None:
    """Under LIMIT 1 a lookup join reads the first outer row's matches and no more (the
    batches after it are larger); without a LIMIT EXPLAIN ANALYZE counts one get per row
    fetched through the index."""
    s, lite = pair
    sql = "SELECT c.id, o.id FROM c JOIN o ON o.cust = c.id WHERE c.id >= 0"
    first = lite.execute("SELECT count(*) FROM o WHERE cust = 0").fetchone()[0]
    every = lite.execute("SELECT count(*) FROM o WHERE cust >= 0").fetchone()[0]
    assert first > 1
    for text, gets in ((sql + " LIMIT 1", first), (sql, every)):
        total = [r[0] for r in s.execute("EXPLAIN ANALYZE " + text).fetchall()][-1]
        assert f"kv_gets={gets} " in total, (text, total)


def test_a_key_with_many_matches_streams_through_the_join(pair) -> None:
    """A lookup key with more matches than a batch holds streams them in growing chunks
    (a LIMIT reads a few of them), between the listed rows of the other keys."""
    s, lite = pair
    rows = [(i, 1 if i < 300 else 3) for i in range(320)]
    for target in (s, lite):
        target.execute("CREATE TABLE g (id INT PRIMARY KEY, grp INT)")
        target.execute("CREATE INDEX g_grp ON g (grp)")
        target.executemany("INSERT INTO g VALUES (?, ?)", rows)
    for sql in ("SELECT c.id, g.id FROM c JOIN g ON g.grp = c.id WHERE c.id BETWEEN ? AND ?",
                "SELECT c.id, g.id FROM c LEFT JOIN g ON g.grp = c.id WHERE c.id BETWEEN ? AND ?"):
        for params in ((0, 4), (1, 1), (2, 3)):
            _same(s, lite, sql, params)
    limited = "SELECT c.id, g.id FROM c JOIN g ON g.grp = c.id WHERE c.id = 1 LIMIT 5"
    assert len(s.execute(limited).fetchall()) == 5
    total = [r[0] for r in s.execute("EXPLAIN ANALYZE " + limited).fetchall()][-1]
    gets = int(total.split("kv_gets=")[1].split()[0])
    assert 5 <= gets < 16, total  # not the 300 rows of group 1


def test_explain_analyze_counts_a_prefix_read(pair) -> None:
    """An equality scan under a filter: one KV scan (the prefix read) giving each entry,
    one get per row fetched through them."""
    s, lite = pair
    for cust in (3, 4, 99):
        entries = lite.execute("SELECT count(*) FROM o WHERE cust = ?", (cust,)).fetchone()[0]
        sql = f"EXPLAIN ANALYZE SELECT id FROM o WHERE cust = {cust} AND q > 2"
        lines = [r[0] for r in s.execute(sql).fetchall()]
        scan = next(line for line in lines if "scan o@o_cust" in line)
        assert f"kv_gets={entries} kv_scans=1 kv_keys={2 * entries} " in scan, lines
