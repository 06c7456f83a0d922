"""How the JSONB arrows print (issue 15): ``doc -> 'k'``, not ``JSON_EXTRACT(((doc)), ('k'))``.

SHOW CREATE TABLE (CHECK, generated columns, expression indexes), SHOW CREATE VIEW and EXPLAIN
print sqlglot trees; the texts the catalog stores are printed trees too, read back after a
reopen. So the printed text must read back into a tree that means the same and prints the same
(no parentheses growing on each round trip), and the things built from it must still work:
the expression index is still chosen, the CHECK still enforced, the view still answers alike.
"""

from __future__ import annotations

import pytest

import sqlkv
from sqlkv.sql.parse_operators import parse_expression


def _print(text: str) -> str:
    return parse_expression(text).sql()


@pytest.mark.parametrize("written, printed", [
    ("doc->'k'", "doc -> 'k'"),
    ("doc->>'k'", "doc ->> 'k'"),
    ("doc#>'{a,b}'", "doc #> '{a,b}'"),
    ("doc#>>'{a}'", "doc #>> '{a}'"),
    ("doc->'a'->>0", "doc -> 'a' ->> 0"),
    ("(doc->'a')->>'b'", "doc -> 'a' ->> 'b'"),
    ("doc->-1", "doc -> -1"),
    ("doc->'a.b'", "doc -> 'a.b'"),  # one key with a dot in it, not a path of two
    ("doc->>k2", "doc ->> k2"),
    ("jsonb_typeof(doc -> 'k')", "JSONB_TYPEOF(doc -> 'k')"),  # an argument: not read as a lambda
    ("coalesce(doc->>'a', doc->>'b')", "COALESCE(doc ->> 'a', doc ->> 'b')"),
    ("(doc || doc) -> 'k'", "(doc || doc) -> 'k'"),
    ("f((doc || doc) -> 'k')", "F((doc || doc) -> 'k')"),
    ("doc->>'a' || doc->>'b'", "doc ->> 'a' || doc ->> 'b'"),
    ("doc::JSONB -> 'a'", "CAST(doc AS JSONB) -> 'a'"),
    ("doc->'k' @> '1'", "doc -> 'k' @> '1'"),
    ("doc -> (doc ->> 'k')", "doc -> (doc ->> 'k')"),  # an arrow on the right keeps its pair
    ("doc -> ('a' || 'b')", "doc -> ('a' || 'b')"),
    # the function spellings earlier versions stored read back into the same trees
    ("JSON_EXTRACT(((doc)), ('k'))", "doc -> 'k'"),
    ("JSON_EXTRACT(JSON_EXTRACT(((doc)), ('a')), '$[0]')", "doc -> 'a' -> 0"),
    ("JSONB_EXTRACT_SCALAR(doc, '{a,b}')", "doc #>> '{a,b}'"),
])
def test_arrows_print_as_operators_and_print_the_same_after_reading_back(written, printed):
    first = _print(written)
    assert first == printed
    again = _print(first)
    assert again == first  # no parentheses added on a round trip
    assert parse_expression(again) == parse_expression(first)


def test_a_json_path_of_several_steps_keeps_the_function_spelling():
    # no arrow says "the path a.b" in one step: the function spelling stays, and reads back
    text = _print("JSON_EXTRACT(doc, '$.a.b')")
    assert text.startswith("JSON_EXTRACT(") and _print(text) == text


SCHEMA = [
    "CREATE TABLE u (id INT PRIMARY KEY, doc JSONB, CHECK (doc->>'k' <> 'bad'), "
    "g TEXT AS (doc#>>'{a,b}') STORED)",
    "CREATE INDEX ON u ((doc->'k'))",
    "CREATE INDEX ON u ((doc#>'{a}'))",
    "CREATE INDEX ON u (lower(doc->>'k'))",
    "CREATE VIEW v AS SELECT id, doc->'k' AS k, doc->>'k' AS k2, doc#>'{a,b}' AS ab, doc#>>'{a}' AS a, "
    "jsonb_typeof(doc -> 'k') AS t, (doc->'a')->>'b' AS ab2, doc->'l'->>-1 AS last FROM u",
]
DOCS = ['{"k": 1, "a": {"b": "x"}, "l": [1, 2]}', '{"k": "z", "a": {"b": [true]}, "l": []}', '{"a": 5}', "[1]"]
VIEW_AS_QUERY = ("SELECT id, doc->'k', doc->>'k', doc#>'{a,b}', doc#>>'{a}', jsonb_typeof(doc -> 'k'), "
                 "(doc->'a')->>'b', doc->'l'->>-1 FROM u ORDER BY id")


def _all(cur, sql: str) -> list:
    cur.execute(sql)
    return cur.fetchall()


def test_shown_schema_uses_the_operators_and_everything_still_works_after_reopen(tmp_path):
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path, autocommit=True)
    cur = conn.cursor()
    for ddl in SCHEMA:
        cur.execute(ddl)
    for i, doc in enumerate(DOCS):
        cur.execute("INSERT INTO u (id, doc) VALUES (?, ?)", (i, doc))
    before = _all(cur, "SELECT * FROM v ORDER BY id")
    conn.close()

    conn = sqlkv.connect(path, autocommit=True)
    cur = conn.cursor()
    table = _all(cur, "SHOW CREATE TABLE u")[0][1]
    assert "g TEXT GENERATED ALWAYS AS (doc #>> '{a,b}') STORED" in table
    assert "INDEX u_expr_idx ((doc -> 'k'))" in table  # PostgreSQL's name for an operator expression
    assert "INDEX u_expr_idx1 ((doc #> '{a}'))" in table  # numbered when taken, as PostgreSQL does
    assert "INDEX u_lower_idx ((LOWER(doc ->> 'k')))" in table
    assert "CHECK (doc ->> 'k' <> 'bad')" in table
    assert "JSON" not in table.replace("JSONB", "")
    view = _all(cur, "SHOW CREATE VIEW v")[0][1]
    assert ("SELECT id, doc -> 'k' AS k, doc ->> 'k' AS k2, doc #> '{a,b}' AS ab, doc #>> '{a}' AS a, "
            "JSONB_TYPEOF(doc -> 'k') AS t, doc -> 'a' ->> 'b' AS ab2, doc -> 'l' ->> -1 AS last FROM u") in view
    # the view answers as before the reopen, and as its query written out
    assert _all(cur, "SELECT * FROM v ORDER BY id") == before == _all(cur, VIEW_AS_QUERY)
    # the expression indexes are still chosen, and EXPLAIN prints the arrows
    plan = "\n".join(r[0] for r in _all(cur, "EXPLAIN SELECT id FROM u WHERE doc->'k' = '1'"))
    assert "u@u_expr_idx " in plan
    assert _all(cur, "SELECT id FROM u WHERE doc->'k' = '1'") == [(0,)]
    plan = "\n".join(r[0] for r in _all(cur, "EXPLAIN SELECT id FROM u WHERE lower(doc->>'k') = 'z'"))
    assert "u@u_lower_idx " in plan
    plan = "\n".join(r[0] for r in _all(cur, "EXPLAIN SELECT id FROM u WHERE doc->>'a' = '5' AND id > 0"))
    assert "doc ->> 'a' = '5'" in plan
    # the CHECK is enforced and the generated column computed
    with pytest.raises(sqlkv.IntegrityError, match="u_check1"):
        cur.execute("""INSERT INTO u (id, doc) VALUES (9, '{"k": "bad"}')""")
    cur.execute("""INSERT INTO u (id, doc) VALUES (9, '{"a": {"b": "y"}}')""")
    assert _all(cur, "SELECT g FROM u WHERE id IN (0, 9) ORDER BY id") == [("x",), ("y",)]
    conn.close()
