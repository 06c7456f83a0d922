"""Row (tuple) expressions: ``(a, b) = (1, 2)``, ``(a, b) < (x, y)``, ``(a, b) IN ((1, 2), (3, 4))``.

A row comparison is rewritten into scalar comparisons before compiling, with PostgreSQL's
meaning: ``=`` is the AND of the pairs' equalities, ``<>`` the OR of their inequalities, and
``<``/``<=``/``>``/``>=`` compare lexicographically -- the first pair that is not equal decides,
so ``(1, NULL) < (2, 0)`` is TRUE and ``(NULL, 1) < (2, 0)`` is NULL. ``IN`` is the OR of row
equalities. Rows of different lengths are a ProgrammingError.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError

_STRICT = {exp.LT: exp.LT, exp.LTE: exp.LT, exp.GT: exp.GT, exp.GTE: exp.GT}


def row_items(node: exp.Expression) -> list[exp.Expression] | None:
    """The items of a row constructor ``(a, b)`` / ``ROW(a, b)``, None for any other node."""
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "row":
        return list(node.expressions)
    return None


def is_row_comparison(node: exp.Binary) -> bool:
    return row_items(node.this) is not None or row_items(node.expression) is not None


def _pairs(left: exp.Expression, right: exp.Expression) -> list[tuple[exp.Expression, exp.Expression]]:
    a, b = row_items(left), row_items(right)
    if a is None or b is None:
        side = right if b is None else left
        if isinstance(side, (exp.Subquery, exp.Select)):
            raise NotSupportedError("comparing a row with a subquery is not supported")
        raise ProgrammingError(f"cannot compare a row with a single value: {side.sql()[:60]}")
    if len(a) != len(b):
        raise ProgrammingError(f"unequal number of entries in row expressions ({len(a)} and {len(b)})")
    if not a:
        raise ProgrammingError("cannot compare empty rows")
    return list(zip(a, b))


def _and(nodes: list[exp.Expression]) -> exp.Expression:
    out = nodes[0]
    for n in nodes[1:]:
        out = exp.And(this=out, expression=n)
    return exp.Paren(this=out)


def _or(nodes: list[exp.Expression]) -> exp.Expression:
    out = nodes[0]
    for n in nodes[1:]:
        out = exp.Or(this=out, expression=n)
    return exp.Paren(this=out)


def rewrite_row_comparison(node: exp.Binary) -> exp.Expression:
    """``(a, b) op (x, y)`` as scalar comparisons (see the module docstring)."""
    pairs = [(x.copy(), y.copy()) for x, y in _pairs(node.this, node.expression)]
    if isinstance(node, exp.EQ):
        return _and([exp.EQ(this=x, expression=y) for x, y in pairs])
    if isinstance(node, exp.NEQ):
        return _or([exp.NEQ(this=x, expression=y) for x, y in pairs])
    cls = type(node)
    if cls not in _STRICT:
        raise NotSupportedError(f"operator not supported on rows: {node.sql()[:60]}")
    # (x1, x2) < (y1, y2)  ==  x1 < y1 OR (x1 = y1 AND x2 < y2); the last pair uses op itself
    x, y = pairs[-1]
    out: exp.Expression = cls(this=x, expression=y)
    for x, y in reversed(pairs[:-1]):
        strict = _STRICT[cls](this=x.copy(), expression=y.copy())
        equal = exp.EQ(this=x.copy(), expression=y.copy())
        out = _or([strict, _and([equal, out])])
    return out


def rewrite_row_in(node: exp.In) -> exp.Expression:
    """``(a, b) IN ((1, 2), (3, 4))`` as the OR of row equalities."""
    items = node.expressions
    if len(items) == 1 and isinstance(items[0], exp.Paren):  # (a, b) IN ((1, 2)) parses as a Paren
        items = [items[0].this]
    if not items:
        return exp.false()
    return _or([rewrite_row_comparison(exp.EQ(this=node.this, expression=item)) for item in items])


def split_row_equality(node: exp.Expression) -> list[exp.Expression] | None:
    """``(a, b) = (1, 2)`` as the conjuncts ``a = 1``, ``b = 2`` (WHERE can use them for spans)."""
    if not isinstance(node, exp.EQ):
        return None
    a, b = row_items(node.this), row_items(node.expression)
    if a is None or b is None or len(a) != len(b) or not a:
        return None
    return [exp.EQ(this=x, expression=y) for x, y in zip(a, b)]
