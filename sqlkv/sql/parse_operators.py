"""PostgreSQL's array operators ``@>``, ``<@`` and ``&&`` for sqlglot's default dialect.

sqlglot's default parser knows ``@>`` and ``<@`` (token types AT_GT and LT_AT, parsed into
``exp.ArrayContainsAll`` / ``exp.ArrayContainedBy``) but its default tokenizer reads them as two
tokens (``@`` ``>``), and it has no parser for ``&&`` (token DAMP). `parse_sql` merges the
adjacent pairs into the operator tokens and parses with `SqlkvParser`, which adds ``&&`` as
``exp.ArrayOverlaps``, at the precedence of LIKE and IN. What the operators mean for each type
is the expression compiler's (sqlkv/sql/expr/arrays.py; JSONB hooks in there).
"""

from __future__ import annotations

import threading

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.parser import Parser, binary_range_parser
from sqlglot.tokens import Token, Tokenizer, TokenType

from sqlkv.sql.parse_edits import apply_edits
from sqlkv.sql.parse_jsonb import stored_expression_edits
from sqlkv.sql.parse_plain import plain_select


_IDLE = threading.local()  # each thread's parsers not parsing now


class SqlkvParser(Parser):
    RANGE_PARSERS = {**Parser.RANGE_PARSERS, TokenType.DAMP: binary_range_parser(exp.ArrayOverlaps)}


_PAIRS = {
    (TokenType.PARAMETER, "@", TokenType.GT): (TokenType.AT_GT, "@>"),
    (TokenType.LT, "<", TokenType.PARAMETER): (TokenType.LT_AT, "<@"),
}


def merge_operator_tokens(tokens: list[Token]) -> list[Token]:
    """``@`` ``>`` -> ``@>`` and ``<`` ``@`` -> ``<@`` where the two are adjacent in the text."""
    if TokenType.PARAMETER not in {tok.token_type for tok in tokens}:  # no `@`: nothing to merge
        return tokens
    out: list[Token] = []
    for tok in tokens:
        prev = out[-1] if out else None
        if prev is not None and prev.end + 1 == tok.start:
            merged = _PAIRS.get((prev.token_type, prev.text, tok.token_type))
            if merged is not None and (tok.token_type != TokenType.PARAMETER or tok.text == "@"):
                out[-1] = Token(merged[0], merged[1], prev.line, tok.col, prev.start, tok.end, prev.comments)
                continue
        out.append(tok)
    return out


def parse_sql(sql: str, tokens: list[Token] | None = None,
              made: list[exp.Expression] | None = None) -> list[exp.Expression | None]:
    """`sqlglot.parse` with the array operators (raises sqlglot's ParseError/TokenError);
    ``tokens``: the tokens of ``sql`` when they are made already; ``made``: receives the nodes
    of a plain SELECT's tree (`plain_select`), left empty for sqlglot's."""
    tokens = merge_operator_tokens(Tokenizer().tokenize(sql) if tokens is None else tokens)
    plain = plain_select(tokens, made=made)  # the common SELECT, without sqlglot's descent (parse_plain.py)
    if plain is not None:
        return [plain]
    # A parser resets itself at each parse: one kept per thread saves making it (and its
    # dialect) for every statement; a parse inside a parse takes a fresh one.
    idle = _IDLE.__dict__.setdefault("parsers", [])
    parser = idle.pop() if idle else SqlkvParser()
    try:
        return parser.parse(tokens, sql)
    finally:
        idle.append(parser)


def parse_expression(sql: str) -> exp.Expression:
    """`sqlglot.parse_one` with the array and JSONB operators: for the expression texts the catalog
    stores (CHECK, DEFAULT, generated columns, partial-index predicates), which sqlglot prints back
    with ``@>``/``<@``/``&&``/``?``... (parse_jsonb.py); they parse into the same tree as the
    statement they came from."""
    edits = stored_expression_edits(Tokenizer().tokenize(sql))
    trees = parse_sql(apply_edits(sql, edits) if edits else sql)
    if len(trees) != 1 or trees[0] is None:
        raise ParseError(f"expected one expression: {sql[:80]}")
    return trees[0]
