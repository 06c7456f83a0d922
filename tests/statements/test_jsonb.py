"""JSONB (issue 15): the type, its normal form and order, operators, functions, set-returning
functions, aggregates, driver binding, errors. Expectations are hand-computed from PostgreSQL's
documentation ("JSON Functions and Operators", "jsonb Containment and Existence", "jsonb
Indexing" for the order) and CockroachDB's json/json_builtins logic tests; sqlite3's JSON1 is an
oracle where it agrees (test_jsonb_oracle.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

import sqlkv
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from tests.statements.support import rows, s  # noqa: F401


def one(session, sql: str, params: tuple = ()):
    [(value,)] = rows(session, sql, params)
    return value


def text(session, sql: str, params: tuple = ()):
    """The single JSONB result's PostgreSQL text."""
    return str(one(session, sql, params))


@pytest.fixture
def docs(s):
    s.execute("CREATE TABLE d (id INT PRIMARY KEY, j JSONB)")
    s.execute("""INSERT INTO d VALUES
        (1, '{"a": {"b": [1, 2, {"c": "x"}]}, "n": null, "s": "str", "k": [1, 2, 3]}'),
        (2, '[1, "a", {"z": 1}]'),
        (3, '"a"'),
        (4, NULL),
        (5, '{"a": 1, "tags": ["x", "y"]}')""")
    return s


# ---------------------------------------------------------------- type, normal form, storage


def test_normal_form_keys_numbers(s):
    # keys: last duplicate wins, storage order is shorter keys first, then bytewise
    assert text(s, """SELECT '{"bb": 1, "a": 2, "bb": 3, "ccc": {"y": 1, "x": 2}}'::JSONB""") == \
        '{"a": 2, "bb": 3, "ccc": {"x": 2, "y": 1}}'
    assert text(s, "SELECT '[1e2, 2.50, -0.5e-1, 12345678901234567890123]'::JSONB") == \
        "[100, 2.50, -0.05, 12345678901234567890123]"
    assert one(s, "SELECT '1.0'::JSONB = '1.00'::JSONB") is True
    assert one(s, "SELECT '1'::JSONB = '1.0'::JSONB") is True
    huge = "9" * 5000  # past Python's int-to-text limit: kept exact as a decimal
    assert one(s, f"SELECT '[{huge}]'::JSONB ->> 0") == huge
    assert one(s, "SELECT 'true'::JSONB = '1'::JSONB") is False
    assert text(s, """SELECT '  {"x" : "é\\u00e9\\n"} '::JSON""") == '{"x": "éé\\n"}'


def test_json_is_an_alias_and_schema_round_trips(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a JSON, b JSONB NOT NULL DEFAULT '{}')")
    s.execute("ALTER TABLE t ADD COLUMN c JSONB")
    assert rows(s, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't' "
                   "ORDER BY ordinal_position") == [("id", "INT"), ("a", "JSONB"), ("b", "JSONB"), ("c", "JSONB")]
    create = rows(s, "SHOW CREATE TABLE t")[0][1]
    assert "a JSONB" in create and "b JSONB NOT NULL DEFAULT '{}'" in create and "c JSONB" in create
    s.execute("DROP TABLE t")
    s.execute(create)  # the printed DDL creates the same table
    s.execute("INSERT INTO t (id) VALUES (1)")
    assert text(s, "SELECT b FROM t") == "{}"


def test_printed_operators_round_trip_in_views_and_checks(s):
    s.execute("""CREATE TABLE t (id INT PRIMARY KEY, j JSONB, CHECK (j ? 'a' OR j @> '{"ok": true}'))""")
    s.execute("CREATE VIEW v AS SELECT id, j ->> 'a' AS a, j #> '{b,0}' AS b FROM t")
    s.execute("""INSERT INTO t VALUES (1, '{"a": "x", "b": [7]}'), (2, '{"ok": true}')""")
    with pytest.raises(sqlkv.IntegrityError, match="t_check1"):
        s.execute("""INSERT INTO t VALUES (3, '{"b": 1}')""")
    view = rows(s, "SHOW CREATE VIEW v")[0][1]
    assert "j ->> 'a' AS a, j #> '{b,0}' AS b" in view  # printed as written (print_arrows.py)
    create = rows(s, "SHOW CREATE TABLE t")[0][1]
    assert "j ? 'a'" in create  # printed as written (parse_jsonb.py)
    assert [(i, a, None if b is None else str(b)) for i, a, b in rows(s, "SELECT * FROM v ORDER BY id")] == [
        (1, "x", "7"), (2, None, None)]


def test_values_survive_reopen(tmp_path):
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path, autocommit=True)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, j JSONB)")
    doc = {"big": 12345678901234567890123, "dec": Decimal("2.50"), "s": "ü", "l": [None, True, {"x": []}]}
    conn.execute("INSERT INTO t VALUES (1, ?)", (doc,))
    conn.close()
    conn = sqlkv.connect(path)
    [(back,)] = conn.execute("SELECT j FROM t").fetchall()
    assert back == {"big": 12345678901234567890123, "dec": 2.5, "s": "ü", "l": [None, True, {"x": []}]}
    assert conn.execute("SELECT j ->> 'dec' FROM t").fetchall() == [("2.50",)]
    conn.close()


# ---------------------------------------------------------------- access operators


def test_arrow_operators(docs):
    got = rows(docs, "SELECT id, j -> 'a', j ->> 's', j -> 'k' -> -1, j -> 'k' ->> 0, j #> '{a,b,2,c}', "
                     "j #>> '{a,b,-1}', j ->> 'n', j -> 'n', j -> 'missing' FROM d ORDER BY id")
    first = got[0]
    assert str(first[1]) == '{"b": [1, 2, {"c": "x"}]}'
    assert first[2] == "str" and str(first[3]) == "3"
    assert first[4] == "1" and str(first[5]) == '"x"' and first[6] == '{"c": "x"}'
    assert first[7] is None  # ->> of JSON null is SQL NULL
    assert str(first[8]) == "null"  # -> of JSON null is the JSON null value
    assert first[9] is None
    assert [r[1:] for r in got[1:4]] == [(None,) * 9] * 3  # an array, a string, NULL: no keys
    assert rows(docs, "SELECT j -> 1, j ->> -3, j -> 3, j -> 'a' FROM d WHERE id = 2") == [
        (rows(docs, """SELECT '"a"'::JSONB""")[0][0], "1", None, None)]


def test_key_with_a_dot_is_one_key(s):
    assert one(s, """SELECT '{"a.b": 1, "a": {"b": 2}}'::JSONB ->> 'a.b'""") == "1"
    assert one(s, """SELECT '{"a": 1}'::JSONB -> ?""", ("a",)) is not None
    assert one(s, "SELECT '[10, 20]'::JSONB ->> ?", (1,)) == "20"


def test_arrow_inside_function_arguments(docs):
    assert one(docs, "SELECT jsonb_array_length(j -> 'k') FROM d WHERE id = 1") == 3
    assert one(docs, "SELECT upper(j ->> 's') FROM d WHERE id = 1") == "STR"


def test_precedence_with_comparison_and_logic(docs):
    assert rows(docs, "SELECT id FROM d WHERE j ->> 's' = 'str' AND j -> 'k' ->> 1 = '2'") == [(1,)]
    assert rows(docs, "SELECT id FROM d WHERE j ? 'a' AND NOT j ? 'tags' ORDER BY id") == [(1,), (2,), (3,)]
    # -> and ->> bind tighter than || (and than ::, unlike PostgreSQL, where j ->> 'a'::INT is an error)
    assert one(docs, "SELECT j ->> 's' || j -> 'k' ->> 0 || '!' FROM d WHERE id = 1") == "str1!"
    assert one(docs, "SELECT j -> 'k' ->> 2::INT FROM d WHERE id = 1") == 3


# ---------------------------------------------------------------- containment and existence


def test_containment(docs):
    assert rows(docs, """SELECT id FROM d WHERE j @> '{"a": {"b": [2]}}'""") == [(1,)]
    assert rows(docs, """SELECT id FROM d WHERE j @> '{"tags": ["y"]}'""") == [(5,)]
    cases = {
        """'[1, 2, [1, 3]]'::JSONB @> '[1, 3]'""": False,  # 3 is no element of the left array
        """'[1, 2, 2]'::JSONB @> '[2, 1, 1]'""": True,  # elements as a set
        """'[1, 2, [1, 3]]'::JSONB @> '[[1, 3]]'""": True,
        """'{"a": [1, 2]}'::JSONB @> '{"a": 1}'""": False,  # a scalar is not an array
        """'["foo", "bar"]'::JSONB @> '"foo"'""": True,  # top-level array contains a scalar
        """'"foo"'::JSONB @> '["foo"]'""": False,
        """'{"a": 1}'::JSONB <@ '{"a": 1, "b": 2}'""": True,
        """'[]'::JSONB @> '[]'""": True,
        """'{"p": {"q": 1, "r": 2}}'::JSONB @> '{"p": {}}'""": True,
        """'1'::JSONB @> '1.0'""": True,
    }
    for expr, expected in cases.items():
        assert one(docs, f"SELECT {expr}") is expected, expr


def test_existence(docs):
    got = rows(docs, "SELECT id, j ? 'a', j ?| '{zz,s}', j ?& '{a,k}', jsonb_exists(j, 'n') FROM d ORDER BY id")
    assert got == [(1, True, True, True, True), (2, True, False, False, False), (3, True, False, False, False),
                   (4, None, None, None, None), (5, True, False, False, False)]
    assert one(docs, """SELECT '{"a": {"x": 1}}'::JSONB ? 'x'""") is False  # top level only


def test_qmark_operator_vs_parameters(docs):
    assert rows(docs, "SELECT id FROM d WHERE j ? ? AND id < ? ORDER BY id", ("tags", 9)) == [(5,)]
    assert rows(docs, "SELECT id FROM d WHERE j OPERATOR(?) ? ORDER BY id", ("s",)) == [(1,)]
    assert rows(docs, "SELECT id FROM d WHERE jsonb_exists_any(j, ?) ORDER BY id", (["k", "z"],)) == [(1,)]
    assert rows(docs, "SELECT id FROM d WHERE jsonb_exists_all(j, '{a,tags}')") == [(5,)]
    assert one(docs, "SELECT ?::JSONB ->> 'x'", ({"x": "y"},)) == "y"


# ---------------------------------------------------------------- building and changing values


def test_concat_and_delete(s):
    cases = {
        """'{"a": 1, "b": 2}'::JSONB || '{"b": 3, "c": 4}'""": '{"a": 1, "b": 3, "c": 4}',
        """'[1, 2]'::JSONB || '[3]'""": "[1, 2, 3]",
        """'[1]'::JSONB || '{"a": 1}'""": '[1, {"a": 1}]',
        """'{"a": 1}'::JSONB || '[2]'""": '[{"a": 1}, 2]',
        """'1'::JSONB || '2'""": "[1, 2]",
        """'{"a": 1, "b": 2}'::JSONB - 'a'""": '{"b": 2}',
        """'["a", "b", "a"]'::JSONB - 'a'""": '["b"]',
        """'[1, 2, 3]'::JSONB - 1""": "[1, 3]",
        """'[1, 2, 3]'::JSONB - -1""": "[1, 2]",
        """'[1, 2, 3]'::JSONB - 5""": "[1, 2, 3]",
        """'{"a": 1, "b": 2, "c": 3}'::JSONB - '{a,c}'""": '{"b": 2}',  # jsonb - text[]
        """'{"a": {"b": [1, 2]}}'::JSONB #- '{a,b,0}'""": '{"a": {"b": [2]}}',
        """'{"a": 1}'::JSONB #- '{x,y}'""": '{"a": 1}',
    }
    for expr, expected in cases.items():
        assert text(s, f"SELECT {expr}") == expected, expr


def test_text_concatenation_and_generated_columns(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, s TEXT, j JSONB, g TEXT GENERATED ALWAYS AS (j ->> 'a') STORED, "
              "h INT AS ((j ->> 'n')::INT) VIRTUAL)")
    s.execute("""INSERT INTO t (id, s, j) VALUES (1, 'x', '{"a": "v", "n": 5}')""")
    # a TEXT operand makes || text concatenation with the JSON text (PostgreSQL's text || anynonarray)
    assert rows(s, "SELECT s || j, j || s, g, h FROM t") == [('x{"a": "v", "n": 5}', '{"a": "v", "n": 5}x', "v", 5)]
    s.execute("""UPSERT INTO t (id, s, j) VALUES (1, 'y', '{"a": "w"}')""")
    assert rows(s, "SELECT g, h FROM t") == [("w", None)]


def test_jsonb_set_and_insert(s):
    doc = """'{"a": {"b": [1, 2]}, "c": 0}'"""
    cases = {
        f"jsonb_set({doc}, '{{a,b,0}}', '99')": '{"a": {"b": [99, 2]}, "c": 0}',
        f"jsonb_set({doc}, '{{d}}', '[1]')": '{"a": {"b": [1, 2]}, "c": 0, "d": [1]}',
        f"jsonb_set({doc}, '{{d}}', '[1]', false)": '{"a": {"b": [1, 2]}, "c": 0}',
        f"jsonb_set({doc}, '{{x,y}}', '1')": '{"a": {"b": [1, 2]}, "c": 0}',  # missing step: unchanged
        f"jsonb_set({doc}, '{{a,b,9}}', '3')": '{"a": {"b": [1, 2, 3]}, "c": 0}',
        f"jsonb_set({doc}, '{{a,b,-9}}', '0')": '{"a": {"b": [0, 1, 2]}, "c": 0}',
        f"""jsonb_insert({doc}, '{{a,b,1}}', '"new"')""": '{"a": {"b": [1, "new", 2]}, "c": 0}',
        f"""jsonb_insert({doc}, '{{a,b,1}}', '"new"', true)""": '{"a": {"b": [1, 2, "new"]}, "c": 0}',
        f"jsonb_insert({doc}, '{{e}}', 'true')": '{"a": {"b": [1, 2]}, "c": 0, "e": true}',
    }
    for expr, expected in cases.items():
        assert text(s, f"SELECT {expr}") == expected, expr
    assert one(s, f"SELECT jsonb_set({doc}, '{{a}}', NULL)") is None  # strict, as PostgreSQL
    with pytest.raises(DataError, match="cannot replace existing key"):
        rows(s, f"SELECT jsonb_insert({doc}, '{{c}}', '1')")
    with pytest.raises(DataError, match="path element at position 3 is not an integer"):
        rows(s, f"SELECT jsonb_set({doc}, '{{a,b,x}}', '1')")


def test_update_with_jsonb_set(docs):
    docs.execute("UPDATE d SET j = jsonb_set(j, '{a,b}', '1') WHERE id = 1")
    docs.execute("""UPDATE d SET j = j || '{"added": [true]}' WHERE id = 5""")
    assert text(docs, "SELECT j -> 'a' FROM d WHERE id = 1") == '{"b": 1}'
    assert text(docs, "SELECT j FROM d WHERE id = 5") == '{"a": 1, "tags": ["x", "y"], "added": [true]}'


def test_scalar_functions(docs):
    assert rows(docs, "SELECT id, jsonb_typeof(j) FROM d ORDER BY id") == [
        (1, "object"), (2, "array"), (3, "string"), (4, None), (5, "object")]
    assert one(docs, "SELECT jsonb_typeof('1.5') || jsonb_typeof('true') || jsonb_typeof('null')") == \
        "numberbooleannull"
    assert text(docs, """SELECT jsonb_strip_nulls('{"a": null, "b": [null, {"c": null}]}')""") == '{"b": [null, {}]}'
    assert one(docs, """SELECT jsonb_pretty('{"a": [1, {"b": 2}], "c": {}}')""") == (
        '{\n    "a": [\n        1,\n        {\n            "b": 2\n        }\n    ],\n    "c": {}\n}')
    assert one(docs, "SELECT jsonb_extract_path_text(j, 'a', 'b', '2', 'c') FROM d WHERE id = 1") == "x"
    assert text(docs, "SELECT jsonb_build_object('a', 1, 'b', 'x', 'c', NULL, 'd', 1.5, 'e', DATE '2024-01-02')") \
        == '{"a": 1, "b": "x", "c": null, "d": 1.5, "e": "2024-01-02"}'
    assert text(docs, "SELECT json_build_object('k', jsonb_build_array(1, 'a', NULL, true))") == \
        '{"k": [1, "a", null, true]}'
    assert text(docs, "SELECT to_jsonb('he said \"hi\"')") == '"he said \\"hi\\""'
    assert one(docs, "SELECT to_jsonb(NULL)") is None


def test_casts(s):
    assert one(s, "SELECT CAST('12'::JSONB AS INT) + 1") == 13
    assert one(s, "SELECT CAST('2.5'::JSONB AS DECIMAL)") == Decimal("2.5")
    assert one(s, "SELECT CAST('true'::JSONB AS BOOL)") is True
    assert one(s, """SELECT CAST('{"a": [1]}'::JSONB AS TEXT)""") == '{"a": [1]}'
    with pytest.raises(DataError, match="cannot cast jsonb string to type INT"):
        rows(s, """SELECT CAST('"12"'::JSONB AS INT)""")


# ---------------------------------------------------------------- order, grouping


def test_postgresql_order_across_kinds(s):
    values = ['{"b": 1}', '{"a": 1, "b": 2}', '{"a": 2}', "[1, 2]", "[3]", "[]", "true", "false", "10", "2",
              '"b"', '"a"', "null"]
    s.execute("CREATE TABLE o (id INT PRIMARY KEY, j JSONB)")
    for i, v in enumerate(values):
        s.execute("INSERT INTO o VALUES (?, ?)", (i, v))
    ordered = [str(r[0]) for r in rows(s, "SELECT j FROM o ORDER BY j")]
    assert ordered == ["[]", "null", '"a"', '"b"', "2", "10", "false", "true", "[3]", "[1, 2]", '{"a": 2}',
                       '{"b": 1}', '{"a": 1, "b": 2}']
    assert [str(r[0]) for r in rows(s, "SELECT j FROM o ORDER BY j DESC LIMIT 2")] == [
        '{"a": 1, "b": 2}', '{"b": 1}']
    assert one(s, """SELECT '{"a": 1}'::JSONB < '{"a": 2}'""") is True


def test_distinct_group_by_and_in(s):
    s.execute("CREATE TABLE g (id INT PRIMARY KEY, j JSONB)")
    s.execute("""INSERT INTO g VALUES (1, '{"a": 1.0}'), (2, '{"a": 1}'), (3, '[1]'), (4, '{"a": 1.00}'),
                 (5, 'null'), (6, NULL)""")
    assert sorted((str(j), n) for j, n in rows(s, "SELECT j, count(*) FROM g WHERE j IS NOT NULL GROUP BY j")) == \
        sorted([('{"a": 1.0}', 3), ("[1]", 1), ("null", 1)])
    assert one(s, "SELECT count(DISTINCT j) FROM g") == 3
    assert rows(s, """SELECT id FROM g WHERE j IN ('[1]', 'null') ORDER BY id""") == [(3,), (5,)]
    assert rows(s, "SELECT id FROM g WHERE j = ? ORDER BY id", ('{"a": 1}',)) == [(1,), (2,), (4,)]


# ---------------------------------------------------------------- set-returning functions, aggregates


def test_set_returning_functions_in_from(docs):
    got = rows(docs, "SELECT d.id, e.key, e.value FROM d, jsonb_each(d.j) AS e WHERE d.id = 5")
    assert [(i, k, str(v)) for i, k, v in got] == [(5, "a", "1"), (5, "tags", '["x", "y"]')]
    assert rows(docs, """SELECT * FROM jsonb_each_text('{"a": 1, "b": "x", "c": null}')""") == [
        ("a", "1"), ("b", "x"), ("c", None)]
    assert rows(docs, """SELECT k FROM jsonb_object_keys('{"bb": 1, "a": 2}') AS k""") == [("a",), ("bb",)]
    got = rows(docs, """SELECT * FROM jsonb_array_elements('[1, [2], {"a": 3}]') WITH ORDINALITY""")
    assert [(str(v), n) for v, n in got] == [("1", 1), ("[2]", 2), ('{"a": 3}', 3)]
    assert rows(docs, "SELECT e.value FROM d, jsonb_array_elements_text(d.j -> 'tags') AS e") == [("x",), ("y",)]
    assert rows(docs, "SELECT * FROM d, jsonb_array_elements(d.j) AS e WHERE d.id = 4") == []  # NULL: no rows
    got = rows(docs, "SELECT e.k, e.n FROM d, jsonb_each(d.j) WITH ORDINALITY AS e(k, v, n) WHERE d.id = 5")
    assert got == [("a", 1), ("tags", 2)]
    assert rows(docs, "SELECT d.id, e.value FROM d LEFT JOIN LATERAL jsonb_array_elements_text(d.j -> 'tags') AS e "
                      "ON true WHERE d.id IN (1, 5) ORDER BY d.id, e.value") == [(1, None), (5, "x"), (5, "y")]
    with pytest.raises(DataError, match="cannot extract elements from an object"):
        rows(docs, "SELECT * FROM jsonb_array_elements('{}')")
    with pytest.raises(NotSupportedError, match="in FROM only"):
        docs.execute("SELECT jsonb_each(j) FROM d")


def test_aggregates(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, g TEXT, k TEXT, v INT)")
    s.execute("INSERT INTO t VALUES (1, 'a', 'x', 1), (2, 'a', 'y', NULL), (3, 'b', 'x', 3), (4, 'b', 'x', 4)")
    got = rows(s, "SELECT g, jsonb_agg(v ORDER BY id DESC), jsonb_object_agg(k, v), "
                  "jsonb_agg(k) FILTER (WHERE v > 1) FROM t GROUP BY g ORDER BY g")
    assert [(g, str(a), str(o), None if f is None else str(f)) for g, a, o, f in got] == [
        ("a", "[null, 1]", '{"x": 1, "y": null}', None), ("b", "[4, 3]", '{"x": 4}', '["x", "x"]')]
    assert text(s, "SELECT jsonb_object_agg(k, v ORDER BY id DESC) FROM t") == '{"x": 1, "y": null}'
    assert one(s, "SELECT jsonb_agg(v) FROM t WHERE id > 10") is None
    assert text(s, "SELECT json_agg(DISTINCT k) FROM t") == '["x", "y"]'
    # DISTINCT keeps one NULL in the aggregates that collect NULLs (PostgreSQL), none in count
    s.execute("INSERT INTO t VALUES (5, 'c', 'z', NULL), (6, 'c', 'z', 1)")
    assert text(s, "SELECT jsonb_agg(DISTINCT v ORDER BY v) FROM t") == "[null, 1, 3, 4]"
    assert sorted(one(s, "SELECT jsonb_agg(DISTINCT v) FROM t").tree, key=lambda v: (v is not None, v)) == \
        [None, 1, 3, 4]
    assert list(one(s, "SELECT array_agg(DISTINCT v ORDER BY v DESC) FROM t").items) == [4, 3, 1, None]
    assert one(s, "SELECT count(DISTINCT v) FROM t") == 3
    s.execute("DELETE FROM t WHERE id > 4")
    assert [(i, str(a)) for i, a in rows(s, "SELECT id, jsonb_agg(v) OVER (ORDER BY id) FROM t")] == [
        (1, "[1]"), (2, "[1, null]"), (3, "[1, null, 3]"), (4, "[1, null, 3, 4]")]
    with pytest.raises(DataError, match="field name must not be null"):
        rows(s, "SELECT jsonb_object_agg(NULL, v) FROM t")


# ---------------------------------------------------------------- driver


def test_driver_binds_and_returns_python_values():
    conn = sqlkv.connect(":memory:")
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, j JSONB)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [
        (1, {"z": [1, 2.5, None, True], "a": "x"}), (2, [1, {"b": False}]), (3, '"text is JSON text"'),
        (4, None)])
    got = conn.execute("SELECT id, j FROM t ORDER BY id").fetchall()
    assert got == [(1, {"a": "x", "z": [1, 2.5, None, True]}), (2, [1, {"b": False}]), (3, "text is JSON text"),
                   (4, None)]
    assert isinstance(got[0][1]["z"][1], float)
    conn.execute("CREATE TABLE w (id INT PRIMARY KEY, v INT)")
    conn.execute("INSERT INTO w VALUES (1, 1), (2, NULL)")
    assert conn.execute("SELECT id, jsonb_agg(v) OVER (ORDER BY id), jsonb_object_agg(id, v) OVER () FROM w").fetchall() \
        == [(1, [1], {"1": 1, "2": None}), (2, [1, None], {"1": 1, "2": None})]
    assert conn.execute("SELECT id FROM t WHERE j = ?", ({"a": "x", "z": [1, 2.50, None, True]},)).fetchall() == [(1,)]
    assert conn.execute("SELECT id FROM t WHERE j @> ?", ([{"b": False}],)).fetchall() == [(2,)]
    assert conn.execute("SELECT j -> 'z' FROM t WHERE id = 1").fetchone() == ([1, 2.5, None, True],)
    assert conn.execute("SELECT '0.1'::JSONB, '1e400'::JSONB").fetchone() == (0.1, 10 ** 400)
    assert conn.execute("SELECT j FROM t WHERE id = 1").description[0][1] == "JSONB"
    conn.jsonb_as_text = True
    assert conn.execute("SELECT j FROM t WHERE id = 2").fetchone() == ('[1, {"b": false}]',)
    with pytest.raises(sqlkv.DataError, match="keys must be strings"):
        conn.execute("INSERT INTO t VALUES (5, ?)", ({1: "x"},))
    with pytest.raises(sqlkv.DataError, match="column \"j\": nan is not a JSON number"):
        conn.execute("INSERT INTO t VALUES (5, ?)", ([float("nan")],))
    conn.close()


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("sql, cls, message", [
    ("""SELECT '{"a": }'::JSONB""", DataError, r"invalid input syntax for type JSONB: Expecting value at line 1 "
                                               r"column 7 \(character 7\)"),
    ("SELECT '" + "[" * 600 + "]" * 600 + "'::JSONB", DataError, "nested more than 500 levels"),
    ("SELECT '[1, 2'::JSONB", DataError, r"Expecting ',' delimiter at line 1 column 6 \(character 6\)"),
    ("SELECT 'NaN'::JSONB", DataError, "invalid input syntax for type JSONB"),
    ("""SELECT '"\\ud800"'::JSONB""", DataError, "lone surrogate"),
    ("""INSERT INTO d VALUES (9, '{"a" 1}')""", DataError, 'column "j"'),
    ("INSERT INTO d VALUES (9, 5)", DataError, 'column "j" is of type JSONB'),
    ("SELECT '\"x\"'::JSONB - 'x'", DataError, "cannot delete from scalar"),
    ("""SELECT '{"a": 1}'::JSONB - 0""", DataError, "cannot delete from object using integer index"),
    ("SELECT jsonb_array_length('{}')", DataError, "cannot get array length of a non-array"),
    ("SELECT jsonb_array_length('3')", DataError, "cannot get array length of a scalar"),
    ("SELECT jsonb_set('1', '{a}', '2')", DataError, "cannot set path in scalar"),
    ("SELECT j #> '{a' FROM d", DataError, "malformed array literal"),
    ("SELECT jsonb_build_object('a')", DataError, "even number of arguments"),
    ("SELECT 1 -> 'a'", ProgrammingError, "-> .* needs a JSONB operand, not INT"),
    ("SELECT 1 ? 'a'", ProgrammingError, "operator does not exist: INT \\? TEXT"),
    ("""SELECT '{"a": 1}'::JSONB @> 1""", ProgrammingError, "operator does not exist: JSONB @> INT"),
    ("SELECT j -> 1.5 FROM d", ProgrammingError, "TEXT key or an INT subscript"),
    ("SELECT row_to_json(d, true) FROM d", NotSupportedError, "row_to_json"),
    ("SELECT json_extract(j, '$.a[*]') FROM d", NotSupportedError, "JSON path"),
])
def test_errors(docs, sql, cls, message):
    before = rows(docs, "SELECT id, j FROM d ORDER BY id")
    with pytest.raises(cls, match=message):
        rows(docs, sql)
    assert rows(docs, "SELECT id, j FROM d ORDER BY id") == before
    assert rows(docs, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'p'") == [(0,)]


def test_jsonb_index_keys_primary_unique_and_descending(s):
    s.execute("CREATE TABLE k (j JSONB PRIMARY KEY, n INT)")
    s.execute("""INSERT INTO k VALUES ('{"b": 1}', 1), ('[]', 2), ('null', 3), ('"a"', 4), ('1.50', 5),
                 ('[1, 2]', 6), ('{"a": 1, "b": [true]}', 7), ('false', 8)""")
    # a scan of the primary key yields PostgreSQL's order; a number comes back canonical (2.50 -> 2.5)
    assert [(str(j), n) for j, n in rows(s, "SELECT j, n FROM k")] == [
        ("[]", 2), ("null", 3), ('"a"', 4), ("1.5", 5), ("false", 8), ("[1, 2]", 6), ('{"b": 1}', 1),
        ('{"a": 1, "b": [true]}', 7)]
    with pytest.raises(sqlkv.IntegrityError, match="k_pkey"):
        s.execute("INSERT INTO k VALUES ('1.5000', 9)")  # equal to 1.50
    s.execute("CREATE UNIQUE INDEX k_desc ON k (j DESC, n)")
    plan = "\n".join(r[0] for r in rows(s, """EXPLAIN SELECT n FROM k WHERE j = '{"b": 1}'"""))
    assert "get k@k_pkey" in plan and 'jsonb:{"b": 1}' in plan
    assert rows(s, """SELECT n FROM k WHERE j = '{"b":1}'""") == [(1,)]
    assert rows(s, "SELECT n FROM k WHERE j > '[0]' ORDER BY n") == [(1,), (6,), (7,)]
    assert [str(j) for (j,) in rows(s, "SELECT j FROM k ORDER BY j DESC LIMIT 3")] == [
        '{"a": 1, "b": [true]}', '{"b": 1}', "[1, 2]"]
    s.execute("CREATE TABLE u (id INT PRIMARY KEY, j JSONB UNIQUE)")
    s.execute("""INSERT INTO u VALUES (1, '{"x": [1, 2]}')""")
    with pytest.raises(sqlkv.IntegrityError, match="u_j_key"):
        s.execute("""INSERT INTO u VALUES (2, '{"x": [1.0, 2]}')""")
    s.execute("""UPDATE u SET j = jsonb_set(j, '{x,0}', '5') WHERE id = 1""")
    assert rows(s, """SELECT id FROM u WHERE j = '{"x": [5, 2]}'""") == [(1,)]
    assert rows(s, "CHECK DATABASE") == []


def test_expression_index_on_a_jsonb_field(docs):
    docs.execute("CREATE INDEX d_s ON d ((j ->> 's'))")
    plan = "\n".join(r[0] for r in rows(docs, "EXPLAIN SELECT id FROM d WHERE j ->> 's' = 'str'"))
    assert "d_s" in plan
    assert rows(docs, "SELECT id FROM d WHERE j ->> 's' = 'str'") == [(1,)]


def test_dump_round_trip_keeps_json_null_apart_from_sql_null():
    src = sqlkv.connect(":memory:")
    src.execute("CREATE TABLE t (id INT PRIMARY KEY, j JSONB)")
    src.execute("""INSERT INTO t VALUES (1, '{"a": "it''s", "b": [1, 2.50]}'), (2, NULL), (3, 'null')""")
    src.commit()
    dst = sqlkv.connect(":memory:")
    for statement in src.iterdump():
        dst.execute(statement)
    assert dst.execute("SELECT id, j ->> 'a', j #>> '{b,1}' FROM t ORDER BY id").fetchall() == [
        (1, "it's", "2.50"), (2, None, None), (3, None, None)]
    assert dst.execute("SELECT id FROM t WHERE j IS NULL").fetchall() == [(2,)]
    assert dst.execute("SELECT id FROM t WHERE jsonb_typeof(j) = 'null'").fetchall() == [(3,)]


def test_stored_form_is_ext_10_and_corruption_is_reported():
    import msgpack

    from sqlkv.encoding.jsonb import parse
    from sqlkv.encoding.values import decode_row_value, encode_row_value
    from sqlkv.errors import CorruptionError

    data = encode_row_value({2: parse('{"b": [1, 2.50], "a": null}')})
    assert msgpack.unpackb(data, strict_map_key=False) == {2: msgpack.ExtType(10, b'{"a": null, "b": [1, 2.50]}')}
    assert str(decode_row_value(data)[2]) == '{"a": null, "b": [1, 2.50]}'
    for payload in (b'{"a": ', b"\xff\xfe", b"NaN"):
        bad = msgpack.packb({2: msgpack.ExtType(10, payload)})
        with pytest.raises(CorruptionError, match="bad JSONB payload"):
            decode_row_value(bad)


def test_cli_json_mode_nests_documents(tmp_path):
    import json
    import subprocess
    import sys

    script = tmp_path / "s.sql"
    script.write_text("""CREATE TABLE t (id INT PRIMARY KEY, j JSONB);
INSERT INTO t VALUES (1, '{"a": [1, "x", null]}'), (2, NULL);""")
    out = subprocess.run([sys.executable, "-m", "sqlkv.cli", ":memory:", "-c", f".read {script}", "-c",
                          "SELECT * FROM t ORDER BY id", "--mode", "json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [{"id": 1, "j": {"a": [1, "x", None]}}, {"id": 2, "j": None}]


def test_map_types_point_to_jsonb():
    """No MAP<TEXT, T>: JSONB objects are sqlkv's maps (grammar-notes/expressions.md)."""
    conn = sqlkv.connect(":memory:")
    for ddl in ("CREATE TABLE m (k INT PRIMARY KEY, attrs MAP<TEXT, INT>)",
                "CREATE TABLE m (k INT PRIMARY KEY, attrs MAP(TEXT, INT))"):
        with pytest.raises(sqlkv.NotSupportedError, match="use JSONB"):
            conn.execute(ddl)
    conn.execute("CREATE TABLE m (k INT PRIMARY KEY, attrs JSONB)")
    conn.execute("""INSERT INTO m VALUES (1, '{"color": "red", "size": 3}')""")
    assert conn.execute("SELECT attrs ->> 'size', attrs ? 'color', attrs - 'color' FROM m").fetchall() == [
        ("3", True, {"size": 3})]
    conn.close()
