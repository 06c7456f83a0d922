"""ARRAY columns and expressions, against PostgreSQL's documented semantics (hand-computed).

Sources for the expectations: PostgreSQL's manual, "Arrays" (8.15: text form and quoting,
subscripts, slices, element assignment extending with NULLs) and "Array Functions and Operators"
(9.19: @>, <@, &&, ||, array_* functions, NULL handling), "Row and Array Comparisons" (9.24: ANY/
ALL three-valued logic), and CockroachDB's logic tests (pkg/sql/logictest/testdata/logic_test/array).
Values come back from the session as `SqlArray`s (the driver gives lists: test_driver_*), so the
helpers below compare list forms.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from decimal import Decimal

import pytest

import sqlkv
from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import DataError, IntegrityError, NotSupportedError, ProgrammingError

from tests.statements.support import rows, s  # noqa: F401  (fixture)


def plain(value):
    return list(value) if isinstance(value, SqlArray) else value


def one(session, sql, params=()):
    """The single row of a query, arrays as lists."""
    (row,) = rows(session, sql, params)
    return tuple(plain(v) for v in row)


@pytest.fixture
def t(s):  # noqa: F811
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], n INT[])")
    s.execute("INSERT INTO t VALUES (1, ARRAY['a','b'], ARRAY[1,2,3]), (2, '{c,NULL}', '{}'), "
              "(3, NULL, ARRAY[5]), (4, ARRAY['b'], NULL)")
    return s


# ---------------------------------------------------------------- types and DDL


def test_types_round_trip_through_show_create_table_and_information_schema(s):  # noqa: F811
    s.execute("CREATE TABLE a (id INT PRIMARY KEY, tags TEXT[] DEFAULT '{x}', n ARRAY<INT> NOT NULL, "
              "d DECIMAL(5,2)[], v VARCHAR(3)[], b BOOL[], ts TIMESTAMP[], u UUID[], bs BYTES[], f FLOAT[])")
    (_, ddl), = rows(s, "SHOW CREATE TABLE a")
    for piece in ("tags TEXT[] DEFAULT '{x}'", "n INT[] NOT NULL", "d DECIMAL(5,2)[]", "v VARCHAR(3)[]",
                  "b BOOL[]", "ts TIMESTAMP[]", "u UUID[]", "bs BYTES[]", "f FLOAT[]"):
        assert piece in ddl
    types = dict(rows(s, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'a'"))
    assert types["n"] == "INT[]" and types["d"] == "DECIMAL(5,2)[]"
    s.execute("DROP TABLE a")
    s.execute(ddl)  # the text recreates the same table
    assert dict(rows(s, "SELECT column_name, data_type FROM information_schema.columns "
                        "WHERE table_name = 'a'")) == types
    s.execute("INSERT INTO a (id, n) VALUES (1, ARRAY[7])")
    assert one(s, "SELECT tags, n FROM a") == (["x"], [7])


def test_alter_table_add_array_column(t):
    t.execute("ALTER TABLE t ADD COLUMN flags BOOL[]")
    t.execute("UPDATE t SET flags = '{t,f,NULL}' WHERE id = 1")
    assert [plain(v) for (v,) in rows(t, "SELECT flags FROM t ORDER BY id")] == [[True, False, None], None, None, None]


def test_declared_sizes_are_ignored_as_in_postgresql(s):  # noqa: F811
    s.execute("CREATE TABLE b (id INT PRIMARY KEY, x INT[2], y INT ARRAY[2], z INT ARRAY)")
    types = dict(rows(s, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'b'"))
    assert types == {"id": "INT", "x": "INT[]", "y": "INT[]", "z": "INT[]"}
    s.execute("INSERT INTO b VALUES (1, ARRAY[1,2,3], ARRAY[1,2,3], NULL)")
    assert one(s, "SELECT x, y FROM b") == ([1, 2, 3], [1, 2, 3])


@pytest.mark.parametrize("ddl", ["CREATE TABLE m (a INT[][])", "CREATE TABLE m (a ARRAY<ARRAY<INT>>)"])
def test_multi_dimensional_types_are_refused(s, ddl):  # noqa: F811
    with pytest.raises(NotSupportedError, match="multi-dimensional"):
        s.execute(ddl)


# ---------------------------------------------------------------- literals and casts


def test_constructors_and_text_form(s):  # noqa: F811
    assert one(s, "SELECT ARRAY[1,2], ARRAY[]::INT[], '{1,2,NULL}'::INT[], CAST('{\"a b\",c}' AS TEXT[]), "
                  "ARRAY[1, 2.5]") == ([1, 2], [], [1, 2, None], ["a b", "c"], [1.0, 2.5])
    # PostgreSQL's output quotes empty strings, NULL-looking words, blanks, quotes, backslashes, braces, commas
    assert one(s, "SELECT ARRAY['', 'NULL', 'a b', 'q\"', 'b\\s', '{', ',', NULL, 'plain']::TEXT") == (
        '{"","NULL","a b","q\\"","b\\\\s","{",",",NULL,plain}',)
    assert one(s, "SELECT ARRAY[true, false]::TEXT, ARRAY[1.5, NULL]::TEXT, "
                  "ARRAY[DATE '2024-01-02']::TEXT") == ("{t,f}", "{1.5,NULL}", "{2024-01-02}")


def test_text_form_parses_back_to_the_same_array(s):  # noqa: F811
    text = one(s, "SELECT ARRAY['', 'NULL', 'a b', 'q\"', 'b\\s', '{', ',', NULL]::TEXT")[0]
    assert one(s, "SELECT CAST(? AS TEXT[])", (text,)) == (["", "NULL", "a b", 'q"', "b\\s", "{", ",", None],)
    assert one(s, "SELECT '{ 1 , 2 }'::INT[], '{}'::TEXT[], '{null,NULL}'::INT[]") == ([1, 2], [], [None, None])


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT '{1,2'::INT[]", DataError, "malformed array literal"),
    ("SELECT '1,2'::INT[]", DataError, "malformed array literal"),
    ("SELECT '{1,,2}'::INT[]", DataError, "empty element"),
    ("SELECT '{\"a}'::TEXT[]", DataError, "unterminated"),
    ("SELECT '{\"a\"b}'::TEXT[]", DataError, "junk after a quoted element"),
    ("SELECT '{1,x}'::INT[]", DataError, 'invalid input syntax for type INT: "x"'),
    ("SELECT '{{1,2},{3,4}}'::INT[]", NotSupportedError, "multi-dimensional"),
    ("SELECT '[1:2]={1,2}'::INT[]", NotSupportedError, "array bounds"),
    ("SELECT ARRAY[ARRAY[1]]", NotSupportedError, "multi-dimensional"),
    ("SELECT ARRAY[1, 'x']", DataError, "invalid input syntax"),
    ("SELECT ARRAY[1, DATE '2024-01-01']", ProgrammingError, "ARRAY types INT and DATE cannot be matched"),
    ("SELECT ARRAY['a', true, 1]", ProgrammingError, "ARRAY types BOOL and INT cannot be matched"),
    ("SELECT CAST(ARRAY[1] AS INT)", DataError, "cannot cast"),
])
def test_bad_literals(s, sql, error, text):  # noqa: F811
    with pytest.raises(error, match=text):
        rows(s, sql)


@pytest.mark.parametrize("value, text", [
    ("ARRAY['x']", 'array element 1: value "x" \\(TEXT\\) is not valid for column "n" of type INT'),
    ("ARRAY[1.5]", 'array element 1: .* column "n"'),
    ("'{1,x}'", 'invalid value for column "n" of type INT\\[\\]'),
    ("'abc'", "malformed array literal"),
    ("5", 'value "5" \\(int\\) is not valid for column "n" of type INT\\[\\]'),
])
def test_strict_assignment_names_the_column(t, value, text):
    with pytest.raises(DataError, match=text):
        t.execute(f"INSERT INTO t VALUES (9, NULL, {value})")
    assert rows(t, "SELECT count(*) FROM t") == [(4,)]  # nothing written


def test_element_widths_and_scales_apply(s):  # noqa: F811
    s.execute("CREATE TABLE w (id INT PRIMARY KEY, d DECIMAL(5,2)[], v VARCHAR(2)[], i INT2[])")
    s.execute("INSERT INTO w VALUES (1, ARRAY[1.555, 2], ARRAY['ab'], ARRAY[7])")
    assert one(s, "SELECT d, v, i FROM w") == ([Decimal("1.56"), Decimal("2.00")], ["ab"], [7])
    with pytest.raises(DataError, match="value too long for type VARCHAR\\(2\\)"):
        s.execute("INSERT INTO w VALUES (2, NULL, ARRAY['abc'], NULL)")
    with pytest.raises(DataError, match="out of range"):
        s.execute("INSERT INTO w VALUES (2, NULL, NULL, ARRAY[70000])")


# ---------------------------------------------------------------- driver binding


def test_driver_binds_lists_and_returns_lists():
    conn = sqlkv.connect(":memory:")
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], n INT[])")
    cur.execute("INSERT INTO t VALUES (?, ?, ?)", (1, ["a", None, "b c"], [3, 1]))
    cur.execute("SELECT tags, n, n[1], ? FROM t", ([True],))
    assert cur.fetchall() == [(["a", None, "b c"], [3, 1], 3, [True])]
    assert cur.execute("SELECT id FROM t WHERE n = ?", ([3, 1],)).fetchall() == [(1,)]
    assert cur.execute("SELECT id FROM t WHERE 1 = ANY(?)", ([1, 2],)).fetchall() == [(1,)]
    with pytest.raises(DataError, match='column "n"'):
        cur.execute("INSERT INTO t VALUES (?, ?, ?)", (2, None, [1, "x"]))
    with pytest.raises(NotSupportedError, match="multi-dimensional"):
        cur.execute("INSERT INTO t VALUES (?, ?, ?)", (2, None, [[1]]))
    assert cur.execute("SELECT count(*) FROM t").fetchall() == [(1,)]
    conn.close()


# ---------------------------------------------------------------- access


def test_subscripts_are_one_based_and_null_out_of_range(t):
    assert [tuple(plain(v) for v in r) for r in rows(
        t, "SELECT id, tags[1], tags[2], tags[3], tags[0], n[-1] FROM t ORDER BY id")] == [
        (1, "a", "b", None, None, None), (2, "c", None, None, None, None),
        (3, None, None, None, None, None), (4, "b", None, None, None, None)]
    assert one(t, "SELECT n[NULL], (ARRAY[4,5,6])[2], n['2'] FROM t WHERE id = 1") == (None, 5, 2)


def test_slices_clamp_to_the_array(t):
    assert one(t, "SELECT n[2:3], n[:2], n[2:], n[0:1], n[3:2], n[5:9], n[-5:1], n[NULL:2] FROM t WHERE id = 1") == (
        [2, 3], [1, 2], [2, 3], [1], [], [], [1], None)
    assert one(t, "SELECT n[1:1] FROM t WHERE id = 2") == ([],)


@pytest.mark.parametrize("sql, error, text", [
    ("SELECT id[1] FROM t", ProgrammingError, "cannot subscript type INT"),
    ("SELECT n['x'] FROM t", DataError, "invalid input syntax for type INT"),
    ("SELECT n[1.5] FROM t", ProgrammingError, "array subscript must be type INT"),
    ("SELECT n[1:'a'] FROM t", DataError, "invalid input syntax"),
    ("SELECT n[1][2] FROM t", ProgrammingError, "cannot subscript type INT"),
])
def test_bad_subscripts(t, sql, error, text):
    with pytest.raises(error, match=text):
        rows(t, sql)


# ---------------------------------------------------------------- functions


def test_length_cardinality_position(t):
    got = [tuple(plain(v) for v in r) for r in rows(
        t, "SELECT array_length(n, 1), array_length(n, 2), cardinality(n), array_position(n, 2), "
           "array_position(ARRAY[1,2,1], 1, 2), array_positions(ARRAY[1,NULL,1], 1) FROM t ORDER BY id")]
    assert got == [(3, None, 3, 2, 3, [1, 3]), (None, None, 0, None, 3, [1, 3]),
                   (1, None, 1, None, 3, [1, 3]), (None, None, None, None, 3, [1, 3])]
    # NULL is found by IS NOT DISTINCT FROM
    assert one(t, "SELECT array_position(ARRAY[1,NULL], NULL), array_positions(ARRAY[NULL,2,NULL], NULL)") == (
        2, [1, 3])


def test_append_prepend_cat_remove_replace(t):
    assert one(t, "SELECT array_append(n, 9), array_prepend(0, n), array_cat(n, ARRAY[7]), "
                  "array_remove(ARRAY[1,2,1,NULL], 1), array_remove(ARRAY[1,NULL], NULL), "
                  "array_replace(ARRAY[1,2,1], 1, 5), array_replace(ARRAY[1,NULL], NULL, 0) FROM t WHERE id = 1") == (
        [1, 2, 3, 9], [0, 1, 2, 3], [1, 2, 3, 7], [2, None], [1], [5, 2, 5], [1, 0])
    # a NULL array acts as an empty one for append/prepend/cat
    assert one(t, "SELECT array_append(n, 9), array_prepend(0, n), array_cat(n, ARRAY[7]), array_cat(n, n), "
                  "array_remove(n, 1) FROM t WHERE id = 4") == ([9], [0], [7], None, None)


def test_array_to_string_and_string_to_array(t):
    assert one(t, "SELECT array_to_string(tags, ','), array_to_string(tags, ',', '*'), "
                  "array_to_string(ARRAY[1,2], NULL) FROM t WHERE id = 2") == ("c", "c,*", None)
    assert one(t, "SELECT string_to_array('a,b,,c', ','), string_to_array('xy', NULL), string_to_array('xy', ''), "
                  "string_to_array('', ','), string_to_array('a,*,c', ',', '*'), string_to_array(NULL, ',')") == (
        ["a", "b", "", "c"], ["x", "y"], ["xy"], [], ["a", None, "c"], None)


def test_regular_expressions_returning_arrays(s):  # noqa: F811
    assert one(s, r"SELECT regexp_split_to_array('hello world', '\s+'), regexp_split_to_array('hello world', '\s*'), "
                  r"regexp_match('foobarbequebaz', 'bar'), regexp_match('foobarbequebaz', '(bar)(beque)'), "
                  r"regexp_match('abc', 'x'), regexp_matches('ABC', 'b', 'i')") == (
        ["hello", "world"], ["h", "e", "l", "l", "o", "w", "o", "r", "l", "d"], ["bar"], ["bar", "beque"],
        None, ["B"])
    assert rows(s, "SELECT * FROM regexp_split_to_table('a1b22c', '[0-9]+') AS p") == [("a",), ("b",), ("c",)]
    assert [(plain(m), n) for m, n in rows(
        s, "SELECT * FROM regexp_matches('a1b22c', '([a-z])([0-9]+)', 'g') WITH ORDINALITY AS m(x, n)")] == [
        (["a", "1"], 1), (["b", "22"], 2)]
    assert rows(s, "SELECT m[1] FROM regexp_matches('a1b22c', '[0-9]+') AS m") == [("1",)]  # no g: the first
    assert rows(s, "SELECT * FROM regexp_matches('abc', 'x', 'g') AS m") == []
    with pytest.raises(NotSupportedError, match="in FROM"):
        rows(s, "SELECT regexp_matches('abc', 'b', 'g')")


# ---------------------------------------------------------------- operators


def test_containment_and_overlap(t):
    assert rows(t, "SELECT id FROM t WHERE n @> ARRAY[1,3] ORDER BY id") == [(1,)]
    assert rows(t, "SELECT id FROM t WHERE n <@ ARRAY[1,2,3,4] ORDER BY id") == [(1,), (2,)]
    assert rows(t, "SELECT id FROM t WHERE n && ARRAY[5,1] ORDER BY id") == [(1,), (3,)]
    assert rows(t, "SELECT id FROM t WHERE tags @> '{b}' ORDER BY id") == [(1,), (4,)]
    # NULL elements match nothing; the empty array is contained in everything
    assert one(t, "SELECT ARRAY[NULL]::INT[] @> ARRAY[NULL]::INT[], ARRAY[1] @> ARRAY[]::INT[], "
                  "ARRAY[1,NULL] && ARRAY[NULL]::INT[], ARRAY[1] @> NULL::INT[], ARRAY[1.0] @> ARRAY[1]") == (
        False, True, False, None, True)


def test_concatenation(t):
    assert one(t, "SELECT ARRAY[1,2] || ARRAY[3], ARRAY[1] || 2, 0 || ARRAY[1], ARRAY[1,2] || NULL, "
                  "n || 4, n || ARRAY[NULL]::INT[], 'x' || 'y', ARRAY['a'] || '{b,c}' FROM t WHERE id = 4") == (
        [1, 2, 3], [1, 2], [0, 1], [1, 2], [4], [None], "xy", ["a", "b", "c"])


@pytest.mark.parametrize("sql, text", [
    ("SELECT ARRAY[1] @> ARRAY['a']", "operator does not exist: INT\\[\\] @> TEXT\\[\\]"),
    ("SELECT ARRAY[1] || ARRAY['a']", "operator does not exist"),
    ("SELECT ARRAY[1] || 'a'::TEXT", "operator does not exist"),
    ("SELECT 1 @> 2", "must be an array, not type INT"),
    ("SELECT ARRAY[1] && 1", "must be an array, not type INT"),
])
def test_operator_type_errors(s, sql, text):  # noqa: F811
    with pytest.raises(ProgrammingError, match=text):
        rows(s, sql)


def test_any_all_some_with_null_semantics(t):
    assert rows(t, "SELECT id FROM t WHERE 'b' = ANY(tags) ORDER BY id") == [(1,), (4,)]
    assert one(t, "SELECT 1 = ANY(ARRAY[1,NULL]), 2 = ANY(ARRAY[1,NULL]), 2 <> ALL(ARRAY[1,NULL]), "
                  "1 <> ALL(ARRAY[1,NULL]), 3 > ALL(ARRAY[1,2]), 2 < SOME(ARRAY[1,3]), 1 = ANY(ARRAY[]::INT[]), "
                  "1 = ALL(ARRAY[]::INT[]), NULL = ANY(ARRAY[1]), NULL = ANY(ARRAY[]::INT[]), 1 = ANY(NULL::INT[])") == (
        True, None, None, False, True, True, False, True, None, False, None)
    assert one(t, "SELECT 1.0 = ANY(ARRAY[1,2]), 'a' = ANY('{a,b}'), 2 = ANY(SELECT 2)") == (True, True, True)
    with pytest.raises(ProgrammingError, match="must be an array"):
        rows(t, "SELECT 1 = ANY(5)")


def test_comparison_order_by_distinct_group_by(t):
    assert one(t, "SELECT ARRAY[1,2] < ARRAY[1,2,3], ARRAY[1,NULL] > ARRAY[1,5], ARRAY[1,NULL] = ARRAY[1,NULL], "
                  "ARRAY[2] > ARRAY[1,9], ARRAY[]::INT[] < ARRAY[NULL]::INT[], ARRAY[1] = ARRAY[1.0]") == (
        True, True, True, True, True, True)
    t.execute("INSERT INTO t VALUES (5, NULL, ARRAY[1,NULL]), (6, NULL, ARRAY[1,2,3]), (7, NULL, ARRAY[1,2])")
    assert [plain(v) for (v,) in rows(t, "SELECT n FROM t ORDER BY n, id")] == [
        None, [], [1, 2], [1, 2, 3], [1, 2, 3], [1, None], [5]]
    assert [plain(v) for (v,) in rows(t, "SELECT n FROM t ORDER BY n DESC NULLS LAST, id")] == [
        [5], [1, None], [1, 2, 3], [1, 2, 3], [1, 2], [], None]
    groups = rows(t, "SELECT n, count(*) FROM t WHERE n IS NOT NULL GROUP BY n")
    assert len(groups) == 5 and {tuple(v): c for v, c in groups} == {
        (): 1, (1, 2): 1, (1, 2, 3): 2, (1, None): 1, (5,): 1}
    assert rows(t, "SELECT count(DISTINCT n) FROM t") == [(5,)]


# ---------------------------------------------------------------- unnest and array_agg


def test_unnest_in_from(t):
    assert rows(t, "SELECT * FROM unnest(ARRAY[1,2]) WITH ORDINALITY AS u(x, n)") == [(1, 1), (2, 2)]
    assert rows(t, "SELECT * FROM unnest(ARRAY[1,2], ARRAY['a']) AS u(x, y)") == [(1, "a"), (2, None)]
    assert rows(t, "SELECT u FROM unnest(ARRAY['p', NULL]) AS u") == [("p",), (None,)]
    assert rows(t, "SELECT id, x FROM t, unnest(t.n) AS x ORDER BY id, x") == [(1, 1), (1, 2), (1, 3), (3, 5)]
    assert rows(t, "SELECT id, x, o FROM t, unnest(t.tags) WITH ORDINALITY AS u(x, o) WHERE id <= 2 "
                   "ORDER BY id, o") == [(1, "a", 1), (1, "b", 2), (2, "c", 1), (2, None, 2)]
    assert rows(t, "SELECT x + 1 FROM unnest(ARRAY[1,2]) AS x WHERE x > 1") == [(3,)]


def test_unnest_in_the_select_list(t):
    """PostgreSQL 10+: one row per element, NULL/empty arrays give none, several calls are zipped."""
    assert rows(t, "SELECT id, unnest(tags) FROM t ORDER BY id") == [
        (1, "a"), (1, "b"), (2, "c"), (2, None), (4, "b")]
    assert rows(t, "SELECT id, unnest(tags), unnest(n) FROM t WHERE id <= 2 ORDER BY 1") == [
        (1, "a", 1), (1, "b", 2), (1, None, 3), (2, "c", None), (2, None, None)]
    assert rows(t, "SELECT unnest(ARRAY[1,2]) + 1") == [(2,), (3,)]
    assert rows(t, "SELECT DISTINCT upper(unnest(tags)) AS x FROM t ORDER BY x") == [(None,), ("A",), ("B",), ("C",)]
    assert rows(t, "SELECT id FROM t WHERE id IN (SELECT unnest(ARRAY[1,3])) ORDER BY id") == [(1,), (3,)]
    cur = sqlkv.connect(":memory:").cursor()
    cur.execute("SELECT unnest(ARRAY['x'])")
    assert cur.description[0][0] == "unnest(ARRAY['x'])" and cur.fetchall() == [("x",)]


def test_unnest_errors(t):
    with pytest.raises(NotSupportedError, match="GROUP BY, HAVING, aggregates"):
        rows(t, "SELECT count(*), unnest(n) FROM t")
    with pytest.raises(NotSupportedError, match="in FROM only"):
        rows(t, "SELECT unnest(n, tags) FROM t")
    with pytest.raises(NotSupportedError, match="in FROM only"):
        rows(t, "SELECT id FROM t WHERE unnest(n) = 1")
    with pytest.raises(ProgrammingError, match="must be an array, not type TEXT"):
        rows(t, "SELECT * FROM unnest('x'::TEXT)")


def test_array_agg(t):
    got = rows(t, "SELECT array_agg(id ORDER BY id DESC), array_agg(tags[1]), "
                  "array_agg(DISTINCT tags[1]), array_agg(id) FILTER (WHERE id > 2), "
                  "array_agg(id) FILTER (WHERE id > 9) FROM t")
    assert [tuple(plain(v) for v in r) for r in got] == [
        ([4, 3, 2, 1], ["a", "c", None, "b"], ["a", "b", "c", None], [3, 4], None)]
    t.execute("CREATE TABLE g (k INT, v TEXT)")
    t.execute("INSERT INTO g VALUES (1, 'x'), (2, 'y'), (1, 'z'), (2, NULL)")
    assert [(k, plain(v)) for k, v in rows(t, "SELECT k, array_agg(v ORDER BY v) FROM g GROUP BY k ORDER BY k")] == [
        (1, ["x", "z"]), (2, [None, "y"])]  # sqlkv's ORDER BY: NULLs first ascending (CockroachDB)
    assert one(t, "SELECT (array_agg(v ORDER BY v DESC))[1], cardinality(array_agg(v)) FROM g") == ("z", 4)
    assert rows(t, "SELECT array_agg(v) FROM g WHERE k > 5") == [(None,)]


# ---------------------------------------------------------------- element updates


def test_update_elements_extends_with_nulls(t):
    t.execute("UPDATE t SET tags[4] = 'x', n[1] = 0, n[2] = n[1] + 10 WHERE id = 1")
    assert one(t, "SELECT tags, n FROM t WHERE id = 1") == (["a", "b", None, "x"], [0, 11, 3])
    t.execute("UPDATE t SET tags[2] = 'y' WHERE id = 3")  # a NULL array is extended from empty
    assert one(t, "SELECT tags FROM t WHERE id = 3") == ([None, "y"],)
    t.execute("UPDATE t SET n[1] = NULL WHERE id = 3")
    assert one(t, "SELECT n FROM t WHERE id = 3") == ([None],)


@pytest.mark.parametrize("sql, error, text", [
    ("UPDATE t SET n[1] = 'no' WHERE id = 1", DataError, 'column "n"'),
    ("UPDATE t SET n[0] = 1 WHERE id = 1", DataError, "out of range"),
    ("UPDATE t SET n[NULL] = 1 WHERE id = 1", DataError, "must not be NULL"),
    ("UPDATE t SET n[1:2] = 1 WHERE id = 1", NotSupportedError, "slice"),
    ("UPDATE t SET id[1] = 1 WHERE id = 1", ProgrammingError, "not an array"),
    ("UPDATE t SET n = NULL, n[1] = 3", ProgrammingError, "multiple assignments"),
    ("UPDATE t SET n[1] = 3, n = NULL", ProgrammingError, "multiple assignments"),
])
def test_bad_element_updates_change_nothing(t, sql, error, text):
    before = rows(t, "SELECT * FROM t ORDER BY id")
    with pytest.raises(error, match=text):
        t.execute(sql)
    assert rows(t, "SELECT * FROM t ORDER BY id") == before


# ---------------------------------------------------------------- indexes


def test_btree_index_on_array_follows_postgresql_order(t):
    t.execute("INSERT INTO t VALUES (5, ARRAY['a', NULL], ARRAY[1,NULL]), (6, ARRAY[]::TEXT[], ARRAY[0,9])")
    t.execute("CREATE INDEX t_tags ON t (tags)")
    t.execute("CREATE INDEX t_n_desc ON t (n DESC)")
    plan = "\n".join(r[0] for r in rows(t, "EXPLAIN SELECT id FROM t WHERE tags = ARRAY['a','b']"))
    assert "t@t_tags" in plan and 'ARRAY["a","b"]' in plan
    assert rows(t, "SELECT id FROM t WHERE tags = ARRAY['a','b']") == [(1,)]
    # an index-ordered scan gives PostgreSQL's order: {} < {a,b} < {a,NULL} < {b} < {c,NULL}
    assert rows(t, "SELECT id FROM t WHERE tags > ARRAY[]::TEXT[] ORDER BY tags") == [(1,), (5,), (4,), (2,)]
    assert rows(t, "SELECT id FROM t WHERE tags >= ARRAY['a', 'c'] ORDER BY tags") == [(5,), (4,), (2,)]
    assert [i for (i,) in rows(t, "SELECT id FROM t ORDER BY n DESC")] == [3, 5, 1, 6, 2, 4]  # NULL last
    assert rows(t, "SELECT id FROM t WHERE n = ARRAY[1.5]") == []


def test_unique_index_on_array(t):
    t.execute("CREATE UNIQUE INDEX t_n_key ON t (n)")
    with pytest.raises(IntegrityError, match=r"Key \(n\)=\(\{1,2,3\}\) already exists"):
        t.execute("INSERT INTO t VALUES (9, NULL, ARRAY[1,2,3])")
    t.execute("INSERT INTO t VALUES (9, NULL, ARRAY[1,2])")  # a prefix is a different array
    t.execute("INSERT INTO t VALUES (10, NULL, NULL)")  # NULLs never collide
    t.execute("INSERT INTO t VALUES (11, NULL, ARRAY[NULL]::INT[])")
    with pytest.raises(IntegrityError, match=r"\{NULL\}"):  # array equality treats NULL elements as equal
        t.execute("INSERT INTO t VALUES (12, NULL, ARRAY[NULL]::INT[])")


def test_check_database_and_index_consistency(t):
    t.execute("CREATE INDEX t_tags ON t (tags DESC, id)")
    t.execute("UPDATE t SET tags[2] = 'z' WHERE id = 4")
    assert rows(t, "SELECT id FROM t WHERE tags = ARRAY['b','z']") == [(4,)]
    assert rows(t, "CHECK DATABASE") == []  # no problem found: every index entry matches its row


# ---------------------------------------------------------------- durability

_CHILD = r"""
import os, signal, sys
import sqlkv
conn = sqlkv.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], d DECIMAL(6,2)[])")
cur.execute("CREATE INDEX t_tags ON t (tags)")
cur.execute("INSERT INTO t VALUES (1, ARRAY['a', NULL, 'b c'], ARRAY[1.50, NULL])")
conn.commit()
cur.execute("UPDATE t SET tags[2] = 'x', tags[5] = 'y' WHERE id = 1")
conn.commit()
cur.execute("UPDATE t SET tags[1] = 'lost', d[1] = 9 WHERE id = 1")  # never committed
print("ready", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_crash_and_reopen_keeps_committed_arrays(tmp_path):
    path = str(tmp_path / "db")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", _CHILD, path], capture_output=True, env=env, timeout=120)
    assert out.stdout.strip() == b"ready" and out.returncode == -signal.SIGKILL
    conn = sqlkv.connect(path)
    cur = conn.cursor()
    assert cur.execute("SELECT tags, d FROM t").fetchall() == [
        (["a", "x", "b c", None, "y"], [Decimal("1.50"), None])]
    assert cur.execute("SELECT id FROM t WHERE tags = ?", (["a", "x", "b c", None, "y"],)).fetchall() == [(1,)]
    conn.close()


def test_stored_expressions_keep_array_operators(s):  # noqa: F811
    """CHECK, generated columns and partial-index predicates are stored as text and parsed again."""
    s.execute("CREATE TABLE c (id INT PRIMARY KEY, a INT[] CHECK (a @> ARRAY[1]), b INT[] CHECK (b && ARRAY[1]), "
              "first INT AS (a[1]) STORED, more INT[] AS (a || 9) STORED)")
    s.execute("CREATE INDEX c_small ON c (id) WHERE a <@ ARRAY[1,2]")
    s.execute("ALTER TABLE c ADD CHECK (cardinality(b) < 3)")
    s.execute("INSERT INTO c (id, a, b) VALUES (1, ARRAY[1,2], ARRAY[1])")
    assert one(s, "SELECT first, more FROM c") == (1, [1, 2, 9])
    for bad in ("INSERT INTO c (id, a, b) VALUES (2, ARRAY[2], ARRAY[1])",
                "INSERT INTO c (id, a, b) VALUES (2, ARRAY[1], ARRAY[2])",
                "INSERT INTO c (id, a, b) VALUES (2, ARRAY[1], ARRAY[1,1,1])"):
        with pytest.raises(IntegrityError, match="violates check constraint"):
            s.execute(bad)
    (_, ddl), = rows(s, "SHOW CREATE TABLE c")
    # @> and && are printed as written, ARRAY[...] as PostgreSQL writes it (parse_jsonb.py)
    assert "a @> ARRAY[1]" in ddl and "b && ARRAY[1]" in ddl
    assert rows(s, "CHECK DATABASE") == []


def test_iterdump_round_trips_arrays():
    source = sqlkv.connect(":memory:")
    source.execute("CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], d DECIMAL(4,2)[])")
    source.execute("INSERT INTO t VALUES (1, ARRAY['', 'NULL', 'a b', 'q\"', 'b\\s', '{', ',', NULL], ARRAY[1.5])")
    source.execute("CREATE UNIQUE INDEX t_tags ON t (tags)")
    target = sqlkv.connect(":memory:")
    for statement in source.iterdump():
        target.execute(statement)
    query = "SELECT tags, d FROM t WHERE tags = (SELECT tags FROM t)"
    assert target.execute(query).fetchall() == source.execute(query).fetchall() == [
        (["", "NULL", "a b", 'q"', "b\\s", "{", ",", None], [Decimal("1.50")])]


@pytest.mark.parametrize("sql, text", [
    ("SELECT array_cat(ARRAY[1], ARRAY['a'])", r"array_cat\(INT\[\], TEXT\[\]\) does not exist"),
    ("SELECT array_append(ARRAY[1], 'x')", r"array_append\(INT\[\], TEXT\) does not exist"),
    ("SELECT array_length(5, 1)", r"array_length\(INT, INT\) does not exist"),
    ("SELECT array_position(ARRAY['a'], 1)", r"array_position\(TEXT\[\], INT\) does not exist"),
    ("SELECT cardinality('x'::TEXT)", r"cardinality\(TEXT\) does not exist"),
])
def test_array_function_argument_types_are_checked(s, sql, text):  # noqa: F811
    with pytest.raises(ProgrammingError, match=text):
        rows(s, sql)
    # compatible numbers are fine, as PostgreSQL's anycompatible: INT[] and a FLOAT give FLOAT[]
    assert one(s, "SELECT array_append(ARRAY[1], 2.5), array_cat(ARRAY[1], ARRAY[2.5])") == ([1, 2.5], [1, 2.5])


def test_dimension_functions_fill_and_trim(s):  # noqa: F811
    assert one(s, "SELECT array_lower(ARRAY[5,6], 1), array_upper(ARRAY[5,6], 1), array_upper(ARRAY[5], 2), "
                  "array_dims(ARRAY[5,6]), array_dims(ARRAY[]::INT[]), array_ndims(ARRAY[5]), "
                  "array_fill(7, ARRAY[3]), array_fill(NULL::INT, ARRAY[2], ARRAY[1]), "
                  "trim_array(ARRAY[1,2,3], 2), trim_array(ARRAY[1], 0)") == (
        1, 2, None, "[1:2]", None, 1, [7, 7, 7], [None, None], [1], [1])
    with pytest.raises(NotSupportedError, match="one dimension"):
        rows(s, "SELECT array_fill(7, ARRAY[2,2])")
    with pytest.raises(NotSupportedError, match="start at 1"):
        rows(s, "SELECT array_fill(7, ARRAY[2], ARRAY[0])")
    with pytest.raises(DataError, match="between 0 and 1"):
        rows(s, "SELECT trim_array(ARRAY[1], 2)")


def test_any_over_an_indexed_column(s):  # noqa: F811
    s.execute("CREATE TABLE k (id INT PRIMARY KEY, v INT)")
    s.execute("CREATE INDEX k_v ON k (v)")
    s.execute("INSERT INTO k VALUES (1, 10), (2, 20), (3, 30), (4, NULL)")
    query = "SELECT id FROM k WHERE v = ANY(ARRAY[10, 30, NULL]) ORDER BY id"
    assert rows(s, query) == [(1,), (3,)]
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN " + query))
    assert "k@k_v" in plan and "/Table/" in plan and "/10" in plan and "/30" in plan  # an IN list's spans
    assert rows(s, "SELECT id FROM k WHERE id = ANY(?) ORDER BY id", (SqlArray([1, 3]),)) == [(1,), (3,)]
    assert rows(s, "SELECT id FROM k WHERE v > ALL(ARRAY[10, 20]) ORDER BY id") == [(3,)]
    assert rows(s, "SELECT id FROM k WHERE v <> ALL(ARRAY[10]) ORDER BY id") == [(2,), (3,)]
    assert rows(s, "SELECT id FROM k WHERE id = ANY(ARRAY[]::INT[])") == []


def test_bytes_arrays_use_postgresql_hex_text(s):  # noqa: F811
    text = one(s, "SELECT ARRAY[x'00ff', CAST('ab' AS BYTES), NULL]::TEXT")[0]
    assert text == '{"\\\\x00ff","\\\\x6162",NULL}'
    assert one(s, "SELECT CAST(? AS BYTES[]), CAST('{plain}' AS BYTES[])", (text,)) == (
        [b"\x00\xff", b"ab", None], [b"plain"])
    with pytest.raises(DataError, match="invalid hexadecimal"):
        rows(s, "SELECT CAST('{\"\\\\xzz\"}' AS BYTES[])")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sqlkv.sql.arraycasts import format_array, parse_array_text  # noqa: E402
from sqlkv.sql.casts import to_text  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6), max_size=6))
def test_text_form_round_trips_any_strings(items):
    text = format_array(SqlArray(items), to_text)
    assert list(parse_array_text(text, lambda t: t)) == items


def test_array_of_a_subquery(t):
    assert one(t, "SELECT ARRAY(SELECT id FROM t ORDER BY id DESC), ARRAY(SELECT id FROM t WHERE id > 9), "
                  "cardinality(ARRAY(SELECT tags[1] FROM t)), ARRAY(VALUES (1), (2), (1))") == (
        [4, 3, 2, 1], [], 4, [1, 2, 1])
    # correlated: one array per outer row
    assert [(i, plain(a)) for i, a in rows(t, "SELECT a.id, ARRAY(SELECT b.id FROM t b WHERE b.id < a.id ORDER BY b.id) "
                                              "FROM t a WHERE a.id <= 3 ORDER BY a.id")] == [(1, []), (2, [1]), (3, [1, 2])]
    with pytest.raises(NotSupportedError, match="multi-dimensional"):
        rows(t, "SELECT ARRAY(SELECT n FROM t)")
    with pytest.raises(ProgrammingError, match="only one column"):
        rows(t, "SELECT ARRAY(SELECT id, n FROM t)")


def test_array_primary_key_ranges_follow_postgresql_order(s):  # noqa: F811
    """CockroachDB's logic test (array: t_indexed), expectations from PostgreSQL's array order."""
    s.execute("CREATE TABLE ti (x INT[] PRIMARY KEY)")
    s.execute("INSERT INTO ti VALUES (ARRAY[1]), (ARRAY[5]), (ARRAY[4]), (ARRAY[1,4,5]), (ARRAY[1,4,6]), "
              "(ARRAY[1,NULL,10]), (ARRAY[NULL]), (ARRAY[NULL, NULL, NULL])")

    def xs(sql):
        return [plain(x) for (x,) in rows(s, sql)]

    assert xs("SELECT x FROM ti ORDER BY x") == [
        [1], [1, 4, 5], [1, 4, 6], [1, None, 10], [4], [5], [None], [None, None, None]]
    assert xs("SELECT x FROM ti WHERE x < ARRAY[1, 4, 3] ORDER BY x") == [[1]]
    assert xs("SELECT x FROM ti WHERE x > ARRAY[1, NULL] ORDER BY x DESC") == [
        [None, None, None], [None], [5], [4], [1, None, 10]]
    assert xs("SELECT x FROM ti WHERE x > ARRAY[1, 3] AND x < ARRAY[1, 4, 10] ORDER BY x") == [[1, 4, 5], [1, 4, 6]]
    assert xs("SELECT x FROM ti WHERE x > ARRAY[NULL, NULL]::INT[]") == [[None, None, None]]
    plan = rows(s, "EXPLAIN SELECT x FROM ti WHERE x > ARRAY[1, 3] AND x < ARRAY[1, 4, 10]")
    assert any("/ARRAY[1,3]/PrefixEnd - " in line and "/ARRAY[1,4,10]" in line for (line,) in plan)
    with pytest.raises(IntegrityError, match="duplicate key"):
        s.execute("INSERT INTO ti VALUES (ARRAY[NULL])")
