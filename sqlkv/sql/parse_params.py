"""The tokens of a statement whose ``?`` parameters were numbered, without tokenizing it again.

``SELECT * FROM t WHERE id = ? AND v = ?`` is parsed as ``... id = :__p0 AND v = :__p1``
(parse.py numbers the parameters by editing the text), and the edited text used to be
tokenized a second time: a sixth of the parse of a short prepared statement. When every edit
is such a number, `numbered_tokens` makes the edited text's tokens from the original ones
instead -- each ``?`` becomes the ``:`` and name tokens the tokenizer would have made, the
tokens after it move by the characters added, on their line too -- and anything else (a
``?`` with comments or a token glued to it, ``?::type``, other rewrites) returns None: the
edited text is tokenized. A plain SELECT whose only edits are these numbers skips both: the
plain parser reads each ``?`` as the parameter its edit would make (parse_plain.py).
`number_placeholders` then turns each ``:__pn`` of the tree into the unnamed parameter n.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_edits import Edit
from sqlkv.sql.parse_tree import nodes_of_type

PARAM_PREFIX = "__p"  # ``?`` number n is parsed as the parameter ``:__pn``


def number_placeholders(ast: exp.Expression, nodes: list[exp.Expression] | None = None) -> None:
    """Each ``:__pn`` parameter of ``ast`` (``nodes``: its nodes, when walked) becomes the
    unnamed parameter number n."""
    for node in ast.find_all(exp.Placeholder) if nodes is None else nodes_of_type(nodes, exp.Placeholder):
        name = node.this
        if isinstance(name, str) and name.startswith(PARAM_PREFIX) and name[len(PARAM_PREFIX) :].isdigit():
            node.set("this", None)
            node.meta["param_index"] = int(name[len(PARAM_PREFIX) :])


def numbered_tokens(toks: list[Token], edits: list[Edit]) -> list[Token] | None:
    """What tokenizing ``toks``' text with ``edits`` applied gives, when each edit turns one
    ``?`` token into ``:name``; None when some edit is anything else."""
    names: dict[int, str] = {}
    for edit in edits:
        if edit.end != edit.start + 1 or not edit.replacement.startswith(":"):
            return None
        names[edit.start] = edit.replacement[1:]
    first = min(names) if names else 0
    skip = 0  # the tokens before the first edit stay as they are
    while skip < len(toks) and toks[skip].start < first:
        skip += 1
    out: list[Token] = toks[:skip]
    shift = 0  # characters the edits so far added to the text
    line, line_shift = 0, 0  # the current line, and the characters added on it
    for tok, after in zip(toks[skip:], [*toks[skip + 1:], None]):
        if tok.line != line:
            line, line_shift = tok.line, 0
        name = names.pop(tok.start, None) if names else None
        if name is None:
            out.append(tok if not shift else Token(tok.token_type, tok.text, tok.line, tok.col + line_shift,
                                                   tok.start + shift, tok.end + shift, tok.comments))
            continue
        if tok.token_type != TokenType.PLACEHOLDER or tok.text != "?" or tok.comments or joins_next(tok, after):
            return None
        start, col = tok.start + shift, tok.col + line_shift
        out.append(Token(TokenType.COLON, ":", tok.line, col, start, start, []))
        out.append(Token(TokenType.VAR, name, tok.line, col + len(name), start + 1, start + len(name), []))
        shift += len(name)
        line_shift += len(name)
    return None if names else out


def joins_next(tok: Token, after: Token | None) -> bool:
    """Whether ``:name`` in place of ``tok`` could merge with the token right after it
    (``?1``, ``?:``): the edited text's tokens are then not these."""
    return after is not None and after.start == tok.end + 1 and (after.text[:1].isalnum() or after.text[:1] in "_:$")
