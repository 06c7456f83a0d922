"""Column constraints from WHERE conjuncts: what an index scan can be bounded by.

``WHERE customer = ? AND day BETWEEN '2024-01-01' AND '2024-01-31' AND note LIKE 'x%'``:
`constraints_by_column` finds, per column of the scanned table, the conjuncts comparing it
with a constant (equalities, IN lists and ORs of equalities, comparisons, BETWEEN, IS [NOT]
NULL, LIKE 'prefix%'), and `bounds_for` turns one column's constraints into the
`ColumnBounds` a `SpanBuilder` encodes into key spans. Constants are compiled (`const_fn`),
not evaluated: parameters and now() are only known when the cached plan runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlkv.sql.context import Scope
from sqlkv.sql.expr import compile_expr
from sqlkv.sql.rowstore.keyspans import ColumnBounds
from sqlkv.sql.expr.arrays import array_quantifier
from sqlkv.sql.expr.env import column_parts


def const_fn(node: exp.Expression, scope: Scope, env):
    return compile_expr(node, scope, env)


def is_constant_expr(node: exp.Expression) -> bool:
    """No column references, subqueries or aggregates: computable before reading rows."""
    for n in node.walk():
        if isinstance(n, (exp.Column, exp.Star, exp.Subquery, exp.Select, exp.Exists, exp.AggFunc)):
            return False
    return True


def column_pos(node: exp.Expression, scope: Scope) -> int | None:
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    name, table = column_parts(node)
    return scope.find(name, table or None)


_FLIP = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE, exp.EQ: exp.EQ}


@dataclass
class Constraint:
    kind: str  # eq, in, null, notnull, lo, hi, between, like
    node: exp.Expression  # the filter
    values: list[exp.Expression] = field(default_factory=list)
    inclusive: bool = True
    prefix: str | None = None


def constraints_by_column(filters: list[exp.Expression], scope: Scope) -> dict[int, list[Constraint]]:
    """Column position -> sargable constraints found among the conjuncts."""
    out: dict[int, list[Constraint]] = {}

    def add(pos: int | None, c: Constraint) -> None:
        if pos is not None:
            out.setdefault(pos, []).append(c)

    for f in filters:
        node = f.unnest() if isinstance(f, exp.Paren) else f
        if type(node) in _FLIP:
            left, right = node.this, node.expression
            cls = type(node)
            if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
                left, right, cls = right, left, _FLIP[cls]
            quantified = array_quantifier(right)
            if quantified is not None:  # col = ANY(ARRAY[1, 2]) is col IN (1, 2); other forms filter
                array, is_all = quantified
                pos = column_pos(left, scope)
                if (cls is exp.EQ and not is_all and pos is not None and isinstance(array, exp.Array)
                        and array.expressions and all(is_constant_expr(v) for v in array.expressions)):
                    add(pos, Constraint("in", f, list(array.expressions)))
                continue
            pos = column_pos(left, scope)
            if pos is None or not is_constant_expr(right):
                continue
            if cls is exp.EQ:
                add(pos, Constraint("eq", f, [right]))
            elif cls in (exp.GT, exp.GTE):
                add(pos, Constraint("lo", f, [right], cls is exp.GTE))
            else:
                add(pos, Constraint("hi", f, [right], cls is exp.LTE))
        elif isinstance(node, exp.Between):
            pos = column_pos(node.this, scope)
            low, high = node.args.get("low"), node.args.get("high")
            if pos is not None and low is not None and high is not None and not node.args.get("symmetric"):
                if is_constant_expr(low) and is_constant_expr(high):
                    add(pos, Constraint("between", f, [low, high]))
        elif isinstance(node, exp.In):
            pos = column_pos(node.this, scope)
            vals = node.expressions
            if pos is not None and vals and not node.args.get("query") and all(is_constant_expr(v) for v in vals):
                add(pos, Constraint("in", f, list(vals)))
        elif isinstance(node, exp.Or):
            pos, values = _or_of_equalities(node, scope)
            if pos is not None:
                add(pos, Constraint("in", f, values))
        elif isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            add(column_pos(node.this, scope), Constraint("null", f))
        elif isinstance(node, exp.Not) and isinstance(node.this, exp.Is) and isinstance(node.this.expression, exp.Null):
            add(column_pos(node.this.this, scope), Constraint("notnull", f))
        elif isinstance(node, exp.Like) and not node.args.get("escape"):
            pat = node.expression
            if isinstance(pat, exp.Literal) and pat.is_string:
                prefix = _like_prefix(pat.this)
                if prefix:
                    add(column_pos(node.this, scope), Constraint("like", f, prefix=prefix))
    return out


def _or_of_equalities(node: exp.Expression, scope: Scope) -> tuple[int | None, list[exp.Expression]]:
    """``a = 1 OR a = 2 OR a IN (3, 4)`` -> (position of a, [1, 2, 3, 4]); else (None, [])."""
    pos: int | None = None
    values: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        while isinstance(n, exp.Paren):
            n = n.this
        if isinstance(n, exp.Or):
            stack.extend([n.expression, n.this])
            continue
        if isinstance(n, exp.EQ):
            col, val = (n.this, n.expression) if isinstance(n.this, exp.Column) else (n.expression, n.this)
            vals = [val]
        elif isinstance(n, exp.In) and not n.args.get("query") and n.expressions:
            col, vals = n.this, list(n.expressions)
        else:
            return None, []
        p = column_pos(col, scope)
        if p is None or (pos is not None and p != pos) or not all(is_constant_expr(v) for v in vals):
            return None, []
        pos = p
        values.extend(vals)
    return pos, values


def _like_prefix(pattern: str) -> str:
    out = []
    for ch in pattern:
        if ch in "%_\\":
            break
        out.append(ch)
    return "".join(out)


def bounds_for(cons: list[Constraint], scope: Scope, env, allow_range: bool, text_column: bool) -> ColumnBounds | None:
    """Equality bounds if any, else range bounds (when allowed)."""
    b = ColumnBounds()
    for c in cons:
        if c.kind == "eq":
            b.eq = [(c.values[0], const_fn(c.values[0], scope, env))]
            b.used.append(c.node)
            return b
    for c in cons:
        if c.kind == "in":
            b.eq = [(v, const_fn(v, scope, env)) for v in c.values]
            b.is_in = True
            b.used.append(c.node)
            return b
        if c.kind == "null":
            b.is_null = True
            b.used.append(c.node)
            return b
    if not allow_range:
        return None
    for c in cons:
        if c.kind == "lo" and b.lo is None:
            b.lo = (c.values[0], const_fn(c.values[0], scope, env), c.inclusive)
            b.used.append(c.node)
        elif c.kind == "hi" and b.hi is None:
            b.hi = (c.values[0], const_fn(c.values[0], scope, env), c.inclusive)
            b.used.append(c.node)
        elif c.kind == "between" and b.lo is None and b.hi is None:
            b.lo = (c.values[0], const_fn(c.values[0], scope, env), True)
            b.hi = (c.values[1], const_fn(c.values[1], scope, env), True)
            b.used.append(c.node)
    if b.lo is None and b.hi is None:
        for c in cons:
            if c.kind == "like" and text_column:
                b.like_prefix = c.prefix  # LIKE stays a remaining filter: the span is a superset
                return b
            if c.kind == "notnull":
                b.not_null = True
                b.used.append(c.node)
                return b
        return None
    return b
