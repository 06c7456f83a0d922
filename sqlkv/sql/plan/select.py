"""SELECT planning: a query AST -> a tree of operators.

Walk-through for ``SELECT dept, count(*) AS n FROM emp WHERE age > ? GROUP BY dept ORDER BY n
DESC LIMIT 3``:

1. FROM: `FromPlanner` (plan/joins.py) builds the sources; WHERE is split on AND and each
   conjunct goes to the relation it references -- ``age > ?`` to ``plan_table_access(emp)``,
   which turns what it can into key spans and returns the rest as ``remaining`` (a `Filter`).
2. The select list is expanded (``*``), ORDER BY terms are resolved to select items (ordinal,
   output name, or same expression) or become extra hidden columns.
3. Aggregation: `GroupingRewriter` (plan/aggregates.py) collects ``count(*)`` and the key
   ``dept`` into a `HashAggregate`; the select list, HAVING and ORDER BY are rewritten over
   its output row. Window functions are computed next (plan/windows.py).
4. `Project` computes the output row plus sort keys; then `Distinct`, `Sort` (a top-N sort
   when a LIMIT is known; skipped when the access path already yields the order), `Limit`
   (its expressions evaluated per execution: they may be parameters) and `Slice` dropping
   the sort keys.

`QueryPlanner` also implements the expression compiler's ``SubqueryPlanner``: a subquery is
planned with the enclosing scope as ``outer``; whether it actually used an outer column is
recorded on the operator as ``correlated``. CTEs, views and derived tables are planned here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter, Limit, Sort, SortKey, Values, WithSubqueries
from sqlkv.sql.exec.setops import SetOp
from sqlkv.sql.expr import compile_expr, compile_predicate, infer_type
from sqlkv.sql.plan.joins import and_predicates
from sqlkv.sql.plan.names import LazySql, QueryFacts, int_literal
from sqlkv.sql.plan.select_body import SelectBuilder
from sqlkv.sql.plan.sources import CteDef, SourcePlanning
from sqlkv.sql.types import INT_MAX

SETOPS = (exp.Union, exp.Intersect, exp.Except)


def plan_query(query: exp.Expression, catalog: Any, env: Any, outer: Scope | None = None,
               facts: QueryFacts | None = None) -> Operator:
    """Plans any query expression (SELECT, set operation, VALUES, with CTEs) into an operator;
    ``facts``: ``query_facts(query)`` when the caller knows them already."""
    planner = env.subqueries if isinstance(env.subqueries, QueryPlanner) else None
    if planner is None or planner.catalog is not catalog:
        planner = QueryPlanner(catalog, env)
        env.subqueries = planner
    if facts is not None:
        planner.known_facts[id(query)] = facts
    mark = len(planner.subplans)
    op = planner.plan(query, outer)
    subplans = planner.subplans[mark:]
    del planner.subplans[mark:]
    return WithSubqueries(op, subplans) if subplans else op


class _TrackingScope(Scope):
    """A view of an enclosing scope chain that records whether any column resolved in it."""

    def __init__(self, real: Scope, hits: list[bool]) -> None:
        self.columns = real.columns
        self.real = real
        self.cell = real.cell
        self.hits = hits
        self.outer = _TrackingScope(real.outer, hits) if real.outer is not None else None

    def find(self, name: str, table: str | None = None) -> int | None:
        idx = self.real.find(name, table)
        if idx is not None:
            self.hits[0] = True
        return idx


class QueryPlanner(SourcePlanning):
    """Plans queries for one statement; also the SubqueryPlanner the expression compiler calls."""

    def __init__(self, catalog: Any, env: Any) -> None:
        self.catalog = catalog
        self.env = env
        self.cte_frames: list[dict[str, CteDef]] = []
        self.subplans: list[Operator] = []  # subqueries planned for expressions, for EXPLAIN
        self.known_facts: dict[int, QueryFacts] = {}  # id(select) -> its facts (plan_query's)

    # -- compile helpers -----------------------------------------------------------------------

    def expr(self, node: exp.Expression, scope: Scope) -> Callable[[tuple], Any]:
        return compile_expr(node, scope, self.env)

    def pred(self, nodes: list[exp.Expression], scope: Scope) -> Callable[[tuple], bool] | None:
        return and_predicates([compile_predicate(n, scope, self.env) for n in nodes])

    def type_of(self, node: exp.Expression, scope: Scope) -> Any:
        try:
            return infer_type(node, scope)
        except Exception:  # noqa: BLE001 - a type is only a hint for output columns
            return None

    def filter(self, op: Operator, nodes: list[exp.Expression], scope: Scope) -> Operator:
        if not nodes:
            return op
        return Filter(op, self.pred(nodes, scope), LazySql(list(nodes)))

    # -- SubqueryPlanner -------------------------------------------------------------------------

    def plan_subquery(self, query: exp.Expression, outer: Scope) -> Operator:
        hits = [False]
        op = self.plan(query, _TrackingScope(outer, hits) if outer is not None else None)
        op.correlated = hits[0]  # type: ignore[attr-defined]
        self.subplans.append(op)
        return op

    # -- dispatch --------------------------------------------------------------------------------

    def plan(self, query: exp.Expression, outer: Scope | None) -> Operator:
        while isinstance(query, exp.Subquery) and not query.args.get("order") \
                and not query.args.get("limit"):
            query = query.this
        with_ = query.args.get("with_") or query.args.get("with")
        if with_ is not None:
            frame = {}
            for cte in with_.expressions:
                name = cte.alias_or_name.lower()
                frame[name] = CteDef(name, cte, bool(with_.args.get("recursive")))
            self.cte_frames.append(frame)
            try:
                return self._plan_body(query, outer)
            finally:
                self.cte_frames.pop()
        return self._plan_body(query, outer)

    def _plan_body(self, query: exp.Expression, outer: Scope | None) -> Operator:
        if isinstance(query, exp.Select):
            return self.plan_select(query, outer)
        if isinstance(query, SETOPS):
            return self.plan_setop(query, outer)
        if isinstance(query, exp.Values):
            # VALUES ... ORDER BY / LIMIT / OFFSET (standalone or in a subquery)
            return self._order_limit_outputs(self.plan_values(query, outer), query, outer)
        if isinstance(query, exp.Subquery):
            op = self.plan(query.this, outer)
            return self._order_limit_outputs(op, query, outer)
        raise NotSupportedError(f"unsupported query: {query.sql()[:80]}")

    # -- VALUES ----------------------------------------------------------------------------------

    def plan_values(self, node: exp.Values, outer: Scope | None) -> Operator:
        scope = Scope([], outer)
        rows: list[list[Callable[[tuple], Any]]] = []
        width = None
        for tup in node.expressions:
            items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            if width is None:
                width = len(items)
                if not width:
                    raise ProgrammingError("syntax error: a VALUES row needs at least one value")
            elif len(items) != width:
                raise ProgrammingError("VALUES lists must all be the same length")
            rows.append([self.expr(e, scope) for e in items])
        first = node.expressions[0]
        first_items = first.expressions if isinstance(first, exp.Tuple) else [first]
        cols = [Column(f"column{i + 1}", None, self.type_of(e, scope)) for i, e in enumerate(first_items)]
        return Values(cols, rows)

    # -- set operations --------------------------------------------------------------------------

    def plan_setop(self, node: exp.Expression, outer: Scope | None) -> Operator:
        left = self.plan(node.this, outer)
        right = self.plan(node.expression, outer)
        if len(left.columns) != len(right.columns):
            raise ProgrammingError("each UNION/INTERSECT/EXCEPT query must have the same number of columns")
        kind = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
        distinct = node.args.get("distinct") is not False
        cols = [Column(c.name, None, c.type) for c in left.columns]
        op: Operator = SetOp(kind, distinct, left, right, cols)
        return self._order_limit_outputs(op, node, outer)

    def _order_limit_outputs(self, op: Operator, node: exp.Expression, outer: Scope | None) -> Operator:
        """ORDER BY/LIMIT over a compound query: terms must name or number an output column."""
        order = node.args.get("order")
        if order is not None:
            keys, texts = [], []
            for term in order.expressions:
                idx = self._output_position(term.this, op.columns)
                keys.append(SortKey(idx, bool(term.args.get("desc")), _nulls_first(term)))
                texts.append(LazySql(term))
            op = Sort(op, keys, texts, self._sort_limit(node, outer))
        return self._limit(op, node, outer)

    @staticmethod
    def _output_position(node: exp.Expression, columns: list[Column]) -> int:
        k = int_literal(node)
        if k is not None:
            if not 1 <= k <= len(columns):
                raise ProgrammingError(f"ORDER BY term out of range - should be between 1 and {len(columns)}")
            return k - 1
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            for i, col in enumerate(columns):
                if col.name.lower() == node.name.lower():
                    return i
        text = node.sql()
        for i, col in enumerate(columns):
            if col.name == text:
                return i
        raise ProgrammingError(f"ORDER BY term does not match any column in the result set: {text}")

    # -- LIMIT / OFFSET ----------------------------------------------------------------------------

    def _count_fn(self, node: exp.Expression | None, outer: Scope | None,
                  what: str) -> Callable[[ExecContext], int | None] | None:
        if node is None:
            return None
        value_node = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
        if value_node is None:
            return None
        written = int_literal(value_node)
        if written is not None and written <= INT_MAX:  # LIMIT 10: its value, no expression to call
            return lambda ctx: written
        fn = self.expr(value_node, Scope([], outer))
        empty: tuple = ()

        def count(ctx: ExecContext) -> int | None:
            v = fn(empty)
            if v is None:
                return None
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, str):
                try:
                    v = int(v.strip())
                except ValueError:
                    raise DataError(f"{what} must be an integer, got {v!r}") from None
            if isinstance(v, bool) or not isinstance(v, int):
                raise DataError(f"{what} must be an integer, got {v!r}")
            return v
        return count

    def _limit_fns(self, node: exp.Expression, outer: Scope | None):
        limit = self._count_fn(node.args.get("limit"), outer, "LIMIT")
        offset = self._count_fn(node.args.get("offset"), outer, "OFFSET")
        return limit, offset

    def _sort_limit(self, node: exp.Expression, outer: Scope | None) -> Callable[[ExecContext], int | None] | None:
        limit, offset = self._limit_fns(node, outer)
        if limit is None:
            return None

        def needed(ctx: ExecContext) -> int | None:
            n = limit(ctx)
            if n is None or n < 0:
                return None
            off = offset(ctx) if offset is not None else 0
            return n + max(off or 0, 0)
        return needed

    def _limit(self, op: Operator, node: exp.Expression, outer: Scope | None) -> Operator:
        limit, offset = self._limit_fns(node, outer)
        if limit is None and offset is None:
            return op

        def lim(ctx: ExecContext) -> int | None:
            n = limit(ctx) if limit is not None else None
            return None if n is None or n < 0 else n

        def off(ctx: ExecContext) -> int:
            o = offset(ctx) if offset is not None else 0
            return max(o or 0, 0)
        parts: list = []
        if node.args.get("limit") is not None:
            parts.append(node.args["limit"].args["expression"])
        if node.args.get("offset") is not None:
            parts += ["offset", node.args["offset"].args["expression"]]
        return Limit(op, lim, off, LazySql(parts, " "))

    # -- FROM sources ------------------------------------------------------------------------------

    def plan_select(self, sel: exp.Select, outer: Scope | None) -> Operator:
        return SelectBuilder(self, sel, outer).build()


def _nulls_first(term: exp.Ordered) -> bool | None:
    nf = term.args.get("nulls_first")
    if nf is None:
        return None
    return bool(nf)
