"""Token edits for PostgreSQL's JSONB operators, which sqlglot's default dialect cannot read (issue 15).

The default dialect tokenizes ``@>`` as ``@`` ``>``, and ``?`` is sqlkv's qmark placeholder. The
rewrite turns each operator into PostgreSQL's own explicit spelling ``OPERATOR(@>)``, which the
default dialect parses into `exp.Operator` at the precedence of LIKE. `sqlkv.sql.expr.pg_operators`
compiles it. Printing (`_operator_sql`, installed into sqlglot's default generator when this module
loads) writes the operator back as written -- ``doc @> '{"a": 1}'``, ``doc ? 'k'`` -- so SHOW CREATE
TABLE, view definitions and EXPLAIN show PostgreSQL's text, and `stored_expression_edits` makes
stored expression texts (CHECK, generated columns, index expressions and predicates) read back into
the same tree. Only ``?`` with anything but a string literal after it stays ``OPERATOR(?)``: that
is the one spelling in which it reads back as the operator rather than a parameter.

- ``@>``, ``<@``, ``?|``, ``?&``, ``#-``, ``@?``, ``@@``: always operators (``a @> b``, written
  without a space).
- ``?`` is the key-exists operator only directly after an operand and followed by a string
  literal (``doc ? 'email'``); everywhere else it is a parameter. With a parameter for the key
  write ``jsonb_exists(doc, ?)`` or ``doc OPERATOR(?) ?`` -- a ``?`` inside ``OPERATOR( )`` is
  never a parameter (the way PostgreSQL drivers with ``?`` placeholders escape it).
- ``->``, ``->>``, ``#>``, ``#>>`` keep sqlglot's parsing (JSONExtract, JSONExtractScalar,
  JSONBExtract, JSONBExtractScalar nodes), which binds them tighter than any other operator, so
  ``doc ->> 'a' || doc ->> 'b'`` and ``doc -> 'x' ->> 0 = '1'`` read as written. Two edits keep
  PostgreSQL's meaning: a string literal after ``->``/``->>`` is wrapped in parentheses (the
  default dialect would read ``'a.b'`` as a JSON path of two keys; PostgreSQL's key is ``a.b``),
  and a bare name or parenthesised group before ``->`` that starts a function argument is
  wrapped in a second pair (``f(doc -> 'k')`` would otherwise be a lambda ``doc -> 'k'``).
- Printing the four arrows as operators (not sqlglot's function spelling) is print_arrows.py.
- ``?::TYPE`` (one token to sqlglot) is a parameter followed by a cast.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.generator import Generator
from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_edits import Edit
from sqlkv.sql.parse_extras import after_operand
from sqlkv.sql.print_arrows import install as install_arrow_printers

# (first token text, second token text) -> operator, for operators the tokenizer splits in two
_PAIRS = {("@", ">"): "@>", ("<", "@"): "<@", ("?", "|"): "?|", ("?", "&"): "?&", ("#", "-"): "#-",
          ("@", "?"): "@?", ("@", "@"): "@@"}


def _adjacent(a: Token, b: Token) -> bool:
    return a.end + 1 == b.start


# Tokens one of the operators above needs (`@`, `#`, `|`, `&`, an OPERATOR( ) call)
_OPERATOR_KINDS = frozenset({TokenType.PARAMETER, TokenType.HASH, TokenType.PIPE, TokenType.AMP, TokenType.OPERATOR})


def jsonb_possible(toks: list[Token], kinds: set[TokenType]) -> bool:
    """Whether `jsonb_operator_edit` or `operator_part` may find anything in ``toks`` (whose
    token types are ``kinds``): most statements have none of the tokens they look for."""
    if not kinds.isdisjoint(_OPERATOR_KINDS):
        return True
    return TokenType.PLACEHOLDER in kinds and any(
        nxt.token_type in (TokenType.STRING, TokenType.PLACEHOLDER)
        for tok, nxt in zip(toks, toks[1:]) if tok.token_type == TokenType.PLACEHOLDER)


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
    return None


def operator_part(toks: list[Token], k: int) -> bool:
    """Whether the ``?`` at token k belongs to an operator, so is no parameter: inside
    ``OPERATOR( )`` or the second half of ``@?``."""
    if in_operator_call(toks, k):
        return True
    prev = toks[k - 1] if k > 0 else None
    return prev is not None and _adjacent(prev, toks[k]) and (prev.text, toks[k].text) == ("@", "?")


def arrow_edits(toks: list[Token], k: int) -> list[Edit]:
    """Parentheses that keep ``->`` / ``->>`` at token k PostgreSQL's (see the module docstring)."""
    tok = toks[k]
    if tok.token_type not in (TokenType.ARROW, TokenType.DARROW) or in_operator_call(toks, k):
        return []
    edits = []
    nxt = toks[k + 1] if k + 1 < len(toks) else None
    if nxt is not None and nxt.token_type == TokenType.STRING:
        edits += [Edit(nxt.start, nxt.start, "("), Edit(nxt.end + 1, nxt.end + 1, ")")]
    first = _lambda_shaped_operand(toks, k) if tok.token_type == TokenType.ARROW else None
    if first is not None:  # `(x) ->` is still a lambda: a name gets two pairs, a group one more
        pairs = 1 if toks[k - 1].token_type == TokenType.R_PAREN else 2
        edits += [Edit(toks[first].start, toks[first].start, "(" * pairs),
                  Edit(toks[k - 1].end + 1, toks[k - 1].end + 1, ")" * pairs)]
    return edits


def _lambda_shaped_operand(toks: list[Token], k: int) -> int | None:
    """The first token of the operand before ``->`` at k when the operand is a bare name or a
    parenthesised group starting a function argument (after ``(`` or ``,``), else None."""
    j = k - 1
    if j < 0:
        return None
    if toks[j].token_type == TokenType.R_PAREN:
        depth = 0
        while j >= 0:
            depth += {TokenType.R_PAREN: 1, TokenType.L_PAREN: -1}.get(toks[j].token_type, 0)
            if depth == 0:
                break
            j -= 1
        if j < 0:
            return None
    elif toks[j].token_type in (TokenType.STRING, TokenType.NUMBER) or not toks[j].text.isidentifier():
        return None
    before = toks[j - 1] if j > 0 else None
    if before is not None and before.token_type in (TokenType.L_PAREN, TokenType.COMMA):
        return j
    return None


def in_operator_call(toks: list[Token], k: int) -> bool:
    """Whether token k is inside ``OPERATOR( ... )`` (its ``?`` is an operator, not a parameter)."""
    j = k - 1
    while j >= 0 and toks[j].token_type != TokenType.L_PAREN:
        if toks[j].token_type in (TokenType.R_PAREN, TokenType.COMMA):
            return False
        j -= 1
    return j > 0 and toks[j - 1].token_type == TokenType.OPERATOR


def stored_expression_edits(toks: list[Token]) -> list[Edit]:
    """The edits above for a stored expression text, which has no parameters: every ``?`` that
    `jsonb_operator_edit` recognises is the operator."""
    edits: list[Edit] = []
    for k in range(len(toks)):
        edits.extend(arrow_edits(toks, k))
        edit = jsonb_operator_edit(toks, k)
        if edit is not None:
            edits.append(edit)
    return edits


# printed as the operator itself; "?" only before a string literal (the module docstring)
_PRINTED_AS_WRITTEN = frozenset({"@>", "<@", "?|", "?&", "#-", "@?", "@@"})
_OPERATOR_CALL_SQL = Generator.TRANSFORMS[exp.Operator]


def _operator_sql(gen: Generator, node: exp.Operator) -> str:
    op = str(node.args.get("operator") or "").replace(" ", "")
    right = node.expression
    if op in _PRINTED_AS_WRITTEN or (op == "?" and isinstance(right, exp.Literal) and right.is_string):
        return f"{gen.sql(node, 'this')} {op} {gen.sql(node, 'expression')}"
    return _OPERATOR_CALL_SQL(gen, node)


def _array_sql(gen: Generator, node: exp.Array) -> str:
    """``ARRAY[1, 2]`` as PostgreSQL writes it (sqlglot's default is ``ARRAY(1, 2)``, which
    PostgreSQL reads as a subquery); ``ARRAY(SELECT ...)`` keeps its parentheses."""
    if any(isinstance(e, (exp.Query, exp.Subquery, exp.Values)) for e in node.expressions):
        return gen.function_fallback_sql(node)
    return f"ARRAY[{gen.expressions(node, flat=True)}]"


Generator.TRANSFORMS[exp.Operator] = _operator_sql
Generator.TRANSFORMS[exp.Array] = _array_sql
install_arrow_printers()  # -> ->> #> #>> print as operators (print_arrows.py)
