"""Inverted indexes on ARRAY and JSONB columns (issue 15): DDL, entries, maintenance, planning.

The oracle for query results is the same query on a copy of the table without the index (a
full scan evaluating the predicate row by row): the indexed plan must return exactly those rows,
for hypothesis-generated arrays, documents and operands. Key layouts are pinned by golden KV
traces (tests/sql/core_support.KVTrace); CHECK DATABASE must notice entries removed or added
behind the SQL layer's back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlkv
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.errors import DuplicateTable, NotSupportedError, ProgrammingError
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import KVTrace
from tests.statements.support import rows, s  # noqa: F401  (fixture)


def plan_text(session, sql: str, params=()) -> str:
    return "\n".join(r[0] for r in rows(session, "EXPLAIN " + sql, params))


def ids(session, sql: str, params=()) -> list:
    return sorted(r[0] for r in rows(session, sql, params))


# ---------------------------------------------------------------- DDL


@pytest.mark.parametrize("ddl, error, text", [
    ("CREATE INVERTED INDEX ON t (n)", ProgrammingError, 'column "n" of type INT cannot be indexed'),
    ("CREATE INDEX ON t USING GIN (n)", ProgrammingError, 'column "n" of type INT cannot be indexed'),
    ("CREATE INVERTED INDEX ON t (tags, doc)", NotSupportedError, "exactly one column"),
    ("CREATE UNIQUE INVERTED INDEX ON t (tags)", NotSupportedError, "cannot be UNIQUE"),
    ("CREATE UNIQUE INDEX ON t USING GIN (tags)", NotSupportedError, "cannot be UNIQUE"),
    ("CREATE INVERTED INDEX ON t (tags) STORING (n)", NotSupportedError, "cannot STORE"),
    ("CREATE INVERTED INDEX ON t (tags) WHERE n > 1", NotSupportedError, "partial inverted index"),
    ("CREATE INVERTED INDEX ON t (tags DESC)", NotSupportedError, "cannot be DESC"),
    ("CREATE INVERTED INDEX ON t ((n + 1))", NotSupportedError, "on an expression"),
    ("CREATE INVERTED INDEX ON t USING BTREE (tags)", ProgrammingError, "cannot use USING BTREE"),
    ("CREATE INDEX ON t USING HASH (tags)", NotSupportedError, "USING HASH is not supported"),
    ("CREATE TABLE u (a INT, INVERTED INDEX (a))", ProgrammingError, 'column "a" of type INT'),
])
def test_refused_forms_name_what_is_wrong(s, ddl, error, text):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT, tags INT[], doc JSONB)")
    with pytest.raises(error, match=text):
        s.execute(ddl)
    # a failed statement leaves nothing: no index, no table, no entries
    assert rows(s, "SELECT index_name FROM information_schema.indexes WHERE index_type = 'inverted'") == []
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'u'") == [(0,)]
    assert rows(s, "CHECK DATABASE") == []


def test_create_forms_show_and_drop(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], doc JSONB, INVERTED INDEX t_tags_inv (tags))")
    s.execute("CREATE INDEX t_doc_gin ON t USING GIN (doc)")
    s.execute("CREATE INVERTED INDEX IF NOT EXISTS t_doc_gin ON t (tags)")  # exists: nothing happens
    with pytest.raises(DuplicateTable, match='index "t_tags_inv" already exists'):
        s.execute("CREATE INVERTED INDEX t_tags_inv ON t (doc)")
    assert rows(s, "SHOW INDEXES FROM t") == [
        ("t_pkey", True, True, "id", "", None, "btree"),
        ("t_tags_inv", False, False, "tags", "", None, "inverted"),
        ("t_doc_gin", False, False, "doc", "", None, "inverted")]
    ((_, ddl),) = rows(s, "SHOW CREATE TABLE t")
    assert "INVERTED INDEX t_tags_inv (tags)" in ddl and "INVERTED INDEX t_doc_gin (doc)" in ddl
    with pytest.raises(ProgrammingError, match='index "t_tags_inv" uses it'):
        s.execute("ALTER TABLE t DROP COLUMN tags")
    with pytest.raises(NotSupportedError, match='inverted index "t_doc_gin" uses it'):
        s.execute("ALTER TABLE t ALTER COLUMN doc TYPE TEXT")
    s.execute("INSERT INTO t VALUES (1, ARRAY['a'], '{\"k\": 1}')")
    s.execute("DROP INDEX t_tags_inv")
    s.execute("ALTER TABLE t DROP COLUMN tags")  # no index uses it any more
    assert rows(s, "CHECK DATABASE") == []
    assert "inverted scan" in plan_text(s, "SELECT id FROM t WHERE doc ? 'k'")


def test_show_create_table_and_dump_round_trip():
    source = sqlkv.connect(":memory:")
    source.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], doc JSONB)")
    source.execute("CREATE INVERTED INDEX t_tags ON t (tags)")
    source.execute("CREATE INDEX t_doc ON t USING GIN (doc)")
    source.execute("INSERT INTO t VALUES (1, ARRAY['x', 'y'], '{\"a\": [1, 2]}'), (2, ARRAY['y'], '[\"a\"]')")
    target = sqlkv.connect(":memory:")
    for statement in source.iterdump():
        target.execute(statement)
    query = "SELECT index_name, index_type FROM information_schema.indexes WHERE table_name = 't' ORDER BY index_name"
    assert target.execute(query).fetchall() == [("t_doc", "inverted"), ("t_pkey", "btree"), ("t_tags", "inverted")]
    assert target.execute("SELECT id FROM t WHERE tags @> ARRAY['y'] ORDER BY id").fetchall() == [(1,), (2,)]
    assert target.execute("SELECT id FROM t WHERE doc ? 'a' ORDER BY id").fetchall() == [(1,), (2,)]
    assert target.execute("CHECK DATABASE").fetchall() == []
    (_, ddl), = source.execute("SHOW CREATE TABLE t").fetchall()
    again = sqlkv.connect(":memory:")
    again.execute(ddl)
    assert again.execute(query).fetchall() == [("t_doc", "inverted"), ("t_pkey", "btree"), ("t_tags", "inverted")]


def test_sqlalchemy_reflection_lists_the_index():
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine("sqlkv:///:memory:")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], INVERTED INDEX t_tags_idx (tags))")
        found = sa.inspect(conn).get_indexes("t")
        meta = sa.MetaData()
        meta.reflect(conn)
    assert [(i["name"], i["column_names"], i["unique"], i["dialect_options"].get("sqlkv_inverted"))
            for i in found] == [("t_tags_idx", ["tags"], False, True)]
    # the reflected table creates the same inverted index again
    other = sa.create_engine("sqlkv:///:memory:")
    with other.begin() as conn:
        meta.create_all(conn)
        got = conn.exec_driver_sql("SELECT index_name, index_type FROM information_schema.indexes "
                                   "WHERE table_name = 't' ORDER BY index_id").fetchall()
    assert got == [("t_pkey", "btree"), ("t_tags_idx", "inverted")]


# ---------------------------------------------------------------- keys and maintenance


def test_golden_kv_writes_of_insert_and_update():
    trace = KVTrace()
    try:
        trace.run("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], doc JSONB, "
                  "INVERTED INDEX t_tags_idx (tags), INVERTED INDEX t_doc_idx (doc))")
        assert trace.run("INSERT INTO t VALUES (7, ARRAY['b', 'a', 'b', NULL], "
                         "'{\"a\": {\"b\": 1}, \"c\": [2, 3], \"d\": {}}')") == [
            "put /t/t_pkey/7/0 -> {tags: ARRAY['b', 'a', 'b', None], "
            "doc: Jsonb('{\"a\": {\"b\": 1}, \"c\": [2, 3], \"d\": {}}')}",
            'put /t/t_tags_idx/"a"/7 -> []',
            'put /t/t_tags_idx/"b"/7 -> []',
            'put /t/t_doc_idx/jsonb:{"a": {"b": 1}}/7 -> []',
            'put /t/t_doc_idx/jsonb:{"c": [2]}/7 -> []',
            'put /t/t_doc_idx/jsonb:{"c": [3]}/7 -> []',
            'put /t/t_doc_idx/jsonb:{"d": {}}/7 -> []',
        ]
        # one element more: one entry written, the others untouched (a batch is in key order)
        assert trace.run("UPDATE t SET tags = ARRAY['a', 'c', 'b'] WHERE id = 7") == [
            "put /t/t_pkey/7/0 -> {tags: ARRAY['a', 'c', 'b'], "
            "doc: Jsonb('{\"a\": {\"b\": 1}, \"c\": [2, 3], \"d\": {}}')}",
            'put /t/t_tags_idx/"c"/7 -> []',
        ]
        lines = trace.run("UPDATE t SET doc = jsonb_set(doc, '{c,1}', '4') WHERE id = 7")
        index_lines = [line for line in lines if "t_doc_idx" in line or "t_tags_idx" in line]
        assert index_lines == ['del /t/t_doc_idx/jsonb:{"c": [3]}/7', 'put /t/t_doc_idx/jsonb:{"c": [4]}/7 -> []']
        # an update of another column writes no entry
        trace.run("ALTER TABLE t ADD COLUMN n INT")
        assert [line for line in trace.run("UPDATE t SET n = 1") if "_idx" in line] == []
        assert trace.run("DELETE FROM t WHERE id = 7")[1:] == [
            'del /t/t_tags_idx/"a"/7', 'del /t/t_tags_idx/"b"/7', 'del /t/t_tags_idx/"c"/7',
            'del /t/t_doc_idx/jsonb:{"a": {"b": 1}}/7', 'del /t/t_doc_idx/jsonb:{"c": [2]}/7',
            'del /t/t_doc_idx/jsonb:{"c": [4]}/7', 'del /t/t_doc_idx/jsonb:{"d": {}}/7']
    finally:
        trace.close()


def test_update_of_one_element_writes_only_that_entry():
    trace = KVTrace()
    try:
        trace.run("CREATE TABLE t (id INT PRIMARY KEY, tags INT[], INVERTED INDEX t_tags_idx (tags))")
        assert trace.run("INSERT INTO t VALUES (1, ARRAY[]::INT[])") == [
            "put /t/t_pkey/1/0 -> {tags: ARRAY[]}", "put /t/t_tags_idx/ARRAY[]/1 -> []"]
        trace.run("UPDATE t SET tags = ARRAY[10, 20, 30]")
        assert trace.run("UPDATE t SET tags[2] = 25 WHERE id = 1") == [
            "put /t/t_pkey/1/0 -> {tags: ARRAY[10, 25, 30]}", "del /t/t_tags_idx/20/1", "put /t/t_tags_idx/25/1 -> []"]
    finally:
        trace.close()


def test_backfill_upsert_pk_change_and_failed_statements(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags INT[] CHECK (cardinality(tags) < 4), u INT UNIQUE)")
    s.execute("INSERT INTO t VALUES (1, ARRAY[1, 2], 1), (2, ARRAY[2, 3], 2), (3, NULL, 3), (4, ARRAY[]::INT[], 4)")
    s.execute("CREATE INVERTED INDEX t_inv ON t (tags)")  # backfill
    assert rows(s, "CHECK DATABASE") == []
    assert ids(s, "SELECT id FROM t WHERE tags @> ARRAY[2]") == [1, 2]
    s.execute("UPSERT INTO t VALUES (2, ARRAY[9], 2), (5, ARRAY[2, 9], 5)")
    s.execute("INSERT INTO t VALUES (6, ARRAY[2], 6) ON CONFLICT (id) DO UPDATE SET tags = ARRAY[7]")
    s.execute("UPDATE t SET id = id + 10")  # every entry key ends with the moved primary key
    assert ids(s, "SELECT id FROM t WHERE tags @> ARRAY[2]") == [11, 15, 16]
    assert ids(s, "SELECT id FROM t WHERE 9 = ANY(tags)") == [12, 15]
    for bad in ("INSERT INTO t VALUES (20, ARRAY[1], 20), (21, ARRAY[5], 1)",  # unique violation on row 2
                "UPDATE t SET tags = ARRAY[1, 2, 3, 4] WHERE id = 11",  # CHECK fails after the write
                "INSERT INTO t VALUES (22, ARRAY[1, 1, 1, 1], 22)"):
        with pytest.raises(sqlkv.IntegrityError):
            s.execute(bad)
    assert ids(s, "SELECT id FROM t WHERE tags && ARRAY[1, 5]") == [11]
    assert rows(s, "CHECK DATABASE") == []
    s.execute("BEGIN")
    s.execute("INSERT INTO t VALUES (30, ARRAY[1], 30)")
    s.execute("ROLLBACK")
    s.execute("TRUNCATE t")
    assert rows(s, "CHECK DATABASE") == []
    assert ids(s, "SELECT id FROM t WHERE tags @> ARRAY[1]") == []


def test_update_and_delete_read_through_the_index_they_change(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], INVERTED INDEX t_inv (tags))")
    s.execute("INSERT INTO t SELECT g, ARRAY['a', (g % 3)::TEXT] FROM generate_series(1, 300) g")
    assert "inverted scan t@t_inv" in plan_text(s, "DELETE FROM t WHERE '2' = ANY(tags)")
    # moves rows (new primary keys) and adds an element while reading the index by that element
    s.execute("UPDATE t SET tags = tags || 'z'::TEXT, id = id + 5000 WHERE tags @> ARRAY['1']")
    assert rows(s, "SELECT count(*) FROM t WHERE tags @> ARRAY['z']") == [(100,)]
    assert rows(s, "SELECT min(id) FROM t WHERE tags @> ARRAY['z']") == [(5001,)]
    s.execute("DELETE FROM t WHERE '2' = ANY(tags)")
    assert rows(s, "SELECT count(*) FROM t") == [(200,)]
    assert rows(s, "CHECK DATABASE") == []


def test_families_and_alter_primary_key_keep_entries_exact(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, tags INT[], n INT, "
              "FAMILY f1 (id, k, tags), FAMILY f2 (n))")
    s.execute("INSERT INTO t VALUES (1, 10, ARRAY[1, 2], 5), (2, 20, ARRAY[2], NULL)")
    s.execute("CREATE INVERTED INDEX ti ON t (tags)")
    s.execute("UPDATE t SET tags = ARRAY[3], n = 1 WHERE id = 2")
    assert rows(s, "CHECK DATABASE") == []
    s.execute("ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (k)")  # every entry ends with the new key
    assert rows(s, "CHECK DATABASE") == []
    assert [r[0] for r in rows(s, "SELECT key FROM sqlkv_internal.kv WHERE index_name = 'ti'")] == [
        "/t/ti/1/10", "/t/ti/2/10", "/t/ti/3/20"]
    assert ids(s, "SELECT id FROM t WHERE tags && ARRAY[2, 3]") == [1, 2]


def inject(session, index: str, deleted: list[list], added: list[list]) -> None:
    """Delete and add raw entries of ``index`` of table t, behind the SQL layer's back."""
    session.execute("BEGIN")
    table = session.catalog().get_table("t")
    prefix = index_prefix(table.id, table.find_index(index).id)
    for values in deleted:
        session.txn.delete(encode_key(values, None, prefix))
    for values in added:
        session.txn.put(encode_key(values, None, prefix), b"\x90")  # msgpack []
    session.execute("COMMIT")


def test_check_database_reports_missing_and_dangling_entries(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], INVERTED INDEX t_inv (tags))")
    s.execute("INSERT INTO t VALUES (1, ARRAY['a', 'b'])")
    inject(s, "t_inv", deleted=[["a", 1]], added=[["zz", 2]])
    problems = [r[0] for r in rows(s, "CHECK DATABASE")]
    assert problems == ['t: index t_inv: dangling entry /t/t_inv/"zz"/2 (no such row)',
                        't: index t_inv: missing entry /t/t_inv/"a"/1']


def test_check_database_reports_a_stale_jsonb_entry(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, doc JSONB, INVERTED INDEX t_inv (doc))")
    s.execute("INSERT INTO t VALUES (1, '{\"a\": 1}')")
    inject(s, "t_inv", deleted=[], added=[[Jsonb({"a": 2}), 1]])
    assert [r[0] for r in rows(s, "CHECK DATABASE")] == [
        't: index t_inv: dangling entry /t/t_inv/jsonb:{"a": 2}/1 (no such row)']


# ---------------------------------------------------------------- planning


def test_explain_shows_inverted_spans_and_parameters_work(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], doc JSONB, n INT, "
              "INVERTED INDEX t_tags_idx (tags), INVERTED INDEX t_doc_idx (doc))")
    s.execute("INSERT INTO t VALUES (1, ARRAY['a', 'b'], '{\"k\": {\"x\": 1}}', 1), (2, ARRAY['b'], '[\"k\"]', 2)")
    p = f"/Table/{s.catalog().get_table('t').id}/"
    plan = plan_text(s, "SELECT id FROM t WHERE tags @> ARRAY['a', 'b']")
    assert f'inverted scan t@t_tags_idx' in plan and f'spans: {p}2/"a" AND {p}2/"b"' in plan
    plan = plan_text(s, "SELECT id FROM t WHERE tags && ARRAY['a', 'c']")
    assert f'spans: ({p}2/"a" OR {p}2/"c")' in plan
    assert 'spans: ' + f'{p}3/jsonb:{{"k": {{"x": 1}}}}' in plan_text(s, "SELECT id FROM t WHERE doc @> '{\"k\": {\"x\": 1}}'")
    assert (f'inverted scan t@t_doc_idx (doc ? \'k\') spans: ({p}3/jsonb:{{"k": …}} OR {p}3/jsonb:["k"] '
            f'OR {p}3/jsonb:"k")') in plan_text(s, "SELECT id FROM t WHERE doc ? 'k'")
    assert f'spans: {p}3/jsonb:{{"k": {{…}}}}' in plan_text(s, "SELECT id FROM t WHERE doc @> '{\"k\": {}}'")
    assert ids(s, "SELECT id FROM t WHERE doc @> '{\"k\": {}}'") == [1]
    assert "inverted scan" in plan_text(s, "SELECT id FROM t WHERE doc ?| ARRAY['k', 'z']")
    assert "inverted scan" in plan_text(s, "SELECT id FROM t WHERE doc ?& ARRAY['k']")
    assert "inverted scan" in plan_text(s, "SELECT id FROM t WHERE 'a' = ANY(tags)")
    assert "inverted scan" in plan_text(s, "SELECT id FROM t WHERE ARRAY['a'] <@ tags")
    # contained by: the value's elements, or the empty array's entry
    assert f'spans: ({p}2/"a" OR {p}2/"z" OR {p}2/ARRAY[])' in plan_text(
        s, "SELECT id FROM t WHERE tags <@ ARRAY['a', 'z']")
    # parameters: spans computed per execution
    assert ids(s, "SELECT id FROM t WHERE tags @> ?", (["b"],)) == [1, 2]
    assert ids(s, "SELECT id FROM t WHERE tags @> ?", (["a"],)) == [1]
    assert ids(s, "SELECT id FROM t WHERE doc OPERATOR(?) ?", ("k",)) == [1, 2]
    assert ids(s, "SELECT id FROM t WHERE jsonb_exists(doc, ?)", ("k",)) == [1, 2]
    assert ids(s, "SELECT id FROM t WHERE doc @> ?::JSONB", ('{"k": {}}',)) == [1]
    # a value constraining no entry reads the whole table, and says so
    assert "full table" in plan_text(s, "SELECT id FROM t WHERE tags @> ARRAY[]::TEXT[]")
    assert ids(s, "SELECT id FROM t WHERE tags @> ARRAY[]::TEXT[]") == [1, 2]
    # forms the index cannot serve fall back to the ordinary plans
    # doc <@ v: the entries v's sub-documents can have (its paths, its containers emptied)
    assert (f'(doc <@ \'{{"k": 1}}\') spans: ({p}3/jsonb:{{}} OR {p}3/jsonb:{{"k": 1}})'
            in plan_text(s, "SELECT id FROM t WHERE doc <@ '{\"k\": 1}'"))
    wide = plan_text(s, "SELECT id FROM t WHERE tags && ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']")
    assert f'({p}2/"a" OR {p}2/"b" OR' in wide and f'{p}2/"h" OR … (+2 more))' in wide, wide
    assert "inverted" not in plan_text(s, "SELECT id FROM t WHERE tags @> ARRAY[n::TEXT]")
    assert "inverted" not in plan_text(s, "SELECT id FROM t WHERE id = 1 AND tags @> ARRAY['a']")  # a point get wins
    assert ids(s, "SELECT id FROM t WHERE id = 1 AND tags @> ARRAY['a']") == [1]


def test_empty_and_null_operands(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT[], d JSONB, INVERTED INDEX (a), INVERTED INDEX (d))")
    s.execute("INSERT INTO t VALUES (1, ARRAY[1, NULL], '{}'), (2, ARRAY[]::INT[], '[]'), (3, NULL, NULL), "
              "(4, ARRAY[2], '\"s\"')")
    for sql in ("a @> ARRAY[NULL]::INT[]", "a && ARRAY[]::INT[]", "NULL = ANY(a)", "a @> NULL", "a @> ARRAY[1.5]",
                "d @> '{}'", "d @> '[]'", "d ? 's'", "d ?| ARRAY[]::TEXT[]", "d ?& ARRAY[]::TEXT[]", "d @> '\"s\"'",
                "d ?& ARRAY[NULL, 's']"):
        indexed = ids(s, f"SELECT id FROM t WHERE {sql}")
        full = ids(s, f"SELECT id FROM t WHERE {sql} OR id < 0 AND id > 0")  # an OR: no index
        assert indexed == full, sql


def test_jsonb_contained_by_finds_empty_containers_scalars_and_paths(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, d JSONB, INVERTED INDEX (d))")
    s.execute("""INSERT INTO t VALUES (1, '{}'), (2, '[]'), (3, '1'), (4, '{"a": {}}'), (5, '{"a": {"b": 1}}'),
        (6, '{"a": {"b": 1, "c": 2}}'), (7, '[1, [2]]'), (8, '[[]]'), (9, 'null'), (10, NULL), (11, '{"a": [{}]}')""")
    # hand-computed with PostgreSQL's containment rules
    cases = {'{"a": {"b": 1}}': [1, 4, 5], '{"a": {"b": 1, "c": 2}, "z": 0}': [1, 4, 5, 6],
             '[1, [2, 3]]': [2, 3, 7, 8], '[]': [2], '{}': [1], '1': [3], 'null': [9],
             '{"a": [{"x": 1}]}': [1, 11]}
    for value, expected in cases.items():
        sql = f"SELECT id FROM t WHERE d <@ '{value}'"
        assert "inverted scan" in plan_text(s, sql), sql
        assert ids(s, sql) == expected, value
        assert ids(s, f"SELECT id FROM t WHERE '{value}' @> d") == expected, value


# ---------------------------------------------------------------- property: indexed plan == full scan

# small alphabets, so that generated operands meet the generated rows often
_ELEMENTS = st.one_of(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.none())
_ARRAYS = st.one_of(st.none(), st.lists(_ELEMENTS, max_size=5), st.lists(st.integers(0, 3), min_size=1, max_size=4))
_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(0, 2), st.sampled_from(["a", "b", "x"]))
_DOCS = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=6)


def _array_sql(items) -> str:
    return "ARRAY[" + ", ".join("NULL" if v is None else str(v) for v in items) + "]::INT[]"


def _jsonb_sql(doc) -> str:
    return "'" + json.dumps(doc).replace("'", "''") + "'::JSONB"


_OPERANDS = st.one_of(st.lists(st.integers(0, 3), min_size=1, max_size=3),
                      st.lists(st.integers(0, 3), min_size=2, max_size=3), st.lists(_ELEMENTS, max_size=3))
_ARRAY_QUERIES = st.one_of(
    _OPERANDS.map(lambda v: f"a @> {_array_sql(v)}"),
    _OPERANDS.map(lambda v: f"{_array_sql(v)} <@ a"),
    _OPERANDS.map(lambda v: f"a && {_array_sql(v)}"),
    _OPERANDS.map(lambda v: f"a <@ {_array_sql(v)}"),
    _OPERANDS.map(lambda v: f"{_array_sql(v)} @> a"),
    _ELEMENTS.map(lambda v: f"{'NULL' if v is None else v} = ANY(a)"),
)
_JSONB_QUERIES = st.one_of(
    _DOCS.map(lambda d: f"d @> {_jsonb_sql(d)}"),
    _DOCS.map(lambda d: f"{_jsonb_sql(d)} <@ d"),
    _DOCS.map(lambda d: f"d <@ {_jsonb_sql(d)}"),
    _DOCS.map(lambda d: f"{_jsonb_sql(d)} @> d"),
    st.sampled_from(["a", "b", "x", "z"]).map(lambda k: f"d ? '{k}'"),
    st.lists(st.sampled_from(["a", "b", "x"]), max_size=3).map(
        lambda ks: "d ?| ARRAY[" + ", ".join(f"'{k}'" for k in ks) + "]::TEXT[]"),
    st.lists(st.sampled_from(["a", "b", "x"]), max_size=3).map(
        lambda ks: "d ?& ARRAY[" + ", ".join(f"'{k}'" for k in ks) + "]::TEXT[]"),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_ARRAYS, st.one_of(st.none(), _DOCS)), min_size=4, max_size=14),
       st.lists(st.one_of(_ARRAY_QUERIES, _JSONB_QUERIES), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 7), _ARRAYS, _DOCS), max_size=3))
def test_indexed_plans_return_exactly_the_full_scan_rows(data, queries, updates):
    db = Database.open(":memory:")
    session = Session(db, autocommit=True)
    try:
        for name, index in (("t", True), ("f", False)):
            session.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, a INT[], d JSONB)")
            if index:
                session.execute("CREATE INVERTED INDEX t_a ON t (a)")
            for i, (arr, doc) in enumerate(data):
                session.execute(f"INSERT INTO {name} VALUES (?, ?, ?::JSONB)",
                                (i, arr, None if doc is None else json.dumps(doc)))
        session.execute("CREATE INDEX t_d ON t USING GIN (d)")  # backfilled
        for i, arr, doc in updates:
            for name in ("t", "f"):
                session.execute(f"UPDATE {name} SET a = ?, d = ?::JSONB WHERE id = ?", (arr, json.dumps(doc), i))
        assert rows(session, "CHECK DATABASE") == []
        for q in queries:
            plan = plan_text(session, f"SELECT id FROM t WHERE {q}")
            assert "inverted scan" in plan, (q, plan)
            assert ids(session, f"SELECT id FROM t WHERE {q}") == ids(session, f"SELECT id FROM f WHERE {q}"), q
    finally:
        session.close()
        db.close()


_PARAM_QUERIES = st.one_of(
    st.tuples(st.just("a @> ?"), _OPERANDS), st.tuples(st.just("? <@ a"), _OPERANDS),
    st.tuples(st.just("a && ?"), _OPERANDS), st.tuples(st.just("a <@ ?"), _OPERANDS), st.tuples(st.just("? = ANY(a)"), _ELEMENTS),
    st.tuples(st.just("d @> ?::JSONB"), _DOCS.map(json.dumps)), st.tuples(st.just("d <@ ?::JSONB"), _DOCS.map(json.dumps)),
    st.tuples(st.just("d OPERATOR(?) ?"), st.sampled_from(["a", "b", "x"])),
    st.tuples(st.just("d ?| ?"), st.lists(st.sampled_from(["a", "b", "x"]), max_size=3)),
    st.tuples(st.just("d ?& ?"), st.lists(st.sampled_from(["a", "b", "x"]), max_size=3)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_ARRAYS, _DOCS), min_size=4, max_size=12), st.lists(_PARAM_QUERIES, min_size=1, max_size=6))
def test_parameters_give_the_full_scan_rows(data, queries):
    """One plan per SQL text, spans computed from each execution's parameters."""
    db = Database.open(":memory:")
    session = Session(db, autocommit=True)
    try:
        session.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT[], d JSONB, INVERTED INDEX (a), INVERTED INDEX (d))")
        session.execute("CREATE TABLE f (id INT PRIMARY KEY, a INT[], d JSONB)")
        for name in ("t", "f"):
            for i, (arr, doc) in enumerate(data):
                session.execute(f"INSERT INTO {name} VALUES (?, ?, ?::JSONB)", (i, arr, json.dumps(doc)))
        for q, value in queries:
            assert "inverted scan" in plan_text(session, f"SELECT id FROM t WHERE {q}", (value,)), q
            assert ids(session, f"SELECT id FROM t WHERE {q}", (value,)) == \
                ids(session, f"SELECT id FROM f WHERE {q}", (value,)), (q, value)
    finally:
        session.close()
        db.close()


# ---------------------------------------------------------------- crash and reopen (LSM)

_CHILD = r"""
import os, signal, sys
import sqlkv
conn = sqlkv.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], doc JSONB)")
cur.execute("INSERT INTO t VALUES (1, ARRAY['a', 'b'], '{\"k\": [1, 2]}'), (2, ARRAY['b'], '{\"j\": 1}')")
conn.commit()
cur.execute("CREATE INVERTED INDEX t_tags ON t (tags)")
cur.execute("CREATE INDEX t_doc ON t USING GIN (doc)")
conn.commit()
cur.execute("UPDATE t SET tags = ARRAY['c'], doc = '{\"k\": [3]}' WHERE id = 1")
conn.commit()
cur.execute("UPDATE t SET tags = ARRAY['lost'], doc = '{\"lost\": 1}' WHERE id = 2")  # never committed
cur.execute("INSERT INTO t VALUES (3, ARRAY['lost'], '{}')")
print("ready", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_crash_and_reopen_keeps_the_index_consistent(tmp_path):
    path = str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True, env=env, timeout=120)
    assert out.stdout.strip() == b"ready" and out.returncode == -signal.SIGKILL, out.stderr
    conn = sqlkv.connect(path)
    cur = conn.cursor()
    assert cur.execute("CHECK DATABASE").fetchall() == []
    assert cur.execute("SELECT id FROM t WHERE tags @> ARRAY['c']").fetchall() == [(1,)]
    assert cur.execute("SELECT id FROM t WHERE tags && ARRAY['a', 'lost']").fetchall() == []
    assert cur.execute("SELECT id FROM t WHERE 'b' = ANY(tags)").fetchall() == [(2,)]
    assert cur.execute("SELECT id FROM t WHERE doc @> '{\"k\": [3]}'").fetchall() == [(1,)]
    assert cur.execute("SELECT id FROM t WHERE doc ? 'j'").fetchall() == [(2,)]
    assert "inverted scan" in "\n".join(r[0] for r in cur.execute("EXPLAIN SELECT id FROM t WHERE doc ? 'j'"))
    conn.close()
