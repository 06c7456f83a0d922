"""Matching a query's expressions to expression indexes.

``CREATE INDEX ON users (lower(email))`` stores ``lower(email)`` as the hidden VIRTUAL column
``sqlkv_idx_expr_1`` of ``users`` and indexes that column (`sqlkv.sql.ddl.generated`). For
``SELECT * FROM users WHERE lower(email) = 'a@b.c'`` the access planner first calls
`use_expression_columns`: every sub-expression of a filter whose normalised text (qualifiers
dropped, as `conjunct_key` does) equals a hidden column's expression is replaced by a reference
to that column, so the filter reads ``sqlkv_idx_expr_1 = 'a@b.c'`` and the ordinary span
machinery finds the index: ``get users@users_lower_idx /Table/104/2/"a@b.c"``. The value is
the same either way (the column is the expression), so a rewritten filter that ends up not
using the index still gives the same rows.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.sql.plan.names import conjunct_key
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


def use_expression_columns(table: TableDescriptor, alias: str, filters: list[exp.Expression]) -> list[exp.Expression]:
    """``filters`` with sub-expressions matching an expression index's column replaced."""
    exprs = {conjunct_key(parse_expression(c.computed)): c.name
             for c in table.columns if c.hidden and c.computed is not None}
    if not exprs:
        return filters

    def own_columns(node: exp.Expression) -> bool:
        return all((not c.table or c.table.lower() == alias.lower()) and table.find_column(c.name) is not None
                   for c in node.find_all(exp.Column))

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Column, exp.Literal)) or not isinstance(node, exp.Expression):
            return node
        inner = node
        while isinstance(inner, exp.Paren):  # (a + b) BETWEEN ...: the column, not (column)
            inner = inner.this
        name = exprs.get(conjunct_key(inner))
        if name is not None and own_columns(inner):
            return exp.column(name, table=alias)
        return node

    out = []
    for f in filters:
        changed = f.transform(swap, copy=True)
        out.append(changed if changed.sql() != f.sql() else f)
    return out
