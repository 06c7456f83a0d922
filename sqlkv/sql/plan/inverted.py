"""Planning reads through an inverted index (`plan_inverted`).

A filter conjunct can use an inverted index on column c when it has one of these shapes, with a
constant (or parameter) on the other side:

    ARRAY columns: c @> v, v <@ c, c <@ v, v @> c, c && v, v && c, v = ANY(c)
    JSONB columns: c @> v, v <@ c, c <@ v, v @> c, c ? k, c ?| ks, c ?& ks, jsonb_exists(c, k)

The scan returns a superset of the matching rows (exec/inverted_scan.py), so every filter stays
in ``remaining`` and is checked again on the rows fetched: the results are exactly those of a
full scan. The planner picks the inverted scan only over a plan that reads the whole table (its
estimate is that of one equality on a secondary index, which a btree span or a point get beats);
whether it then reads its spans or the whole table is decided at each execution by a bounded
count of the entries and rows (exec/inverted_choice.py), which a cached plan cannot get wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.exec.inverted_scan import InvertedScan
from sqlkv.sql.plan.constraints import column_pos, const_fn, is_constant_expr
from sqlkv.sql.rowstore.inverted import inverted_column_kind
from sqlkv.sql.rowstore.inverted_probe import Probe

_ARRAY_OPS = ("contains", "element", "overlaps", "contained_by")
_JSONB_OPS = ("contains", "has_key", "has_all", "has_any", "contained_by")
# preference among several usable conjuncts: the narrower probe first
_RANK = {"element": 0, "contains": 1, "has_all": 2, "has_key": 3, "overlaps": 4, "has_any": 5, "contained_by": 6}
# the estimate of an inverted scan, as a fraction of the table (that of one btree equality)
SELECTIVITY = 0.05


@dataclass
class _Match:
    op: str
    column: exp.Expression
    operand: exp.Expression


def _shape(node: exp.Expression) -> _Match | None:
    """(operator, column side, value side) of a conjunct an inverted index may serve."""
    if isinstance(node, exp.Operator):
        op = node.args.get("operator")
        this, other = node.this, node.expression
        if op in ("@>", "<@"):
            return _containment(op == "@>", this, other)
        named = {"?": "has_key", "?|": "has_any", "?&": "has_all", "&&": "overlaps"}.get(op)  # type: ignore[arg-type]
        return _Match(named, this, other) if named else None
    if isinstance(node, (exp.ArrayContainsAll, exp.ArrayContainedBy)):
        return _containment(isinstance(node, exp.ArrayContainsAll), node.this, node.expression)
    if isinstance(node, exp.ArrayOverlaps):
        if isinstance(node.this, exp.Column):
            return _Match("overlaps", node.this, node.expression)
        return _Match("overlaps", node.expression, node.this)
    if isinstance(node, exp.JSONBExists):
        return _Match("has_key", node.this, node.args.get("path"))
    if isinstance(node, exp.EQ) and isinstance(node.expression, exp.Any):
        inner = node.expression.this
        inner = inner.this if isinstance(inner, exp.Paren) else inner
        return _Match("element", inner, node.this)
    return None


def _containment(left_contains: bool, left: exp.Expression, right: exp.Expression) -> _Match:
    """``left @> right`` (or ``left <@ right``) from the column's side: c @> v and v <@ c are
    "contains", c <@ v and v @> c "contained_by"."""
    if isinstance(left, exp.Column):
        return _Match("contains" if left_contains else "contained_by", left, right)
    return _Match("contained_by" if left_contains else "contains", right, left)


def _inverted_on(table: TableDescriptor, position: int) -> IndexDescriptor | None:
    for idx in table.indexes:
        if idx.inverted and table.column_index(idx.column_ids[0]) == position:
            return idx
    return None


def plan_inverted(table: TableDescriptor, alias: str, filters: list[exp.Expression], scope: Scope, env,
                  needed: set[int] | None) -> tuple[InvertedScan, float] | None:
    """An inverted scan serving one of ``filters`` and its row estimate, or None."""
    if not any(idx.inverted for idx in table.indexes):
        return None
    best: tuple[int, IndexDescriptor, _Match, exp.Expression] | None = None
    for node in filters:
        m = _shape(node)
        if m is None or m.operand is None or not is_constant_expr(m.operand):
            continue
        pos = column_pos(m.column, scope)
        if pos is None:
            continue
        idx = _inverted_on(table, pos)
        if idx is None:
            continue
        col_type = table.columns[pos].type
        kind = inverted_column_kind(col_type.kind, col_type.element is not None)
        if m.op not in (_ARRAY_OPS if kind == "ARRAY" else _JSONB_OPS):
            continue
        if best is None or _RANK[m.op] < best[0]:
            best = (_RANK[m.op], idx, m, node)
    if best is None:
        return None
    _rank, idx, m, node = best
    operand = const_fn(m.operand, scope, env)
    op = InvertedScan(table, alias, table_scope(table, alias), idx, Probe(m.op), operand, node.sql(),
                      _with_filter_columns(needed, filters, scope, len(table.columns)))
    return op, float(SELECTIVITY)


def _with_filter_columns(needed: set[int] | None, filters: list[exp.Expression], scope: Scope,
                         ncols: int) -> set[int] | None:
    """The positions to decode: the caller's and every column the (re-checked) filters read."""
    if needed is None:
        return None
    out = set(needed)
    for f in filters:
        for col in f.find_all(exp.Column):
            pos = column_pos(col, scope)
            if pos is None:
                return set(range(ncols))
            out.add(pos)
    return out
