"""A statement's normalized text: the key of its ``sqlkv_internal.statement_stats`` entry.

``SELECT * FROM users WHERE id = 7 AND name IN ('a', 'b')`` normalizes to
``SELECT * FROM users WHERE id = ? AND name IN (?, ...)``: literals become ``?`` (a list of
them, ``?, ...``), whitespace collapses, a trailing ``;`` goes. `parse_statement` computes it
from the tokens it makes anyway (`normalized_from_tokens`), so a new SQL text is tokenized
once, not once more for its statistics; `normalize` tokenizes texts that were not parsed.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot.tokens import Token, Tokenizer, TokenType

_LITERALS = {TokenType.NUMBER, TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.BIT_STRING,
             TokenType.HEX_STRING, TokenType.BYTE_STRING}
_LIST_OF_MARKS = re.compile(r"-?\?(?:\s*,\s*-?\?)+")


def normalize(sql: str) -> str:
    """``sql`` with its literals replaced by ``?`` and whitespace collapsed."""
    try:
        tokens = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - text that does not tokenize ran (and failed) anyway
        return " ".join(sql.split())
    return normalized_from_tokens(sql, tokens)


def normalized_from_tokens(sql: str, tokens: list[Token]) -> str:
    """`normalize` of ``sql``, given sqlglot's (default dialect's) tokens of it."""
    parts: list[str] = []
    pos = 0
    for k, tok in enumerate(tokens):
        if tok.token_type in _LITERALS:
            if tok.token_type == TokenType.STRING and tok.end - tok.start + 1 <= len(tok.text):
                # longer than its place in the text: the rest of a command the tokenizer kept
                # as one string (EXPLAIN ..., SHOW ...), normalized as a statement of its own
                cut = tokens[k - 1].end + 1 if k else 0
                parts.append(sql[pos:cut] + " " + normalize(sql[cut:]))
                pos = len(sql)
                break
            parts.append(sql[pos:_literal_start(sql, tok)])
            parts.append("?")
            pos = tok.end + 1
    parts.append(sql[pos:])
    text = " ".join("".join(parts).split()).rstrip(";").rstrip()
    return _LIST_OF_MARKS.sub("?, ...", text)


def _literal_start(sql: str, tok: Any) -> int:
    """Where a literal begins in ``sql``, with a one-letter prefix (``x'ab'``, ``E'q'``)."""
    start = tok.start
    if tok.token_type != TokenType.NUMBER and start > 0 and sql[start - 1].isalpha() \
            and (start == 1 or not (sql[start - 2].isalnum() or sql[start - 2] == "_")):
        start -= 1
    return start
