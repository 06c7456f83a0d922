"""Warm cached reads (issue 16, round eight): rows decoded straight into the projection
(sql/rowstore/picked.py), one-column keys encoded inline (encoding/single_key.py), an index
on one TEXT column cutting its entries' row keys in one pass (`text_entry_row_keys`) and the
short limited read behind ``ORDER BY k LIMIT n`` (storage/lsm/firstread.py).

Every answer of the fast path is compared with the normal path's (the fast path switched off)
and, where the SQL means the same, with sqlite3's, on the LSM engine with the rows in
SSTables and newer writes and deletes in the memtable over them."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.values import encode_row_value
from sqlkv.encoding.single_key import single_key, single_key_value, span_end
from sqlkv.errors import CorruptionError, SerializationFailure
from sqlkv.sql import Database, Session
from sqlkv.sql.exec.row_fetch import row_prefix_list, text_entry_row_keys
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.picked import picks_for
from sqlkv.sql.stmtstats import SETTLE_EVERY, StatementStats
from sqlkv.storage.kv import prefix_end

SCHEMA = [
    "CREATE TABLE o (id INT PRIMARY KEY, cust INT, sku TEXT, amount INT, note TEXT)",
    "CREATE INDEX o_sku ON o (sku)",
    "CREATE INDEX o_cust ON o (cust)",
    "CREATE TABLE pair (a INT, b TEXT, v INT, PRIMARY KEY (a, b))",
    "CREATE TABLE back (k INT, v TEXT, PRIMARY KEY (k DESC))",
    "CREATE TABLE gen (id INT PRIMARY KEY, x INT, twice INT AS (x * 2) VIRTUAL)",
    "CREATE TABLE fam (id INT PRIMARY KEY, a INT, b TEXT, FAMILY f1 (id, a), FAMILY f2 (b))",
    "CREATE TABLE named (name TEXT PRIMARY KEY, v INT)",
]
SKUS = ["", "a", "a\x00b", "é", "zz", "sku-1", "Sku-2", None]


def _rows(n: int) -> list[tuple]:
    rng = random.Random(4)
    # skus are unique but for NULL (ties would leave the order of their rows open)
    def sku(i: int) -> str | None:
        return SKUS[i // 3 - 1] if i % 3 == 0 and i // 3 <= len(SKUS) else f"s{i * 7919 % 10**6:06d}"

    return [(i, rng.randrange(12), sku(i), rng.randrange(-100, 1000), None if i % 5 == 0 else f"n{i}")
            for i in range(1, n + 1)]


@pytest.fixture
def lsm(tmp_path):
    """A session on the LSM engine: rows in SSTables, then some updated and deleted in the
    memtable above them; and sqlite3 with the same rows."""
    db = Database.open(str(tmp_path / "db"))
    s = Session(db)
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        s.execute(sql)
    lite.execute(SCHEMA[0])
    rows = _rows(400)
    for conn in (s, lite):
        conn.executemany("INSERT INTO o VALUES (?, ?, ?, ?, ?)", rows)
    s.executemany("INSERT INTO pair VALUES (?, ?, ?)", [(i % 7, f"b{i}", i) for i in range(60)])
    s.executemany("INSERT INTO back VALUES (?, ?)", [(i, f"v{i}") for i in range(-20, 300, 3)])
    s.executemany("INSERT INTO gen (id, x) VALUES (?, ?)", [(i, i * 3) for i in range(40)])
    s.executemany("INSERT INTO fam VALUES (?, ?, ?)", [(i, i + 1, f"f{i}") for i in range(40)])
    s.executemany("INSERT INTO named VALUES (?, ?)", [(name, i) for i, name in enumerate(SKUS) if name is not None])
    db.engine.flush()
    for conn in (s, lite):  # newer versions and tombstones over the first keys of o_sku
        conn.execute("DELETE FROM o WHERE sku < 's1'")
        conn.execute("UPDATE o SET sku = 'a-' || sku, amount = amount + 1 WHERE id % 4 = 1")
    yield s, lite
    s.close()
    db.close()


def _outcomes(s: Session, statements: list[tuple[str, tuple]]) -> list:
    """Each statement run three times (the later runs from the cached plan): rows or the error."""
    out = []
    for sql, params in statements:
        for _ in range(3):
            try:
                out.append(s.execute(sql, params).fetchall())
            except Exception as exc:  # noqa: BLE001 - the error itself is the outcome compared
                out.append((type(exc).__name__, str(exc)))
    return out


def _normal_path(s: Session, monkeypatch) -> None:
    monkeypatch.setattr("sqlkv.sql.plancache.compile_index_read", lambda plan: None)
    s.forget_plans()


PICKED = [
    ("SELECT id, id, amount FROM o WHERE id = ?", (12,)),
    ("SELECT note, id FROM o WHERE id = ?", (10,)),
    ("SELECT id FROM o WHERE id = ?", (401,)),
    ("SELECT amount FROM o WHERE id = ?", ("7",)),
    ("SELECT sku, note FROM o WHERE cust = ?", (3,)),
    ("SELECT id, sku FROM o WHERE sku = ?", ("é",)),
    ("SELECT * FROM o WHERE id IN (?, ?, ?)", (4, 8, 999)),
    ("SELECT b, a, v FROM pair WHERE a = ? AND b = ?", (3, "b10")),
    ("SELECT v, b FROM pair WHERE a = ?", (2,)),
    ("SELECT v, k FROM back WHERE k = ?", (13,)),
    ("SELECT k FROM back WHERE k BETWEEN ? AND ?", (-5, 40)),
    ("SELECT twice, id FROM gen WHERE id = ?", (9,)),
    ("SELECT b, a FROM fam WHERE id = ?", (5,)),
    ("SELECT name, v, name FROM named WHERE name = ?", ("é",)),
    ("SELECT v, name FROM named WHERE name = ?", ("a\x00b",)),
    ("SELECT name FROM named WHERE name = ?", ("",)),
    ("SELECT name FROM named WHERE name = ?", ("zz ",)),
    ("SELECT id, sku, amount FROM o ORDER BY sku LIMIT 10", ()),
    ("SELECT id, sku, amount FROM o ORDER BY sku DESC LIMIT 10", ()),
    ("SELECT sku FROM o ORDER BY sku LIMIT 3 OFFSET 2", ()),
    ("SELECT id FROM o ORDER BY id DESC LIMIT ?", (7,)),
    ("SELECT k, v FROM back ORDER BY k LIMIT 4", ()),
]


def test_fast_reads_answer_as_the_normal_path(lsm, monkeypatch) -> None:
    s, _ = lsm
    fast = _outcomes(s, PICKED)
    for sql, _params in PICKED[:2] + PICKED[13:15] + PICKED[17:19]:
        assert s.plans.get(sql).read is not None, sql
    _normal_path(s, monkeypatch)
    assert _outcomes(s, PICKED) == fast


def test_fast_reads_of_values_in_every_format(lsm, monkeypatch) -> None:
    """Rows of every age through the picked decoder: maps (as sqlkv wrote before slot
    arrays), slot arrays shorter than the schema (a column added since), arrays holding a
    dropped column's old value; the fast path answers as the normal path."""
    s, _ = lsm
    codec = codec_for(s.catalog().get_table("o"))
    txn = s.db.txn_manager.begin()
    for row in s.execute("SELECT * FROM o WHERE id % 3 = 0").fetchall():  # back to maps
        txn.put(codec.row_key(tuple(row)), encode_row_value(
            {cid: row[p] for cid, p in codec.stored_columns if row[p] is not None}))
    txn.commit()
    s.db.engine.flush()
    s = Session(s.db)  # a session begun after the raw writes (catalog() left its transaction open)
    s.execute("ALTER TABLE o ADD COLUMN extra INT")
    s.execute("UPDATE o SET extra = id * 2 WHERE id % 5 = 0")
    s.execute("ALTER TABLE o DROP COLUMN note")
    statements = [(sql, params) for sql, params in PICKED if " o " in sql and "note" not in sql]
    statements += [("SELECT extra, amount, id FROM o WHERE id = ?", (i,)) for i in (3, 5, 6, 15, 16)]
    statements += [("SELECT extra, sku FROM o WHERE cust = ?", (c,)) for c in (1, 2)]
    statements += [("SELECT id, extra, sku FROM o ORDER BY sku LIMIT 30", ())]
    fast = _outcomes(s, statements)
    for sql in (statements[0][0], statements[-4][0], statements[-2][0]):
        assert s.plans.get(sql).read is not None, sql
    _normal_path(s, monkeypatch)
    assert _outcomes(s, statements) == fast
    s.close()


@pytest.mark.parametrize("sql", [
    "SELECT id, sku, amount FROM o ORDER BY sku LIMIT 10",
    "SELECT id, sku, amount FROM o ORDER BY sku DESC LIMIT 10",
    "SELECT id, sku FROM o ORDER BY sku LIMIT 1",
    "SELECT id, sku FROM o ORDER BY sku DESC LIMIT 40",
    "SELECT amount, sku, id FROM o ORDER BY sku LIMIT 5 OFFSET 3",
    "SELECT sku FROM o ORDER BY sku DESC LIMIT 4 OFFSET 30",
    "SELECT id, sku, amount FROM o ORDER BY sku DESC LIMIT 4 OFFSET 20",
    "SELECT sku, amount, sku, id FROM o ORDER BY sku LIMIT 12",
    "SELECT amount, note, sku FROM o ORDER BY sku DESC LIMIT 9",
])
def test_order_by_text_index_limit_matches_sqlite(lsm, sql) -> None:
    """sqlite3 orders NULL first ascending, as sqlkv does (grammar-notes/queries.md). When the
    rows are fetched, the cached read is the fused one (`fastpath._first_rows`), answering as
    sqlite3 does also where an entry's row key is cut the general way (a non-ASCII or NULL sku)."""
    s, lite = lsm
    want = lite.execute(sql).fetchall()
    for _ in range(3):
        result = s.execute(sql)
        assert result.fetchall() == want
    if "OFFSET" not in sql:  # (with one, the plan sorts: no fast read)
        read = s.plans.get(sql).read
        fused = "amount" in sql or "note" in sql  # (id and sku alone are read from the index)
        inner = [cell.cell_contents.__name__ for cell in read.__closure__ if callable(cell.cell_contents)]
        assert ("first_rows" in inner) == fused, inner


def test_limited_read_depends_on_exactly_the_keys_it_read(lsm) -> None:
    """ORDER BY sku LIMIT 3 in a transaction: a row committed meanwhile with a sku before the
    third conflicts; one after it does not (the read's span ends at its last key)."""
    s, _ = lsm
    sql = "SELECT id, sku FROM o ORDER BY sku LIMIT 3"
    s.execute(sql).fetchall()
    other = Session(s.db)
    for sku, conflicts in (("zzzz", False), ("", True)):
        s.execute("BEGIN")
        assert s.execute(sql).ready is not None  # the fast path
        other.execute("INSERT INTO o VALUES (?, 1, ?, 1, NULL)", (5000 + len(sku), sku))
        s.execute("INSERT INTO back VALUES (?, 'w')", (1000 + len(sku),))  # a write: commit checks the reads
        if conflicts:
            with pytest.raises(SerializationFailure):
                s.execute("COMMIT")
        else:
            s.execute("COMMIT")


def test_picked_decoder_only_for_one_family_tables(lsm) -> None:
    s, _ = lsm
    catalog = s.catalog()
    assert picks_for(codec_for(catalog.get_table("o")), [0, 2]) is not None
    assert picks_for(codec_for(catalog.get_table("gen")), [0, 2]) is None  # VIRTUAL column
    assert picks_for(codec_for(catalog.get_table("fam")), [0, 2]) is None  # two families
    s.commit()


def test_text_entry_row_keys_equal_the_general_cut(lsm) -> None:
    s, _ = lsm
    table = s.catalog().get_table("o")
    codec = codec_for(table)
    ic = next(ic for ic in codec.indexes if ic.name == "o_sku")
    rows = [(i, 1, sku, 1, None) for i, sku in enumerate(["s1", "", "zz"], start=1)]
    entries = [ic.entry(row)[:2] for row in rows]
    general = [prefix + codec.fam0_suffix for prefix in row_prefix_list(codec, ic, entries)]
    assert text_entry_row_keys(codec, ic, entries) == general
    for sku in (None, "é", "a\x00b"):  # NULL and non-ASCII: the general cut
        odd = entries + [ic.entry((9, 1, sku, 1, None))[:2]]
        assert text_entry_row_keys(codec, ic, odd) is None
    string = ic.prefix + b"\x18"  # (the marker of an ascending string)
    assert entries[0][0].startswith(string)
    for key in (string + b"zz\x00\x01",  # the unique form: no primary key after the string
                string + b"zz",  # no terminator
                ic.prefix + b"\x19zz\x00\x01\x89"):  # another marker
        texts: list = []
        assert text_entry_row_keys(codec, ic, entries + [(key, b"")], texts) is None, key
        assert text_entry_row_keys(codec, ic, [(key, b"")] + entries) is None, key
    texts = []
    assert text_entry_row_keys(codec, ic, entries, texts) == general and texts == ["s1", "", "zz"]
    assert text_entry_row_keys(codec, ic, []) == []
    s.commit()


@pytest.mark.parametrize("value", [0, 1, 109, 110, 255, 256, 2**40, 2**63 - 1, -1, -2**63, 2**64,
                                   "", "abc", "é", "a\x00b", "\ud800", 1.5, True, None, b"\x00"])
def test_single_key_as_encode_key(value) -> None:
    prefix = b"\xed\x89"
    try:
        want = encode_key([value], None, prefix)
    except Exception as exc:  # noqa: BLE001 - the same error either way
        with pytest.raises(type(exc)):
            single_key(value, prefix)
        return
    assert single_key(value, prefix) == want
    assert single_key_value(want + b"\x88", len(prefix)) == decode_key(want, 1, [False], len(prefix))[0][0]


def test_single_key_value_reports_a_truncated_key() -> None:
    key = encode_key([2**40], None, b"\xed\x89")
    with pytest.raises(CorruptionError):
        single_key_value(key[:-2], 2)


def test_fast_read_parameters_as_the_normal_path(lsm, monkeypatch) -> None:
    """A list for ``?``, too many or too few values, a mapping: the same rows or errors with
    the fast path as without it."""
    s, _ = lsm
    sql = "SELECT id, amount FROM o WHERE id = ?"
    statements = [(sql, [7]), (sql, (7,)), (sql, (7, 8)), (sql, ()), (sql, {"id": 7}), (sql, None),
                  ("SELECT id FROM o ORDER BY sku LIMIT 2", {}), ("SELECT id FROM o ORDER BY sku LIMIT 2", [])]
    fast = _outcomes(s, statements)
    assert [type(out) for out in fast[:6]] == [list] * 6 and fast[6][0] == "ProgrammingError"
    _normal_path(s, monkeypatch)
    assert _outcomes(s, statements) == fast


@pytest.mark.parametrize("prefix", [b"\x00", b"\xed\x8a\x18a\x00\x01", b"\x01\xff", b"\xff\xff", b"\x12\xfe"])
def test_span_end_of_an_equality_as_prefix_end(prefix) -> None:
    assert span_end(prefix) == prefix_end(prefix)


def test_statement_figures_count_every_execution_past_a_settle(lsm) -> None:
    """Durations are bucketed in bulk: after more executions than `SETTLE_EVERY` and a few
    more, the latency histogram, the count and the rows agree."""
    s, _ = lsm
    sql = "SELECT amount FROM o WHERE id = ?"
    runs = SETTLE_EVERY + 37
    found = sum(len(s.execute(sql, (i % 500,)).fetchall()) for i in range(runs))
    row = s.execute("SELECT count, rows, mean_ms, max_ms FROM sqlkv_internal.statement_stats "
                    "WHERE statement = ?", (sql,)).fetchall()
    assert row[0][:2] == (runs, found)
    assert 0 < row[0][2] <= row[0][3]
    stats = StatementStats.of(s.db.txn_manager)
    figures = next(f for f in stats.all() if f.statement == sql)
    assert figures.latency.count == runs and not figures.pending


def test_an_offset_keeps_the_ordered_index_scan(lsm) -> None:
    """``ORDER BY k LIMIT n OFFSET m`` walks the index on k for n + m entries (the Limit
    above skips m), as ``LIMIT n`` does, instead of sorting the whole table."""
    s, _ = lsm
    plan = "\n".join(r[0] for r in s.execute(
        "EXPLAIN SELECT id, sku, amount FROM o ORDER BY sku LIMIT 5 OFFSET 3").fetchall())
    assert "o@o_sku" in plan and "limit 8" in plan and "sort" not in plan, plan


def test_picked_decoder_given_the_indexed_column_as_reading_it(lsm) -> None:
    """A decoder told that the caller hands in one column's values (`PickedDecoder.given`:
    ``ORDER BY sku LIMIT n`` takes ``sku`` from the index entries) decodes the other columns
    as the full decoder does, from maps and slot arrays alike, the given values in their slots."""
    s, _ = lsm
    codec = codec_for(s.catalog().get_table("o"))
    pairs = s.db.engine.snapshot().read_range(codec.prefix, prefix_end(codec.prefix))
    keys, values = [k for k, _v in pairs], [v for _k, v in pairs]
    maps = [encode_row_value(dict(enumerate((None, None, "x", 3, 4, "n")))) for _ in keys]
    for positions in ([0, 2, 3], [2, 4, 2, 0], [3, 2], [0]):
        whole = picks_for(codec, positions)
        given = whole.given(2)
        for vals in (values, maps):
            want = whole.batch_of(keys, vals)
            texts = [row[positions.index(2)] for row in want] if 2 in positions else None
            assert given.batch_of(keys, vals, texts) == want
    s.commit()


def test_first_rows_skip_an_entry_without_its_row_as_the_normal_path(lsm, monkeypatch) -> None:
    """An index entry whose row is gone (written around SQL): the fused read drops it and
    keeps the indexed strings of the others in step with their rows, as the normal path does."""
    s, _ = lsm
    s.execute("DELETE FROM o WHERE sku IS NULL OR NOT sku < 'z'")  # (those are cut the general way)
    sql = "SELECT id, sku, amount FROM o ORDER BY sku LIMIT 12"
    first = s.execute(sql).fetchall()
    assert all(sku.isascii() for _id, sku, _amount in first)
    codec = codec_for(s.catalog().get_table("o"))
    s.commit()
    txn = s.db.txn_manager.begin()
    txn.delete(codec.row_key(s.execute("SELECT * FROM o WHERE id = ?", (first[3][0],)).fetchall()[0]))
    txn.commit()
    fast = _outcomes(s, [(sql, ())])
    assert s.plans.get(sql).read is not None
    assert fast[0] == first[:3] + first[4:]  # LIMIT 12 read 12 entries: 11 rows
    _normal_path(s, monkeypatch)
    assert _outcomes(s, [(sql, ())]) == fast
