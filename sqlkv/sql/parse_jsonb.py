"""Token edits for PostgreSQL's JSONB operators, which sqlglot's default dialect cannot read (issue 15).

The default dialect tokenizes ``@>`` as ``@`` ``>``, and ``?`` is sqlkv's qmark placeholder. The
rewrite turns each operator into PostgreSQL's own explicit spelling ``OPERATOR(@>)``, which the
default dialect parses into `exp.Operator` at the precedence of LIKE and prints back the same way
(views and CHECK constraints round-trip). `sqlkv.sql.expr.pg_operators` compiles it.

- ``@>``, ``<@``, ``?|``, ``?&``, ``#-``: always operators (``a @> b``, written without a space).
- ``?`` is the key-exists operator only directly after an operand and followed by a string
  literal (``doc ? 'email'``); everywhere else it is a parameter. With a parameter for the key
  write ``jsonb_exists(doc, ?)`` or ``doc OPERATOR(?) ?`` -- a ``?`` inside ``OPERATOR( )`` is
  never a parameter (the way PostgreSQL drivers with ``?`` placeholders escape it).
- ``->``, ``->>``, ``#>``, ``#>>`` become ``OPERATOR(->)`` etc. too: the default dialect would
  read ``doc -> 'a.b'`` as a JSON path of two keys (PostgreSQL: one key ``a.b``) and ``x -> y``
  inside a function call as a lambda. They then share PostgreSQL's precedence for these
  operators: tighter than comparison, left-associative (``doc -> 'a' ->> 'b' = 'x'``).
- ``?::TYPE`` (one token to sqlglot) is a parameter followed by a cast.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_edits import Edit
from sqlkv.sql.parse_extras import after_operand

# (first token text, second token text) -> operator, for operators the tokenizer splits in two
_PAIRS = {("@", ">"): "@>", ("<", "@"): "<@", ("?", "|"): "?|", ("?", "&"): "?&", ("#", "-"): "#-"}


def _adjacent(a: Token, b: Token) -> bool:
    return a.end + 1 == b.start


def jsonb_operator_edit(toks: list[Token], k: int) -> Edit | None:
    """The edit for a JSONB operator starting at token k, if one starts there. (A ``?`` it
    rewrites is no parameter: the caller numbers only the others.)"""
    tok = toks[k]
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    if nxt is not None and _adjacent(tok, nxt) and TokenType.STRING not in (tok.token_type, nxt.token_type):
        op = _PAIRS.get((tok.text, nxt.text))
        if op is not None and not in_operator_call(toks, k):
            return Edit(tok.start, nxt.end + 1, f" OPERATOR({op}) ")
    if tok.token_type == TokenType.PLACEHOLDER and tok.text == "?" and nxt is not None \
            and (nxt.token_type == TokenType.STRING or nxt.text == "?") and after_operand(toks, k):
        return Edit(tok.start, tok.end + 1, " OPERATOR(?) ")
    if tok.token_type in _ARROWS and not in_operator_call(toks, k):
        return Edit(tok.start, tok.end + 1, f" OPERATOR({tok.text}) ")
    return None


_ARROWS = (TokenType.ARROW, TokenType.DARROW, TokenType.HASH_ARROW, TokenType.DHASH_ARROW)


def in_operator_call(toks: list[Token], k: int) -> bool:
    """Whether token k is inside ``OPERATOR( ... )`` (its ``?`` is an operator, not a parameter)."""
    j = k - 1
    while j >= 0 and toks[j].token_type != TokenType.L_PAREN:
        if toks[j].token_type in (TokenType.R_PAREN, TokenType.COMMA):
            return False
        j -= 1
    return j > 0 and toks[j - 1].token_type == TokenType.OPERATOR
