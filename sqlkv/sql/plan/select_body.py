"""The body of one SELECT: FROM/WHERE, grouping, windows, projection, DISTINCT, ORDER BY, LIMIT.

See the walk-through in plan/select.py. `SelectBuilder` holds the state of planning one
``exp.Select``: the select items, the ORDER BY terms resolved against them, and the scope the
next operator's expressions compile against (it changes after aggregation and windows).
"""

from __future__ import annotations

import operator as pyop
from typing import TYPE_CHECKING

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.aggregate import HashAggregate
from sqlkv.sql.expr import compile_predicate, compile_typed
from sqlkv.sql.expr.compile import local_column
from sqlkv.sql.expr.env import column_parts
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Distinct, Project, Slice, Sort, SortKey
from sqlkv.sql.plan.aggregates import GroupingRewriter, contains_aggregate
from sqlkv.sql.plan.joins import FromPlanner
from sqlkv.sql.plan.windows import plan_windows
from sqlkv.sql.plan.names import (LazySql, OrderTerm, Relation, SelectItem, column_refs, expand_select_list,
                                  int_literal, query_facts, split_conjuncts)
from sqlkv.sql.plan.grouping_sets import expand_grouping, has_grouping_sets
from sqlkv.sql.exec.distinct_on import DistinctOn
from sqlkv.sql.exec.aggregate_more import GroupingSetsAggregate

if TYPE_CHECKING:
    from sqlkv.sql.plan.select import QueryPlanner


def substitute_aliases(node: exp.Expression, items: list[SelectItem],
                       input_names: set[str]) -> exp.Expression:
    """Unqualified names that are output aliases but not input columns -> the aliased expression.

    SQLite lets HAVING and ORDER BY expressions use select-list aliases (``HAVING n > 1``).
    """
    aliases = {it.name.lower(): it.node for it in items
               if it.node is not None and it.name.lower() not in input_names}
    if not aliases:
        return node
    hits = [c for c in column_refs(node) if not c.table and c.name.lower() in aliases]
    if not hits:
        return node
    node = node.copy()
    if isinstance(node, exp.Column):
        return aliases[node.name.lower()].copy()
    for col in column_refs(node):
        if not col.table and col.name.lower() in aliases:
            col.replace(aliases[col.name.lower()].copy())
    return node


def _has_window(node: exp.Expression) -> bool:
    return any(isinstance(n, exp.Window) for n in node.walk())


class SelectBuilder:
    def __init__(self, planner: QueryPlanner, sel: exp.Select, outer: Scope | None) -> None:
        self.planner = planner
        self.sel = sel
        self.outer = outer

    # -- main ------------------------------------------------------------------------------------

    def build(self) -> Operator:
        p = self.planner
        sel = self.sel
        sources, joins = p._sources(sel, self.outer)
        fp = FromPlanner(sources, joins, self.outer, p.env)
        where_node = sel.args.get("where")
        where = split_conjuncts(where_node.this) if where_node is not None else []
        # (an aggregate in WHERE is reported by the expression compiler)
        fp.prepare(where)
        facts = p.known_facts.pop(id(sel), None) or query_facts(sel)  # the one walk of the whole query
        fp.set_referenced(sel, facts.names)
        if fp.merged_values:
            self.sel = sel = self._merge_using(sel, fp)
        relations = []
        for src, off in zip(sources, fp.offsets):
            rel = Relation(src.alias, src.columns, off)
            relations.append((rel, src.merged))
        items = self._expand(relations, fp)
        group_node = sel.args.get("group")
        having_node = sel.args.get("having")
        input_columns = [c for s in sources for c in s.columns]
        order = self._order_terms(items, input_columns)
        # without calls or OVER anywhere in the query no item can aggregate or window
        aggregating = bool(group_node) or having_node is not None or facts.calls and (any(
            it.node is not None and contains_aggregate(it.node) for it in items) or any(
            t.node is not None and contains_aggregate(t.node) for t in order))
        windowing = facts.windows and (any(it.node is not None and _has_window(it.node) for it in items) or any(
            t.node is not None and _has_window(t.node) for t in order))
        distinct = sel.args.get("distinct") is not None
        on_terms: list[OrderTerm] = []
        if distinct and sel.args["distinct"].args.get("on") is not None:
            on_terms = self._distinct_on_terms(sel.args["distinct"].args["on"], items, input_columns)
            # DISTINCT ON terms travel with ORDER BY's through aggregation and windows
            order = order + on_terms
        want_order = None
        if order and not aggregating and not windowing and len(sources) == 1 \
                and sources[0].table is not None:
            want_order = self._want_order(order, items, fp.single_scope())
        limit_hint = None
        # The LIMIT can be pushed into the scan when nothing between them drops or reorders rows:
        # WHERE conjuncts the spans do not enforce come back as `remaining` and block it there.
        if not aggregating and not distinct and not windowing and len(sources) == 1 \
                and (not order or want_order is not None):
            limit_hint = self._constant_limit()
        fr = fp.plan(want_order, limit_hint)
        op = p.filter(fr.operator, fr.remaining, fr.scope)
        scope = fr.scope
        if aggregating:
            op, scope, items, order = self._aggregate(op, scope, items, order, group_node, having_node)
        if windowing:
            op, scope, items, order = plan_windows(p, op, scope, items, order, sel.args.get("windows"))
        if on_terms:
            order, on_terms = order[:len(order) - len(on_terms)], order[len(order) - len(on_terms):]
        return self._finish(op, scope, items, order, distinct, fr.ordered and want_order is not None, on_terms)

    def _distinct_on_terms(self, on: exp.Expression, items: list[SelectItem],
                           input_columns: list[Column]) -> list[OrderTerm]:
        nodes = on.expressions if isinstance(on, exp.Tuple) else [on]
        input_names = {c.name.lower() for c in input_columns}
        out = []
        for node in nodes:
            item = self._match_item(node, items, input_names)
            if item is None:
                node = substitute_aliases(node, items, input_names)
            out.append(OrderTerm(item, node, False, None, LazySql(node)))
        return out

    @staticmethod
    def _merge_using(sel: exp.Select, fp: FromPlanner) -> exp.Select:
        """A copy of ``sel`` whose unqualified FULL/RIGHT JOIN USING columns read the merged value."""
        sel = sel.copy()
        sel.set("expressions", [fp.merge_using(n) for n in sel.expressions])
        for key in ("group", "having", "order"):
            clause = sel.args.get(key)
            if clause is not None:
                if key == "having":
                    clause.set("this", fp.merge_using(clause.this))
                else:
                    clause.set("expressions", [fp.merge_using(n) for n in clause.expressions])
        return sel

    def _expand(self, relations: list[tuple[Relation, set[int]]], fp: FromPlanner) -> list[SelectItem]:
        # `*` shows a FULL/RIGHT JOIN USING column once, with the merged value
        merged_at = {}
        for name, (j, k) in fp.using_pref.items():
            if name in fp.merged_values:
                merged_at[relations[j][0].offset + k] = fp.merged_values[name]
        rels = []
        for rel, merged in relations:
            if merged:
                cols = [Column(c.name, c.table, c.type, c.hidden or i in merged)
                        for i, c in enumerate(rel.columns)]
                rels.append(Relation(rel.alias, cols, rel.offset))
            else:
                rels.append(rel)
        # `*` skips USING-merged columns, `t.*` keeps them (expanded from the real relation)
        out: list[SelectItem] = []
        real = {rel.alias.lower(): rel for rel, _ in relations}
        for node in self.sel.expressions:
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                rel = real.get(node.table.lower())
                if rel is not None:
                    out.extend(expand_select_list([node], [rel]))
                    continue
                owned = [SelectItem(c.name, index=r.offset + i, table=c.table)
                         for r, _ in relations for i, c in enumerate(r.columns)
                         if not c.hidden and (c.table or "").lower() == node.table.lower()]
                if owned:  # t.* for a table inside a parenthesized join
                    out.extend(owned)
                    continue
            for it in expand_select_list([node], rels):
                if it.index in merged_at and isinstance(node, exp.Star):
                    it = SelectItem(it.name, node=merged_at[it.index].copy())
                out.append(it)
        return out

    # -- ORDER BY ----------------------------------------------------------------------------------

    def _order_terms(self, items: list[SelectItem], input_columns: list[Column]) -> list[OrderTerm]:
        order = self.sel.args.get("order")
        if order is None:
            return []
        terms = []
        input_names = {c.name.lower() for c in input_columns}
        for term in order.expressions:
            node = term.this
            desc = bool(term.args.get("desc"))
            nf = term.args.get("nulls_first")
            nulls_first = None if nf is None else bool(nf)
            item = self._match_item(node, items, input_names)
            if item is None:
                node = substitute_aliases(node, items, input_names)
            terms.append(OrderTerm(item, node, desc, nulls_first, LazySql(term)))
        return terms

    @staticmethod
    def _match_item(node: exp.Expression, items: list[SelectItem], input_names: set[str]) -> int | None:
        k = int_literal(node)
        if k is not None:
            if not 1 <= k <= len(items):
                raise ProgrammingError(f"ORDER BY term out of range - should be between 1 and {len(items)}")
            return k - 1
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) and not column_parts(node)[1]:
            lname = column_parts(node)[0].lower()
            for i, it in enumerate(items):
                if it.name.lower() == lname:
                    return i  # an output name wins over an input column (SQLite, PostgreSQL)
        for i, it in enumerate(items):
            if it.node is not None and it.node == node:
                return i
        return None

    def _want_order(self, order: list[OrderTerm], items: list[SelectItem],
                    scope: Scope) -> list[tuple[int, bool]] | None:
        """The (table position, descending) pairs the ORDER BY asks of the only table, whose
        columns ``scope`` resolves (its outer scopes are not looked at); None when a term is
        not one of its columns."""
        want = []
        for t in order:
            if t.nulls_first is not None and t.nulls_first != (not t.desc):
                return None
            col: int | None = None
            if t.item is not None:
                it = items[t.item]
                if it.index is not None:
                    col = it.index
                elif isinstance(it.node, exp.Column):
                    col = self._find(scope, it.node)
            elif isinstance(t.node, exp.Column):
                col = self._find(scope, t.node)
            if col is None:
                return None
            want.append((col, t.desc))
        return want

    @staticmethod
    def _find(scope: Scope, node: exp.Column) -> int | None:
        try:
            name, table = column_parts(node)
            return scope.find(name, table or None)
        except ProgrammingError:
            return None

    def _constant_limit(self) -> int | None:
        """The rows the scan must give for a written ``LIMIT k [OFFSET m]``: ``k + m`` (the
        Limit above it still skips the ``m``); None when either is not a constant."""
        lim = self.sel.args.get("limit")
        if lim is None:
            return None
        k = int_literal(lim.args.get("expression")) if lim.args.get("expression") is not None else None
        if k is None or k < 0:
            return None
        off = self.sel.args.get("offset")
        if off is None:
            return k
        m = int_literal(off.args.get("expression")) if off.args.get("expression") is not None else None
        return k + m if m is not None and m >= 0 else None

    # -- aggregation -------------------------------------------------------------------------------

    def _aggregate(self, op: Operator, scope: Scope, items: list[SelectItem], order: list[OrderTerm],
                   group_node: exp.Group | None, having_node: exp.Having | None):
        p = self.planner
        key_nodes = list(group_node.expressions) if group_node else []
        sets = None
        if has_grouping_sets(key_nodes):
            key_nodes, sets = expand_grouping(key_nodes)
        keys = [self._group_key(k, items, scope) for k in key_nodes]
        for k in keys:
            if contains_aggregate(k):
                raise ProgrammingError("aggregate functions are not allowed in GROUP BY")
        rw = GroupingRewriter(scope, keys)
        new_items = []
        for it in items:
            node = it.node if it.node is not None else self._index_column(scope, it)
            new_items.append(SelectItem(it.name, node=rw.rewrite(node), table=it.table,
                                        display=it.display or node))
        having = None
        if having_node is not None:
            input_names = {c.name.lower() for c in scope.columns}
            having = rw.rewrite(substitute_aliases(having_node.this, items, input_names))
        new_order = [OrderTerm(t.item, rw.rewrite(t.node) if t.item is None else t.node, t.desc,
                               t.nulls_first, t.text) for t in order]
        key_fns = [p.expr(k, scope) for k in keys]
        specs = rw.specs(lambda n: p.expr(n, scope), lambda n: p.expr(n, Scope([], self.outer)),
                         lambda n: compile_predicate(n, scope, p.env))
        out_cols = rw.output_columns()
        if sets is None:
            agg = HashAggregate(op, key_fns, specs, out_cols, [LazySql(k) for k in keys])
        else:
            agg = GroupingSetsAggregate(op, key_fns, specs, out_cols, [LazySql(k) for k in keys], sets)
        out_scope = Scope(out_cols, self.outer)
        result: Operator = agg
        if having is not None:
            result = p.filter(result, [having], out_scope)
        return result, out_scope, new_items, new_order

    @staticmethod
    def _index_column(scope: Scope, it: SelectItem) -> exp.Expression:
        col = scope.columns[it.index]
        return exp.column(col.name, col.table) if col.table else exp.column(col.name)

    @staticmethod
    def _group_key(node: exp.Expression, items: list[SelectItem], scope: Scope) -> exp.Expression:
        k = int_literal(node)
        if k is not None:
            if not 1 <= k <= len(items):
                raise ProgrammingError(f"GROUP BY term out of range - should be between 1 and {len(items)}")
            it = items[k - 1]
            if it.node is None:
                return SelectBuilder._index_column(scope, it)
            if contains_aggregate(it.node):
                raise ProgrammingError("aggregate functions are not allowed in GROUP BY")
            return it.node
        if isinstance(node, exp.Column) and not node.table:
            try:
                found = scope.find(node.name)
            except ProgrammingError:
                found = None
            if found is None:
                for it in items:
                    if it.name.lower() == node.name.lower() and it.node is not None:
                        return it.node
        return node

    # -- projection, DISTINCT, ORDER BY, LIMIT ------------------------------------------------------

    def _hidden_term(self, t: OrderTerm, fns: list, cols: list, texts: list, scope: Scope) -> int:
        """The row position of a term: its select item, else a hidden computed column."""
        if t.item is not None:
            return t.item
        fns.append(self.planner.expr(t.node, scope))
        cols.append(Column(f"__order{len(cols)}", None, None, hidden=True))
        texts.append(LazySql(t.node))
        return len(fns) - 1

    def _finish(self, op: Operator, scope: Scope, items: list[SelectItem], order: list[OrderTerm],
                distinct: bool, already_ordered: bool, on_terms: list[OrderTerm] | None = None) -> Operator:
        p = self.planner
        fns, cols, texts = [], [], []
        for it in items:
            if it.node is None:
                fns.append(pyop.itemgetter(it.index))
                src = scope.columns[it.index]
                cols.append(Column(it.name, src.table, src.type))
                texts.append(f"{src.table}.{src.name}" if src.table else src.name)
            elif isinstance(it.node, exp.Column):  # its function and type from one compile
                compiled = local_column(it.node, scope) or compile_typed(it.node, scope, p.env)
                fns.append(compiled.fn)
                cols.append(Column(it.name, None, compiled.type))
                texts.append(LazySql(it.display or it.node))
            else:
                fns.append(p.expr(it.node, scope))
                cols.append(Column(it.name, None, p.type_of(it.node, scope)))
                texts.append(LazySql(it.display or it.node))
        width = len(items)
        keys: list[SortKey] = []
        key_texts: list[str] = []
        for t in order:
            # with DISTINCT, SQLite accepts terms outside the select list (first row wins)
            keys.append(SortKey(self._hidden_term(t, fns, cols, texts, scope), t.desc, t.nulls_first))
            key_texts.append(t.text)
        hidden = {id(t): k.index for t, k in zip(order, keys)}
        on_positions = []
        for t in on_terms or []:
            same = next((o for o in order if o.item is None and t.item is None and o.node == t.node), None)
            on_positions.append(hidden[id(same)] if same is not None else self._hidden_term(t, fns, cols, texts, scope))
        result: Operator = Project(op, cols, fns, texts)
        if on_terms:
            lead = {k.index for k in keys[:len(on_positions)]}
            if keys and (len(keys) < len(on_positions) or lead != set(on_positions)):
                raise ProgrammingError("SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
            if keys and not already_ordered:
                result = Sort(result, keys, key_texts)
            result = DistinctOn(result, on_positions, ", ".join(str(t.text) for t in on_terms))
            result = p._limit(result, self.sel, self.outer)
            return Slice(result, width) if len(cols) > width else result
        if distinct:
            result = Distinct(result, width if len(cols) > width else None)
        if keys and not already_ordered:
            result = Sort(result, keys, key_texts, p._sort_limit(self.sel, self.outer))
        result = p._limit(result, self.sel, self.outer)
        if len(cols) > width:
            result = Slice(result, width)
        return result
