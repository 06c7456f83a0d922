"""CREATE INDEX's batched entries (sql/ddl/index_entries.py) are, byte for byte, what the
row-at-a-time `IndexCodec.entry` writes: over random rows of every key type (NULLs, negative
and 64-bit ints, NUL-holding and non-ASCII text, -0.0, NaN), for ascending and DESC columns,
STORING columns, unique and non-unique indexes and partial ones, on a table keyed by one int,
on one keyed by a DESC int and on one with a DESC composite key; the rows reach the batch as a
scan hands them out, as ``(keys, values)`` lists."""

from __future__ import annotations

import datetime
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import sqlkv
from sqlkv.catalog.catalog import Catalog
from sqlkv.sql.ddl.index_entries import (column_batches, distinct_batch, distinct_entries, unique_batch,
                                         unique_entries)
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.index import EMPTY_LIST, IndexCodec

COLUMNS = "i INT, t TEXT, f FLOAT, b BOOL, d DECIMAL, dt DATE, ts TIMESTAMP, y BYTES, n INT"
TABLES = {
    "int_key": f"CREATE TABLE t (id INT PRIMARY KEY, {COLUMNS})",
    "desc_composite_key": f"CREATE TABLE t (id INT, s TEXT, {COLUMNS}, PRIMARY KEY (s DESC, id))",
    "desc_int_key": f"CREATE TABLE t (id INT, {COLUMNS}, PRIMARY KEY (id DESC))",
}
INDEXES = [
    "CREATE INDEX x_i ON t (i)",
    "CREATE INDEX x_in ON t (i DESC, n)",
    "CREATE INDEX x_n ON t (n, i DESC)",
    "CREATE INDEX x_t ON t (t DESC) STORING (f, y)",
    "CREATE INDEX x_f ON t (f, b)",
    "CREATE INDEX x_d ON t (d DESC, dt)",
    "CREATE INDEX x_ts ON t (ts) STORING (i)",
    "CREATE INDEX x_y ON t (y DESC)",
    "CREATE INDEX x_part ON t (n) STORING (t) WHERE i > 0",
    "CREATE UNIQUE INDEX u_i ON t (i, n DESC)",
    "CREATE UNIQUE INDEX u_t ON t (t) STORING (d)",
    "CREATE UNIQUE INDEX u_id ON t (n, id)",
    "CREATE UNIQUE INDEX u_ids ON t (id, t DESC) STORING (f, d)",
]

INT64 = st.integers(-(2**63), 2**63 - 1)
INTS = st.one_of(st.none(), st.integers(0, 300), st.integers(0, 2**63 - 1), INT64)
TEXT = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["", "a\x00b", "\x00", "é€", "zz"]))
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, math.inf]))
DECIMALS = st.one_of(st.none(), st.decimals(allow_nan=False, allow_infinity=False, places=3,
                                            min_value=-10**6, max_value=10**6))
DATES = st.one_of(st.none(), st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1)))
STAMPS = st.one_of(st.none(), st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1)))
ROW = st.tuples(INTS, TEXT, FLOATS, st.one_of(st.none(), st.booleans()), DECIMALS, DATES, STAMPS,
                st.one_of(st.none(), st.binary(max_size=4)), st.one_of(st.none(), st.integers(0, 5)))


@pytest.fixture(scope="module", params=sorted(TABLES))
def table(request):
    conn = sqlkv.connect(":memory:", autocommit=True)
    conn.execute(TABLES[request.param])
    for sql in INDEXES:
        conn.execute(sql)
    db = conn.session.db
    txn = db.txn_manager.begin()
    desc = Catalog(txn).get_table("t")
    txn.rollback()
    yield request.param, desc
    conn.close()


def _rows(kind: str, values: list[tuple]) -> list[tuple]:
    if kind != "desc_composite_key":
        return [(n * 977 - 5000, *row) for n, row in enumerate(values)]  # negative ids too
    return [(n, ("k%d" % (n % 3)) if n % 4 else "", *row) for n, row in enumerate(values)]


def _scanned(codec, rows: list[tuple]) -> tuple[list[bytes], list[bytes]]:
    """The rows' pairs in key order, as a scan's ``(keys, values)`` lists."""
    pairs = sorted(pair for row in rows for pair in codec.primary_kvs(codec.complete(row)))
    return [key for key, _value in pairs], [value for _key, value in pairs]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, max_size=40), st.integers(1, 7))
def test_batched_entries_are_index_codec_entries(table, values, cut) -> None:
    kind, desc = table
    codec = codec_for(desc)
    rows = _rows(kind, values)
    keys, values_ = _scanned(codec, rows)
    decoded = list(codec.decode_rows(zip(keys, values_)))  # rows as a scan decodes them (key order)
    start, end = len(codec.prefix), -len(codec.fam0_suffix)
    batches = [(keys[i:i + cut], values_[i:i + cut]) for i in range(0, len(keys), cut)]
    checked = 0
    for index in desc.indexes:
        ic = IndexCodec(desc, index, codec.pk_positions)
        expected = [ic.entry(row, key[start:end])[:2] for row, key in zip(decoded, keys) if ic.holds(row)]
        if distinct_entries(codec, ic):
            got = []
            for columns, pks in column_batches(codec, ic, batches):
                entry_keys, entry_values = distinct_batch(ic, columns, pks)
                got += zip(entry_keys, entry_values or [EMPTY_LIST] * len(entry_keys))
        elif unique_entries(codec, ic):
            got, ordinals, first = [], [], 0
            for columns, pks in column_batches(codec, ic, batches):
                entries = unique_batch(ic, columns, pks, first)
                got += [(key, value) for key, _ordinal, value in entries]
                ordinals += [ordinal for _key, ordinal, _value in entries]
                first += len(pks)
            assert ordinals == list(range(len(rows)))
        else:
            continue  # an index holding a primary key column in its key: IndexCodec.entry itself
        checked += 1
        assert got == expected, index.name
    assert checked >= len(INDEXES) - 2
