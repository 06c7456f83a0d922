"""The quick tokenizer (sqlkv/sql/parse_scan.py) against sqlglot's, its oracle: for every text it
tokenizes, the tokens must be sqlglot's exactly (type, text, line, column, start, end)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlkv.sql.parse_errors import SQLGLOT_DIALECT
from sqlkv.sql.parse_scan import quick_tokens

TESTS = Path(__file__).resolve().parents[1]
SLT = TESTS.parents[1] / "shared" / "sqllogictest"
_SQL_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|WITH|UPSERT|EXPLAIN|VALUES|DROP|ALTER|SHOW)\b",
                        re.IGNORECASE)


def _fields(tokens) -> list[tuple]:
    return [(t.token_type, t.text, t.line, t.col, t.start, t.end, t.comments) for t in tokens]


def _sqlglot(text: str) -> list[tuple] | None:
    try:
        return _fields(SQLGLOT_DIALECT.tokenize(text))
    except Exception:  # noqa: BLE001 - sqlglot refuses it: the quick scanner must too
        return None


def _check(text: str) -> bool:
    """Whether the quick scanner took ``text`` (asserting its tokens are sqlglot's)."""
    quick = quick_tokens(text)
    if quick is None:
        return False
    assert _fields(quick) == _sqlglot(text), text
    return True


def _test_texts() -> list[str]:
    """SQL string literals of the test suite (statements, fragments and all)."""
    out: set[str] = set()
    for path in sorted(TESTS.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL_START.match(node.value):
                out.add(node.value)
    return sorted(out)


def _slt_texts(limit: int = 4000) -> list[str]:
    """Statements and queries of the sqllogictest files beside the checkout, when present."""
    out: list[str] = []
    for path in sorted(SLT.rglob("*.test"))[:12] if SLT.exists() else []:
        lines: list[str] = []
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith(("statement", "query")):
                lines = []
                continue
            if line.strip() == "----" or not line.strip():
                if lines:
                    out.append("\n".join(lines))
                    lines = []
                continue
            lines.append(line)
        if len(out) >= limit:
            break
    return out[:limit]


def test_workload_texts_are_taken() -> None:
    for text in ["SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10",
                 "SELECT id, sku, amount FROM orders ORDER BY sku DESC LIMIT 10",
                 "SELECT id, customer_id, quantity FROM orders WHERE sku = ?",
                 "SELECT id, sku, amount FROM orders WHERE id BETWEEN ? AND ?+99",
                 "select a\n  from t\twhere b >= 1.50 and c <> 'x y' group  by a;",
                 "UPDATE orders SET quantity = quantity + 1, amount = ? WHERE id = ?"]:
        assert _check(text), text


@pytest.mark.parametrize("text", [
    "SELECT a -- comment", "SELECT /* c */ a", "SELECT \"Quoted\" FROM t", "SELECT 'it''s'",
    "SELECT 'a\\b'", "SELECT 1e5", "SELECT 12abc", "SELECT x'0a'", "SELECT n'x'", "SELECT a::INT",
    "SELECT $1", "SELECT a FROM t ORDER\nBY a", "CREATE TABLE t (a INT PRIMARY KEY)", "SHOW TABLES",
    "SELECT 1.", "SELECT 1.5.2", "SELECT 'multi\nline'", "SELECT é FROM t", "SELECT a\r\nFROM t",
    "SELECT a FROM t GROUP BYx", "SELECT @x",
])
def test_left_to_sqlglot(text: str) -> None:
    """What the scanner does not make exactly as sqlglot does is left to sqlglot."""
    assert quick_tokens(text) is None


def test_the_test_suites_texts() -> None:
    texts = _test_texts()
    taken = sum(_check(text) for text in texts)
    assert len(texts) > 1000 and taken > len(texts) // 3  # it takes the common statements


def test_sqllogictest_texts() -> None:
    texts = _slt_texts()
    if not texts:
        pytest.skip("no sqllogictest corpus beside the checkout")
    assert sum(_check(text) for text in texts) > len(texts) // 3


_PIECES = ["SELECT", "select", "FROM", "t", "a1", "_x", "ORDER", "GROUP", "BY", "by", "DESC", "LIMIT", "1",
           "12", "3.25", "'s'", "''", "'", "(", ")", ",", ".", "*", "+", "-", "/", "%", "=", "<", ">", ";",
           "?", "|", "!", "<=", ">=", "<>", "!=", "||", "->", "--", "/*", "*/", ":", "::", "e5", "N", "n",
           "x", "USER", "SHOW", "é", "@", "#", "$"]


@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(["", " ", "  ", "\n", "\t", " \n "])),
                max_size=14))
def test_random_texts(parts: list[tuple[str, str]]) -> None:
    _check("".join(piece + space for piece, space in parts))
