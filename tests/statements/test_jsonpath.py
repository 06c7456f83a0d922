"""SQL/JSON path (issue 15): jsonb_path_query (FROM and select list), _array, _first, _exists,
_match, @? and @@. Expectations are hand-computed from PostgreSQL's documentation ("The SQL/JSON
Path Language", its lax/strict rules and numeric division scale); results are compared as JSON
text, PostgreSQL's output form."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlkv
from sqlkv.encoding.jsonb import Jsonb, parse
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr.jsonpath import path_items
from sqlkv.sql.expr.jsonpath_parse import parse_jsonpath

DOC = '{"a": [1, 2, 3, 4, 5], "b": {"c": "x", "d": null}, "n": 1.50, "s": "1.9", "o": [{"k": 1}, {"k": 2}, 3]}'


@pytest.fixture
def conn():
    c = sqlkv.connect(":memory:", autocommit=True)
    c.jsonb_as_text = True  # JSONB results as PostgreSQL's text
    yield c
    c.close()


def items(conn, path: str, doc: str = DOC, variables: str | None = None) -> list[str]:
    """jsonb_path_query's rows, as text."""
    args = "?::JSONB, ?" + (", ?::JSONB" if variables is not None else "")
    params = (doc, path) + ((variables,) if variables is not None else ())
    return [r[0] for r in conn.execute(f"SELECT * FROM jsonb_path_query({args})", params).fetchall()]


@pytest.mark.parametrize("path,expected", [
    ("$", ['{"a": [1, 2, 3, 4, 5], "b": {"c": "x", "d": null}, "n": 1.50, "o": [{"k": 1}, {"k": 2}, 3], "s": "1.9"}']),
    ("$.a", ["[1, 2, 3, 4, 5]"]),
    ("$.a[*]", ["1", "2", "3", "4", "5"]),
    ("$.a[0]", ["1"]),
    ("$.a[1 to 3, 0]", ["2", "3", "4", "1"]),
    ("$.a[last]", ["5"]),
    ("$.a[last - 1 to last]", ["4", "5"]),
    ("$.a[1.9]", ["2"]),  # a subscript is truncated toward zero
    ("$.a[7]", []),  # lax: out of range gives nothing
    ("$.a[-1]", []),
    ("$.b.c", ['"x"']),
    ('$."b"."c"', ['"x"']),
    ("$.b.*", ['"x"', "null"]),
    ("$.zz", []),  # lax: a missing key gives nothing
    ("$.o.k", ["1", "2"]),  # lax: an array's elements are accessed; 3 has no key
    ("$.o[*].k", ["1", "2"]),
    ("$.b[0].c", ['"x"']),  # lax: a non-array is a one-element array
    ("$.b[*]", ['{"c": "x", "d": null}']),
    ("$.*.k", ["1", "2"]),
    ("$.b.**", ['{"c": "x", "d": null}', '"x"', "null"]),
    ("$.o.**{1}", ['{"k": 1}', '{"k": 2}', "3"]),
    ("$.o.**{2 to last}", ["1", "2"]),
    ("$.a ? (@ > 3)", ["4", "5"]),  # lax: the filter sees the elements
    ("$.a[*] ? (@ >= $min && @ <= $max)", ["2", "3", "4"]),
    ("$.a[*] ? (@ < 2 || @ == 5)", ["1", "5"]),
    ("$.a[*] ? (!(@ < 4))", ["4", "5"]),
    ("$.o[*] ? (@.k == 2)", ['{"k": 2}']),
    ("$.o[*] ? (exists(@.k))", ['{"k": 1}', '{"k": 2}']),
    ("$.o[*] ? ((@.k > 1) is unknown)", []),  # lax: 3 has no k, so nothing to compare: false, not unknown
    ("$.o[*] ? ((@ > 1) is unknown)", ['{"k": 1}', '{"k": 2}']),  # objects do not compare: unknown
    ("$ ? (@.b.c starts with \"x\").n", ["1.50"]),
    ("$.n + 1", ["2.50"]),
    ("$.n * 2", ["3.00"]),
    ("$.a[4] / 2", ["2.5000000000000000"]),  # PostgreSQL's numeric division scale
    ("1 / 3", ["0.33333333333333333333"]),
    ("7 % 3", ["1"]),
    ("-7 % 3", ["-1"]),
    ("-$.a[0 to 1]", ["-1", "-2"]),
    ("$.a.size()", ["5"]),
    ("$.b.size()", ["1"]),  # lax: a non-array has size 1
    ("$.*.type()", ['"array"', '"object"', '"number"', '"array"', '"string"']),  # keys in JSONB order
    ("$.s.double() * 2", ["3.8"]),
    ("$.n.floor()", ["1"]),
    ("$.n.ceiling()", ["2"]),
    ("(-$.n).abs()", ["1.50"]),
    ("$.a[0] == 1", ["true"]),  # a predicate at the top: true / false / null (unknown)
    ("$.a == 3", ["true"]),  # lax: the array's elements are compared
    ("$.b == 1", ["null"]),  # objects do not compare
    ("$.b.d == null", ["true"]),
    ("$.b.d != 1", ["true"]),  # null against non-null: only != is true
    ("$.b.c == 1", ["null"]),  # string against number: unknown
    ('$.b.c like_regex "^X" flag "i"', ["true"]),
    ('$.b.c like_regex "^X"', ["false"]),
    ("$x", ['"v"']),
    ('"\\ud83d\\ude00\\u00e9"', ['"\U0001f600é"']),  # a surrogate pair is one character
])
def test_path_items(conn, path, expected):
    assert items(conn, path, variables='{"min": 2, "max": 4, "x": "v"}') == expected


def test_keyvalue_of_the_root(conn):
    assert items(conn, "$.keyvalue()", '{"x": "20", "y": 32}') == [
        '{"id": 0, "key": "x", "value": "20"}', '{"id": 0, "key": "y", "value": 32}']
    with pytest.raises(NotSupportedError, match="keyvalue"):
        items(conn, "$.b.keyvalue()")


@pytest.mark.parametrize("path,expected", [
    ("strict $.a ? (@ > 3)", []),  # strict: the filter sees the array itself, not comparable
    ("strict $.a[*] ? (@ > 3)", ["4", "5"]),
    ("strict $.a == 3", ["null"]),
    ("strict $.o[*] ? (@.k > 1)", ['{"k": 2}']),  # the error on 3 makes its predicate unknown
    ("strict $.b.size()", None),
    ("strict $.zz", None),
    ("strict $.a[7]", None),
    ("strict $.a.k", None),
    ("strict $.b[0]", None),
    ("strict $.b[*]", None),
    ("strict $.a.*", None),
])
def test_strict_mode(conn, path, expected):
    if expected is None:
        with pytest.raises(DataError):
            items(conn, path)
    else:
        assert items(conn, path) == expected


@pytest.mark.parametrize("sql,expected", [
    (f"SELECT jsonb_path_exists('{DOC}', '$.b ? (@.c == \"x\")')", True),
    (f"SELECT jsonb_path_exists('{DOC}', '$.zz')", False),
    (f"SELECT jsonb_path_exists('{DOC}', 'strict $.zz', '{{}}', true)", None),
    (f"SELECT jsonb_path_match('{DOC}', 'exists($.a[*] ? (@ > $m))', '{{\"m\": 4}}')", True),
    (f"SELECT jsonb_path_match('{DOC}', '$.a[0] > 1')", False),
    (f"SELECT jsonb_path_match('{DOC}', '$.b == 1')", None),
    (f"SELECT jsonb_path_match('{DOC}', '$.a', '{{}}', true)", None),
    (f"SELECT jsonb_path_query_array('{DOC}', '$.a[*] ? (@ > 2)')::TEXT", "[3, 4, 5]"),
    (f"SELECT jsonb_path_query_array('{DOC}', '$.zz')::TEXT", "[]"),
    (f"SELECT jsonb_path_query_first('{DOC}', '$.a[*] ? (@ > 2)')::TEXT", "3"),
    (f"SELECT jsonb_path_query_first('{DOC}', '$.zz')", None),
    (f"SELECT '{DOC}'::JSONB @? '$.a[*] ? (@ > 4)'", True),
    (f"SELECT '{DOC}'::JSONB @? '$.a[*] ? (@ > 5)'", False),
    (f"SELECT '{DOC}'::JSONB @? 'strict $.zz'", None),  # the operators are silent
    (f"SELECT '{DOC}'::JSONB @@ '$.a[*] > 4'", True),
    (f"SELECT '{DOC}'::JSONB @@ '$.a'", None),
    ("SELECT jsonb_path_exists(NULL, '$')", None),
    ("SELECT jsonb_path_query_array('[1, 2]', '$[*] ? (@ > 1)'::jsonpath)::TEXT", "[2]"),  # the cast checks
    ("SELECT '[1]'::JSONB @? CAST('$[0]' AS JSONPATH)", True),
    ("SELECT jsonb_path_exists('{}', NULL)", None),
    # silent keeps the items found before the error (PostgreSQL's executor order)
    ("SELECT jsonb_path_query_array('[{\"a\": 1}, 2, {\"a\": 3}]', 'strict $[*].a', '{}', true)::TEXT", "[1]"),
])
def test_functions_and_operators(conn, sql, expected):
    [(value,)] = conn.execute(sql).fetchall()
    assert value == expected


def test_set_returning_in_from_and_select_list_with_a_table(conn):
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, d JSONB)")
    conn.execute("""INSERT INTO t VALUES (1, '{"tags": ["a", "b"], "n": 1}'), (2, '{"tags": ["c"]}'), (3, NULL),
                    (4, '{"tags": "z"}')""")
    assert conn.execute("SELECT t.id, q FROM t, jsonb_path_query(t.d, '$.tags[*]') WITH ORDINALITY AS q "
                        "ORDER BY t.id, ordinality").fetchall() == [(1, '"a"'), (1, '"b"'), (2, '"c"'), (4, '"z"')]
    cur = conn.execute("SELECT id, jsonb_path_query(d, '$.tags[*] ? (@ != \"b\")') FROM t WHERE id < 4 ORDER BY id")
    assert [c[0] for c in cur.description] == ["id", "jsonb_path_query(d, '$.tags[*] ? (@ != \"b\")')"]
    assert cur.fetchall() == [(1, '"a"'), (2, '"c"')]
    # inside a select-list expression: one row per item, as PostgreSQL
    assert conn.execute("SELECT id, jsonb_path_query(d, '$.tags[*]')::TEXT || '!' FROM t WHERE id = 1").fetchall() == [
        (1, '"a"!'), (1, '"b"!')]
    assert conn.execute("SELECT id FROM t WHERE d @? '$.tags ? (@ == \"c\")' ORDER BY id").fetchall() == [(2,)]
    assert conn.execute("SELECT id FROM t WHERE d @@ '$.n == 1'").fetchall() == [(1,)]
    # the path as a parameter, one plan for every value
    for path, ids in (("$.n", [1]), ("$.tags[1]", [1]), ("$.tags", [1, 2, 4])):
        assert [r[0] for r in conn.execute("SELECT id FROM t WHERE d @? ? ORDER BY id", (path,))] == ids
    view = "CREATE VIEW v AS SELECT id FROM t WHERE d @? '$.tags[*] ? (@ == \"a\")' AND d @@ '$.n > 0'"
    conn.execute(view)
    assert conn.execute("SELECT * FROM v").fetchall() == [(1,)]
    assert "d @? '$.tags[*] ? (@ == \"a\")' AND d @@ '$.n > 0'" in conn.execute("SHOW CREATE VIEW v").fetchall()[0][1]


@pytest.mark.parametrize("sql,error,match", [
    ("SELECT jsonb_path_query_array('{}', '$.a[')", DataError, "syntax error in jsonpath"),
    ("SELECT jsonb_path_query_array('{}', '$.a.datetime()')", NotSupportedError, r"\.datetime\(\) is not supported"),
    ("SELECT jsonb_path_query_array('{}', '$.a.nosuch()')", DataError, "unknown item method"),
    ("SELECT jsonb_path_query_array('{}', '@.a')", DataError, "@ is not allowed in root expressions"),
    ("SELECT jsonb_path_query_array('{}', 'last')", DataError, "LAST is allowed only in array subscripts"),
    ("SELECT jsonb_path_query_array('{}', '$x')", DataError, 'could not find jsonpath variable "x"'),
    ("SELECT jsonb_path_query_array('{}', '$', '[]')", DataError, '"vars" argument is not an object'),
    ("SELECT jsonb_path_query_array('[1, 2]', '$[*] + 1')", DataError, "left operand of jsonpath operator \\+"),
    ("SELECT jsonb_path_query_array('1', '$ / 0')", DataError, "division by zero"),
    ("SELECT jsonb_path_query_array('{}', '$.double()')", DataError, r"\.double\(\) can only be applied"),
    ("SELECT jsonb_path_query_array('\"x\"', '$.double()')", DataError, "not a valid representation"),
    ("SELECT jsonb_path_query_array('\"x\"', '$ like_regex \"a\" flag \"x\"')", NotSupportedError, 'flag "x"'),
    ("SELECT jsonb_path_match('[1, 2]', '$[*]')", DataError, "single boolean result is expected"),
    ("SELECT 1 WHERE jsonb_path_query('{}', '$') = '{}'", NotSupportedError, "returns a set of rows"),
    ("SELECT count(*), jsonb_path_query('{}', '$')", NotSupportedError, "GROUP BY, HAVING, aggregates"),
    ("SELECT jsonb_path_exists_tz('{}', '$')", NotSupportedError, "jsonb_path_exists_tz"),
    ("SELECT 'x'::jsonpath", DataError, 'syntax error in jsonpath at or near "x"'),
    ("SELECT '\"\\ud83d\"'::jsonpath", DataError, "invalid Unicode escape"),
    ("SELECT 1::jsonpath", ProgrammingError, "cannot cast type INT to jsonpath"),
    ("SELECT '{}'::JSONB @? 1", ProgrammingError, "jsonpath"),
    ("SELECT jsonb_path_query_array('{}', '$ ? (@.a)')", DataError, "predicate is expected"),
])
def test_errors_name_the_problem(conn, sql, error, match):
    with pytest.raises(error, match=match):
        conn.execute(sql).fetchall()


# ---------------------------------------------------------------- robustness

_PIECES = ["$", "@", "$x", ".a", ".*", ".**", "[0]", "[*]", "[last]", "[1 to 2]", "?", "(", ")", "@.a", " == ", " < ",
           " + ", " / ", " % ", "-", "!", " && ", " || ", "1", "0", "1e400", "\"s\"", "null", "true", "exists",
           " like_regex ", " starts with ", " is unknown", ".size()", ".double()", ".type()", ".floor()",
           ".keyvalue()", "strict ", "lax ", "{", "}", ",", "\"\\", "last"]
_DOCS_TEXT = ['{"a": [1, {"a": 2}, "x"], "b": null}', '[1, [2, [3]], {"a": "1e3"}]', '"s"', "1.5", "{}"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=9), st.sampled_from(_DOCS_TEXT), st.booleans())
def test_any_path_text_gives_items_or_a_clear_error(pieces, doc, silent):
    """No jsonpath text reaches the user as anything but items or a PEP 249 error."""
    path = "".join(pieces)
    try:
        list(path_items(parse(doc), path, Jsonb({"x": 2}), silent))
    except sqlkv.Error:
        pass


def test_deep_nesting_is_a_clear_error():
    with pytest.raises(DataError, match="nested too deeply"):
        parse_jsonpath("(" * 5000 + "1" + ")" * 5000)


# ---------------------------------------------------------------- oracle: sqlite3's JSON1 for plain accessor paths

_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "x", "a b"]))
_TREES = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
                      max_leaves=8)
_STEPS = st.lists(st.one_of(st.sampled_from("abc").map(lambda k: f".{k}"), st.integers(0, 3).map(lambda i: f"[{i}]")),
                  min_size=1, max_size=4)


def _sqlite_value(lite, doc: str, path: str) -> list:
    """[value] when the path exists in sqlite's reading of doc, [] when it does not."""
    kind, value = lite.execute("SELECT json_type(?, ?), json_extract(?, ?)", (doc, path, doc, path)).fetchone()
    if kind is None:
        return []
    return [json.loads(value) if kind in ("object", "array") else
            {"true": True, "false": False, "null": None}.get(kind, value)]


@settings(max_examples=200, deadline=None)
@given(_TREES, _STEPS)
def test_strict_accessor_paths_agree_with_sqlite_json_extract(tree, steps):
    """A strict path of keys and subscripts finds exactly what sqlite's json_extract finds (nothing
    when a step is missing: strict's error, silenced); lax finds the same wherever sqlite finds a value."""
    lite = sqlite3.connect(":memory:")
    conn = sqlkv.connect(":memory:")
    doc, path = json.dumps(tree), "$" + "".join(steps)
    expected = _sqlite_value(lite, doc, path)
    [(found,)] = conn.execute("SELECT jsonb_path_query_array(?::JSONB, ?, '{}', true)", (doc, "strict " + path))
    assert found == expected, (doc, path)
    if expected:
        [(lax,)] = conn.execute("SELECT jsonb_path_query_array(?::JSONB, ?)", (doc, path))
        assert lax == expected, (doc, path)
    conn.close()
    lite.close()
