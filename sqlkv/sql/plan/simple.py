"""The planner's lane for simple one-table SELECTs: the general planner's plan, without its detours.

``SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10`` names one table, plain columns, a
WHERE of comparisons (or none), ORDER BY columns and a LIMIT. The general planner (select.py,
select_body.py, sources.py, joins.py) takes it through everything a SELECT may hold -- CTE
frames, views, derived tables, join specs and orders, USING merges, the walk for aggregates and
windows, the outer-reference lookup joins of correlated subqueries -- before it reaches the
three decisions such a query needs: the access path (`plan_table_access`), the ORDER BY it can
hand to that path (`SelectBuilder._want_order`) and the projection, sort and limit above it
(`SelectBuilder._finish`). This lane makes those same calls with the same arguments, so the
plan is the general planner's own (tests/sql/test_plan_simple.py compares EXPLAIN text on a
corpus), and skips the rest, which for such a query decides nothing.

It takes a SELECT planned from its shared parsed tree (`ParsedStatement.nodes`: no function,
subquery, join or window among its nodes) whose FROM is one base table of the catalog with no
schema and no column aliases, whose select items are ``*`` and columns (aliased or not), and
which has no DISTINCT, GROUP BY, HAVING, WITH or other clause; anything else -- a view, a
missing table, a virtual table -- goes to the general planner. So does a statement the lane
fails to plan: the general planner plans it again and raises its own error, so every error is
exactly the general planner's.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.plan.access import plan_table_access
from sqlkv.sql.plan.element_uses import element_uses
from sqlkv.sql.plan.joins import needed_positions
from sqlkv.sql.plan.names import QueryFacts, Relation, expand_select_list, split_conjuncts
from sqlkv.sql.plan.select import QueryPlanner
from sqlkv.sql.plan.select_body import SelectBuilder
from sqlkv.sql.plan.table_memo import memo_table_scope

# The SELECT arguments the lane plans (an unset argument is None or an empty list)
_CLAUSES = frozenset({"expressions", "from_", "where", "order", "limit", "offset"})


def plan_simple(sel: exp.Expression, nodes: list[exp.Expression], facts: QueryFacts, catalog: Any,
                env: Any) -> Operator | None:
    """The general planner's plan of ``sel`` (a SELECT of shared-tree ``nodes`` whose facts are
    ``facts``), or None when it is not a simple SELECT (module docstring) or fails to plan."""
    table_node = _simple_table(sel)
    if table_node is None or _dollar_names(nodes, facts):
        return None
    planner = env.subqueries
    if type(planner) is not QueryPlanner or planner.catalog is not catalog or planner.cte_frames:
        return None
    name = table_node.name
    table = catalog.find_table(name)
    if table is None or table.virtual is not None:
        return None  # a view, or no such relation: the general planner reads or refuses it
    try:
        return _plan(sel, facts, table, table_node.alias or name, planner)
    except Exception:  # noqa: BLE001 - the general planner raises its own error for it
        return None


def _simple_table(sel: exp.Expression) -> exp.Table | None:
    """The FROM table of a SELECT the lane plans, else None."""
    if type(sel) is not exp.Select:
        return None
    args = sel.args
    for key in args.keys() - _CLAUSES:
        value = args[key]
        if value is not None and (type(value) is not list or value):
            return None  # DISTINCT, GROUP BY, a join, WITH, a hint...
    from_ = sel.args.get("from_")
    if from_ is None or from_.args.get("expressions"):
        return None
    table = from_.this
    if type(table) is not exp.Table or type(table.this) is not exp.Identifier:
        return None
    for key, value in table.args.items():
        if value is not None and key != "this" and key != "alias" and (type(value) is not list or value):
            return None  # a schema, a table sample, joins...
    alias = table.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        return None
    for item in sel.expressions:
        if isinstance(item, exp.Alias):
            item = item.this
        if type(item) is exp.Star:
            if any(v is not None for v in item.args.values()):
                return None  # * EXCEPT (...), * REPLACE (...)
        elif type(item) is not exp.Column or type(item.this) is not exp.Identifier \
                or item.args.get("db") is not None or item.args.get("catalog") is not None:
            return None
    return table


def _dollar_names(nodes: list[exp.Expression], facts: QueryFacts) -> bool:
    """Whether a column is named like ``$1``: sqlglot's default dialect parses that parameter as
    a column, which the general planner may turn into a lookup by a correlated value."""
    if facts.names is not None:
        return any(name.startswith("$") for name in facts.names)
    return any(type(n) is exp.Column and str(n.name).startswith("$") for n in nodes)


def _plan(sel: exp.Select, facts: QueryFacts, table: Any, alias: str, planner: QueryPlanner) -> Operator:
    """What `SelectBuilder.build` makes of a simple SELECT over one base table (its single-source,
    no-aggregate, no-window, no-DISTINCT branch), with the same calls."""
    scope = memo_table_scope(table, alias)
    columns = scope.columns
    builder = SelectBuilder(planner, sel, None)
    where_node = sel.args.get("where")
    where = split_conjuncts(where_node.this) if where_node is not None else []
    items = expand_select_list(sel.expressions, [Relation(alias, columns, 0)])
    order = builder._order_terms(items, columns)
    want_order = builder._want_order(order, items, scope) if order else None
    limit = builder._constant_limit() if not order or want_order is not None else None
    referenced = facts.names
    access = plan_table_access(
        table, alias, where, scope, planner.env, want_order=want_order,
        limit=None if where else limit, needed=needed_positions(referenced, alias, columns),
        elements=element_uses(sel, table) if referenced is not None else None, columns=columns)
    op = planner.filter(access.operator, list(access.remaining), scope)
    return builder._finish(op, scope, items, order, False, bool(access.ordered) and want_order is not None)
