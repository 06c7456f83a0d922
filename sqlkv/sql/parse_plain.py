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

from typing import Any, TypeVar

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_params import joins_next, number_placeholders

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
_Node = TypeVar("_Node", bound=exp.Expression)
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
        self.made: list[exp.Expression] = []  # every node built: the tree's, without a walk of it

    def keep(self, node: _Node) -> _Node:
        self.made.append(node)
        return node

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
        return self.keep(_placed(exp.Identifier(this=tok.text, quoted=False), tok))

    def column(self) -> exp.Column:
        first = self.identifier()
        if self.skip(TokenType.DOT):
            return self.keep(exp.Column(this=self.identifier(), table=first))
        return self.keep(exp.Column(this=first))

    def operand(self) -> exp.Expression:
        kind = self.peek()
        if kind == TokenType.VAR:
            return self.column()
        if kind == TokenType.NUMBER or kind == TokenType.STRING:
            tok = self.toks[self.pos]
            self.pos += 1
            return self.keep(_placed(exp.Literal(this=tok.text, is_string=kind == TokenType.STRING), tok))
        if kind == TokenType.COLON:  # a numbered parameter, :__pN
            self.pos += 1
            return self.keep(exp.Placeholder(this=self.take(TokenType.VAR).text))
        if kind == TokenType.PLACEHOLDER and self.numbering is not None:  # `?`, as its edit numbers it
            tok = self.toks[self.pos]
            self.pos += 1
            if tok.text != "?" or joins_next(tok, self.toks[self.pos] if self.pos < len(self.toks) else None):
                raise _Refused
            self.params += 1
            return self.keep(exp.Placeholder(this=f"{self.numbering}{self.params - 1}"))
        raise _Refused


def plain_select(toks: list[Token], numbering: str | None = None,
                 made: list[exp.Expression] | None = None) -> exp.Select | None:
    """sqlglot's tree of the statement ``toks`` when it is a plain SELECT (module docstring),
    else None. With ``numbering``, each ``?`` is read as the parameter its edit would make of it
    (parse.py writes `?` number n as ``:<numbering>n``): the tree of the edited text. ``made``,
    when given, receives the tree's nodes (in the order they were built, not ``walk()``'s)."""
    kinds: list[TokenType | None] = [tok.token_type for tok in toks]
    allowed = _PLAIN_KINDS if numbering is None else _NUMBERED_KINDS
    if not kinds or kinds[0] != TokenType.SELECT or not allowed.issuperset(kinds):
        return None
    if any(tok.comments for tok in toks):
        return None  # sqlglot attaches comments to nodes: it parses those
    kinds.append(None)
    reader = _Reader(toks, kinds, numbering)
    try:
        select = _select(reader)
    except _Refused:
        return None
    if made is not None:
        made.extend(reader.made)
    return select


def _select(r: _Reader) -> exp.Select:
    first = r.take(TokenType.SELECT)
    items = [_item(r)]
    while r.skip(TokenType.COMMA):
        items.append(_item(r))
    r.take(TokenType.FROM)
    select = r.keep(exp.Select(kind=None, hint=None, distinct=None, expressions=items, limit=None, exclude=None,
                        operation_modifiers=None))
    select.comments = list(first.comments)
    select.set("from_", r.keep(exp.From(this=_table(r))))
    if r.skip(TokenType.WHERE):
        condition = _condition(r)
        if r.peek() not in _AFTER_CONDITION:
            raise _Refused
        select.set("where", r.keep(exp.Where(this=condition)))
    if r.skip(TokenType.ORDER_BY):
        keys = [_key(r)]
        while r.skip(TokenType.COMMA):
            keys.append(_key(r))
        select.set("order", r.keep(exp.Order(this=None, expressions=keys, siblings=None)))
    if r.skip(TokenType.LIMIT):
        count = r.operand()
        if isinstance(count, exp.Column) or count.args.get("is_string"):
            raise _Refused
        select.set("limit", r.keep(exp.Limit(this=None, expression=count, limit_options=None, expressions=None)))
    if r.peek() is not None:
        raise _Refused
    return select


def _item(r: _Reader) -> exp.Expression:
    if r.peek() == TokenType.STAR:
        tok = r.take(TokenType.STAR)
        node = r.keep(_placed(exp.Star(ilike=None, except_=None, replace=None, rename=None), tok))
    else:
        node = r.column()
        if r.skip(TokenType.ALIAS) or r.peek() == TokenType.VAR:
            node = r.keep(exp.Alias(this=node, alias=r.identifier()))
    if r.peek() not in _AFTER_ITEM:
        raise _Refused
    return node


def _table(r: _Reader) -> exp.Table:
    name = r.identifier()
    if r.skip(TokenType.ALIAS) or r.peek() == TokenType.VAR:
        alias = r.keep(exp.TableAlias(this=r.identifier(), columns=None))
        alias.comments = []
        return r.keep(exp.Table(this=name, alias=alias))
    if r.peek() not in (TokenType.WHERE, TokenType.ORDER_BY, TokenType.LIMIT, None):
        raise _Refused
    return r.keep(exp.Table(this=name))


def _condition(r: _Reader) -> exp.Expression:
    """OR of ANDs of (NOT) comparisons, left-associative, as sqlglot nests them."""
    node = _conjunction(r)
    while r.skip(TokenType.OR):
        node = r.keep(exp.Or(this=node, expression=_conjunction(r)))
    return node


def _conjunction(r: _Reader) -> exp.Expression:
    node = _negation(r)
    while r.skip(TokenType.AND):
        node = r.keep(exp.And(this=node, expression=_negation(r)))
    return node


def _negation(r: _Reader) -> exp.Expression:
    if r.skip(TokenType.NOT):
        return r.keep(exp.Not(this=_negation(r)))
    left = _sum(r)
    kind = r.peek()
    if kind == TokenType.BETWEEN:
        r.pos += 1
        low = _sum(r)
        r.take(TokenType.AND)
        node: exp.Expression = r.keep(exp.Between(this=left, low=low, high=_sum(r), symmetric=None))
    elif kind in _COMPARISONS:
        r.pos += 1
        node = r.keep(_COMPARISONS[kind](this=left, expression=_sum(r)))
    elif kind == TokenType.IS:  # IS [NOT] NULL
        r.pos += 1
        negated = r.skip(TokenType.NOT)
        r.take(TokenType.NULL)
        node = r.keep(exp.Is(this=left, expression=r.keep(exp.Null())))
        if negated:
            node = r.keep(exp.Not(this=node))
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
        node = r.keep(_TERMS[kind](this=node, expression=_product(r)))
    return node


def _product(r: _Reader) -> exp.Expression:
    node = r.operand()
    while r.skip(TokenType.STAR):
        node = r.keep(exp.Mul(this=node, expression=r.operand()))
    return node


def _key(r: _Reader) -> exp.Ordered:
    if r.peek() == TokenType.NUMBER:
        key = r.operand()
    else:
        key = r.column()
    desc = True if r.skip(TokenType.DESC) else False if r.skip(TokenType.ASC) else None
    if r.peek() not in _AFTER_KEY:
        raise _Refused
    return r.keep(exp.Ordered(this=key, desc=desc, nulls_first=desc is not True, with_fill=None))


def plain_statement(stmt: Any, ast: exp.Select, nodes: list[exp.Expression], n_params: int) -> Any:
    """``stmt`` (a `ParsedStatement`) as the steps after the parse in `parse._parse_sql` make it
    for a tree of `plain_select`, without them: the tree has no refusable clause (its table
    alias is a name), nothing to rewrite, items that name themselves (headers.py), no call, and
    only node classes of `parse_tree.SHARED_PLAN_NODES`; its ``?`` are numbered.
    tests/sql/test_parse_plain.py compares the statement with the long way's."""
    if n_params:
        number_placeholders(ast, [n for n in nodes if type(n) is exp.Placeholder])
    stmt.sequence_calls = False
    stmt.shared_tree = True
    stmt.nodes = nodes
    stmt.ast = ast
    stmt.param_count = n_params
    stmt.kind = "SELECT"
    return stmt
