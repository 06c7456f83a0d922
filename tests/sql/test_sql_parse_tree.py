"""The parser's one walk of sqlglot's tree (`nodes_of_type`) and the planner's copy of it
(`copy_tree`), against what sqlglot's own ``find_all`` and ``copy()`` give."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sqlkv.sql.parse import parse_statement
from sqlkv.sql.parse_tree import copy_tree, nodes_of_type

STATEMENTS = [
    "SELECT id, sku, amount FROM orders ORDER BY sku DESC LIMIT 10",
    "UPDATE orders SET quantity = quantity + 1, amount = ? WHERE id = ?",
    "SELECT a, count(*) /* why */ FROM t JOIN u ON t.x = u.y WHERE t.b IN (1, 2, 'x') "
    "AND CAST(u.z AS INT) > ? GROUP BY a HAVING count(*) > 1 ORDER BY 2 DESC",
    "INSERT INTO t (a, b) VALUES (1, x'ab'), (?, b'q') ON CONFLICT (a) DO UPDATE SET b = excluded.b",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
    "SELECT to_char(now(), 'YYYY'), lower(name) FROM t WHERE doc -> 'a' ->> 'b' = ?",
    "SELECT unnest(ARRAY[1, 2, 3]) AS v FROM t",
    "SELECT row_number() OVER (PARTITION BY a ORDER BY b) FROM t",
    "CREATE TABLE t (id INT4 PRIMARY KEY, v TEXT NOT NULL DEFAULT 'x', CHECK (length(v) < 9))",
    "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE u.v BETWEEN ? AND ?) RETURNING id",
]


def _pairs(a: exp.Expression, b: exp.Expression):
    return list(zip(a.walk(), b.walk(), strict=True))


def _children(parent: exp.Expression, key: str) -> list[exp.Expression]:
    value = parent.args[key]
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("sql", STATEMENTS)
def test_copy_tree_is_sqlglots_copy(sql: str) -> None:
    ast = parse_statement(sql).ast
    ours, theirs = copy_tree(ast), ast.copy()
    assert ours == theirs and ours.sql() == theirs.sql() == ast.sql()
    for mine, orig in _pairs(ours, ast):
        assert type(mine) is type(orig) and mine is not orig
        assert mine.meta == orig.meta and (mine.meta is not orig.meta or not orig.meta)
        assert mine.comments == orig.comments
        assert (mine.arg_key, mine.index) == (orig.arg_key, orig.index)
        if orig.parent is not None:
            assert type(mine.parent) is type(orig.parent) and mine.parent is not orig.parent
            assert any(c is mine for c in _children(mine.parent, mine.arg_key))
    hash(ast)  # caches hashes in the tree: a copy keeps a leaf's, as sqlglot's does
    hashed, theirs = copy_tree(ast), ast.copy()
    assert any(n._hash is not None for n in hashed.walk())
    for mine, theirs_node in _pairs(hashed, theirs):
        assert mine._hash == theirs_node._hash
    first = next(iter(ours.walk()))
    first.meta["changed"] = 1  # the copy is the planner's to change: the cached tree is not
    assert "changed" not in ast.meta


@pytest.mark.parametrize("sql", STATEMENTS)
def test_one_walk_finds_what_find_all_finds(sql: str) -> None:
    ast = parse_statement(sql).ast
    nodes = list(ast.walk())
    for kind in (exp.Placeholder, exp.Anonymous, exp.DataType, exp.Column, exp.Literal, exp.With):
        assert nodes_of_type(nodes, kind) == list(ast.find_all(kind))
