"""The planner's shortcuts give what the long way gives.

- The facts of a plain SELECT (`names.plain_query_facts`, read from the parse's list of the
  shared tree's nodes) are those of the walk of its tree (`names.query_facts`): the column
  names it mentions and their qualifiers, None when a ``*`` reads every column, no call and no
  window. Checked on hand-written statements and on the sqllogictest corpus's queries.
- `column_parts` reads a column's name and qualifier as sqlglot's properties do.
- ``LIMIT 10`` planned as its value answers as ``LIMIT (10)``, which is compiled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlglot import exp

import sqlkv
from sqlkv.sql.expr.env import column_parts
from sqlkv.sql import parse as parse_module
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.plan.names import plain_query_facts, query_facts
from sqlkv.sql.parse_tree import walk_nodes

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "sqllogictest"

STATEMENTS = [
    "SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10",
    "SELECT id, sku, amount AS a FROM orders ORDER BY sku DESC LIMIT 10",
    "SELECT * FROM orders WHERE id = ?",
    "SELECT o.* FROM orders o WHERE o.id = 3",
    "SELECT O.Id, o.SKU AS s FROM Orders O WHERE o.customer_id = 3 AND NOT (O.quantity > 5) ORDER BY 1",
    "SELECT id, -amount, amount * 2 - 1 FROM orders WHERE status IS NULL OR amount < 20 ORDER BY id LIMIT 5",
    "SELECT a FROM t WHERE a BETWEEN b AND c + 1 ORDER BY a, b DESC",
    "SELECT t.a, a FROM t WHERE t.a = 'x'",
]


def _slt_queries(rel: str, most: int = 400) -> list[str]:
    """The SQL of the first ``most`` query records of a sqllogictest file."""
    out: list[str] = []
    lines = (CORPUS / rel).read_text().splitlines()
    i = 0
    while i < len(lines) and len(out) < most:
        if lines[i].startswith("query "):
            j = i + 1
            while j < len(lines) and lines[j] != "----" and lines[j].strip():
                j += 1
            out.append("\n".join(lines[i + 1:j]))
            i = j
        i += 1
    return out


def _check(sql: str) -> bool:
    """Compares the two facts of ``sql`` when it plans from its shared tree; whether it does."""
    stmt = parse_statement(sql)
    if not stmt.shared_tree:
        assert stmt.nodes is None
        return False
    # every node of the tree once (a plain parse lists them as it built them, not in walk order)
    assert sorted(map(id, stmt.nodes)) == sorted(map(id, walk_nodes(stmt.ast))), sql
    for node in walk_nodes(stmt.ast):
        if isinstance(node, exp.Column):
            assert column_parts(node) == (node.name, node.table), sql
    assert plain_query_facts(stmt.nodes) == query_facts(stmt.ast), sql
    return True


def test_plain_facts_of_hand_written_statements() -> None:
    assert all(_check(sql) for sql in STATEMENTS)
    assert query_facts(parse_statement(STATEMENTS[2]).ast).names is None  # SELECT *
    assert plain_query_facts(parse_statement(STATEMENTS[4]).nodes).names == {
        "id": {"o"}, "sku": {"o"}, "customer_id": {"o"}, "quantity": {"o"}}


def test_statements_with_calls_joins_or_subqueries_keep_the_walk() -> None:
    for sql in ("SELECT count(*) FROM t", "SELECT a FROM t JOIN u USING (a)",
                "SELECT a FROM t WHERE a IN (SELECT b FROM u)", "SELECT abs(a) FROM t"):
        assert not _check(sql)


@pytest.mark.parametrize("rel", ["select1.test", "select3.test", "index/orderby/10/slt_good_0.test",
                                 "index/between/1/slt_good_0.test", "random/select/slt_good_0.test"])
def test_plain_facts_of_sqllogictest_queries(rel: str) -> None:
    if not (CORPUS / rel).exists():
        pytest.skip(f"sqllogictest corpus not found at {CORPUS}")
    checked = 0
    for sql in _slt_queries(rel):
        try:
            checked += _check(sql)
        except Exception as exc:  # noqa: BLE001 - a text sqlkv refuses has no facts to compare
            if type(exc).__module__.startswith("sqlkv"):
                continue
            raise
    assert checked >= 50  # the files hold 65 to 340 plain ones among their first 400


@pytest.mark.parametrize("count", ["0", "3", "007", "10.0", "9223372036854775807", "9223372036854775808",
                                   "99999999999999999999999"])
@pytest.mark.parametrize("offset", ["", " OFFSET 2"])
def test_a_written_limit_answers_as_a_computed_one(tmp_path, count: str, offset: str) -> None:
    conn = sqlkv.connect(str(tmp_path / "db"))
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    cur.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i % 3}") for i in range(12)])
    answers = []
    for limit in (count, f"({count})"):
        for sql in (f"SELECT a, b FROM t ORDER BY a LIMIT {limit}{offset}",
                    f"SELECT a, b FROM t WHERE b = 'v1' LIMIT {limit}{offset}"):
            try:
                cur.execute(sql)
                answers.append(("rows", cur.fetchall()))
            except sqlkv.Error as exc:
                answers.append((type(exc).__name__, str(exc)))
    assert answers[:2] == answers[2:]
    assert answers[0][0] == "rows" or answers[0][0] == "DataError"
    conn.close()


# -- a plain SELECT's `?` read straight from its tokens (parse_plain's numbering) --------------

PARAM_STATEMENTS = [
    "SELECT id, customer_id, sku FROM orders WHERE id = ?",
    "SELECT id, sku AS s FROM orders WHERE id = ? AND sku > ? ORDER BY sku DESC LIMIT ?",
    "SELECT a FROM t WHERE a BETWEEN ? AND ? + 9 OR b IS NULL ORDER BY 1 LIMIT ? OFFSET ?",
    "SELECT a,\n  b\nFROM t\nWHERE a = ? AND\n b = 'it''s ?' AND c = ?\n  ORDER BY a LIMIT ?",
    "SELECT a FROM t WHERE a = ?1",  # glued to what follows: the edited text's tokens differ
    "SELECT a FROM t WHERE a = ?abc",
    "SELECT a FROM t WHERE a = ? -- a comment\n",
    "SELECT a FROM t WHERE a = ?::INT",
    "SELECT a FROM t WHERE a = ? AND b = ?\nORDER BY BY a",  # a syntax error, located the same
    "SELECT a FROM t WHERE j ? 'k' AND id = ?",  # the JSONB operator
    "SELECT a FROM t WHERE a = :name",
]


def _parsed(text: str) -> tuple:
    """Everything the parse hands on: kind, parameters, and every node's class, arguments,
    position meta and comments (or the error)."""
    try:
        stmt = parse_statement.__wrapped__(text)
    except sqlkv.Error as exc:
        return type(exc), str(exc)
    # positions apart: read from the user's tokens they are the user's text's, not the edited one's
    shape = [(type(n), repr(n.args.keys()), {k: v for k, v in n.meta.items() if k not in _PLACES}, n.comments)
             for n in walk_nodes(stmt.ast)]
    return stmt.kind, stmt.param_count, stmt.named_params, stmt.shared_tree, stmt.ast.sql(), shape


_PLACES = ("line", "col", "start", "end")


def test_names_after_a_parameter_are_placed_in_the_users_text() -> None:
    sql = "SELECT id, sku AS s FROM orders WHERE id = ? AND sku > ? ORDER BY sku DESC LIMIT ?"
    stmt = parse_statement.__wrapped__(sql)
    placed = [n for n in walk_nodes(stmt.ast) if isinstance(n, exp.Identifier)]
    assert len(placed) == 7  # id, sku, s, orders, id, sku, sku
    for ident in placed:
        assert sql[ident.meta["start"]:ident.meta["end"] + 1] == ident.this
        assert ident.meta["col"] == ident.meta["end"] + 1 and ident.meta["line"] == 1


def _numbered_corpus() -> list[str]:
    """The sqllogictest queries with every integer literal made a `?`."""
    out = list(PARAM_STATEMENTS)
    for rel in ["select1.test", "index/between/1/slt_good_0.test", "random/select/slt_good_0.test"]:
        if (CORPUS / rel).exists():
            out += [re.sub(r"(?<![\w.])\d+(?![\w.])", "?", sql) for sql in _slt_queries(rel, 200)]
    return out


def test_parameters_read_from_the_tokens_parse_as_the_edited_text(monkeypatch) -> None:
    corpus = _numbered_corpus()
    direct = [_parsed(sql) for sql in corpus]
    assert sum(1 for d in direct if len(d) > 2 and d[1] and d[3]) >= 100  # plain, with parameters: 165
    monkeypatch.setattr(parse_module, "plain_select", lambda toks, numbering=None, made=None: None)
    assert [_parsed(sql) for sql in corpus] == direct
