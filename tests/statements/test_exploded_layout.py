"""The exploded layout of ARRAY and JSONB columns (issue 15): a header key plus one KV per element.

``FAMILY f (tags) WITH (layout = exploded)`` stores ``tags`` as ``/t/t_pkey/<pk>/<f>`` (the
length) and ``/t/t_pkey/<pk>/<f>/<i>`` (element i). The oracle for every query is the same
table in the default (packed) layout: both must answer alike, for hypothesis-generated
workloads, and a Python model of the values. Key layouts are pinned by golden KV traces
(tests/sql/core_support.KVTrace); CHECK DATABASE must notice elements removed or added behind
the SQL layer's back; a kill -9 in the middle of transactions that update elements must leave
every value whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlkv
from sqlkv.bench.layouts import WORKLOADS, report, run_layouts
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, from_python
from sqlkv.encoding.keys import encode_key, family_suffix, index_prefix
from sqlkv.encoding.values import encode_single
from sqlkv.errors import ProgrammingError, SqlSyntaxError
from sqlkv.sql.check import check_database
from tests.sql.core_support import KVTrace
from tests.statements.support import rows, s  # noqa: F401  (fixture)

EXPLODED = ("CREATE TABLE t (id INT PRIMARY KEY, name TEXT, tags TEXT[], doc JSONB, "
            "FAMILY f_tags (tags) WITH (layout = exploded), FAMILY f_doc (doc) WITH (layout = exploded))")


def plan_text(session, sql: str, params=()) -> str:
    return "\n".join(r[0] for r in rows(session, "EXPLAIN " + sql, params))


def analyze(session, sql: str) -> str:
    return "\n".join(r[0] for r in rows(session, "EXPLAIN ANALYZE " + sql))


# ---------------------------------------------------------------- DDL


@pytest.mark.parametrize("ddl, error, text", [
    ("CREATE TABLE u (id INT PRIMARY KEY, n INT, FAMILY f (n) WITH (layout = exploded))",
     ProgrammingError, 'column "n" is INT, only ARRAY and JSONB columns can be exploded'),
    ("CREATE TABLE u (id INT PRIMARY KEY, a INT[], b JSONB, FAMILY f (a, b) WITH (layout = exploded))",
     ProgrammingError, 'exploded family "f" must hold exactly one ARRAY or JSONB column'),
    ("CREATE TABLE u (a INT[] PRIMARY KEY, FAMILY f (a) WITH (layout = exploded))",
     ProgrammingError, 'column "a" is part of the primary key'),
    ("CREATE TABLE u (id INT PRIMARY KEY, a INT[], FAMILY f (a) WITH (layout = shredded))",
     ProgrammingError, 'family "f": unknown layout "shredded"'),
    ("CREATE TABLE u (id INT PRIMARY KEY, a INT[], FAMILY f (a) WITH (shape = exploded))",
     SqlSyntaxError, 'family "f": expected WITH \\(layout = packed \\| exploded\\)'),
    ("CREATE TABLE u (id INT PRIMARY KEY, a INT[], FAMILY f (a) EXPLODED)",
     SqlSyntaxError, 'family "f": expected WITH'),
    ("CREATE TABLE u (id INT PRIMARY KEY, a INT[], b INT[] AS (a) VIRTUAL, FAMILY f (b) WITH (layout = exploded))",
     ProgrammingError, 'column "b" is VIRTUAL'),
])
def test_refused_forms_name_what_is_wrong(s, ddl, error, text):  # noqa: F811
    with pytest.raises(error, match=text):
        s.execute(ddl)
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'u'") == [(0,)]


def test_show_create_prints_the_layout_and_it_survives_reopen(tmp_path):
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path, autocommit=True)
    conn.execute(EXPLODED)
    conn.execute("CREATE TABLE p (id INT PRIMARY KEY, tags TEXT[], FAMILY f (tags) WITH (layout = packed))")
    conn.execute("INSERT INTO t VALUES (1, 'a', ARRAY['x', 'y'], '{\"k\": 1}')")
    shown = conn.execute("SHOW CREATE TABLE t").fetchall()[0][1]
    assert "FAMILY f_tags (tags) WITH (layout = exploded)" in shown
    assert "FAMILY f_doc (doc) WITH (layout = exploded)" in shown
    assert "layout" not in conn.execute("SHOW CREATE TABLE p").fetchall()[0][1]  # packed is the default
    conn.close()
    conn = sqlkv.connect(path, autocommit=True)
    assert conn.execute("SHOW CREATE TABLE t").fetchall()[0][1] == shown
    # the printed statement creates the same table again
    conn.execute(shown.replace("CREATE TABLE t", "CREATE TABLE t2", 1))
    conn.execute("INSERT INTO t2 SELECT * FROM t")
    assert conn.execute("SELECT * FROM t2").fetchall() == [(1, "a", ["x", "y"], {"k": 1})]
    keys = [r[0] for r in conn.execute("SELECT key FROM sqlkv_internal.kv WHERE table_name = 't2'")]
    assert keys[:4] == ["/t2/t_pkey/1/0", "/t2/t_pkey/1/1", "/t2/t_pkey/1/1/1", "/t2/t_pkey/1/1/2"]
    conn.close()


# ---------------------------------------------------------------- keys


def test_golden_kv_writes_of_insert_and_element_updates():
    trace = KVTrace()
    try:
        trace.run(EXPLODED)
        assert trace.run("INSERT INTO t VALUES (7, 'ann', ARRAY['a', NULL, 'c'], "
                         "'{\"email\": \"a@b.c\", \"n\": {\"k\": [1, 2]}}')") == [
            "put /t/t_pkey/7/0 -> {name: 'ann'}",
            "put /t/t_pkey/7/1 -> length 3",
            "put /t/t_pkey/7/1/1 -> 'a'",
            "put /t/t_pkey/7/1/2 -> None",
            "put /t/t_pkey/7/1/3 -> 'c'",
            "put /t/t_pkey/7/2 -> object, 2 keys",  # a batch is in key order: attributes by name bytes
            'put /t/t_pkey/7/2/"email" -> Jsonb(\'"a@b.c"\')',
            'put /t/t_pkey/7/2/"n" -> Jsonb(\'{"k": [1, 2]}\')',
        ]
        # one element: one put
        assert trace.run("UPDATE t SET tags[2] = 'b' WHERE id = 7") == ["put /t/t_pkey/7/1/2 -> 'b'"]
        # one element past the end: that element and the header (the length changes)
        assert trace.run("UPDATE t SET tags[4] = 'd' WHERE id = 7") == [
            "put /t/t_pkey/7/1 -> length 4", "put /t/t_pkey/7/1/4 -> 'd'"]
        # jsonb_set of one top-level key: one put
        assert trace.run("UPDATE t SET doc = jsonb_set(doc, '{email}', '\"x@y.z\"') WHERE id = 7") == [
            'put /t/t_pkey/7/2/"email" -> Jsonb(\'"x@y.z"\')']
        # a whole value that is shorter: changed elements written, removed ones deleted
        assert trace.run("UPDATE t SET tags = ARRAY['a', 'z'] WHERE id = 7") == [
            "put /t/t_pkey/7/1 -> length 2", "put /t/t_pkey/7/1/2 -> 'z'",
            "del /t/t_pkey/7/1/3", "del /t/t_pkey/7/1/4"]
        # another column: the exploded families are not touched
        assert trace.run("UPDATE t SET name = 'bo' WHERE id = 7") == ["put /t/t_pkey/7/0 -> {name: 'bo'}"]
        # a scalar document lives whole in its header; NULL deletes every key
        assert trace.run("UPDATE t SET doc = '5', tags = NULL WHERE id = 7") == [
            "del /t/t_pkey/7/1", "del /t/t_pkey/7/1/1", "del /t/t_pkey/7/1/2",
            "put /t/t_pkey/7/2 -> scalar Jsonb('5')", 'del /t/t_pkey/7/2/"email"', 'del /t/t_pkey/7/2/"n"']
        trace.run("UPDATE t SET doc = '[true, {\"a\": 1}]', tags = ARRAY[]::TEXT[] WHERE id = 7")
        assert trace.run("DELETE FROM t WHERE id = 7") == [
            "del /t/t_pkey/7/0", "del /t/t_pkey/7/1", "del /t/t_pkey/7/2", "del /t/t_pkey/7/2/0",
            "del /t/t_pkey/7/2/1"]
    finally:
        trace.close()


def test_kv_display_shows_headers_and_elements(s):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("INSERT INTO t VALUES (1, 'a', ARRAY['x'], '[1, \"two\"]')")
    got = rows(s, "SELECT key, value FROM sqlkv_internal.kv WHERE table_name = 't'")
    assert got == [("/t/t_pkey/1/0", "{name: 'a'}"), ("/t/t_pkey/1/1", "length 1"), ("/t/t_pkey/1/1/1", "'x'"),
                   ("/t/t_pkey/1/2", "array, 2 elements"), ("/t/t_pkey/1/2/0", "Jsonb('1')"),
                   ("/t/t_pkey/1/2/1", "Jsonb('\"two\"')")]


# ---------------------------------------------------------------- reads


def test_element_reads_by_primary_key_are_point_gets(s):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("INSERT INTO t VALUES (1, 'a', ARRAY['x', NULL, 'z'], '{\"email\": \"a@b\", \"n\": [1, 2]}')")
    s.execute("INSERT INTO t VALUES (2, 'b', ARRAY[]::TEXT[], '[10, {\"k\": 1}]'), (3, 'c', NULL, '\"s\"')")
    sql = "SELECT tags[3], doc->>'email', doc->'n' FROM t WHERE id = 1"
    assert rows(s, sql) == [("z", "a@b", Jsonb([1, 2]))]
    assert "elements: /Table/100/1/1/1/3, /Table/100/1/1/2/\"email\", /Table/100/1/1/2/\"n\"" in plan_text(s, sql)
    # family 0 (does the row exist) and the three elements: one batch of gets, no scan
    assert "kv_gets=4 kv_scans=0" in analyze(s, sql)
    # the same answers as whole values give, for every row and for elements that are not there
    q = "SELECT tags[{i}], doc->>'email', doc->'n', doc->{j}, doc->>{j}, tags[{i}] IS NULL FROM t WHERE id = {r}"
    for r in (1, 2, 3, 4):
        for i, j in ((1, 0), (2, 1), (3, 5), (0, 0), (-1, 1)):
            text = q.format(i=i, j=j, r=r)
            whole = text.replace("FROM t", ", cardinality(tags) FROM t")  # reads tags whole
            assert "elements" not in plan_text(s, whole)
            assert [row[:6] for row in rows(s, whole)] == rows(s, text), text
    # a whole use of the column: one prefix scan of its family
    assert "kv_scans=2" in analyze(s, "SELECT tags, doc FROM t WHERE id = 1")
    # an exploded column the query does not mention is not read
    assert "kv_gets=1 kv_scans=0" in analyze(s, "SELECT name FROM t WHERE id = 1")


def test_element_updates_by_primary_key_read_the_length_and_the_assigned_elements(s):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("INSERT INTO t VALUES (7, 'ann', ARRAY['a', NULL, 'c'], '{\"k\": 1}'), (8, 'bo', NULL, NULL)")
    sql = "UPDATE t SET tags[2] = 'b', tags[5] = 'e' WHERE id = 7"
    assert "elements: /Table/100/1/7/1, /Table/100/1/7/1/2, /Table/100/1/7/1/5" in plan_text(s, sql)
    # family 0, the header and the two elements: one batch of gets, no scan of either exploded value
    assert "kv_gets=4 kv_scans=0" in analyze(s, sql)
    # an UPDATE of another column reads neither exploded value
    assert "kv_gets=1 kv_scans=0" in analyze(s, "UPDATE t SET name = name || '!' WHERE id = 7")
    # a NULL array (no header) is extended from empty, as with a whole read
    s.execute("UPDATE t SET tags[2] = 'q' WHERE id = 8")
    assert rows(s, "SELECT id, name, tags, doc FROM t ORDER BY id") == [
        (7, "ann!", SqlArray(["a", "b", "c", None, "e"]), Jsonb({"k": 1})), (8, "bo", SqlArray([None, "q"]), None)]
    # any other use of the column, RETURNING, or a non-constant index: the whole value is read
    for whole in ("UPDATE t SET tags[1] = tags[2] WHERE id = 7", "UPDATE t SET tags[1] = 'x' WHERE id = 7 RETURNING id",
                  "UPDATE t SET tags[id - 6] = 'x' WHERE id = 7", "UPDATE t SET tags[1] = 'x' WHERE id = 7 AND "
                  "cardinality(tags) > 0"):
        assert "kv_scans=1" in analyze(s, whole), whole
    # a range of rows is scanned whole, as before
    assert "elements" not in plan_text(s, "UPDATE t SET tags[1] = 'y' WHERE id > 6")
    # a new primary key rewrites the row whole: every value is read (none lost)
    s.execute("UPDATE t SET id = 70, tags[1] = 'm' WHERE id = 7")
    s.execute("UPDATE t SET id = 80 WHERE id = 8")
    assert rows(s, "SELECT id, name, tags, doc FROM t ORDER BY id") == [
        (70, "ann!", SqlArray(["m", "b", "c", None, "e"]), Jsonb({"k": 1})), (80, "bo", SqlArray([None, "q"]), None)]
    assert check_database(s) == []


def test_jsonb_set_of_one_key_by_primary_key_reads_the_header_and_that_attribute(s):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("""INSERT INTO t VALUES (7, 'a', NULL, '{"a": 1, "b": 2}'), (8, 'b', NULL, '[1, 2]'),
                 (9, 'c', NULL, '5'), (10, 'd', NULL, NULL)""")
    sql = "UPDATE t SET doc = jsonb_set(doc, '{c}', '3') WHERE id = 7"
    assert 'elements: /Table/100/1/7/2, /Table/100/1/7/2/"c"' in plan_text(s, sql)
    assert "kv_gets=3 kv_scans=0" in analyze(s, sql)  # family 0, the header, the attribute
    # replacing one, and create_missing => false on a missing key (nothing changes)
    s.execute("UPDATE t SET doc = jsonb_set(doc, '{a}', '[9]') WHERE id = 7")
    s.execute("UPDATE t SET doc = jsonb_set(doc, '{z}', '0', false) WHERE id = 7")
    # an array document (the key is a position) is read whole for that row; a NULL one stays NULL
    s.execute("UPDATE t SET doc = jsonb_set(doc, '{0}', '3') WHERE id = 8")
    s.execute("UPDATE t SET doc = jsonb_set(doc, '{c}', '3') WHERE id = 10")
    with pytest.raises(sqlkv.DataError, match="scalar"):
        s.execute("UPDATE t SET doc = jsonb_set(doc, '{0}', '3') WHERE id = 9")
    assert rows(s, "SELECT id, doc FROM t ORDER BY id") == [
        (7, Jsonb({"a": [9], "b": 2, "c": 3})), (8, Jsonb([3, 2])), (9, Jsonb(5)), (10, None)]
    # the header still counts every attribute (CHECK DATABASE compares it with the keys)
    assert rows(s, "SELECT value FROM sqlkv_internal.kv WHERE key = '/t/t_pkey/7/2'") == [("object, 3 keys",)]
    assert check_database(s) == []
    # a path of two keys, or the document used elsewhere: read whole
    for whole in ("UPDATE t SET doc = jsonb_set(doc, '{q,r}', '1') WHERE id = 7",
                  "UPDATE t SET doc = jsonb_set(doc, '{a}', doc->'b') WHERE id = 7",
                  "UPDATE t SET doc = jsonb_set(doc, '{a}', '1') WHERE id = 7 AND doc ? 'a'"):
        assert "kv_scans=1" in analyze(s, whole), whole


def test_golden_kv_of_jsonb_set_beside_an_inverted_index():
    trace = KVTrace()
    try:
        trace.run("CREATE TABLE t (id INT PRIMARY KEY, doc JSONB, INVERTED INDEX t_inv (doc), "
                  "FAMILY f_doc (doc) WITH (layout = exploded))")
        trace.run("""INSERT INTO t VALUES (1, '{"a": 1, "b": 2}')""")
        # a new key: its attribute, the header's count, its one entry -- nothing deleted
        assert trace.run("UPDATE t SET doc = jsonb_set(doc, '{n}', '3') WHERE id = 1") == [
            "put /t/t_pkey/1/1 -> object, 3 keys", 'put /t/t_pkey/1/1/"n" -> Jsonb(\'3\')',
            'put /t/t_inv/jsonb:{"n": 3}/1 -> []']
        # a replaced key: its attribute, its old entry out and its new one in
        assert trace.run("UPDATE t SET doc = jsonb_set(doc, '{a}', '[4]') WHERE id = 1") == [
            'put /t/t_pkey/1/1/"a" -> Jsonb(\'[4]\')', 'del /t/t_inv/jsonb:{"a": 1}/1',
            'put /t/t_inv/jsonb:{"a": [4]}/1 -> []']
    finally:
        trace.close()


def _apply_sql(s, sql: str) -> str | None:  # noqa: F811
    try:
        s.execute(sql)
    except sqlkv.Error as e:
        return type(e).__name__
    return None


def test_jsonb_set_of_one_key_keeps_an_inverted_index_whole_without_reading_the_document(s):  # noqa: F811
    s.execute(EXPLODED.replace("FAMILY f_tags", "INVERTED INDEX t_doc_inv (doc), FAMILY f_tags"))
    s.execute(PACKED.replace("FAMILY f_tags", "INVERTED INDEX p_doc_inv (doc), FAMILY f_tags"))
    docs = ['{"a": 1, "b": {"c": [1, 2]}}', "{}", '{"a": {}}', "[1, {\"a\": 2}]", None]
    sets = [("{a}", '{"x": [3, 4]}', "true"), ("{b}", "{}", "true"), ("{new}", '"v"', "true"),
            ("{a}", "1", "false"), ("{zz}", "2", "false"), ("{0}", "7", "true")]
    for t in ("t", "p"):
        for i, doc in enumerate(docs):
            s.execute(f"INSERT INTO {t} (id, doc) VALUES (?, ?)", (i, doc))
    assert "kv_scans=0" in analyze(s, "UPDATE t SET doc = jsonb_set(doc, '{a}', '5') WHERE id = 0")
    s.execute("UPDATE p SET doc = jsonb_set(doc, '{a}', '5') WHERE id = 0")
    for path, value, create in sets:
        for i in range(len(docs)):
            sql = f"UPDATE T_ SET doc = jsonb_set(doc, '{path}', '{value}', {create}) WHERE id = {i}"
            # the same error, or none, in both layouts ({a} in an array document is one)
            assert _apply_sql(s, sql.replace("T_", "t")) == _apply_sql(s, sql.replace("T_", "p")), sql
        # every inverted entry is the one the row's whole value gives (CHECK DATABASE recomputes them)
        assert check_database(s) == []
        assert rows(s, "SELECT id, doc FROM t ORDER BY id") == rows(s, "SELECT id, doc FROM p ORDER BY id")
    for probe in ('{"a": {"x": [3]}}', '{"b": {}}', '{"new": "v"}', '{"a": 5}', "{}"):
        query = f"SELECT id FROM T_ WHERE doc @> '{probe}' ORDER BY id"
        assert rows(s, query.replace("T_", "t")) == rows(s, query.replace("T_", "p")), probe


@pytest.mark.parametrize("extra", [
    "CHECK (cardinality(tags) < 5)", "INDEX t_tags (tags)", "INVERTED INDEX t_inv (tags)",  # ARRAY: whole
    "INDEX t_name (name) WHERE tags IS NOT NULL", "n INT AS (cardinality(tags)) STORED",
])
def test_element_updates_read_the_whole_value_when_a_constraint_or_index_needs_it(s, extra):  # noqa: F811
    s.execute(EXPLODED.replace("FAMILY f_tags", extra + ", FAMILY f_tags"))
    s.execute("INSERT INTO t (id, name, tags) VALUES (7, 'ann', ARRAY['a', 'b', 'c', 'd'])")
    assert "kv_scans=1" in analyze(s, "UPDATE t SET tags[1] = 'z' WHERE id = 7")
    if extra.startswith("CHECK"):
        with pytest.raises(sqlkv.IntegrityError):
            s.execute("UPDATE t SET tags[5] = 'e' WHERE id = 7")
    assert rows(s, "SELECT tags FROM t") == [(SqlArray(["z", "b", "c", "d"]),)]
    assert check_database(s) == []


def test_scans_filters_indexes_and_time_travel(tmp_path):
    conn = sqlkv.connect(str(tmp_path / "db"), autocommit=True)
    conn.execute(EXPLODED)
    conn.execute("CREATE INVERTED INDEX t_tags_inv ON t (tags)")
    conn.execute("CREATE INVERTED INDEX t_doc_inv ON t (doc)")
    conn.execute("CREATE UNIQUE INDEX t_tags_key ON t (tags)")
    data = [(i, f"n{i}", [f"e{i % 3}", f"e{i}"], {"k": i % 4, "a": [i]}) for i in range(1, 21)]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(i, n, t, json.dumps(d)) for i, n, t, d in data])
    before = conn.execute("SELECT now()").fetchall()[0][0]

    def q(sql, params=()):
        return conn.execute(sql, params).fetchall()

    assert q("SELECT id FROM t WHERE tags @> ARRAY['e1'] ORDER BY id") == [(i,) for i in range(1, 21) if i % 3 == 1]
    assert "inverted scan" in "\n".join(r[0] for r in q("EXPLAIN SELECT id FROM t WHERE tags @> ARRAY['e1']"))
    assert q("SELECT id FROM t WHERE doc @> '{\"k\": 2}' ORDER BY id") == [(i,) for i in range(1, 21) if i % 4 == 2]
    assert q("SELECT id FROM t WHERE tags = ARRAY['e2', 'e5']") == [(5,)]
    top = sorted(data, key=lambda d: d[2], reverse=True)[:2]  # text arrays compare element by element
    assert q("SELECT id, tags[2] FROM t ORDER BY tags DESC LIMIT 2") == [(d[0], d[2][1]) for d in top]
    with pytest.raises(sqlkv.IntegrityError, match='"t_tags_key"'):
        conn.execute("UPDATE t SET tags = ARRAY['e0', 'e3'] WHERE id = 4")
    conn.execute("UPDATE t SET tags[2] = 'new' WHERE id = 4")
    assert q("SELECT id FROM t WHERE 'new' = ANY(tags)") == [(4,)]
    assert q("SELECT id FROM t WHERE tags @> ARRAY['e4']") == []
    conn.execute("UPDATE t SET doc = jsonb_set(doc, '{k}', '9') WHERE id < 3")
    assert q("SELECT id FROM t WHERE doc @> '{\"k\": 9}' ORDER BY id") == [(1,), (2,)]
    # ALTER TABLE: a new column, then the exploded one dropped (its keys stay and are ignored)
    conn.execute("ALTER TABLE t ADD COLUMN z INT DEFAULT 7")
    assert q("SELECT z, tags FROM t WHERE id = 3") == [(7, ["e0", "e3"])]
    conn.execute("DROP INDEX t_doc_inv")
    conn.execute("ALTER TABLE t DROP COLUMN doc")
    assert q("SELECT * FROM t WHERE id = 3") == [(3, "n3", ["e0", "e3"], 7)]
    assert q("CHECK DATABASE") == []
    conn.execute("DELETE FROM t WHERE id > 10")
    assert q("SELECT count(*) FROM t") == [(10,)]
    assert q("SELECT count(*) FROM t AS OF SYSTEM TIME ?", (before,)) == [(20,)]
    old = q("SELECT tags, doc->>'k' FROM t AS OF SYSTEM TIME ? WHERE id = 4", (before,))
    assert old == [(["e1", "e4"], "0")]
    assert q("CHECK DATABASE") == []
    conn.close()


def test_check_database_reports_a_missing_or_extra_element(s):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("INSERT INTO t VALUES (1, 'a', ARRAY['x', 'y', 'z'], '{\"a\": 1, \"b\": 2}')")
    s.execute("INSERT INTO t VALUES (2, 'b', ARRAY['p'], '[1]')")
    assert check_database(s) == []
    base1 = index_prefix(100, 1) + encode_key([1])
    base2 = index_prefix(100, 1) + encode_key([2])
    txn = s.db.txn_manager.begin()
    txn.delete(base1 + family_suffix(1) + encode_key([2]))  # a missing element
    txn.put(base2 + family_suffix(1) + encode_key([5]), encode_single("q"))  # an extra one
    txn.delete(base2 + family_suffix(2))  # elements without their header
    txn.commit()
    assert check_database(s) == [
        't: exploded column "tags" at /t/t_pkey/1/1: header says 3 element(s), 2 present; missing 2',
        't: exploded column "tags" at /t/t_pkey/2/1: header says 1 element(s), 2 present; extra 5',
        't: exploded column "doc" at /t/t_pkey/2/2: 1 element key(s) without a header',
    ]
    # reading such a value is an error naming the key, never data
    with pytest.raises(sqlkv.DatabaseError, match='exploded column "tags" at /Table/100/1/1/1'):
        rows(s, "SELECT tags FROM t WHERE id = 1")


# ---------------------------------------------------------------- both layouts, one workload

PACKED = EXPLODED.replace(" WITH (layout = exploded)", "").replace("CREATE TABLE t ", "CREATE TABLE p ")

_elem = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", ""]))
_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y"]))
_json = st.recursive(_json_scalar, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                          st.dictionaries(st.sampled_from("abcd"), kids, max_size=3)),
                     max_leaves=6)
_ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 5), st.one_of(st.none(), st.lists(_elem, max_size=6)), _json),
    st.tuples(st.just("set_elem"), st.integers(0, 5), st.integers(-1, 8), _elem),
    st.tuples(st.just("set_key"), st.integers(0, 5), st.sampled_from("abcde"), _json),
    st.tuples(st.just("set_whole"), st.integers(0, 5), st.one_of(st.none(), st.lists(_elem, max_size=6)), _json),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("set_name"), st.integers(0, 5)),
    st.tuples(st.just("move"), st.integers(0, 5), st.integers(-3, 3)),
    st.tuples(st.just("upsert"), st.integers(0, 5), st.lists(_elem, max_size=4)),
), max_size=15)


def _apply(s, table: str, op) -> str | None:
    """Run one workload step on ``table``; the error class name when it fails."""
    kind, k, *args = op
    if kind == "insert":
        sql, params = f"INSERT INTO {table} VALUES (?, 'n', ?, ?)", (k, args[0], json.dumps(args[1]))
    elif kind == "set_elem":
        sql, params = f"UPDATE {table} SET tags[{args[0]}] = ? WHERE id = ?", (args[1], k)
    elif kind == "set_key":
        sql, params = (f"UPDATE {table} SET doc = jsonb_set(doc, '{{{args[0]}}}', ?) WHERE id = ?",
                       (json.dumps(args[1]), k))
    elif kind == "set_whole":
        sql, params = f"UPDATE {table} SET tags = ?, doc = ? WHERE id = ?", (args[0], json.dumps(args[1]), k)
    elif kind == "set_name":  # reads neither exploded value (plan/element_updates.py)
        sql, params = f"UPDATE {table} SET name = name || 'x' WHERE id = ?", (k,)
    elif kind == "move":  # a new primary key: every key of the row moves
        sql, params = f"UPDATE {table} SET id = id + ? WHERE id = ?", (args[0], k)
    elif kind == "upsert":
        sql = (f"INSERT INTO {table} VALUES (?, 'u', ?, '{{}}') ON CONFLICT (id) DO UPDATE "
               f"SET tags = array_cat(excluded.tags, {table}.tags)")
        params = (k, args[0])
    else:
        sql, params = f"DELETE FROM {table} WHERE id = ?", (k,)
    try:
        s.execute(sql, params)
    except sqlkv.Error as e:
        return type(e).__name__
    return None


_QUERIES = [
    "SELECT * FROM {t} ORDER BY id",
    "SELECT id, tags[1], tags[3], doc->'a', doc->>'b', doc->0 FROM {t} ORDER BY id",
    "SELECT id FROM {t} WHERE tags @> ARRAY['a'] ORDER BY id",
    "SELECT id, cardinality(tags), jsonb_typeof(doc) FROM {t} ORDER BY id DESC",
    "SELECT tags, doc FROM {t} ORDER BY tags, id",
    "SELECT a.id, b.tags, b.doc->'a' FROM {t} a JOIN {t} b ON b.id = a.id + 1 ORDER BY a.id",  # lookup join
    "SELECT id, tags[2] FROM {t} WHERE id IN (1, 3, 5) ORDER BY id DESC",
    "SELECT id FROM {t} WHERE doc @> '{{\"a\": null}}' OR doc ? 'b' ORDER BY id",
    "SELECT id FROM {t} WHERE tags > ARRAY['b'] ORDER BY tags, id",
] + [f"SELECT tags[2], doc->>'a', doc->1 FROM {{t}} WHERE id = {k}" for k in range(6)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_both_layouts_give_identical_results(s, ops):  # noqa: F811
    s.execute("DROP TABLE IF EXISTS t")
    s.execute("DROP TABLE IF EXISTS p")
    s.execute(EXPLODED)
    s.execute(PACKED)
    for table in ("t", "p"):  # index maintenance sees the same old and new values in both layouts
        s.execute(f"CREATE INDEX {table}_tags_idx ON {table} (tags)")
        s.execute(f"CREATE INVERTED INDEX {table}_doc_inv ON {table} (doc)")
        s.execute(f"CREATE INVERTED INDEX {table}_tags_inv ON {table} (tags)")
    model: dict[int, tuple] = {}
    for op in ops:
        assert _apply(s, "t", op) == _apply(s, "p", op), op
        if op[0] == "insert" and op[1] not in model:
            model[op[1]] = (op[2], op[3])
        elif op[0] == "delete":
            model.pop(op[1], None)
        elif op[0] == "set_whole" and op[1] in model:
            model[op[1]] = (op[2], op[3])
    for q in _QUERIES:
        assert rows(s, q.format(t="t")) == rows(s, q.format(t="p")), q
    # the Python model of the inserted and wholly assigned values (element updates aside)
    if all(op[0] in ("insert", "delete", "set_whole") for op in ops):
        assert rows(s, "SELECT id, tags, doc FROM t ORDER BY id") == [
            (k, None if model[k][0] is None else SqlArray(model[k][0]), from_python(model[k][1]))
            for k in sorted(model)]
    assert check_database(s) == []


# ---------------------------------------------------------------- crash

_CHILD = r"""
import sys, sqlkv
conn = sqlkv.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, tags INT[], doc JSONB, "
            "FAMILY f (tags) WITH (layout = exploded), FAMILY g (doc) WITH (layout = exploded))")
cur.execute("INSERT INTO t VALUES (1, ARRAY[0, 0, 0], '{\"a\": 0, \"b\": 0}'), (2, ARRAY[0, 0, 0, 0], '[0, 0]')")
conn.commit()
n = 0
while True:
    n += 1
    for i in range(1, 5):  # one element at a time, in one transaction
        cur.execute("UPDATE t SET tags[%d] = ? WHERE id = 2" % i, (n,))
    cur.execute("UPDATE t SET doc = jsonb_set(doc, '{0}', ?) WHERE id = 2", (str(n),))
    cur.execute("UPDATE t SET doc = jsonb_set(doc, '{1}', ?) WHERE id = 2", (str(n),))
    # row 1: a new length every time (elements written, and deleted when it shrinks)
    cur.execute("UPDATE t SET tags = ? WHERE id = 1", ([n] * (3 + n % 7),))
    cur.execute("UPDATE t SET doc = jsonb_set(jsonb_set(doc, '{a}', ?), '{b}', ?) WHERE id = 1", (str(n), str(n)))
    conn.commit()
    print(n, flush=True)
"""


def test_kill_during_element_updates_keeps_every_value_whole(tmp_path):
    path = str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen([sys.executable, "-c", _CHILD, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env)
    watchdog = threading.Timer(300, child.kill)  # a child that hangs fails the test instead of blocking it
    watchdog.start()
    acked = 0
    while acked < 30:  # let it commit a few transactions, then kill it in the middle of one
        line = child.stdout.readline()
        assert line, child.stderr.read().decode()[-2000:]
        acked = int(line)
    child.send_signal(signal.SIGKILL)
    out, _err = child.communicate()
    watchdog.cancel()
    acked = max([acked, *(int(x) for x in out.split())])
    assert child.returncode == -signal.SIGKILL
    conn = sqlkv.connect(path)
    got = dict((r[0], (r[1], r[2])) for r in conn.execute("SELECT id, tags, doc FROM t"))
    m = got[2][0][0]
    assert m in (acked, acked + 1)  # the last acknowledged commit, or the one after it
    assert got[2] == ([m] * 4, [m, m])
    assert got[1] == ([m] * (3 + m % 7), {"a": m, "b": m})
    assert conn.execute("CHECK DATABASE").fetchall() == []
    conn.close()


# ---------------------------------------------------------------- benchmark


def test_bench_layouts_times_every_workload_on_both_layouts():
    results = run_layouts(":memory:", [5, 60], rows=4, ops=3, clock="cpu")
    assert [(size, name) for size, name, _p, _e in results] == [
        (size, name) for size in (5, 60) for name, _sql, _w in WORKLOADS]
    assert all(p > 0 and e > 0 for _s, _n, p, e in results)
    text = report(results, "cpu")
    assert text.splitlines()[0].startswith("elements  workload") and "one-element update" in text
    out = subprocess.run([sys.executable, "-m", "sqlkv.cli", "bench", "layouts", "--sizes", "5", "--rows", "2",
                          "--ops", "2", "--clock", "cpu"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()[1:]
    assert [line[10:30].strip() for line in lines] == [name for name, _sql, _w in WORKLOADS]
    assert all(line.split()[0] == "5" for line in lines)


# ---------------------------------------------------------------- docs


def test_the_docs_show_the_real_kv_of_both_layouts():
    out = subprocess.run([sys.executable, "-m", "sqlkv.cli", "-f", "examples/layouts.sql"], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.returncode == 0, out.stderr
    block = "$ sqlkv -f examples/layouts.sql\n" + out.stdout
    for doc in ("README.md", "grammar-notes/keys.md"):
        with open(doc, encoding="utf-8") as f:
            assert block in f.read(), doc


@pytest.mark.parametrize("ddl, text", [
    ("ALTER TABLE t ALTER COLUMN tags TYPE INT[]", 'cannot change the type of column "tags" of table "t": it is stored '
                                                    'exploded \\(family "f_tags"\\)'),
    ("ALTER TABLE t ALTER COLUMN doc TYPE TEXT", 'cannot change the type of column "doc"'),
    ("ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (id, tags)", 'cannot put into the primary key column "tags"'),
])
def test_schema_changes_that_would_move_an_exploded_column_are_refused(s, ddl, text):  # noqa: F811
    s.execute(EXPLODED)
    s.execute("INSERT INTO t VALUES (1, 'a', ARRAY['1'], '{}')")
    with pytest.raises(sqlkv.NotSupportedError, match=text):
        s.execute(ddl)
    assert rows(s, "SELECT * FROM t") == [(1, "a", SqlArray(["1"]), Jsonb({}))]
    assert check_database(s) == []


def test_dump_keeps_the_exploded_family_and_reloads_it():
    conn = sqlkv.connect(":memory:", autocommit=True)
    conn.execute(EXPLODED)
    conn.execute("INSERT INTO t VALUES (1, 'a', ARRAY['x', NULL], '{\"k\": [1]}')")
    lines = list(conn.iterdump())
    assert "  FAMILY f_tags (tags) WITH (layout = exploded)," in lines[1].splitlines()
    copy = sqlkv.connect(":memory:", autocommit=True)
    for statement in lines:
        if statement not in ("BEGIN;", "COMMIT;"):
            copy.execute(statement)
    assert copy.execute("SELECT * FROM t").fetchall() == conn.execute("SELECT * FROM t").fetchall()
    keys = [r[0] for r in copy.execute("SELECT key FROM sqlkv_internal.kv WHERE table_name = 't'")]
    assert keys == ["/t/t_pkey/1/0", "/t/t_pkey/1/1", "/t/t_pkey/1/1/1", "/t/t_pkey/1/1/2", "/t/t_pkey/1/2",
                    '/t/t_pkey/1/2/"k"']


@pytest.mark.parametrize("typ, first, second", [
    ("DECIMAL", "1.0", "1.00"), ("FLOAT", "0.0", "-0.0"), ("TEXT", "'a'", "'a'"),
])
def test_equal_values_with_two_encodings_read_as_in_a_default_table(s, typ, first, second):  # noqa: F811
    s.execute(f"CREATE TABLE d (id INT PRIMARY KEY, a {typ}[])")  # the default: one family, packed
    s.execute(f"CREATE TABLE e (id INT PRIMARY KEY, a {typ}[], FAMILY f (a) WITH (layout = exploded))")
    for t in ("d", "e"):
        s.execute(f"INSERT INTO {t} VALUES (1, ARRAY[{first}, {first}])")
        s.execute(f"UPDATE {t} SET a[2] = {second} WHERE id = 1")
        s.execute(f"UPDATE {t} SET a = ARRAY[{second}, {second}] WHERE id = 1")
    got = {t: [tuple(map(str, r[1])) for r in rows(s, f"SELECT * FROM {t}")] for t in ("d", "e")}
    assert got["d"] == got["e"]


@pytest.mark.parametrize("layout", ["", " WITH (layout = exploded)"])
def test_an_assigned_element_is_cast_to_the_element_type(s, layout):  # noqa: F811
    # the element is cast by the assignment and the array is not re-cast (plan/array_assign.py)
    s.execute(f"CREATE TABLE c (id INT PRIMARY KEY, n INT[], v VARCHAR(2)[], FAMILY f (n){layout})")
    s.execute("INSERT INTO c VALUES (1, ARRAY[1, 2], ARRAY['ab'])")
    s.execute("UPDATE c SET n[2] = 7.0, n[4] = 9 WHERE id = 1")
    got = rows(s, "SELECT n FROM c")[0][0]
    assert got == SqlArray([1, 7, None, 9]) and [type(x) for x in got.items] == [int, int, type(None), int]
    for bad, text in (("n[1] = 'x'", 'array element 1: .*column "n"'), ("v[3] = 'abc'", "array element 3: .*too long"),
                      ("n[2] = 2.5", 'array element 2: .*column "n"')):
        with pytest.raises(sqlkv.DataError, match=text):
            s.execute(f"UPDATE c SET {bad} WHERE id = 1")
    assert rows(s, "SELECT n, v FROM c") == [(SqlArray([1, 7, None, 9]), SqlArray(["ab"]))]
