"""Window planning: ``f(...) OVER (...)`` nodes -> one `Window` operator and ``__winN`` columns.

For ``SELECT x, sum(x) OVER (ORDER BY y) AS running FROM t ORDER BY running`` the select list
and ORDER BY are searched for `exp.Window` nodes (after aggregation, so windows may take
aggregates as arguments: those were already rewritten to ``__aggN``). Each becomes a
`WindowFunc` compiled against the current scope; the Window operator appends its values to
the row and the nodes are replaced by ``__win0``, ``__win1``, ... references.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.aggregate_spec import AggregateSpec
from sqlkv.sql.exec.jsonb_aggregates import JSONB_AGGREGATES
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.window import (OFFSET_FUNCS, RANKING, VALUE_FUNCS, Frame, FrameBound, Window,
                                   WindowFunc)
from sqlkv.sql.plan.aggregates import GroupingRewriter, aggregate_name
from sqlkv.sql.plan.names import QUERY_NODES, LazySql, OrderTerm, SelectItem, ident_name, int_literal
from sqlkv.sql.types import JSONB, SqlType

if TYPE_CHECKING:
    from sqlkv.sql.plan.select import QueryPlanner

FUNC_NAMES = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
              exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile",
              exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value",
              exp.LastValue: "last_value", exp.NthValue: "nth_value"}


def plan_windows(p: QueryPlanner, op: Operator, scope: Scope, items: list[SelectItem],
                 order: list[OrderTerm], named: list[exp.Window] | None = None,
                 ) -> tuple[Operator, Scope, list[SelectItem], list[OrderTerm]]:
    """``named`` are the query's ``WINDOW w AS (...)`` definitions."""
    definitions = {w.name.lower(): w for w in (named or [])}
    found: list[exp.Window] = []
    texts: dict[exp.Expression, int] = {}

    def rewrite(node: exp.Expression) -> exp.Expression:
        node = node.copy()
        if isinstance(node, exp.Window):
            return _ref(node)
        for w in [n for n in node.find_all(exp.Window) if not _inside_query(n, node)]:
            w.replace(_ref(w))
        return node

    def _ref(w: exp.Window) -> exp.Expression:
        text = w
        if text not in texts:
            texts[text] = len(found)
            found.append(w)
        return exp.column(f"__win{texts[text]}")

    new_items = [SelectItem(it.name, node=rewrite(it.node), table=it.table, display=it.display or it.node)
                 if it.node is not None else it for it in items]
    new_order = [OrderTerm(t.item, rewrite(t.node) if t.item is None and t.node is not None else t.node,
                     t.desc, t.nulls_first, t.text) for t in order]
    funcs = [_window_func(p, _resolve_named(w, definitions), scope) for w in found]
    cols = list(scope.columns) + [Column(f"__win{i}", None, _result_type(w), hidden=True) for i, w in enumerate(found)]
    new_scope = Scope(cols, scope.outer)
    return Window(op, funcs, cols), new_scope, new_items, new_order


def _result_type(w: exp.Window) -> SqlType | None:
    """The known result type of a window call: JSONB for jsonb_agg/jsonb_object_agg (issue 15)."""
    func = w.this.this if isinstance(w.this, exp.Filter) else w.this
    name = func.name.lower() if isinstance(func, exp.Anonymous) else ""
    return JSONB if name in JSONB_AGGREGATES else None


def _resolve_named(w: exp.Window, definitions: dict[str, exp.Window]) -> exp.Window:
    """``f() OVER w`` / ``OVER (w ORDER BY ...)`` -> a window with the named definition merged in."""
    alias = w.args.get("alias")
    if alias is None:
        return w
    base = definitions.get(ident_name(alias).lower())
    if base is None:
        raise ProgrammingError(f'window "{ident_name(alias)}" does not exist')
    merged = w.copy()
    merged.set("alias", None)
    for key in ("partition_by", "order", "spec"):
        if not merged.args.get(key) and base.args.get(key):
            merged.set(key, base.args[key].copy() if isinstance(base.args[key], exp.Expression)
                       else [e.copy() for e in base.args[key]])
    return merged


def _inside_query(node: exp.Expression, root: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, QUERY_NODES):
            return True
        parent = parent.parent
    return False


def _window_func(p: QueryPlanner, w: exp.Window, scope: Scope) -> WindowFunc:
    fnode = w.this
    partition = [p.expr(e, scope) for e in (w.args.get("partition_by") or [])]
    order_node = w.args.get("order")
    order_terms = order_node.expressions if order_node is not None else []
    order = [p.expr(t.this, scope) for t in order_terms]
    dirs = [(bool(t.args.get("desc")), None if t.args.get("nulls_first") is None
             else bool(t.args.get("nulls_first"))) for t in order_terms]
    frame = _frame(w.args.get("spec"), bool(order_terms))
    _check_range_offsets(p, frame, order_terms, scope)
    text = LazySql(w)
    name = FUNC_NAMES.get(type(fnode))
    if name is None and isinstance(fnode, exp.Anonymous):
        lname = fnode.name.lower()
        if lname in RANKING | OFFSET_FUNCS | VALUE_FUNCS:
            name = lname
    if name is not None:
        args, consts = _args(p, name, fnode, scope)
        return WindowFunc(name, args, partition, order, dirs, frame, None, text, consts)
    agg = aggregate_name(fnode)
    if agg is None:
        raise ProgrammingError(f"{fnode.sql()} is not a window or aggregate function")
    rw = GroupingRewriter(scope, [])
    rw._add_call(fnode, agg)
    spec: AggregateSpec = rw.specs(lambda n: p.expr(n, scope))[0]
    return WindowFunc("aggregate", [], partition, order, dirs, frame, spec, text)


def _const_int(p: QueryPlanner, node: exp.Expression | None, default: int, what: str) -> int:
    if node is None:
        return default
    k = int_literal(node)
    if k is None or k < 0:
        raise ProgrammingError(f"{what} must be a non-negative integer constant")
    return k


def _args(p: QueryPlanner, name: str, fnode: exp.Expression, scope: Scope) -> tuple[list[Any], list[Any]]:
    if name in ("lag", "lead"):
        arg = fnode.this if not isinstance(fnode, exp.Anonymous) else fnode.expressions[0]
        offset = fnode.args.get("offset")
        default = fnode.args.get("default")
        if isinstance(fnode, exp.Anonymous):
            rest = fnode.expressions[1:]
            offset = rest[0] if rest else None
            default = rest[1] if len(rest) > 1 else None
        args = [p.expr(arg, scope), None]
        if default is not None:
            args.append(p.expr(default, scope))
        return args, [_const_int(p, offset, 1, f"{name}() offset")]
    if name in ("first_value", "last_value"):
        return [p.expr(fnode.this, scope)], []
    if name == "nth_value":
        n = _const_int(p, fnode.args.get("offset"), 1, "nth_value() position")
        if n < 1:
            raise ProgrammingError("nth_value() position must be at least 1")
        return [p.expr(fnode.this, scope)], [n]
    if name == "ntile":
        n = _const_int(p, fnode.this, 1, "ntile() bucket count")
        if n < 1:
            raise ProgrammingError("ntile() bucket count must be positive")
        return [], [n]
    return [], []


def _frame(spec: exp.WindowSpec | None, ordered: bool) -> Frame:
    if spec is None:
        if ordered:
            return Frame(False, FrameBound(None, True), FrameBound(0, False))
        return Frame(False, FrameBound(None, True), FrameBound(None, False))
    kind = str(spec.args.get("kind") or "range").lower()
    rows = kind == "rows"
    start = _bound(spec.args.get("start"), spec.args.get("start_side"))
    end_node = spec.args.get("end")
    end = _bound(end_node, spec.args.get("end_side")) if end_node is not None else FrameBound(0, False)
    if kind == "groups" and any(b.offset for b in (start, end)):
        # without offsets GROUPS frames are RANGE frames (peers whole); with them they count
        # peer groups, which the executor does not do
        raise NotSupportedError("GROUPS frames with an offset (n PRECEDING/FOLLOWING) are not supported")
    return Frame(rows, start, end)


_RANGE_OFFSET_KINDS = {"INT", "FLOAT", "DECIMAL"}


def _check_range_offsets(p: QueryPlanner, frame: Frame, order_terms: list, scope: Scope) -> None:
    """RANGE with ``n PRECEDING/FOLLOWING`` subtracts n from the ORDER BY value: one numeric key."""
    if frame.rows or not any(b.offset for b in (frame.start, frame.end)):
        return
    if len(order_terms) != 1:
        raise ProgrammingError("RANGE with offset PRECEDING/FOLLOWING needs exactly one ORDER BY column")
    typ = p.type_of(order_terms[0].this, scope)
    if typ is not None and typ.kind not in _RANGE_OFFSET_KINDS and typ.kind != "NULL":
        raise ProgrammingError(f"RANGE with offset PRECEDING/FOLLOWING is not supported for column type "
                               f"{typ.sql()} (only numbers)")


def _bound(node: Any, side: Any) -> FrameBound:
    preceding = str(side or "").lower() == "preceding"
    text = node.upper() if isinstance(node, str) else (node.sql().upper() if node is not None else "")
    if text == "UNBOUNDED":
        return FrameBound(None, preceding)
    if text == "CURRENT ROW":
        return FrameBound(0, preceding)
    k = int_literal(node) if isinstance(node, exp.Expression) else None
    if k is None or k < 0:
        raise ProgrammingError(f"frame offset must be a non-negative integer constant, got {text}")
    return FrameBound(k, preceding)
