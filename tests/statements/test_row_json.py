"""Rows as JSON (issue 15): row_to_json(t), to_jsonb(t), jsonb_agg(t), ROW(...) (expr/row_json.py).
Expectations hand-computed from PostgreSQL's documentation (column names as keys, to_jsonb's
value rules); sqlite3's json_object is an oracle for the plain columns."""

from __future__ import annotations

import json
import sqlite3

import pytest

import sqlkv
from sqlkv.errors import NotSupportedError, ProgrammingError

ROW1 = {"id": 1, "name": "a", "ts": "2024-01-02T03:04:05", "n": 1.5, "tags": [1, 2], "doc": {"k": [True]}}
ROW2 = {"id": 2, "name": None, "ts": None, "n": None, "tags": None, "doc": None}


@pytest.fixture
def conn():
    c = sqlkv.connect(":memory:", autocommit=True)
    c.execute("CREATE TABLE t (id INT PRIMARY KEY, name TEXT, ts TIMESTAMP, n DECIMAL(5,2), tags INT[], doc JSONB)")
    c.execute("""INSERT INTO t VALUES (1, 'a', '2024-01-02 03:04:05', 1.50, ARRAY[1,2], '{"k": [true]}'),
                 (2, NULL, NULL, NULL, NULL, NULL)""")
    yield c
    c.close()


def values(conn, sql: str) -> list:
    return [r[0] if len(r) == 1 else r for r in conn.execute(sql).fetchall()]


@pytest.mark.parametrize("call", ["row_to_json(t)", "to_jsonb(t)", "to_json(t)", "row_to_json(x)", "row_to_json(t.*)"])
def test_whole_row_as_an_object(conn, call):
    source = "t AS x" if "(x)" in call else "t"
    assert values(conn, f"SELECT {call} FROM {source} ORDER BY id") == [ROW1, ROW2]


def test_text_form_keeps_numeric_digits_and_iso_timestamps(conn):
    [text] = values(conn, "SELECT row_to_json(t)::TEXT FROM t WHERE id = 1")
    # JSONB key order (shorter keys first), NUMERIC as a number with its digits, TIMESTAMP as ISO text
    assert text == '{"n": 1.50, "id": 1, "ts": "2024-01-02T03:04:05", "doc": {"k": [true]}, "name": "a", "tags": [1, 2]}'


def test_aliases_joins_subqueries_and_correlation(conn):
    assert values(conn, "SELECT row_to_json(a), b.id FROM t a JOIN t b ON a.id = b.id + 1") == [(ROW2, 1)]
    assert values(conn, "SELECT row_to_json(s) FROM (SELECT id, name AS nm FROM t) s ORDER BY id") == [
        {"id": 1, "nm": "a"}, {"id": 2, "nm": None}]
    assert values(conn, "SELECT id FROM t WHERE row_to_json(t) ->> 'name' = 'a'") == [1]
    assert [str(v) for v in values(conn, "SELECT (SELECT row_to_json(t) ->> 'id') FROM t ORDER BY id")] == ["1", "2"]
    # a scalar subquery's JSONB comes back as Python values too (its column type is not known)
    assert values(conn, "SELECT (SELECT row_to_json(t)) FROM t ORDER BY id") == [ROW1, ROW2]
    # a column named like the table wins, as in PostgreSQL
    conn.execute("CREATE TABLE c (id INT PRIMARY KEY, c TEXT)")
    conn.execute("INSERT INTO c VALUES (1, 'col')")
    assert values(conn, "SELECT to_jsonb(c) FROM c") == ["col"]


def test_row_constructor_uses_f1_f2(conn):
    assert values(conn, "SELECT row_to_json(ROW(1, 'x', NULL))") == [{"f1": 1, "f2": "x", "f3": None}]
    assert values(conn, "SELECT to_jsonb((id, name)) FROM t WHERE id = 1") == [{"f1": 1, "f2": "a"}]


def test_jsonb_agg_of_rows(conn):
    assert values(conn, "SELECT jsonb_agg(t ORDER BY id DESC) FROM t") == [[ROW2, ROW1]]
    assert values(conn, "SELECT json_agg(t) FILTER (WHERE id = 1) FROM t") == [[ROW1]]
    assert values(conn, "SELECT jsonb_agg(t.* ORDER BY id) FROM t") == [[ROW1, ROW2]]
    assert values(conn, "SELECT jsonb_agg(name ORDER BY id) FROM t") == [["a", None]]  # plain values unchanged
    conn.execute("INSERT INTO t SELECT id + 10, name, ts, n, tags, doc FROM t")
    [rows] = values(conn, "SELECT jsonb_agg(DISTINCT (name, n)) FROM t")
    assert sorted(rows, key=lambda r: r["f1"] or "") == [{"f1": None, "f2": None}, {"f1": "a", "f2": 1.5}]


def test_plain_columns_agree_with_sqlite_json_object(conn):
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (id INT PRIMARY KEY, name TEXT)")
    lite.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, None), (3, 'q"uote')])
    conn.execute("CREATE TABLE u (id INT PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO u VALUES (?, ?)", [(1, "a"), (2, None), (3, 'q"uote')])
    expected = [json.loads(r[0]) for r in lite.execute("SELECT json_object('id', id, 'name', name) FROM t ORDER BY id")]
    assert values(conn, "SELECT row_to_json(u) FROM u ORDER BY id") == expected


@pytest.mark.parametrize("sql,error,match", [
    ("SELECT row_to_json(1)", ProgrammingError, "row_to_json\\(\\) takes a row"),
    ("SELECT row_to_json('{}'::JSONB)", ProgrammingError, "takes a row"),
    ("SELECT row_to_json(nothere) FROM t", ProgrammingError, "takes a row"),
    ("SELECT row_to_json(t, true) FROM t", NotSupportedError, "pretty"),
    ("SELECT t FROM t", ProgrammingError, 'column "t" does not exist'),
])
def test_refused_forms(conn, sql, error, match):
    with pytest.raises(error, match=match):
        conn.execute(sql)
