"""The words of ``ROLLBACK [TRANSACTION | WORK] [TO [SAVEPOINT] name]``."""

from __future__ import annotations

from sqlglot.tokens import Token

from sqlkv.errors import SqlSyntaxError
from sqlkv.sql.parse_edits import token_ident, token_word


def rollback_savepoint(toks: list[Token]) -> str | None:
    """The savepoint a ROLLBACK statement's tokens roll back to; None: the whole transaction."""
    rest = toks[1:]
    if rest and token_word(rest[0]) in ("TRANSACTION", "WORK"):
        rest = rest[1:]
    if not rest:
        return None
    if token_word(rest[0]) != "TO":
        raise SqlSyntaxError("syntax error: expected ROLLBACK [TO [SAVEPOINT] name]")
    rest = rest[1:]
    if rest and token_word(rest[0]) == "SAVEPOINT":
        rest = rest[1:]
    if len(rest) != 1:
        raise SqlSyntaxError("syntax error: expected ROLLBACK TO [SAVEPOINT] name")
    return token_ident(rest[0])
