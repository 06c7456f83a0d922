"""Printing PostgreSQL's operators back (issue 15): ``@>``, ``<@``, ``?``, ``?|``, ``?&``, ``#-``
and ``ARRAY[...]`` appear in SHOW CREATE TABLE, view definitions and EXPLAIN as written, and the
printed text reads back into the same tree (sqlkv/sql/parse_jsonb.py)."""

from __future__ import annotations

import pytest

from sqlkv.errors import IntegrityError

from sqlkv.sql.parse import parse_statement
from sqlkv.sql.parse_operators import parse_expression
from sqlkv.sql.session import Database, Session
from tests.statements.support import rows, s  # noqa: F401

EXPRESSIONS = [
    ("""j @> '{"a": 1}'""", """j @> '{"a": 1}'"""),
    ("""'{"a": 1}' <@ j""", """'{"a": 1}' <@ j"""),
    ("j ? 'k'", "j ? 'k'"),
    ("j ?| ARRAY['a','b']", "j ?| ARRAY['a', 'b']"),
    ("j ?& ARRAY['a']", "j ?& ARRAY['a']"),
    ("j #- '{a,0}'", "j #- '{a,0}'"),
    ("a @> ARRAY[1] AND a <@ ARRAY[1,2]", "a @> ARRAY[1] AND a <@ ARRAY[1, 2]"),
    ("(j -> 'x') ? 'y' OR NOT j ? 'z'", "(j -> 'x') ? 'y' OR NOT j ? 'z'"),
    ("f(j -> 'x', j->>0) ? 'y'", "F(j -> 'x', j ->> 0) ? 'y'"),  # arguments: the arrows' lambda-proof parentheses
    ("(j || '{}') @> j", "(j || '{}') @> j"),
    ("j @? '$.a[*] ? (@ > 1)'", "j @? '$.a[*] ? (@ > 1)'"),
    ("j @@ '$.a == 1'", "j @@ '$.a == 1'"),
    ("j ? s", "j OPERATOR(?) s"),  # the one spelling in which a non-literal key reads back as the operator
    ("ARRAY(SELECT 1)", "ARRAY(SELECT 1)"),
]


@pytest.mark.parametrize("written,printed", EXPRESSIONS)
def test_expression_prints_as_written_and_reads_back_the_same(written, printed):
    written = written.replace("j ? s", "j OPERATOR(?) s")
    tree = parse_statement(f"SELECT {written} FROM t").ast.expressions[0]
    assert tree.sql() == printed
    assert parse_expression(printed) == tree  # the catalog's stored texts
    assert parse_statement(f"SELECT {printed} FROM t").ast.expressions[0] == tree  # views


_TABLE = """CREATE TABLE t (id INT PRIMARY KEY, j JSONB, a INT[],
    CHECK (j ? 'a' OR j @> '{"ok": true}'), CHECK (a <@ ARRAY[1,2,3]), CHECK (NOT j @? '$.bad ? (@ == 1)'),
    hk BOOL AS (j ?| ARRAY['x','y']) STORED, dj JSONB AS (j #- '{a}') VIRTUAL)"""
_INDEXES = ["CREATE INDEX t_all ON t ((j ?& ARRAY['a','x'])) WHERE a @> ARRAY[1]",
            "CREATE INDEX t_some ON t (hk) WHERE j ? 'x'"]
_VIEW = "CREATE VIEW v AS SELECT id, j ? 'a' AS h, j <@ '{\"a\": 1, \"x\": 2}' AS e FROM t WHERE a <@ ARRAY[1]"
_ROWS = """INSERT INTO t (id, j, a) VALUES (1, '{"a": 1, "x": 2}', ARRAY[1]), (2, '{"ok": true}', ARRAY[2]),
    (3, '{"a": [1], "y": 0}', ARRAY[1, 3])"""
_QUERIES = ["SELECT * FROM t ORDER BY id", "SELECT * FROM v ORDER BY id",
            "SELECT id FROM t WHERE j ?& ARRAY['a','x'] AND a @> ARRAY[1]", "SELECT id FROM t WHERE j ? 'x'"]


def _show(session) -> tuple[str, str]:
    return rows(session, "SHOW CREATE TABLE t")[0][1], rows(session, "SHOW CREATE VIEW v")[0][1]


def test_show_create_prints_operators_and_recreates_the_same_schema(s):  # noqa: F811
    for sql in (_TABLE, *_INDEXES, _VIEW, _ROWS):
        s.execute(sql)
    table, view = _show(s)
    assert "CHECK (j ? 'a' OR j @> '{\"ok\": true}')" in table and "CHECK (a <@ ARRAY[1, 2, 3])" in table
    assert "AS (j ?| ARRAY['x', 'y']) STORED" in table and "AS (j #- '{a}') VIRTUAL" in table
    assert "INDEX t_all ((j ?& ARRAY['a', 'x'])) WHERE a @> ARRAY[1]" in table
    assert "INDEX t_some (hk) WHERE j ? 'x'" in table and "CHECK (NOT j @? '$.bad ? (@ == 1)')" in table
    assert "j ? 'a' AS h" in view and "WHERE a <@ ARRAY[1]" in view and "OPERATOR" not in table + view
    db = Database.open(":memory:")
    again = Session(db, autocommit=True)
    try:
        again.execute(table)
        again.execute(view)
        again.execute(_ROWS)
        assert _show(again) == (table, view)
        for query in _QUERIES:
            assert rows(again, query) == rows(s, query), query
        assert rows(again, "CHECK DATABASE") == []
        with pytest.raises(IntegrityError, match="t_check3"):  # the re-read CHECK still holds
            again.execute("""INSERT INTO t (id, j, a) VALUES (9, '{"a": 1, "bad": [0, 1]}', ARRAY[1])""")
    finally:
        again.close()
        db.close()


def test_printed_partial_and_expression_indexes_are_still_used(s):  # noqa: F811
    for sql in (_TABLE, *_INDEXES, _ROWS):
        s.execute(sql)
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN SELECT id FROM t WHERE j ?& ARRAY['a','x'] AND a @> ARRAY[1]"))
    assert "filter t.sqlkv_idx_expr_1 AND" in plan, plan  # the stored expression matched the query's
    plan = "\n".join(r[0] for r in rows(s, "EXPLAIN SELECT id FROM t WHERE j ? 'x' AND hk = TRUE"))
    assert "t@t_some" in plan, plan
    assert rows(s, "SELECT id FROM t WHERE j ? 'x' AND hk = TRUE") == [(1,)]
