"""Planning leaves the cached parse tree as it was: a plain SELECT is planned from the shared
tree itself (``ParsedStatement.shared_tree``, no copy), every other statement from a copy. Each
test plans through a checker that records the tree's every node, parent link, argument, meta
and comment before planning and compares them after."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlglot import exp

import sqlkv
import sqlkv.sql.plan.statement as plan_statement_module
import sqlkv.sql.plancache as plancache_module
from sqlkv.cli.slt import run_file
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.parse_tree import walk_nodes

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "sqllogictest"


def _value(value: object) -> object:
    return ("node", id(value)) if isinstance(value, exp.Expression) else repr(value)


def fingerprint(root: exp.Expression) -> list[tuple]:
    """Everything planning could change in ``root``'s tree (an empty meta dict made by reading
    ``node.meta`` counts as no meta)."""
    out = []
    for node in walk_nodes(root):
        args = tuple((key, tuple(_value(v) for v in value) if isinstance(value, list) else _value(value))
                     for key, value in node.args.items())
        parent = id(node.parent) if node.parent is not None else None
        out.append((id(node), type(node), parent, node.arg_key, node.index, args, repr(node._meta or {}),
                    repr(node.comments), repr(node._type)))
    return out


class Checker:
    """Wraps `plan_statement`: counts shared and copied plans, fails on a changed tree."""

    def __init__(self) -> None:
        self.shared = self.copied = 0
        self.plan = plancache_module.plan_statement

    def __call__(self, stmt, catalog, env):
        before = fingerprint(stmt.ast)
        try:
            return self.plan(stmt, catalog, env)
        finally:
            assert fingerprint(stmt.ast) == before, f"planning changed the parsed tree of {stmt.sql!r}"
            if stmt.shared_tree:
                self.shared += 1
            else:
                self.copied += 1


@pytest.fixture
def checker(monkeypatch) -> Checker:
    check = Checker()
    monkeypatch.setattr(plancache_module, "plan_statement", check)
    return check


SCHEMA = [
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, sku TEXT NOT NULL, "
    "quantity INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT)",
    "CREATE INDEX orders_sku ON orders (sku)",
    "CREATE INDEX orders_customer ON orders (customer_id)",
]
ROWS = [(i, i % 7, f"sku-{(i * 7919) % 1000:04d}", i % 13, (i * 37) % 500, [None, "new", "paid"][i % 3])
        for i in range(1, 301)]

QUERIES = [
    ("SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10", ()),
    ("SELECT id, sku, amount FROM orders ORDER BY sku DESC LIMIT 10", ()),
    ("SELECT * FROM orders WHERE id = ?", (17,)),
    ("SELECT id, customer_id, quantity FROM orders WHERE sku = ?", ("sku-0919",)),
    ("SELECT id, sku, amount FROM orders WHERE id BETWEEN ? AND ? + 9 ORDER BY id", (40, 40)),
    ("SELECT o.id, o.amount AS a FROM orders o WHERE o.customer_id = 3 AND NOT (o.quantity > 5) ORDER BY 1", ()),
    ("SELECT id, -amount, amount * 2 - 1 FROM orders WHERE status IS NULL OR amount < 20 ORDER BY id LIMIT 5 OFFSET 2",
     ()),
    ("SELECT id FROM orders WHERE (customer_id = 1 OR customer_id = 2) AND status <> 'new' ORDER BY amount DESC, id",
     ()),
    ("SELECT sku, amount FROM orders WHERE sku >= 'sku-05' AND sku < 'sku-06' ORDER BY sku", ()),
    # not plain: planned from a copy, checked all the same
    ("SELECT status, count(*), sum(amount) FROM orders GROUP BY status ORDER BY status", ()),
    ("SELECT id FROM orders WHERE id IN (SELECT id FROM orders WHERE quantity = 3) ORDER BY id", ()),
    ("SELECT a.id, b.id FROM orders a JOIN orders b ON a.id = b.customer_id WHERE a.id < 3 ORDER BY 1, 2", ()),
    ("SELECT id FROM orders WHERE amount / 2 > 240 UNION SELECT 0 ORDER BY 1", ()),
]


@pytest.fixture
def databases(tmp_path):
    conn = sqlkv.connect(str(tmp_path / "db"))
    oracle = sqlite3.connect(":memory:")
    for ddl in SCHEMA:
        conn.cursor().execute(ddl)
        oracle.execute(ddl)
    conn.cursor().executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    oracle.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ROWS)
    conn.commit()
    yield conn, oracle
    conn.close()


def test_plain_selects_plan_from_the_shared_tree(checker, databases, monkeypatch) -> None:
    conn, oracle = databases
    checker.shared = checker.copied = 0  # the load's INSERT was planned too
    copies = []
    monkeypatch.setattr(plan_statement_module, "copy_tree", lambda ast: copies.append(ast) or ast.copy())
    for sql, params in QUERIES:
        cur = conn.cursor()
        for _ in range(2):  # a new text, then again from the plan cache
            cur.execute(sql, params)
            assert cur.fetchall() == oracle.execute(sql, params).fetchall(), sql
    plain = [sql for sql, _ in QUERIES if parse_statement(sql).shared_tree]
    assert len(plain) == 9 and checker.shared == 9 and checker.copied >= len(QUERIES) - 9
    assert len(copies) == checker.copied  # no copy for a shared plan


def test_shared_plans_again_after_a_schema_change(checker, databases) -> None:
    conn, oracle = databases
    sql = "SELECT id, sku FROM orders WHERE customer_id = 2 ORDER BY sku LIMIT 3"
    cur = conn.cursor()
    cur.execute(sql)
    first = cur.fetchall()
    cur.execute("DROP INDEX orders_sku")
    conn.commit()
    cur.execute(sql)  # planned again, from the same shared tree, without the index
    assert cur.fetchall() == first == oracle.execute(sql).fetchall()
    assert checker.shared == 2  # the DDL is not planned


def test_explain_of_a_plain_select_leaves_the_tree(checker, databases) -> None:
    conn, _ = databases
    cur = conn.cursor()
    cur.execute("EXPLAIN SELECT id FROM orders WHERE sku = 'sku-0001' ORDER BY id")
    text = "\n".join(row[0] for row in cur.fetchall())
    assert "orders_sku" in text and checker.shared == 1


@pytest.mark.parametrize("rel", ["select1.test", "select3.test", "index/orderby/10/slt_good_0.test",
                                 "index/between/1/slt_good_0.test", "random/select/slt_good_0.test"])
def test_sqllogictest_sample_leaves_trees(checker, rel) -> None:
    if not (CORPUS / rel).exists():
        pytest.skip(f"sqllogictest corpus not found at {CORPUS}")
    result = run_file(str(CORPUS / rel), max_records=400)
    assert result.passed > 0 and checker.shared + checker.copied > 100
