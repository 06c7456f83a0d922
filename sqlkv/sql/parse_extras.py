"""Token-level helpers for syntax sqlglot's default dialect lacks (issue 18 additions).

- ``b'abc'``: CockroachDB's bytes literal, turned into the x'..' marker with its hex digits.
- ``INT4``: sqlglot reads it as INT; in a type position it becomes a marker type name so the
  32-bit width survives (`INT4_MARKER`, restored to ``INT4`` after parsing).
- a binary ``~`` / ``!~``: PostgreSQL's regex match, which the default dialect spells RLIKE.

(``INDEX`` elements inside CREATE TABLE are cut out in parse_edits.py, `inline_index`.)
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

from sqlkv.errors import ProgrammingError
from sqlkv.sql.parse_edits import token_word

INT4_MARKER = "SQLKV_INT4"

_OPERAND_END = {TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER, TokenType.R_PAREN,
                TokenType.NULL, TokenType.TRUE, TokenType.FALSE, TokenType.PLACEHOLDER, TokenType.R_BRACKET}
_NOT_OPERANDS = {"SELECT", "WHERE", "AND", "OR", "NOT", "ON", "WHEN", "THEN", "ELSE", "CASE", "BY", "HAVING",
                 "SET", "VALUES", "RETURNING", "IS", "IN", "LIKE", "BETWEEN", "DISTINCT", "AS", "FROM", "IF"}


def after_operand(toks: list[Token], k: int) -> bool:
    """Whether token k follows an operand (so ``~`` is binary), also through ``!`` of ``!~``."""
    j = k - 1
    if j >= 0 and toks[j].text == "!" and toks[j].end + 1 == toks[k].start:
        j -= 1
    if j < 0:
        return False
    prev = toks[j]
    if prev.token_type in _OPERAND_END:
        return True
    # a keyword used as a column name (`a.key ~ 'x'`) reads as a word that is not an operator
    return prev.text.isidentifier() and token_word(prev) not in _NOT_OPERANDS


def type_position(toks: list[Token], k: int, ddl: bool) -> bool:
    """Whether token k stands where a type name goes: after ``::`` or CAST's ``AS``, or after a
    column name in a column definition (``(a INT4, ...``)."""
    prev = toks[k - 1] if k > 0 else None
    if prev is None:
        return False
    if prev.token_type == TokenType.DCOLON or token_word(prev) == "AS":
        return True
    before = toks[k - 2] if k > 1 else None
    punct = (TokenType.L_PAREN, TokenType.COMMA, TokenType.R_PAREN, TokenType.DCOLON)
    return ddl and before is not None and prev.token_type not in punct and (
        before.token_type in (TokenType.L_PAREN, TokenType.COMMA) or token_word(before) in ("COLUMN", "ADD"))


def bytes_literal(text: str) -> bytes:
    """The bytes of b'...': UTF-8 of the text with \\xHH and \\\\ escapes (CockroachDB's)."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1 : i + 2] in ("x", "X"):
            digits = text[i + 2 : i + 4]
            if len(digits) != 2 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ProgrammingError(f"invalid bytes literal escape: \\x{digits}")
            out.append(int(digits, 16))
            i += 4
        elif ch == "\\" and text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        else:
            out.extend(ch.encode("utf-8"))
            i += 1
    return bytes(out)
