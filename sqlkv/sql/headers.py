"""Result column names as the user typed them: ``SELECT count(*), ifnull(a,b) FROM t``.

sqlglot normalises expressions when it prints them back (``COUNT(*)``, ``COALESCE(a, b)``,
``GROUP_CONCAT(name, ',')`` for string_agg), so a header made from the AST is not what was
written. SQLite heads an unaliased column with its exact source text; so does sqlkv: at parse
time `label_select_items` cuts the outermost select list out of the statement's tokens (one
piece per top-level comma) and stores each piece's text in the AST node's
``meta["source_text"]``, which `sqlkv.sql.plan.names.output_name` prefers.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

_LIST_ENDS = frozenset({"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "UNION",
                        "INTERSECT", "EXCEPT", "WINDOW", "INTO", "FETCH", "QUALIFY"})
_NAMED = (exp.Alias, exp.Column, exp.Star)  # items whose header sqlglot gives as typed
_OPEN = (TokenType.L_PAREN, TokenType.L_BRACKET)
_CLOSE = (TokenType.R_PAREN, TokenType.R_BRACKET)


def label_select_items(ast: exp.Expression, text: str, toks: list[Token]) -> None:
    """Record each unaliased outer select item's source text on its node (no-op if unsure)."""
    select = _outer_select(ast)
    if select is None:
        return
    items = select.expressions
    if all(isinstance(node, _NAMED) for node in items):
        return  # every item is named by sqlglot already
    pieces = _select_list_pieces(toks)
    if pieces is None or len(pieces) != len(items):
        return  # the tokens and the AST disagree (a rewrite): keep sqlglot's names
    for node, (first, last) in zip(items, pieces):
        if not isinstance(node, _NAMED):
            node.meta["source_text"] = text[first.start : last.end + 1]


def _outer_select(ast: exp.Expression) -> exp.Select | None:
    node = ast
    while isinstance(node, exp.SetOperation):
        node = node.this  # a UNION is named by its first SELECT
    return node if isinstance(node, exp.Select) else None


def _select_list_pieces(toks: list[Token]) -> list[tuple[Token, Token]] | None:
    """(first, last) token of every item of the first SELECT at nesting depth 0."""
    depth, start = 0, None
    for i, tok in enumerate(toks):
        if tok.token_type in _OPEN:
            depth += 1
        elif tok.token_type in _CLOSE:
            depth -= 1
        elif depth == 0 and tok.token_type == TokenType.SELECT:
            start = i + 1
            break
    if start is None:
        return None
    while start < len(toks) and toks[start].text.upper() in ("DISTINCT", "ALL"):
        if toks[start].text.upper() == "DISTINCT" and start + 1 < len(toks) and toks[start + 1].text.upper() == "ON":
            return None  # DISTINCT ON (...): leave it to sqlglot
        start += 1
    pieces: list[tuple[Token, Token]] = []
    depth, first = 0, start
    for i in range(start, len(toks)):
        tok = toks[i]
        if tok.token_type in _OPEN:
            depth += 1
        elif tok.token_type in _CLOSE:
            depth -= 1
        elif depth == 0 and tok.token_type == TokenType.COMMA:
            if first == i:
                return None
            pieces.append((toks[first], toks[i - 1]))
            first = i + 1
        elif depth == 0 and tok.token_type not in (TokenType.STRING, TokenType.IDENTIFIER) \
                and tok.text.upper() in _LIST_ENDS:
            break
    else:
        i = len(toks)
    if first >= i:
        return None
    pieces.append((toks[first], toks[i - 1]))
    return pieces
