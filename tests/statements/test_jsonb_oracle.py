"""JSONB against sqlite3's JSON1 on generated documents, where the two agree on results:
``->>`` with a key or a subscript, ``#>>`` against ``json_extract(doc, '$.a.b')``,
``jsonb_array_length`` against ``json_array_length`` and ``jsonb_typeof`` against ``json_type``
(with the names mapped). Documents hold integers, strings, booleans, nulls, arrays and objects
without duplicate keys (sqlite keeps duplicates and key order; JSONB normalises both, and
containers are compared as parsed values). Also: a JSONB document survives a kill -9 of the
writing process on the LSM engine, each acknowledged update whole.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

import sqlkv

KEYS = st.sampled_from(["a", "b", "c", "key", "é", "a b"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53),
                    st.text(alphabet="xyz é\"\\\n", max_size=6))
DOCS = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(KEYS, inner, max_size=4)), max_leaves=12)
_SQLITE_TYPES = {"object": "object", "array": "array", "integer": "number", "real": "number", "text": "string",
                 "true": "boolean", "false": "boolean", "null": "null"}


def _comparable(value: object, kind: str | None) -> object:
    """A ->> / json_extract result in common terms: a container parsed, a boolean as 1/0 (sqlite's
    form), anything else as its text; ``kind`` is the value's jsonb_typeof."""
    if value is None:
        return None
    if kind in ("object", "array"):
        return json.loads(value)
    if kind == "boolean":
        return {"true": "1", "false": "0"}.get(str(value), str(value))
    return str(value)


@pytest.fixture(scope="module")
def engines():
    lite = sqlite3.connect(":memory:")
    kv = sqlkv.connect(":memory:", autocommit=True)
    yield lite, kv
    kv.close()
    lite.close()


@settings(max_examples=150)
@given(doc=DOCS, key=KEYS, index=st.integers(-3, 4))
def test_arrow_text_agrees_with_sqlite(engines, doc, key, index):
    lite, kv = engines
    text = json.dumps(doc, ensure_ascii=False)  # sqlite matches keys unescaped
    [(lite_key, lite_type)] = lite.execute("SELECT ? ->> ?, json_type(?, ?)", (text, key, text, f'$."{key}"'))
    [(kv_key, kv_type)] = kv.execute("SELECT ?::JSONB ->> ?, jsonb_typeof(?::JSONB -> ?)", (text, key, text, key))
    assert kv_type == (None if lite_type is None else _SQLITE_TYPES[lite_type])
    assert _comparable(kv_key, kv_type) == _comparable(lite_key, kv_type)
    if index >= 0:  # sqlite's ->> takes no negative subscript (it reads it as a key)
        [(lite_i,)] = lite.execute("SELECT ? ->> ?", (text, index))
        [(kv_i, kv_i_type)] = kv.execute("SELECT ?::JSONB ->> ?, jsonb_typeof(?::JSONB -> ?)", (text, index, text, index))
        assert _comparable(kv_i, kv_i_type) == _comparable(lite_i, kv_i_type)


@settings(max_examples=150)
@given(doc=DOCS, path=st.lists(st.one_of(KEYS, st.integers(0, 3)), min_size=1, max_size=3))
def test_path_text_agrees_with_json_extract(engines, doc, path):
    lite, kv = engines
    text = json.dumps(doc, ensure_ascii=False)  # sqlite matches keys unescaped
    lite_path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)
    pg_path = "{" + ",".join(f'"{p}"' for p in path) + "}"
    [(lite_value, lite_type)] = lite.execute("SELECT json_extract(?, ?), json_type(?, ?)",
                                             (text, lite_path, text, lite_path))
    [(kv_value, kv_type)] = kv.execute("SELECT ?::JSONB #>> ?, jsonb_typeof(?::JSONB #> ?)",
                                       (text, pg_path, text, pg_path))
    assert _comparable(kv_value, kv_type) == _comparable(lite_value, kv_type)
    assert kv_type == (None if lite_type is None else _SQLITE_TYPES[lite_type])


@settings(max_examples=150)
@given(doc=DOCS)
def test_type_and_array_length_agree_with_sqlite(engines, doc):
    lite, kv = engines
    text = json.dumps(doc, ensure_ascii=False)  # sqlite matches keys unescaped
    [(lite_type, lite_len)] = lite.execute("SELECT json_type(?), json_array_length(?)", (text, text))
    [(kv_type,)] = kv.execute("SELECT jsonb_typeof(?::JSONB)", (text,))
    assert kv_type == _SQLITE_TYPES[lite_type]
    if isinstance(doc, list):
        assert kv.execute("SELECT jsonb_array_length(?::JSONB)", (text,)).fetchone() == (lite_len,)
    else:
        with pytest.raises(sqlkv.DataError, match="cannot get array length"):
            kv.execute("SELECT jsonb_array_length(?::JSONB)", (text,)).fetchall()


@settings(max_examples=60)
@given(doc=DOCS)
def test_round_trip_through_a_table_keeps_the_document(engines, doc):
    _, kv = engines
    kv.execute("CREATE TABLE IF NOT EXISTS rt (id INT PRIMARY KEY, j JSONB)")
    kv.execute("UPSERT INTO rt VALUES (1, ?)", (json.dumps(doc),))
    assert kv.execute("SELECT j FROM rt").fetchone() == (doc,)
    assert kv.execute("SELECT j = ?::JSONB FROM rt", (json.dumps(doc),)).fetchone() == (True,)


CHILD = textwrap.dedent(
    """
    import sys
    import sqlkv
    conn = sqlkv.connect(sys.argv[1], autocommit=True, memtable_size=8192, block_size=512)
    conn.execute("CREATE TABLE IF NOT EXISTS docs (id INT PRIMARY KEY, doc JSONB)")
    conn.execute("UPSERT INTO docs VALUES (1, ?)", ({"n": 0, "log": []},))
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        conn.execute("BEGIN")
        conn.execute("UPDATE docs SET doc = jsonb_set(doc || jsonb_build_object('log', (doc -> 'log') || to_jsonb(?)), "
                     "'{n}', to_jsonb(?)) WHERE id = 1", (n, n))
        conn.execute("COMMIT")
        print(n, flush=True)
    """
)


def test_kill_keeps_acknowledged_jsonb_updates_whole(tmp_path):
    path = str(tmp_path / "db")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, text=True)
    acked = 0
    try:
        assert proc.stdout.readline().strip() == "ready"
        while acked < 60:
            acked = int(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    conn = sqlkv.connect(path)
    [(doc,)] = conn.execute("SELECT doc FROM docs WHERE id = 1").fetchall()
    # every acknowledged update is there, and each committed update is whole: n and log agree
    assert doc["n"] >= acked
    assert doc["log"] == list(range(1, doc["n"] + 1))
    assert conn.execute("CHECK DATABASE").fetchall() == []
    conn.close()


def _reference_key(tree: object, top: bool = True) -> tuple:
    """PostgreSQL's jsonb btree order, written from its documentation ("jsonb Indexing"):
    Object > Array > Boolean > Number > String > Null; objects by pair count, then pairs in
    storage order (shorter keys first); arrays by length, then elements; an empty top-level
    array below everything."""
    if top and tree == [] and isinstance(tree, list):
        return (-1,)
    if tree is None:
        return (0,)
    if isinstance(tree, bool):
        return (3, tree)
    if isinstance(tree, str):
        return (1, tree)
    if isinstance(tree, (int, float)):
        return (2, tree)
    if isinstance(tree, list):
        return (4, len(tree), tuple(_reference_key(x, False) for x in tree))
    keys = sorted(tree, key=lambda k: (len(k.encode()), k.encode()))
    return (5, len(tree), tuple((k, _reference_key(tree[k], False)) for k in keys))


@settings(max_examples=40)
@given(docs=st.lists(DOCS, min_size=1, max_size=12), desc=st.booleans(), indexed=st.booleans())
def test_order_by_matches_postgresql_order(engines, docs, desc, indexed):
    _, kv = engines
    kv.execute("DROP TABLE IF EXISTS ord")
    key = "j JSONB, id INT, PRIMARY KEY (j, id)" if indexed else "id INT PRIMARY KEY, j JSONB"
    kv.execute(f"CREATE TABLE ord ({key})")
    kv.executemany("INSERT INTO ord (id, j) VALUES (?, ?)", [(i, json.dumps(d)) for i, d in enumerate(docs)])
    got = [j for (j,) in kv.execute(f"SELECT j FROM ord ORDER BY j {'DESC' if desc else ''}, id")]
    expected = sorted(docs, key=_reference_key, reverse=desc)
    assert [_reference_key(d) for d in got] == [_reference_key(d) for d in expected]
