"""Fast paths: partial row decoding, PK point gets, batch inserts, index maintenance skipping.
Every result is compared with sqlite3 running the same statements."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.sql import Database, Session

SCHEMA = [
    "CREATE TABLE o (id INT PRIMARY KEY, cust INT, sku TEXT, amount INT, note TEXT)",
    "CREATE INDEX o_cust ON o (cust)",
    "CREATE INDEX o_sku ON o (sku DESC)",
]


@pytest.fixture
def pair():
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    rng = random.Random(5)
    rows = [(i, rng.randrange(30), f"s{rng.randrange(200):03d}", rng.randrange(-50, 1000),
             None if i % 7 == 0 else f"n{i}") for i in range(1, 801)]
    s.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
    yield s, lite
    s.close()


def same(pair, sql, params=(), ordered=False):
    s, lite = pair
    got, want = s.execute(sql, params).fetchall(), lite.execute(sql, params).fetchall()
    if not ordered:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert got == want, sql
    return got


def plan(s, sql, params=()):
    return "\n".join(r[0] for r in s.execute("EXPLAIN " + sql, params))


QUERIES = [
    "SELECT cust, sum(amount), count(*) FROM o GROUP BY cust",
    "SELECT count(*) FROM o",
    "SELECT sum(id) FROM o WHERE amount > 500",
    "SELECT note FROM o WHERE id BETWEEN 10 AND 40",
    "SELECT id, note FROM o WHERE id > 700 AND amount < 100",
    "SELECT sku, amount FROM o WHERE cust = 3",
    "SELECT o.id, p.id FROM o JOIN o AS p ON p.id = o.cust WHERE o.amount < 20",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_scans_match_sqlite(pair, sql):
    same(pair, sql)


def test_row_decoder_fills_only_needed_positions(pair):
    from sqlkv.sql.rowstore.codec import codec_for
    from sqlkv.storage.kv import prefix_end

    s, _ = pair
    table = s.catalog().get_table("o")
    codec = codec_for(table)
    txn = s.catalog().txn
    full = list(codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix))))
    assert list(codec.decoder(None).rows(txn.scan(codec.prefix, prefix_end(codec.prefix)))) == full
    part = list(codec.decoder({1, 3}).rows(txn.scan(codec.prefix, prefix_end(codec.prefix))))
    assert part == [(None, r[1], None, r[3], None) for r in full]
    s.commit()


def test_point_get_on_a_composite_primary_key_and_unique_index():
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    for sql in ("CREATE TABLE c (a INT, b TEXT, v INT, w TEXT, PRIMARY KEY (a, b DESC))",
                "CREATE UNIQUE INDEX c_vw ON c (v, w)"):
        s.execute(sql)
        lite.execute(sql)
    rows = [(i % 10, f"k{i}", i, f"w{i % 3}") for i in range(60)]
    s.executemany("INSERT INTO c VALUES (?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO c VALUES (?, ?, ?, ?)", rows)
    q = "SELECT * FROM c WHERE a = ? AND b = ?"
    assert plan(s, q, (3, "k13")).splitlines()[-1].strip().startswith("get c@c_pkey")
    for params in [(3, "k13"), (3, "k14"), (None, "k1"), (3.0, "k3"), (3.5, "k3")]:
        assert s.execute(q, params).fetchall() == lite.execute(q, params).fetchall(), params
    q2 = "SELECT a, b FROM c WHERE v = ? AND w = ?"
    assert plan(s, q2, (13, "w1")).splitlines()[-1].strip().startswith("get c@c_vw")
    for params in [(13, "w1"), (13, "w2"), (59, "w2")]:
        assert s.execute(q2, params).fetchall() == lite.execute(q2, params).fetchall(), params


def test_cursor_description_is_reused_for_a_cached_plan():
    import sqlkv.dbapi as dbapi

    con = dbapi.connect(":memory:")
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    con.commit()  # plans of a schema-changing transaction are not cached
    cur.execute("SELECT a, b FROM t WHERE a = ?", (1,))  # never fetched: released on the next execute
    first = cur.description
    cur.execute("SELECT a, b FROM t WHERE a = ?", (2,))
    assert cur.description is first
    cur.execute("SELECT b FROM t")
    assert [d[0] for d in cur.description] == ["b"]
    con.close()


def test_executemany_batch_keeps_type_checks_and_is_atomic():
    from sqlkv.errors import DataError

    s = Session(Database.open())
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(3), f FLOAT, d DECIMAL(5,2), ok BOOL)")
    s.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                  [(1, "abc", 1, 1.5, True), (2, "ab ", 2.5, None, None), (3, "x  ", None, 3, False)])
    assert s.execute("SELECT * FROM t ORDER BY id").fetchall() == [
        (1, "abc", 1.0, __import__("decimal").Decimal("1.50"), True),
        (2, "ab ", 2.5, None, None),
        (3, "x  ", None, __import__("decimal").Decimal("3.00"), False),
    ]
    bad = [[(4, "abcd", None, None, None)], [(5, "a", None, None, None), (2**63, "b", None, None, None)],
           [(6, "a", "x", None, None)], [(7, True, None, None, None)], [(8, "a", None, None, 1)]]
    for rows in bad:
        with pytest.raises(DataError):
            s.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    # a failing batch writes nothing (the batch is one statement)
    assert s.execute("SELECT count(*) FROM t").fetchall() == [(3,)]
    s.executemany("INSERT INTO t (id, name) VALUES (?, ?)", [(9, "abc   ")])  # trailing blanks trimmed
    assert s.execute("SELECT name FROM t WHERE id = 9").fetchall() == [("abc",)]


def test_updates_touching_some_indexes_and_families_keep_indexes_consistent():
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    s.execute("CREATE TABLE u (id INT PRIMARY KEY, a INT, b TEXT, c FLOAT, d TEXT, FAMILY f1 (c, d))")
    lite.execute("CREATE TABLE u (id INT PRIMARY KEY, a INT, b TEXT, c FLOAT, d TEXT)")
    for sql in ("CREATE INDEX u_a ON u (a)", "CREATE UNIQUE INDEX u_b ON u (b)", "CREATE INDEX u_c ON u (c) STORING (d)"):
        s.execute(sql)
        lite.execute(sql.replace(" STORING (d)", ""))
    rows = [(i, i % 5, f"b{i}", float(i % 3) if i % 4 else -0.0, None if i % 2 else f"d{i}") for i in range(40)]
    s.executemany("INSERT INTO u VALUES (?, ?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO u VALUES (?, ?, ?, ?, ?)", rows)
    updates = [
        "UPDATE u SET a = a + 1 WHERE id < 10",
        "UPDATE u SET d = 'x' || id WHERE id % 3 = 0",
        "UPDATE u SET c = 0.0 WHERE c = 0",
        "UPDATE u SET b = b || 'z' WHERE id > 30",
        "UPDATE u SET d = NULL, c = NULL WHERE id % 7 = 1",
        "UPDATE u SET a = a WHERE id = 5",
        "UPDATE u SET id = id + 100 WHERE id = 2",
    ]
    queries = ["SELECT * FROM u", "SELECT id, a FROM u WHERE a = 2", "SELECT id, b FROM u WHERE b = 'b33z'",
               "SELECT id, c, d FROM u WHERE c = 0", "SELECT id, d FROM u WHERE c IS NULL"]
    for upd in updates:
        s.execute(upd)
        lite.execute(upd)
        for q in queries:
            assert sorted(s.execute(q).fetchall(), key=repr) == sorted(lite.execute(q).fetchall(), key=repr), (upd, q)
    assert s.execute("CHECK DATABASE").fetchall() == []


def test_index_fetches_reuse_the_pk_bytes_of_the_entry_key():
    s = Session(Database.open())
    lite = sqlite3.connect(":memory:")
    for sql in ("CREATE TABLE k (a INT, b TEXT, x INT, y TEXT, z INT, PRIMARY KEY (a DESC, b))",
                "CREATE INDEX k_x ON k (x)", "CREATE UNIQUE INDEX k_y ON k (y)", "CREATE INDEX k_za ON k (z, a)",
                "CREATE TABLE p (id INT PRIMARY KEY, x INT)"):
        s.execute(sql)
        lite.execute(sql)
    rows = [(i % 6, f"b{i}", i % 4, None if i % 3 == 0 else f"y{i}", i % 5) for i in range(50)]
    s.executemany("INSERT INTO k VALUES (?, ?, ?, ?, ?)", rows)
    lite.executemany("INSERT INTO k VALUES (?, ?, ?, ?, ?)", rows)
    s.executemany("INSERT INTO p VALUES (?, ?)", [(i, i % 5) for i in range(8)])
    lite.executemany("INSERT INTO p VALUES (?, ?)", [(i, i % 5) for i in range(8)])
    for q, params in [("SELECT * FROM k WHERE x = ?", (2,)), ("SELECT * FROM k WHERE y = ?", ("y7",)),
                      ("SELECT * FROM k WHERE y IS NULL", ()), ("SELECT * FROM k WHERE z = ? AND a = ?", (3, 3)),
                      ("SELECT * FROM k WHERE x > ?", (1,)),
                      ("SELECT p.id, k.b, k.y FROM p JOIN k ON k.x = p.x WHERE p.id < ?", (6,))]:
        got = sorted(s.execute(q, params).fetchall(), key=repr)
        assert got == sorted(lite.execute(q, params).fetchall(), key=repr), q
    assert "k@k_x" in plan(s, "SELECT * FROM k WHERE x = ?", (2,))


def test_join_using_columns_are_decoded(pair):
    s, lite = pair
    for sql in ("CREATE TABLE cu (cust INT PRIMARY KEY, region TEXT)",):
        s.execute(sql)
        lite.execute(sql)
    s.executemany("INSERT INTO cu VALUES (?, ?)", [(i, f"r{i % 3}") for i in range(0, 30, 2)])
    lite.executemany("INSERT INTO cu VALUES (?, ?)", [(i, f"r{i % 3}") for i in range(0, 30, 2)])
    same(pair, "SELECT o.id, region FROM o JOIN cu USING (cust) WHERE o.amount < 100")
    same(pair, "SELECT count(*) FROM o JOIN cu USING (cust)")
    same(pair, "SELECT region, sum(amount) FROM o LEFT JOIN cu USING (cust) GROUP BY region")
