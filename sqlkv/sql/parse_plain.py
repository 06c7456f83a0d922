"""sqlglot's tree of a plain SELECT, built straight from its tokens.

sqlglot's recursive-descent parser spends ~140 us on ``SELECT id, sku, amount FROM orders
ORDER BY sku DESC LIMIT 10`` (a fifth of that text's first execution), passing every token
through some thirty levels of precedence. `plain_select` builds the same tree -- the same node
classes, arguments in the same order, the same position meta on identifiers, literals and
``*``, the same comments -- for the statements most applications send over and over:

    SELECT item [, item ...] FROM table [[AS] alias]
        [WHERE condition] [ORDER BY key [ASC | DESC] [, ...]] [LIMIT number | parameter]

where an item is ``*`` or a column (``c`` or ``t.c``) with an optional alias, a condition is
comparisons (``=  <>  !=  <  <=  >  >=``, ``BETWEEN x AND y``, ``IS [NOT] NULL``) of sums and
products (``+ - *``) of columns, numbers, strings and parameters, joined by NOT, AND and OR,
and a key is a column or a position. Anything else --
a keyword where a name goes, parentheses, arithmetic, functions, joins, a second statement --
returns None and sqlglot parses the text. tests/sql/test_parse_plain.py compares the two trees
node by node on the test corpus and on generated statements. Given a ``numbering``, the parser
also reads ``?`` as the numbered parameter ``:__pN`` parse.py would have written in its place
(tests/sql/test_plan_shortcuts.py compares that with the parse of the edited text).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_params import joins_next

_COMPARISONS = {TokenType.EQ: exp.EQ, TokenType.NEQ: exp.NEQ, TokenType.LT: exp.LT, TokenType.LTE: exp.LTE,
                TokenType.GT: exp.GT, TokenType.GTE: exp.GTE}
# What may follow a complete select item, condition or ORDER BY key (the statement's end too)
_AFTER_ITEM = frozenset({TokenType.COMMA, TokenType.FROM})
_AFTER_CONDITION = frozenset({TokenType.ORDER_BY, TokenType.LIMIT, None})
_AFTER_KEY = frozenset({TokenType.COMMA, TokenType.LIMIT, None})
# Every token of a plain SELECT is one of these: any other refuses the statement before a node is built
_PLAIN_KINDS = frozenset({
    TokenType.SELECT, TokenType.VAR, TokenType.COMMA, TokenType.DOT, TokenType.STAR, TokenType.FROM,
    TokenType.ALIAS, TokenType.WHERE, TokenType.AND, TokenType.OR, TokenType.NOT, TokenType.BETWEEN,
    TokenType.NUMBER, TokenType.STRING, TokenType.COLON, TokenType.ORDER_BY, TokenType.ASC, TokenType.DESC,
    TokenType.LIMIT, TokenType.PLUS, TokenType.DASH, TokenType.IS, TokenType.NULL, *_COMPARISONS,
})
_NUMBERED_KINDS = _PLAIN_KINDS | {TokenType.PLACEHOLDER}
_TERMS = {TokenType.PLUS: exp.Add, TokenType.DASH: exp.Sub}


class _Refused(Exception):
    """The statement is not plain: sqlglot parses it."""


def _placed(node: exp.Expression, tok: Token) -> exp.Expression:
    node._meta = {"line": tok.line, "col": tok.col, "start": tok.start, "end": tok.end}
    return node


class _Reader:
    """The tokens of one statement, read left to right; every miss refuses the statement."""

    def __init__(self, toks: list[Token], kinds: list[TokenType | None], numbering: str | None = None) -> None:
        self.toks = toks
        self.kinds = kinds  # each token's type, then None: the statement's end
        self.pos = 0
        self.numbering = numbering  # `?` n is the parameter named numbering + n (None: no `?`)
        self.params = 0

    def peek(self) -> TokenType | None:
        return self.kinds[self.pos]

    def take(self, kind: TokenType) -> Token:
        if self.peek() != kind:
            raise _Refused
        self.pos += 1
        return self.toks[self.pos - 1]

    def skip(self, kind: TokenType) -> bool:
        if self.peek() == kind:
            self.pos += 1
            return True
        return False

    def identifier(self) -> exp.Identifier:
        tok = self.take(TokenType.VAR)
        return _placed(exp.Identifier(this=tok.text, quoted=False), tok)

    def column(self) -> exp.Column:
        first = self.identifier()
        if self.skip(TokenType.DOT):
            return exp.Column(this=self.identifier(), table=first)
        return exp.Column(this=first)

    def operand(self) -> exp.Expression:
        kind = self.peek()
        if kind == TokenType.VAR:
            return self.column()
        if kind == TokenType.NUMBER or kind == TokenType.STRING:
            tok = self.toks[self.pos]
            self.pos += 1
            return _placed(exp.Literal(this=tok.text, is_string=kind == TokenType.STRING), tok)
        if kind == TokenType.COLON:  # a numbered parameter, :__pN
            self.pos += 1
            return exp.Placeholder(this=self.take(TokenType.VAR).text)
        if kind == TokenType.PLACEHOLDER and self.numbering is not None:  # `?`, as its edit numbers it
            tok = self.toks[self.pos]
            self.pos += 1
            if tok.text != "?" or joins_next(tok, self.toks[self.pos] if self.pos < len(self.toks) else None):
                raise _Refused
            self.params += 1
            return exp.Placeholder(this=f"{self.numbering}{self.params - 1}")
        raise _Refused


def plain_select(toks: list[Token], numbering: str | None = None) -> exp.Select | None:
    """sqlglot's tree of the statement ``toks`` when it is a plain SELECT (module docstring),
    else None. With ``numbering``, each ``?`` is read as the parameter its edit would make of it
    (parse.py writes `?` number n as ``:<numbering>n``): the tree of the edited text."""
    kinds: list[TokenType | None] = [tok.token_type for tok in toks]
    allowed = _PLAIN_KINDS if numbering is None else _NUMBERED_KINDS
    if not kinds or kinds[0] != TokenType.SELECT or not allowed.issuperset(kinds):
        return None
    if any(tok.comments for tok in toks):
        return None  # sqlglot attaches comments to nodes: it parses those
    kinds.append(None)
    try:
        return _select(_Reader(toks, kinds, numbering))
    except _Refused:
        return None


def _select(r: _Reader) -> exp.Select:
    first = r.take(TokenType.SELECT)
    items = [_item(r)]
    while r.skip(TokenType.COMMA):
        items.append(_item(r))
    r.take(TokenType.FROM)
    select = exp.Select(kind=None, hint=None, distinct=None, expressions=items, limit=None, exclude=None,
                        operation_modifiers=None)
    select.comments = list(first.comments)
    select.set("from_", exp.From(this=_table(r)))
    if r.skip(TokenType.WHERE):
        condition = _condition(r)
        if r.peek() not in _AFTER_CONDITION:
            raise _Refused
        select.set("where", exp.Where(this=condition))
    if r.skip(TokenType.ORDER_BY):
        keys = [_key(r)]
        while r.skip(TokenType.COMMA):
            keys.append(_key(r))
        select.set("order", exp.Order(this=None, expressions=keys, siblings=None))
    if r.skip(TokenType.LIMIT):
        count = r.operand()
        if isinstance(count, exp.Column) or count.args.get("is_string"):
            raise _Refused
        select.set("limit", exp.Limit(this=None, expression=count, limit_options=None, expressions=None))
    if r.peek() is not None:
        raise _Refused
    return select


def _item(r: _Reader) -> exp.Expression:
    if r.peek() == TokenType.STAR:
        tok = r.take(TokenType.STAR)
        node = _placed(exp.Star(ilike=None, except_=None, replace=None, rename=None), tok)
    else:
        node = r.column()
        if r.skip(TokenType.ALIAS) or r.peek() == TokenType.VAR:
            node = exp.Alias(this=node, alias=r.identifier())
    if r.peek() not in _AFTER_ITEM:
        raise _Refused
    return node


def _table(r: _Reader) -> exp.Table:
    name = r.identifier()
    if r.skip(TokenType.ALIAS) or r.peek() == TokenType.VAR:
        alias = exp.TableAlias(this=r.identifier(), columns=None)
        alias.comments = []
        return exp.Table(this=name, alias=alias)
    if r.peek() not in (TokenType.WHERE, TokenType.ORDER_BY, TokenType.LIMIT, None):
        raise _Refused
    return exp.Table(this=name)


def _condition(r: _Reader) -> exp.Expression:
    """OR of ANDs of (NOT) comparisons, left-associative, as sqlglot nests them."""
    node = _conjunction(r)
    while r.skip(TokenType.OR):
        node = exp.Or(this=node, expression=_conjunction(r))
    return node


def _conjunction(r: _Reader) -> exp.Expression:
    node = _negation(r)
    while r.skip(TokenType.AND):
        node = exp.And(this=node, expression=_negation(r))
    return node


def _negation(r: _Reader) -> exp.Expression:
    if r.skip(TokenType.NOT):
        return exp.Not(this=_negation(r))
    left = _sum(r)
    kind = r.peek()
    if kind == TokenType.BETWEEN:
        r.pos += 1
        low = _sum(r)
        r.take(TokenType.AND)
        node: exp.Expression = exp.Between(this=left, low=low, high=_sum(r), symmetric=None)
    elif kind in _COMPARISONS:
        r.pos += 1
        node = _COMPARISONS[kind](this=left, expression=_sum(r))
    elif kind == TokenType.IS:  # IS [NOT] NULL
        r.pos += 1
        negated = r.skip(TokenType.NOT)
        r.take(TokenType.NULL)
        node = exp.Is(this=left, expression=exp.Null())
        if negated:
            node = exp.Not(this=node)
    else:
        raise _Refused
    if r.peek() not in (TokenType.AND, TokenType.OR) and r.peek() not in _AFTER_CONDITION:
        raise _Refused  # `a = b = c`, `a < 1 + 2`...: sqlglot's precedence decides
    return node


def _sum(r: _Reader) -> exp.Expression:
    """Operands joined by ``+``, ``-`` and ``*`` (``*`` first), left-associative as sqlglot nests them."""
    node = _product(r)
    while r.peek() in _TERMS:
        kind = r.peek()
        r.pos += 1
        node = _TERMS[kind](this=node, expression=_product(r))
    return node


def _product(r: _Reader) -> exp.Expression:
    node = r.operand()
    while r.skip(TokenType.STAR):
        node = exp.Mul(this=node, expression=r.operand())
    return node


def _key(r: _Reader) -> exp.Ordered:
    if r.peek() == TokenType.NUMBER:
        key = r.operand()
    else:
        key = r.column()
    desc = True if r.skip(TokenType.DESC) else False if r.skip(TokenType.ASC) else None
    if r.peek() not in _AFTER_KEY:
        raise _Refused
    return exp.Ordered(this=key, desc=desc, nulls_first=desc is not True, with_fill=None)
