"""executemany of a plain INSERT by chunks (sqlkv/sql/exec/insert_many.py) against the row path
(``BATCH_INSERTS = False``): the same stored KV pairs and answers (sqlite3 as the oracle), the
same error at the same row with nothing changed, duplicates within one executemany and against
stored rows, many NULLs in a UNIQUE column, auto ids, parameter rows refused midway."""

from __future__ import annotations

import datetime
import random
from decimal import Decimal
import sqlite3

import pytest

import sqlkv
from sqlkv.encoding.keys import table_prefix
from sqlkv.errors import DataError, IntegrityError, OperationalError, ProgrammingError
from sqlkv.sql.exec import insert_many
from sqlkv.storage.kv import prefix_end
from sqlkv.txn.manager import TxnManager
from sqlkv.txn.transaction import Transaction

SCHEMA = [
    "CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, grp INT, price FLOAT, note TEXT, "
    "CHECK (grp IS NULL OR grp >= 0))",
    "CREATE UNIQUE INDEX items_sku ON items (sku)",
    "CREATE UNIQUE INDEX items_note ON items (note)",  # nullable: many NULLs allowed
    "CREATE INDEX items_grp ON items (grp)",
    "CREATE INDEX items_grp_price ON items (grp DESC, price) STORING (note)",
    "CREATE INDEX items_cheap ON items (price) WHERE price < 2",
    "CREATE TABLE pairs (a INT, b TEXT, c INT NOT NULL, PRIMARY KEY (b, a))",
    "CREATE INDEX pairs_c ON pairs (c)",
]
INSERT_ITEMS = "INSERT INTO items VALUES (?, ?, ?, ?, ?)"
INSERT_PAIRS = "INSERT INTO pairs (c, a, b) VALUES (?, ?, ?)"  # reordered targets
QUERIES = [
    "SELECT id, sku, grp, price, note FROM items ORDER BY id",
    "SELECT id FROM items WHERE sku = 'sku-00042'",
    "SELECT id, note FROM items WHERE grp = 3 ORDER BY price, id",
    "SELECT count(*) FROM items WHERE note IS NULL",
    "SELECT id FROM items WHERE price < 1 ORDER BY id",
    "SELECT a, b, c FROM pairs ORDER BY b, a",
    "SELECT a FROM pairs WHERE c = 4 ORDER BY a",
]


def _item(i: int) -> tuple:
    return (i, f"sku-{(i * 7919) % 100003:05d}", i % 13 if i % 7 else None, (i % 9) / 4,
            None if i % 3 else f"note {i}")


ITEMS = [_item(i) for i in range(1, 1800)]
PAIRS = [(i % 11, i, f"b{i % 5}") for i in range(1300)]


@pytest.fixture(params=[True, False], ids=["batch", "row"])
def batch(request, monkeypatch) -> bool:
    monkeypatch.setattr(insert_many, "BATCH_INSERTS", request.param)
    return request.param


def _db(statements=SCHEMA):
    conn = sqlkv.connect(":memory:")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    return conn


def _oracle():
    conn = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        conn.execute(sql.replace(" STORING (note)", ""))
    return conn


def _user_kvs(conn) -> list:
    return list(conn.session.db.engine.snapshot().scan(table_prefix(100), prefix_end(table_prefix(10_000))))


def _answers(conn) -> list:
    return [conn.execute(q).fetchall() for q in QUERIES]


def _count_batches(monkeypatch) -> list:
    calls = []
    original = Transaction.put_new_batch

    def counting(self, checked, plain):
        calls.append(len(checked) + len(plain))
        return original(self, checked, plain)

    monkeypatch.setattr(Transaction, "put_new_batch", counting)
    return calls


def _load(conn) -> list[int]:
    cur = conn.cursor()
    cur.executemany(INSERT_ITEMS, ITEMS)
    counts = [cur.rowcount]
    cur.executemany(INSERT_PAIRS, PAIRS)
    counts.append(cur.rowcount)
    conn.commit()
    return counts


def _both_ways(monkeypatch, statements: list[str], session) -> dict[bool, tuple]:
    """``session(conn)``'s result and the stored pairs after it, batched and row by row
    (checking that the batch path really ran, and only when asked)."""
    calls = _count_batches(monkeypatch)
    outcome = {}
    for batched in (True, False):
        monkeypatch.setattr(insert_many, "BATCH_INSERTS", batched)
        conn = _db(statements)
        result = session(conn)
        assert conn.execute("CHECK DATABASE").fetchall() == []
        outcome[batched] = (result, _user_kvs(conn))
        assert (len(calls) > 0) is batched
        calls.clear()
    return outcome


def test_batch_and_row_paths_store_the_same_pairs_and_answer_as_sqlite(monkeypatch):
    stored = _both_ways(monkeypatch, SCHEMA, lambda conn: (_load(conn), _answers(conn)))
    assert stored[True] == stored[False]
    assert stored[True][0][0] == [len(ITEMS), len(PAIRS)]
    oracle = _oracle()
    oracle.executemany(INSERT_ITEMS, ITEMS)
    oracle.executemany(INSERT_PAIRS, PAIRS)
    assert stored[True][0][1] == [oracle.execute(q).fetchall() for q in QUERIES]


def _failure(conn, sql: str, rows: list) -> tuple[type, str]:
    with pytest.raises(sqlkv.Error) as info:
        conn.executemany(sql, rows)
    return type(info.value), str(info.value)


BAD_ROWS = {
    # a duplicate primary key within the executemany, in a later chunk than its first use
    "pk twice": (ITEMS[:5] + [_item(i) for i in range(5000, 5700)] + [_item(5100)[:1] + ("new", 1, 1.0, None)],
                 IntegrityError, "items_pkey"),
    # against a stored row
    "pk stored": ([_item(i) for i in range(5000, 5600)] + [(7, "fresh", 1, 1.0, None)], IntegrityError, "items_pkey"),
    "unique stored": ([_item(i) for i in range(5000, 5600)] + [(9000, ITEMS[3][1], 1, 1.0, None)],
                      IntegrityError, "items_sku"),
    "unique twice": ([_item(i) for i in range(5000, 5600)] + [(9000, _item(5001)[1], 1, 1.0, None)],
                     IntegrityError, "items_sku"),
    "not null": ([_item(i) for i in range(5000, 5600)] + [(9000, None, 1, 1.0, None)], IntegrityError, "sku"),
    "check": ([_item(i) for i in range(5000, 5600)] + [(9000, "x", -1, 1.0, None)], IntegrityError, "check"),
    "type": ([_item(i) for i in range(5000, 5600)] + [(9000, "x", "many", 1.0, None)], DataError, "grp"),
    "out of range": ([_item(i) for i in range(5000, 5600)] + [(2**63, "x", 1, 1.0, None)], DataError, ""),
    "parameter count": ([_item(i) for i in range(5000, 5600)] + [(9000, "x")], ProgrammingError, "parameter"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_a_bad_row_fails_the_whole_executemany_as_the_row_path_does(monkeypatch, case):
    rows, error, named = BAD_ROWS[case]
    outcome = {}
    for batched in (True, False):
        monkeypatch.setattr(insert_many, "BATCH_INSERTS", batched)
        conn = _db()
        _load(conn)
        before = _user_kvs(conn)
        conn.execute("INSERT INTO pairs VALUES (99, 'kept', 1)")  # the transaction's earlier work stays
        outcome[batched] = _failure(conn, INSERT_ITEMS, rows)
        assert issubclass(outcome[batched][0], error)
        assert named in outcome[batched][1]
        assert conn.execute("SELECT a FROM pairs WHERE b = 'kept'").fetchall() == [(99,)]
        conn.rollback()
        assert _user_kvs(conn) == before
        assert conn.execute("CHECK DATABASE").fetchall() == []
    assert outcome[True] == outcome[False]


def test_many_nulls_in_a_unique_column_and_rows_that_are_cast(batch):
    conn = _db()
    rows = [(i, f"s{i}", None, i, None) for i in range(1, 1200)]  # price given as int: cast to float
    rows += [(i, f"s{i}", True, 2.5, None) for i in range(1200, 1210)]  # bool into INT: refused
    with pytest.raises(DataError):
        conn.executemany(INSERT_ITEMS, rows)
    conn.executemany(INSERT_ITEMS, rows[:1199])
    conn.commit()
    assert conn.execute("SELECT count(*), count(note), sum(price) FROM items").fetchall() == [
        (1199, 0, float(sum(range(1, 1200))))]
    assert conn.execute("SELECT typeof(price) FROM items WHERE id = 5").fetchall() == [("float",)]


def test_auto_ids_given_then_assigned(batch):
    conn = _db()
    cur = conn.cursor()
    cur.executemany(INSERT_ITEMS, ITEMS[:700])
    assert cur.lastrowid == 700
    cur.executemany(INSERT_ITEMS, [(None, "auto-a", 1, 1.0, None), (None, "auto-b", 1, 1.0, None)])
    assert cur.lastrowid == 702
    cur.executemany("INSERT INTO items (sku) VALUES (?)", [("auto-c",), ("auto-d",)])
    assert cur.lastrowid == 704
    assert conn.execute("SELECT id FROM items WHERE sku LIKE 'auto-%' ORDER BY id").fetchall() == [
        (701,), (702,), (703,), (704,)]


def test_a_transaction_too_large_is_refused_as_on_the_row_path(batch):
    conn = _db()
    TxnManager.for_engine(conn.session.db.engine).max_txn_bytes = 60_000
    with pytest.raises(OperationalError, match="transaction too large"):
        conn.executemany(INSERT_ITEMS, ITEMS)
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(0,)]


def test_an_empty_parameter_list_inserts_nothing(batch):
    conn = _db()
    cur = conn.cursor()
    cur.executemany(INSERT_ITEMS, [])
    assert cur.rowcount == 0
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(0,)]


def test_a_generator_of_parameters_stops_at_the_row_it_refuses(batch):
    conn = _db()

    def rows():
        yield from ITEMS[:600]
        yield "not a sequence"

    with pytest.raises(ProgrammingError):
        conn.executemany(INSERT_ITEMS, rows())
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(0,)]


def test_random_loads_agree_with_sqlite(batch):
    rng = random.Random(5)
    conn = _db()
    oracle = _oracle()
    failures = 0
    for round_ in range(6):
        size = rng.randrange(1, 900)
        ids = rng.sample(range(1, 4000), size) if round_ % 2 else [rng.randrange(1, 4000) for _ in range(size)]
        rows = [_item(i) for i in ids]  # distinct within the batch, or drawn with repeats
        try:
            oracle.executemany(INSERT_ITEMS, rows)
            oracle.commit()
            expected = None
        except sqlite3.IntegrityError:
            oracle.rollback()
            expected = IntegrityError
            failures += 1
        if expected is None:
            conn.executemany(INSERT_ITEMS, rows)
            conn.commit()
        else:
            with pytest.raises(expected):
                conn.executemany(INSERT_ITEMS, rows)
            conn.rollback()
    assert 0 < failures < 6
    assert _answers(conn)[:5] == [oracle.execute(q).fetchall() for q in QUERIES[:5]]


class _Boom(Exception):
    pass


def test_an_error_of_the_callers_iterable_fails_the_executemany(batch):
    conn = _db()

    def rows():
        yield from ITEMS[:700]
        raise _Boom("the caller's generator failed")

    with pytest.raises(sqlkv.Error, match="the caller's generator failed"):  # as before batching
        conn.executemany(INSERT_ITEMS, rows())
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(0,)]


def test_a_bad_row_before_the_iterables_error_is_the_one_reported(batch):
    conn = _db()

    def rows():
        yield from ITEMS[:300]
        yield ITEMS[0]  # a duplicate primary key, before the generator fails
        yield from ITEMS[300:700]
        raise _Boom("later")

    with pytest.raises(IntegrityError, match="items_pkey"):
        conn.executemany(INSERT_ITEMS, rows())


@pytest.mark.parametrize("bad, error", [(object(), ProgrammingError), (2**64, DataError)])
def test_a_parameter_the_driver_refuses_midway_changes_nothing(batch, bad, error):
    conn = _db()
    rows = ITEMS[:600] + [(9000, "x", bad, 1.0, None)] + ITEMS[600:900]
    with pytest.raises(error):
        conn.executemany(INSERT_ITEMS, rows)
    assert conn.execute("SELECT count(*) FROM items").fetchall() == [(0,)]


def test_aware_datetimes_and_lists_of_parameters_are_bound_as_on_the_row_path(monkeypatch):
    utc = datetime.timezone.utc
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    rows = [[i, datetime.datetime(2024, 1, 1, i % 24, tzinfo=plus2 if i % 2 else utc)] for i in range(1, 1100)]
    stored = {}
    for batched in (True, False):
        monkeypatch.setattr(insert_many, "BATCH_INSERTS", batched)
        conn = _db(["CREATE TABLE ev (id INT PRIMARY KEY, at TIMESTAMPTZ)", "CREATE INDEX ev_at ON ev (at)"])
        conn.executemany("INSERT INTO ev VALUES (?, ?)", rows)
        conn.commit()
        stored[batched] = _user_kvs(conn)
        found = conn.execute("SELECT id FROM ev WHERE at = ? ORDER BY id", (rows[2][1],)).fetchall()
        assert found and (3,) in found
    assert stored[True] == stored[False]


def _auto_id_session(conn) -> list:
    """Ids given and assigned, mixed within chunks, into a table with an INTEGER PRIMARY KEY and
    one without a primary key (a hidden row id); an UPDATE moving a row past the counter."""
    cur = conn.cursor()
    results = []
    given_or_not = [(None if i % 3 else i * 10, f"s{i}", None, 1.0, None) for i in range(1, 1400)]
    cur.executemany(INSERT_ITEMS, given_or_not)
    results.append(cur.lastrowid)
    cur.executemany("INSERT INTO items (sku, grp) VALUES (?, ?)", [(f"t{i}", i % 4) for i in range(700)])
    results.append(cur.lastrowid)
    conn.execute("UPDATE items SET id = id + 100000 WHERE sku = 't5'")  # the next id is read again
    cur.executemany("INSERT INTO items (sku) VALUES (?)", [(f"u{i}",) for i in range(600)])
    results.append(cur.lastrowid)
    with pytest.raises(IntegrityError):  # ids assigned to a chunk that fails at its row 301
        cur.executemany("INSERT INTO items (sku) VALUES (?)", [(f"v{i}",) for i in range(300)] + [("u1",)])
    cur.executemany("INSERT INTO items (sku) VALUES (?)", [("after",)])
    results.append(cur.lastrowid)
    cur.executemany("INSERT INTO log VALUES (?, ?)", [(f"m{i}", i % 9) for i in range(1100)])
    cur.executemany("INSERT INTO log (n) VALUES (?)", [(i,) for i in range(600)])
    conn.commit()
    results.append(conn.execute("SELECT count(*), max(id), sum(id) FROM items").fetchall())
    results.append(conn.execute("SELECT count(*), sum(n) FROM log").fetchall())
    return results


def test_auto_ids_assigned_within_chunks_as_on_the_row_path(monkeypatch):
    schema = SCHEMA + ["CREATE TABLE log (msg TEXT, n INT)", "CREATE INDEX log_n ON log (n)"]
    outcome = _both_ways(monkeypatch, schema, _auto_id_session)
    assert outcome[True] == outcome[False]
    counts = outcome[True][0]
    assert counts[4][0][0] == 1399 + 700 + 600 + 1 and counts[5] == [(1700, sum(i % 9 for i in range(1100))
                                                                  + sum(range(600)))]


OTHER_SCHEMA = [
    "CREATE TABLE g (id INT PRIMARY KEY, qty INT, price FLOAT, total FLOAT AS (qty * price) STORED, "
    "CHECK (total < 1000))",
    "CREATE INDEX g_total ON g (total)",
    "CREATE TABLE docs (id INT PRIMARY KEY, body JSONB, tags TEXT[], amount DECIMAL(10, 2))",
    "CREATE TABLE ident (id INT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v TEXT)",
]


def _other_session(conn) -> list:
    cur = conn.cursor()
    cur.executemany("INSERT INTO g (id, qty, price) VALUES (?, ?, ?)", [(i, i % 10, i % 7 + 0.5) for i in range(900)])
    with pytest.raises(IntegrityError, match="check"):  # a generated value failing its CHECK at row 700
        cur.executemany("INSERT INTO g (id, qty, price) VALUES (?, ?, ?)",
                        [(i, 1, 1.0) for i in range(1000, 1700)] + [(5000, 100, 20.0)])
    cur.executemany("INSERT INTO docs VALUES (?, ?, ?, ?)",
                    [(i, '{"k": %d}' % i, [f"t{i % 3}"], Decimal(f"{i}.25")) for i in range(600)])
    cur.executemany("INSERT INTO ident (v) VALUES (?)", [(f"v{i}",) for i in range(600)])
    conn.commit()
    return [conn.execute(q).fetchall() for q in (
        "SELECT count(*), sum(total) FROM g", "SELECT id FROM g WHERE total > 60 ORDER BY id",
        "SELECT body, tags, amount FROM docs WHERE id = 77", "SELECT count(*), max(id) FROM ident")]


def test_generated_columns_jsonb_arrays_decimals_identity_as_on_the_row_path(monkeypatch):
    outcome = _both_ways(monkeypatch, OTHER_SCHEMA, _other_session)
    assert outcome[True] == outcome[False]
    assert outcome[True][0][0][0][0] == 900 and outcome[True][0][3] == [(600, 600)]


def _reload_session(conn) -> list:
    """Rows loaded, the table emptied, the same keys loaded again, in one transaction."""
    cur = conn.cursor()
    cur.executemany(INSERT_ITEMS, ITEMS[:900])
    conn.commit()
    results = []
    for empty in ("DELETE FROM items", "TRUNCATE items"):
        conn.execute(empty)
        cur.executemany(INSERT_ITEMS, ITEMS[300:1200])
        results.append(conn.execute("SELECT count(*), min(id), max(id) FROM items").fetchall())
        with pytest.raises(IntegrityError, match="items_sku"):  # still checked against the new rows
            cur.executemany(INSERT_ITEMS, [(9000 + i, ITEMS[400 + i][1], 1, 1.0, None) for i in range(600)])
        conn.commit()
    return results


def test_a_table_emptied_and_loaded_again_in_one_transaction(monkeypatch):
    outcome = _both_ways(monkeypatch, SCHEMA, _reload_session)
    assert outcome[True] == outcome[False]
    assert outcome[True][0] == [[(900, 301, 1200)]] * 2
