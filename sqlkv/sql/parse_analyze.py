"""``ANALYZE [table]`` (also spelled ANALYSE, as PostgreSQL accepts): the statement's target.

PostgreSQL's and CockroachDB's form: one optional table name, qualified or quoted. Options
(``VERBOSE``, a column list) are refused rather than ignored.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

from sqlkv.errors import SqlSyntaxError
from sqlkv.sql.parse_edits import token_ident


def analyze_target(toks: list[Token]) -> str | None:
    """The table ``ANALYZE`` names (None: every table), from the statement's tokens."""
    rest = toks[1:]
    if not rest:
        return None
    names = rest[0::2]
    dots = rest[1::2]
    if len(rest) % 2 == 0 or len(names) > 2 or any(t.token_type != TokenType.DOT for t in dots) \
            or any(t.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) and not t.text.isidentifier()
                   for t in names):
        shown = " ".join(t.text for t in rest)
        raise SqlSyntaxError(f"syntax error: ANALYZE takes at most one table name, got {shown} "
                             "(options and column lists are not supported)")
    return ".".join(token_ident(t) for t in names)
