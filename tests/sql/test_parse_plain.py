"""The plain-SELECT parser (sqlkv/sql/parse_plain.py) against sqlglot's parser, its oracle: for
every statement it builds a tree for, the tree must be sqlglot's node for node (class, argument
names in order, values, position meta, comments, links to the parent); for every statement
sqlglot refuses, it must refuse too."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

import sqlkv.sql.parse as parse_module
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.parse_errors import SQLGLOT_DIALECT
from sqlkv.sql.parse_operators import SqlkvParser
from sqlkv.sql.parse_plain import plain_select
from sqlkv.sql.parse_tree import walk_nodes
from tests.sql.test_parse_scan import _slt_texts, _test_texts


def _numbered(text: str) -> str:
    """``text`` with each ``?`` numbered as parse.py numbers parameters (``:__pN``)."""
    count = iter(range(10_000))
    return re.sub(r"\?", lambda _: f":__p{next(count)}", text)


def _atoms(value: object) -> object:
    if isinstance(value, exp.Expression):
        return ("node", type(value))
    if isinstance(value, list):
        return [_atoms(v) for v in value]
    return (type(value), value)


def assert_same_tree(ours: exp.Expression, theirs: exp.Expression) -> None:
    mine, other = walk_nodes(ours), walk_nodes(theirs)
    assert len(mine) == len(other)
    for a, b in zip(mine, other):
        assert type(a) is type(b)
        assert list(a.args) == list(b.args), type(a)
        assert [_atoms(v) for v in a.args.values()] == [_atoms(v) for v in b.args.values()], type(a)
        assert (a._meta, a.comments, a._type) == (b._meta, b.comments, b._type), type(a)
        assert (a.arg_key, a.index, type(a.parent)) == (b.arg_key, b.index, type(b.parent))
    assert ours.sql() == theirs.sql()


def _check(text: str) -> bool:
    """Whether the plain parser took ``text`` (asserting its tree is sqlglot's)."""
    text = _numbered(text)
    try:
        tokens = SQLGLOT_DIALECT.tokenize(text)
    except Exception:  # noqa: BLE001 - not even tokens: nothing to compare
        return False
    ours = plain_select(tokens)
    try:
        trees = SqlkvParser().parse(tokens, text)
    except Exception:  # noqa: BLE001 - sqlglot refuses it: so must the plain parser
        assert ours is None, text
        return False
    if ours is None:
        return False
    assert len(trees) == 1, text
    assert_same_tree(ours, trees[0])
    return True


WORKLOADS = [
    "SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10",
    "SELECT id, sku, amount FROM orders ORDER BY sku DESC LIMIT 10",
    "SELECT id, customer_id, sku, quantity, amount, status FROM orders WHERE id = ?",
    "SELECT id, customer_id, quantity FROM orders WHERE sku = ?",
    "SELECT o.id AS x, o.sku y, * FROM orders AS o WHERE o.id BETWEEN ? AND 5 AND NOT sku <> 'q' "
    "OR amount >= 1.5 ORDER BY 1 ASC, o.sku DESC, id LIMIT ?",
    "SELECT id, sku, amount FROM orders WHERE id BETWEEN ? AND ?+99",
    "SELECT a FROM t WHERE a * 2 - b + 1 > c - 3 * d AND e IS NULL OR NOT f IS NOT NULL",
]


@pytest.mark.parametrize("text", WORKLOADS)
def test_workload_statements_are_taken(text: str) -> None:
    assert _check(text)


@pytest.mark.parametrize("text", [
    "SELECT DISTINCT a FROM t", "SELECT a + 1 FROM t", "SELECT count(*) FROM t", "SELECT a FROM t JOIN u ON 1 = 1",
    "SELECT a FROM t WHERE (a = 1)", "SELECT a FROM t WHERE a = 1 / 2", "SELECT a FROM t WHERE a = b = c",
    "SELECT a FROM t WHERE a = b IS NULL", "SELECT a FROM t WHERE a IN (1, 2)", "SELECT a FROM t WHERE a IS TRUE",
    "SELECT a FROM t WHERE a + 1 BETWEEN 1 AND 2 = b", "SELECT a * 2 FROM t", "SELECT a FROM t LIMIT 1 OFFSET 2",
    "SELECT a FROM t GROUP BY a", "SELECT a FROM s.t", "SELECT t.* FROM t", "SELECT a FROM t WHERE a = -1",
    "SELECT a /* c */ FROM t", "SELECT a FROM t UNION SELECT b FROM u", "SELECT a FROM t WHERE",
    "SELECT a FROM t ORDER BY a NULLS LAST", "SELECT a FROM t WHERE a = TRUE", "SELECT a FROM t WHERE a = CURRENT_DATE",
    "SELECT a FROM t LIMIT 'x'", "SELECT a FROM t LIMIT b", "SELECT 1", "SELECT a FROM t WHERE a LIKE 'x'",
])
def test_left_to_sqlglot(text: str) -> None:
    assert plain_select(SQLGLOT_DIALECT.tokenize(_numbered(text))) is None


def test_the_test_suites_and_sqllogictest_texts() -> None:
    texts = _test_texts() + _slt_texts()
    taken = sum(_check(text) for text in texts)
    assert taken > 150  # the corpus has plain SELECTs, and every one of them matched


def test_parse_statement_uses_it() -> None:
    stmt = parse_statement("SELECT id, sku AS s FROM orders WHERE id BETWEEN ? AND ? ORDER BY sku DESC LIMIT 3")
    assert stmt.param_count == 2 and stmt.shared_tree
    assert [n.meta.get("param_index") for n in stmt.ast.find_all(exp.Placeholder)] == [0, 1]
    assert stmt.ast.sql() == "SELECT id, sku AS s FROM orders WHERE id BETWEEN ? AND ? ORDER BY sku DESC LIMIT 3"


_POSITIONS = ("line", "col", "start", "end")


def _statement_facts(stmt) -> tuple:
    """What a ParsedStatement tells its users, its tree's nodes and their meta included (but
    positions after a ``?``: the long way places them in the edited text, round eight)."""
    def meta(node: exp.Expression) -> str:
        kept = {k: v for k, v in node.meta.items() if "?" not in stmt.sql or k not in _POSITIONS}
        return repr(kept)

    nodes = sorted((type(n).__name__, meta(n), repr(n.args.get("this")) if type(n) is not exp.Select else "")
                   for n in stmt.nodes or walk_nodes(stmt.ast))
    return (stmt.kind, stmt.param_count, stmt.named_params, stmt.shared_tree, stmt.sequence_calls,
            stmt.normalized, stmt.ast.sql(), nodes, sorted(map(id, stmt.nodes or [])) == sorted(
                map(id, walk_nodes(stmt.ast))) if stmt.nodes is not None else None)


def test_plain_statements_skip_the_later_steps_and_give_the_same_statement(monkeypatch) -> None:
    """`plain_statement` (no refusal, rewrite, label or call search after a plain parse) gives
    the statement the long way gives: the same text parsed through sqlglot_parse (which makes
    the same tree) and every later step."""
    texts = [t for t in WORKLOADS + _test_texts() + _slt_texts() if t.lstrip()[:6].upper() == "SELECT"]
    short = {}
    parse_statement.cache_clear()
    for text in texts:
        try:
            short[text] = _statement_facts(parse_statement(text))
        except Exception:  # noqa: BLE001 - refused either way; the long way is compared below
            short[text] = "error"
    monkeypatch.setattr(parse_module, "plain_statement", None)  # must not be called now
    monkeypatch.setattr(parse_module, "plain_select", lambda *args, **kwargs: None)
    parse_statement.cache_clear()
    taken = 0
    for text in texts:
        try:
            long = _statement_facts(parse_statement(text))
        except Exception:  # noqa: BLE001
            long = "error"
        assert short[text] == long, text
        taken += long != "error" and long[3]
    parse_statement.cache_clear()
    assert taken > 100


_NAMES = ["a", "b", "t.a", "u.b", "*", "1", "2.5", "'s'", "?", "t", "u"]
_WORDS = ["SELECT", "FROM", "WHERE", "ORDER BY", "LIMIT", "AS", "AND", "OR", "NOT", "BETWEEN", "ASC", "DESC", "*",
          ",", "=", "<>", "!=", "<", "<=", ">", ">=", "+", "(", ")", "JOIN", "DISTINCT", "IS", "NULL", ";"]


@given(st.lists(st.sampled_from(_NAMES + _WORDS), max_size=16))
def test_random_statements(words: list[str]) -> None:
    _check(" ".join(["SELECT", *words]))


@given(st.lists(st.sampled_from(["a", "b AS c", "t.d e", "*"]), min_size=1, max_size=3),
       st.sampled_from(["t", "t AS u", "t u"]),
       st.lists(st.tuples(st.sampled_from(["", "NOT "]), st.sampled_from(["a", "t.b", "?", "3", "a * 2 + 1"]),
                          st.sampled_from(["=", "<>", "<", ">=", "BETWEEN", "IS NULL", "IS NOT NULL"]),
                          st.sampled_from(["1", "'x'", "?", "c", "c + 1", "2 * ? - d"]),
                          st.sampled_from([" AND ", " OR "])), max_size=4),
       st.lists(st.tuples(st.sampled_from(["a", "t.b", "2"]), st.sampled_from(["", " ASC", " DESC"])), max_size=3),
       st.sampled_from(["", " LIMIT 10", " LIMIT ?"]))
def test_generated_plain_statements(items, table, conditions, keys, limit) -> None:
    text = f"SELECT {', '.join(items)} FROM {table}"
    if conditions:
        parts = [f"{neg}{left} {op}" + ("" if op.startswith("IS") else f" {right}")
                 + (f" AND {right}" if op == "BETWEEN" else "") + joiner
                 for neg, left, op, right, joiner in conditions]
        text += " WHERE " + "".join(parts)[: -len(conditions[-1][4])]
    if keys:
        text += " ORDER BY " + ", ".join(k + d for k, d in keys)
    assert _check(text + limit), text + limit
