"""`numbered_tokens` gives exactly the tokens the tokenizer makes of the edited text, and the
statements parse the same through it as through a second tokenize."""

from __future__ import annotations

import pytest
from sqlglot.tokens import Tokenizer

from sqlkv.errors import ProgrammingError
from sqlkv.sql import parse as parse_module
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.parse_edits import Edit, apply_edits
from sqlkv.sql.parse_params import numbered_tokens

STATEMENTS = [
    "SELECT id, customer_id, sku FROM orders WHERE id = ?",
    "UPDATE orders SET quantity = quantity + 1, amount = ? WHERE id = ?",
    "SELECT a FROM t WHERE id IN (?, ?, ?) AND b BETWEEN ? AND ? -- trailing '?'\n",
    "SELECT a,\n  b\nFROM t\nWHERE a = ? AND\n b = 'it''s ?' AND c = ?\n  ORDER BY a LIMIT ?",
    "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, /* a comment */ ?, ?)",
    "SELECT ? + 1, lower(?) AS x, CAST(? AS TEXT) FROM t WHERE x > ? OFFSET ?",
    "SELECT * FROM t WHERE j ? 'k' AND id = ?",  # the JSONB operator: another edit
    "SELECT ?::INT, a[?:?] FROM t",
    "SELECT ?1, ?abc FROM t",
    "SELECT a FROM t WHERE a = ? AND b = ?\nORDER BY BY a",
]


def _edits(sql: str) -> list[Edit]:
    """The ``?`` -> ``:__pN`` edits parse.py makes (plain placeholders only)."""
    toks = Tokenizer().tokenize(sql)
    out, n = [], 0
    for tok in toks:
        if tok.token_type.name == "PLACEHOLDER" and tok.text == "?":
            out.append(Edit(tok.start, tok.start + 1, f":__p{n}"))
            n += 1
    return out


def _shape(tokens):
    return [(t.token_type, t.text, t.line, t.col, t.start, t.end, t.comments) for t in tokens]


@pytest.mark.parametrize("sql", STATEMENTS)
def test_numbered_tokens_are_the_tokenizers(sql: str) -> None:
    edits = _edits(sql)
    made = numbered_tokens(Tokenizer().tokenize(sql), edits)
    # made unless a comment sits on a '?' or a token is glued to one
    assert (made is None) == ("'?'" in sql or "?1" in sql or "?:" in sql)
    if made is not None:
        assert _shape(made) == _shape(Tokenizer().tokenize(apply_edits(sql, edits)))


def test_other_edits_are_refused() -> None:
    toks = Tokenizer().tokenize("SELECT ? FROM t")
    assert numbered_tokens(toks, [Edit(7, 8, " :__p0")]) is None  # the spaced form
    assert numbered_tokens(toks, [Edit(0, 6, "SELECT DISTINCT")]) is None
    assert numbered_tokens(toks, [Edit(9, 10, ":__p0")]) is None  # not on a '?' token


@pytest.mark.parametrize("sql", STATEMENTS)
def test_statements_parse_as_with_a_second_tokenize(sql: str, monkeypatch) -> None:
    def parsed(text):
        try:
            stmt = parse_statement.__wrapped__(text)
        except ProgrammingError as exc:
            return type(exc), str(exc)
        nodes = list(stmt.ast.walk())
        return stmt.kind, stmt.param_count, stmt.ast.sql(), [n.meta for n in nodes]

    fast = parsed(sql)
    monkeypatch.setattr(parse_module, "numbered_tokens", lambda toks, edits: None)
    assert parsed(sql) == fast


def test_a_syntax_error_after_a_parameter_points_at_the_users_text() -> None:
    with pytest.raises(ProgrammingError, match='line 2, column 13 near "a"'):  # the second BY's operand
        parse_statement.__wrapped__("SELECT a FROM t WHERE a = ? AND b = ?\nORDER BY BY a")
