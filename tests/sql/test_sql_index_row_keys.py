"""Secondary-index scans whose rows are fetched by the primary key cut from each entry key
(`IndexCodec.row_key_prefix(es)`, encoding/key_ends.py): ORDER BY ... LIMIT on the index (the
fast path), range scans and filtered scans over text with NUL and non-ASCII characters, empty
strings, NULLs, descending and composite indexes and a unique index holding both entry forms,
compared with sqlite3; a damaged entry key is reported as corruption, not read as some row."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.encoding.values import encode_values
from sqlkv.errors import CorruptionError
from sqlkv.sql import Database, Session

SCHEMA = [
    "CREATE TABLE t (id INT PRIMARY KEY, s TEXT, n INT, r REAL, u TEXT, w INT)",  # w: in no index,
    "CREATE INDEX t_s ON t (s)",
    "CREATE INDEX t_n ON t (n DESC)",
    "CREATE INDEX t_s_n ON t (s DESC, n)",
    "CREATE INDEX t_r ON t (r)",
    "CREATE UNIQUE INDEX t_u ON t (u)",  # mostly NULL: entries of both forms
]
TEXTS = ["", "a", "a\x00", "a\x00b", "\x00", "ab", "\u00e9t\u00e9", "\U0001f600", "z" * 40, "b\xff", None]
ORDERED = [  # (query, how many leading columns are its ORDER BY)
    ("SELECT s, id, w FROM t ORDER BY s LIMIT {}", 1),
    ("SELECT s, id, w FROM t ORDER BY s DESC LIMIT {}", 1),
    ("SELECT n, id, w FROM t ORDER BY n DESC LIMIT {}", 1),
    ("SELECT n, id, w FROM t ORDER BY n LIMIT {}", 1),
    ("SELECT r, id, w FROM t ORDER BY r LIMIT {}", 1),
    ("SELECT u, id, w FROM t WHERE u IS NOT NULL ORDER BY u LIMIT {}", 1),
    ("SELECT s, n, id, w FROM t ORDER BY s DESC, n LIMIT {}", 2),
]
UNORDERED = [
    ("SELECT id, s, w FROM t WHERE s > ? AND s < ?", lambda g: tuple(sorted([g.choice(TEXTS[:-1]), g.choice(TEXTS[:-1])]))),
    ("SELECT id, w FROM t WHERE n BETWEEN ? AND ?", lambda g: (g.randrange(-50, 20), g.randrange(0, 60))),
    ("SELECT id, r FROM t WHERE r >= ? AND n < 10", lambda g: (g.uniform(-100, 100),)),
    ("SELECT id, w FROM t WHERE s >= ? AND n >= ?", lambda g: (g.choice(TEXTS[:-1]), g.randrange(-20, 40))),
    ("SELECT id, u, w FROM t WHERE u > ?", lambda g: (f"k{g.randrange(200)}",)),
]


def _row(i: int, g: random.Random) -> tuple:
    s = g.choice(TEXTS) if i % 3 else f"{g.choice(TEXTS[:-1])}{i % 7}"
    n = None if i % 11 == 0 else g.randrange(-40, 50)
    return (i, s, n, None if i % 17 == 0 else g.uniform(-100, 100), f"k{i}" if i % 5 == 0 else None, i * 7 % 100)


@pytest.fixture()
def pair():
    s = Session(Database.open(":memory:"))
    lite = sqlite3.connect(":memory:", isolation_level=None)
    for sql in SCHEMA:
        s.execute(sql)
        lite.execute(sql)
    g = random.Random(3)
    rows = [_row(i, g) for i in range(-30, 400)]
    for target in (s, lite):
        target.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", rows)
        target.execute("UPDATE t SET s = ?, n = 7 WHERE id % 23 = 4", ("a\x00",))
        target.execute("DELETE FROM t WHERE id % 29 = 3")
    yield s, lite
    s.close()


def test_ordered_limits_match_sqlite(pair) -> None:
    s, lite = pair
    for sql, ncols in ORDERED:
        for limit in (1, 10, 129, 1000):
            got = s.execute(sql.format(limit)).fetchall()
            want = lite.execute(sql.format(limit)).fetchall()
            # sqlite puts NULLs first ascending, last descending, as sqlkv's keys do
            assert [row[:ncols] for row in got] == [row[:ncols] for row in want], (sql, limit)
            whole = set(lite.execute(sql.split(" ORDER BY")[0]).fetchall())
            assert set(got) <= whole and len(set(got)) == len(got), (sql, limit)


def test_range_scans_match_sqlite(pair) -> None:
    s, lite = pair
    g = random.Random(9)
    for sql, args in UNORDERED:
        for _ in range(25):
            params = args(g)
            got = s.execute(sql, params).fetchall()
            assert sorted(got, key=repr) == sorted(lite.execute(sql, params).fetchall(), key=repr), (sql, params)


def _put_raw(s: Session, key: bytes) -> None:
    txn = s.db.txn_manager.begin()
    txn.put(key, encode_values([]))
    txn.commit()


@pytest.mark.parametrize("damage", [
    b"\x18abc\x00\x07",  # a bad escape inside the indexed string
    b"\x18\xff\xfe\x00\x01",  # not UTF-8
    b"\xf6\x05",  # an int written longer than it needs
    b"\x18abc",  # the string never ends
])
def test_damaged_entry_key_is_corruption(damage: bytes) -> None:
    s = Session(Database.open(":memory:"))
    s.autocommit = True
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, s TEXT, q INT)")  # q: the rows are fetched
    s.execute("CREATE INDEX t_s ON t (s)")
    s.execute("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
    table = s.state.catalog().get_table("t")
    index = next(i for i in table.indexes if i.name == "t_s")
    _put_raw(s, index_prefix(table.id, index.id) + damage + encode_key([2]))
    s.close()
    s = Session(s.db)  # a session begun after the damage
    for sql in ("SELECT id, s, q FROM t ORDER BY s LIMIT 5", "SELECT id, q FROM t WHERE s > ''",
                "SELECT id, q FROM t ORDER BY s DESC LIMIT 3"):
        with pytest.raises(CorruptionError, match="corrupt key"):
            s.execute(sql).fetchall()
    s.close()
