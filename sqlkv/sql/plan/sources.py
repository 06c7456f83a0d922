"""Planning the FROM clause: base tables, views, derived tables, CTEs (recursive ones too).

``SELECT ... FROM orders o JOIN (SELECT ...) AS t ON ... , recent`` becomes a list of
`Source`s (each an operator with its columns and alias) and the `JoinSpec` between each and the
ones before, which `FromPlanner` (joins.py) then orders and joins. A table source is planned
later, once the WHERE conjuncts that constrain it are known (its access path); a view or a
derived table is planned as a subquery; a CTE name resolves to its definition in the nearest
WITH frame, planned on each use (a recursive CTE becomes a `RecursiveUnion` over a working
table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, Scope, table_scope
from sqlkv.sql.exec.cte import RecursiveUnion, WorkingSet, WorkingTable
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Renamed
from sqlkv.sql.parse import parse_statement
from sqlkv.sql.plan.joins import JoinSpec, Source
from sqlkv.sql.plan.names import ident_name
from sqlkv.sql.plan.table_functions import plan_table_function


@dataclass
class CteDef:
    name: str
    node: exp.CTE
    recursive: bool
    working: tuple[WorkingSet, list[Column]] | None = None  # set while planning its own body


class _NestedJoin:
    """Marks a parenthesized join that must be planned as one FROM source."""

    def __init__(self, join: exp.Expression) -> None:
        self.join = join


class SourcePlanning:
    """The FROM-clause half of `QueryPlanner` (select.py), which inherits these methods."""

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
        sources: list[Source] = []
        for node, _ in items:
            if isinstance(node, exp.Lateral) or _table_function(node) is not None:
                sources.append(self._lateral_source(node, sources, outer))
            else:
                sources.append(self._source(node, outer))
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

    def _lateral_source(self, node: exp.Expression, before: list[Source], outer: Scope | None) -> Source:
        """``LATERAL (SELECT ...)`` or a table function (``generate_series(1, t.n)``): planned with
        the preceding FROM items' columns as its enclosing scope; the join sets that scope's row."""
        scope = Scope([c for src in before for c in src.columns], outer)
        alias = node.args.get("alias")
        alias_name = ident_name(alias.this) if alias is not None and alias.this else ""
        col_names = [ident_name(c) for c in alias.columns] if alias is not None and alias.columns else None
        inner = node.this if isinstance(node, exp.Lateral) else node
        func = _table_function(inner)
        if func is not None:
            op = plan_table_function(func, scope, self.env, alias_name, _with_ordinality(node))
            src = self._derived(op, alias_name or op.columns[0].name, col_names)
        elif isinstance(inner, exp.Subquery):
            op = self.plan(inner.this, scope)
            if inner.args.get("order") or inner.args.get("limit"):
                op = self._order_limit_outputs(op, inner, scope)
            src = self._derived(op, alias_name or "subquery", col_names)
        else:
            raise NotSupportedError(f"unsupported LATERAL item: {inner.sql()[:80]}")
        src.lateral_cell = scope.cell
        return src

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
        scan_columns = table_scope(table, alias)
        cols = scan_columns
        if col_names:
            cols = list(scan_columns)
            visible = [i for i, c in enumerate(cols) if not c.hidden]
            for pos, new in zip(visible, col_names):
                c = cols[pos]
                cols[pos] = Column(new, c.table, c.type, c.hidden)
        return Source(alias, cols, table=table, scan_columns=scan_columns)

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
            op = Renamed(op, op_src.columns)
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


def _with_ordinality(node: exp.Expression) -> bool:
    """``generate_series(...) WITH ORDINALITY``: a second column numbering the rows from 1."""
    inner = node.this if isinstance(node, exp.Lateral) else None
    return bool(node.args.get("ordinality") or (inner is not None and inner.args.get("ordinality")))


def _table_function(node: exp.Expression) -> exp.Expression | None:
    """The function call of a table-function FROM item (``generate_series(...)``), else None."""
    if isinstance(node, exp.Lateral):
        node = node.this
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Func):
        return node.this
    if isinstance(node, exp.Func) and not isinstance(node, exp.Subquery):
        return node
    return None


def _references(node: exp.Expression, name: str) -> bool:
    lname = name.lower()
    return any(t.name.lower() == lname and not t.args.get("db") for t in node.find_all(exp.Table))
