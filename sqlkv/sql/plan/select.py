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
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope, table_scope
from sqlkv.sql.exec.cte import RecursiveUnion, WorkingSet, WorkingTable
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter, Limit, Sort, SortKey, Values
from sqlkv.sql.exec.setops import SetOp
from sqlkv.sql.expr import compile_expr, compile_predicate, infer_type
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.plan.joins import JoinSpec, Source, and_predicates
from sqlkv.sql.plan.names import LazySql, ident_name, int_literal
from sqlkv.sql.plan.select_body import SelectBuilder

SETOPS = (exp.Union, exp.Intersect, exp.Except)


def plan_query(query: exp.Expression, catalog: Any, env: Any, outer: Scope | None = None) -> Operator:
    """Plans any query expression (SELECT, set operation, VALUES, with CTEs) into an operator."""
    planner = env.subqueries if isinstance(env.subqueries, QueryPlanner) else None
    if planner is None or planner.catalog is not catalog:
        planner = QueryPlanner(catalog, env)
        env.subqueries = planner
    mark = len(planner.subplans)
    op = planner.plan(query, outer)
    subplans = planner.subplans[mark:]
    del planner.subplans[mark:]
    return WithSubqueries(op, subplans) if subplans else op


@dataclass
class CteDef:
    name: str
    node: exp.CTE
    recursive: bool
    working: tuple[WorkingSet, list[Column]] | None = None  # set while planning its own body


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


class QueryPlanner:
    """Plans queries for one statement; also the SubqueryPlanner the expression compiler calls."""

    def __init__(self, catalog: Any, env: Any) -> None:
        self.catalog = catalog
        self.env = env
        self.cte_frames: list[dict[str, CteDef]] = []
        self.subplans: list[Operator] = []  # subqueries planned for expressions, for EXPLAIN

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
            return self.plan_values(query, outer)
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

    def _sources(self, sel: exp.Select, outer: Scope | None) -> tuple[list[Source], list[JoinSpec | None]]:
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is None:
            if sel.args.get("joins"):
                raise ProgrammingError("JOIN without FROM")
            return [], []
        items: list[tuple[exp.Expression, JoinSpec | None]] = self._flatten(from_.this, allow_outer=True)
        for extra in from_.expressions or []:  # FROM a, b in some sqlglot shapes
            items.append((extra, JoinSpec("cross")))
        for join in sel.args.get("joins") or []:
            spec = self._join_spec(join)
            nested = self._flatten(join.this, allow_outer=True)
            if len(nested) > 1 and (spec.kind not in ("inner", "cross")
                                    or any(s.kind not in ("inner", "cross") for _, s in nested[1:])):
                # an outer join around a parenthesized join: plan the group as one source
                items.append((_NestedJoin(join.this), spec))
                continue
            items.append((nested[0][0], spec))
            items.extend(nested[1:])
        sources = [self._source(node, outer) for node, _ in items]
        joins: list[JoinSpec | None] = [None] + [spec for _, spec in items[1:]]
        seen: set[str] = set()
        for src in sources:
            key = src.alias.lower()
            if not key:
                continue
            if key in seen:
                raise ProgrammingError(f'table name "{src.alias}" specified more than once')
            seen.add(key)
        return sources, joins

    def _flatten(self, node: exp.Expression,
                 allow_outer: bool = False) -> list[tuple[exp.Expression, JoinSpec | None]]:
        """``(a JOIN b ON ...)`` in FROM -> its tables with their join specs.

        Flattening is exact for inner joins anywhere and for any join as the first FROM item
        (joins are left-deep); outer joins nested on the right side of a join are refused.
        """
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table) \
                and node.this.args.get("joins") and node.args.get("alias") is None:
            table = node.this
            inner = table.copy()
            inner.set("joins", None)
            out: list[tuple[exp.Expression, JoinSpec | None]] = self._flatten(inner, allow_outer)
            for join in table.args["joins"]:
                spec = self._join_spec(join)
                if spec.kind not in ("inner", "cross") and not allow_outer:
                    raise NotSupportedError("outer joins inside a parenthesized join are not supported")
                nested = self._flatten(join.this)
                out.append((nested[0][0], spec))
                out.extend(nested[1:])
            return out
        return [(node, None)]

    @staticmethod
    def _join_spec(join: exp.Join) -> JoinSpec:
        side = (join.side or "").lower()
        kind_word = (join.kind or "").lower()
        if side in ("left", "right", "full"):
            kind = side
        elif kind_word == "cross":
            kind = "cross"
        elif kind_word == "outer":
            kind = "full"
        else:
            kind = "inner"
        using = join.args.get("using")
        names = [ident_name(u) for u in using] if using else None
        natural = (join.method or "").lower() == "natural"
        on = join.args.get("on")
        return JoinSpec(kind, on, names, natural)

    def _source(self, node: exp.Expression, outer: Scope | None) -> Source:
        if isinstance(node, exp.Table):
            return self._table_source(node, outer)
        if isinstance(node, _NestedJoin):
            # SELECT * over the parenthesized join; its columns keep their own tables' names
            select = exp.Select(expressions=[exp.Star()], from_=exp.From(this=node.join))
            op = self.plan(select, outer)
            return Source("", list(op.columns), operator=op)
        alias = node.args.get("alias")
        alias_name = ident_name(alias.this) if alias is not None and alias.this else ""
        col_names = [ident_name(c) for c in alias.columns] if alias is not None and alias.columns else None
        if isinstance(node, exp.Subquery):
            op = self.plan(node.this, outer)
            op = self._order_limit_outputs(op, node, outer) if (node.args.get("order") or node.args.get("limit")) else op
        elif isinstance(node, exp.Values):
            op = self.plan_values(node, outer)
        else:
            raise NotSupportedError(f"unsupported FROM item: {node.sql()[:80]}")
        return self._derived(op, alias_name or "subquery", col_names)

    def _derived(self, op: Operator, alias: str, col_names: list[str] | None) -> Source:
        if col_names is not None and len(col_names) > len(op.columns):
            raise ProgrammingError(f'"{alias}" has {len(op.columns)} columns available but '
                                   f"{len(col_names)} columns specified")
        cols = []
        for i, col in enumerate(op.columns):
            name = col_names[i] if col_names is not None and i < len(col_names) else col.name
            cols.append(Column(name, alias, col.type, col.hidden))
        return Source(alias, cols, operator=op)

    def _table_source(self, node: exp.Table, outer: Scope | None) -> Source:
        name = node.name
        db = node.args.get("db")
        full = f"{ident_name(db)}.{name}" if db is not None else name
        alias = node.alias or name
        alias_node = node.args.get("alias")
        col_names = [ident_name(c) for c in alias_node.columns] if alias_node is not None and alias_node.columns else None
        if db is None:
            cte = self._find_cte(name)
            if cte is not None:
                return self._cte_source(cte, alias, col_names, outer)
        table = self.catalog.find_table(full)
        if table is None:
            view = self.catalog.get_view(full) if hasattr(self.catalog, "get_view") else None
            if view is not None:
                return self._view_source(view, alias, col_names)
            table = self.catalog.get_table(full)  # raises 'relation "x" does not exist'
        cols = table_scope(table, alias)
        if col_names:
            visible = [i for i, c in enumerate(cols) if not c.hidden]
            for pos, new in zip(visible, col_names):
                c = cols[pos]
                cols[pos] = Column(new, c.table, c.type, c.hidden)
        return Source(alias, cols, table=table)

    def _view_source(self, view: Any, alias: str, col_names: list[str] | None) -> Source:
        ast = parse_statement(view.query_sql).ast
        saved, self.cte_frames = self.cte_frames, []  # a view sees only the catalog
        try:
            op = self.plan(ast, None)
        finally:
            self.cte_frames = saved
        names = col_names or getattr(view, "columns", None) or getattr(view, "column_names", None)
        return self._derived(op, alias, list(names) if names else None)

    # -- CTEs ------------------------------------------------------------------------------------

    def _find_cte(self, name: str) -> CteDef | None:
        lname = name.lower()
        for frame in reversed(self.cte_frames):
            if lname in frame:
                return frame[lname]
        return None

    def _cte_source(self, cte: CteDef, alias: str, col_names: list[str] | None,
                    outer: Scope | None) -> Source:
        if cte.working is not None:  # a self-reference inside its recursive member
            working, cols = cte.working
            op: Operator = WorkingTable(cte.name, cols, working)
            return self._derived(op, alias, col_names)
        body = cte.node.this
        alias_node = cte.node.args.get("alias")
        cte_cols = [ident_name(c) for c in alias_node.columns] if alias_node is not None and alias_node.columns else None
        # Plan the body with only the frames visible at its definition (plus itself if recursive).
        if cte.recursive and isinstance(body, exp.Union) and _references(body.expression, cte.name):
            op = self._plan_recursive(cte, body, cte_cols, outer)
        else:
            op = self._plan_cte_body(cte, body, outer)
        if cte_cols is not None:
            op_src = self._derived(op, cte.name, cte_cols)
            op = _Renamed(op, op_src.columns)
        return self._derived(op, alias, col_names)

    def _plan_cte_body(self, cte: CteDef, body: exp.Expression, outer: Scope | None) -> Operator:
        frames = self._frames_before(cte)
        saved, self.cte_frames = self.cte_frames, frames
        try:
            return self.plan(body, outer)
        finally:
            self.cte_frames = saved

    def _frames_before(self, cte: CteDef) -> list[dict[str, CteDef]]:
        """CTE frames visible inside ``cte``'s body: outer frames, earlier siblings."""
        out: list[dict[str, CteDef]] = []
        for frame in self.cte_frames:
            if cte.name in frame and frame[cte.name] is cte:
                names = list(frame)
                cut = names.index(cte.name)
                visible = {n: frame[n] for n in names[:cut + (1 if cte.recursive else 0)]}
                out.append(visible)
                return out
            out.append(frame)
        return out

    def _plan_recursive(self, cte: CteDef, body: exp.Union, cte_cols: list[str] | None,
                        outer: Scope | None) -> Operator:
        base = self._plan_cte_body(cte, body.this, outer)
        names = cte_cols or [c.name for c in base.columns]
        if len(names) != len(base.columns):
            raise ProgrammingError(f'recursive query "{cte.name}" column count mismatch')
        cols = [Column(n, cte.name, c.type) for n, c in zip(names, base.columns)]
        working = WorkingSet()
        cte.working = (working, cols)
        try:
            recursive = self._plan_cte_body(cte, body.expression, outer)
        finally:
            cte.working = None
        if len(recursive.columns) != len(cols):
            raise ProgrammingError(f'recursive query "{cte.name}" column count mismatch')
        distinct = body.args.get("distinct") is not False
        return RecursiveUnion(cte.name, base, recursive, working, distinct, cols)

    # -- SELECT ----------------------------------------------------------------------------------

    def plan_select(self, sel: exp.Select, outer: Scope | None) -> Operator:
        return SelectBuilder(self, sel, outer).build()


class WithSubqueries(Operator):
    """The plan's root plus the subqueries its expressions run, so EXPLAIN can show them."""

    def __init__(self, child: Operator, subplans: list[Operator]) -> None:
        self.child = child
        self.subplans = subplans
        self.columns = child.columns

    def rows(self, ctx: ExecContext):
        return self.child.rows(ctx)

    def explain(self, ctx: ExecContext | None = None, indent: int = 0) -> list[str]:
        lines = self.child.explain(ctx, indent)
        for i, sub in enumerate(self.subplans, 1):
            kind = "correlated" if getattr(sub, "correlated", False) else "uncorrelated"
            lines.append("  " * indent + f"subquery {i} ({kind}):")
            lines.extend(sub.explain(ctx, indent + 1))
        return lines

    def describe(self) -> str:
        return self.child.describe()


class _NestedJoin:
    """Marks a parenthesized join that must be planned as one FROM source."""

    def __init__(self, join: exp.Expression) -> None:
        self.join = join


class _Renamed(Operator):
    """Same rows, different column names (a CTE's declared column list)."""

    def __init__(self, child: Operator, columns: list[Column]) -> None:
        self.child = child
        self.columns = columns

    def children(self) -> list[Operator]:
        return self.child.children()

    def rows(self, ctx: ExecContext):
        return self.child.rows(ctx)

    def describe(self) -> str:
        return self.child.describe()


def _nulls_first(term: exp.Ordered) -> bool | None:
    nf = term.args.get("nulls_first")
    if nf is None:
        return None
    return bool(nf)


def _references(node: exp.Expression, name: str) -> bool:
    lname = name.lower()
    return any(t.name.lower() == lname and not t.args.get("db") for t in node.find_all(exp.Table))
