"""Join order and join method, the second half of `FromPlanner` (joins.py), which inherits it.

With only inner joins the order is free (`_plan_inner`): the relation with the fewest
estimated rows drives, then each step adds the cheapest relation connected to the joined set
by an equality (`_equalities`). `_join_step` picks the method: a lookup join (`_try_lookup`)
when the new relation has an index on the join key and the driving side is not larger than
it, a hash join on the equalities otherwise, a nested-loop join when there is no equality.
When a table of the step has statistics (ANALYZE), the lookup join must instead cost less
than the hash join by estimates.py's model, and EXPLAIN shows the estimate and both costs.
Outer joins keep the written order (`_plan_written_order`).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from sqlglot import exp

from sqlkv.sql.context import Scope
from sqlkv.sql.exec.join import HashJoin, LookupJoin, NestedLoopJoin
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.plan.access import plan_lookup
from sqlkv.sql.plan.estimates import filter_selectivity, hash_join_cost, lookup_join_cost, table_statistics
from sqlkv.sql.plan.names import LazySql
from sqlkv.sql.exec.lateral import LateralJoin
from sqlkv.sql.expr import compile_typed
from sqlkv.sql.types import float_as_decimal


@dataclass
class Conjunct:
    node: exp.Expression
    refs: frozenset[int] | None  # sources used; None = needs every source (has a subquery)
    on_join: int | None = None   # index of the join whose ON clause it came from
    used: bool = False


@dataclass
class Joined:
    """The relations joined so far: operator, sources in row order, estimated rows."""

    operator: Operator
    order: list[int]
    est: float
    informed: bool = False  # the estimate rests on statistics of some table joined


@dataclass
class StepCosts:
    """The costs a join step compared (with statistics), shown by EXPLAIN on the join."""

    lookup: float | None = None
    hash: float | None = None
    per_key: float | None = None  # inner rows per join key, from the index a lookup would use

    def text(self, est: float) -> str:
        parts = [f"estimated rows {_count(est)}"]
        if self.lookup is not None and self.hash is not None:
            parts.append(f"cost lookup {_count(self.lookup)} vs hash {_count(self.hash)}")
        return "; ".join(parts)


def _count(x: float) -> str:
    return str(int(round(x))) if x >= 10 else f"{x:.2g}"

def eq_text(pairs: list[tuple[exp.Expression, exp.Expression]]) -> LazySql:
    parts: list = []
    for a, b in pairs:
        parts += (["AND"] if parts else []) + [a, "=", b]
    return LazySql(parts, " ")

def unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


class JoinOrdering:
    """Methods of `FromPlanner` that order the relations and join them."""

    def _plan_inner(self, conjuncts: list[Conjunct]) -> Joined:
        for c in conjuncts:
            if c.refs is not None and len(c.refs) == 1:
                (s,) = c.refs
                self.local[s].append(c.node)
                c.used = True
        n = len(self.sources)
        ests = {s: self._access(s)[1] for s in range(n)}
        first = min(range(n), key=lambda s: (ests[s], s))
        op, est = self._access(first)
        joined = Joined(op, [first], est, first in self.informed)
        left = set(range(n)) - {first}
        while left:
            connected = [s for s in left if self._equalities(conjuncts, set(joined.order), s, "inner")]
            pool = connected or list(left)
            nxt = min(pool, key=lambda s: (ests[s], s))
            step = [c for c in conjuncts if not c.used and c.refs is not None and nxt in c.refs
                    and c.refs <= set(joined.order) | {nxt}]
            joined = self._join_step(joined, nxt, "inner", step)
            left.discard(nxt)
        return joined

    def _plan_written_order(self, conjuncts: list[Conjunct]) -> Joined:
        nullable = self._nullable()
        last_outer_right = max((i for i, j in enumerate(self.joins)
                                if j is not None and j.kind in ("right", "full")), default=0)
        for c in conjuncts:
            if c.refs is None or len(c.refs) != 1:
                continue
            (s,) = c.refs
            if c.on_join is None and s not in nullable:
                self.local[s].append(c.node)
                c.used = True
            elif c.on_join is not None and c.on_join == s and self.joins[s].kind in ("inner", "cross", "left"):
                self.local[s].append(c.node)
                c.used = True
        op, est = self._access(0)
        joined = Joined(op, [0], est, 0 in self.informed)
        for i in range(1, len(self.sources)):
            spec = self.joins[i]
            assert spec is not None
            covered = set(range(i + 1))
            step = [c for c in conjuncts if not c.used and c.on_join == i]
            if spec.kind in ("inner", "cross") and i >= last_outer_right:
                step += [c for c in conjuncts if not c.used and c.on_join is None
                         and c.refs is not None and c.refs <= covered]
            joined = self._join_step(joined, i, spec.kind, step)
        return joined

    # -- one join step -----------------------------------------------------------------------

    def _equalities(self, conjuncts: list[Conjunct], have: set[int], s: int,
                    kind: str) -> list[tuple[Conjunct, exp.Expression, exp.Expression]]:
        """Equality conjuncts ``left_expr = right_expr`` with sides over ``have`` and ``{s}``."""
        out = []
        for c in conjuncts:
            if c.used or c.refs is None or s not in c.refs or not c.refs <= have | {s}:
                continue
            node = unparen(c.node)
            if not isinstance(node, exp.EQ):
                continue
            a, b = node.this, node.expression
            ra, rb = self._refs(a), self._refs(b)
            if not ra or not rb:
                continue
            if ra <= have and rb == {s}:
                out.append((c, a, b))
            elif rb <= have and ra == {s}:
                out.append((c, b, a))
        return out

    def _join_step(self, joined: Joined, s: int, kind: str, step: list[Conjunct]) -> Joined:
        have = set(joined.order)
        src = self.sources[s]
        left_scope = self.scope_for(joined.order)
        right_scope = Scope(src.columns, self.outer)
        new_order = joined.order + [s]
        both_scope = self.scope_for(new_order)
        eqs = self._equalities(step, have, s, kind)
        eq_ids = {id(c) for c, _, _ in eqs}
        residual_nodes = [c.node for c in step if id(c) not in eq_ids]
        for c in step:
            c.used = True
        if src.lateral_cell is not None:
            right_op, right_est = self._access(s)
            nodes = [c.node for c in step]
            pred = self._pred(nodes, both_scope)
            op = LateralJoin(joined.operator, right_op, src.lateral_cell, kind, pred, LazySql(nodes) if nodes else "")
            return Joined(op, new_order, joined.est * right_est, joined.informed)
        if kind == "cross":
            kind = "inner"
        costs = StepCosts()
        if eqs and kind in ("inner", "left") and src.table is not None:
            lookup = self._try_lookup(joined, s, kind, eqs, residual_nodes, left_scope,
                                      right_scope, both_scope, costs)
            if lookup is not None:
                return lookup
        right_op, right_est = self._access(s)
        informed = joined.informed or s in self.informed
        if eqs:
            residual = self._pred(residual_nodes, both_scope)
            keys = [self._hash_keys(a, b, left_scope, right_scope) for _, a, b in eqs]
            lkeys = [lk for lk, _ in keys]
            rkeys = [rk for _, rk in keys]
            text = eq_text([(a, b) for _, a, b in eqs])
            op: Operator = HashJoin(joined.operator, right_op, kind, lkeys, rkeys, residual, text,
                                    build_left=kind == "inner" and joined.est < right_est)
            est = max(joined.est, right_est)
            if informed and costs.per_key is not None:  # rows per key known from an index
                est = joined.est * costs.per_key * self._inner_selectivity(s)
        else:
            pred = self._pred(residual_nodes, both_scope)
            text = LazySql(residual_nodes) if residual_nodes else ""
            op = NestedLoopJoin(joined.operator, right_op, kind, pred, text)
            est = joined.est * right_est * (0.3 if residual_nodes else 1.0)
        if informed:
            op.estimate = costs.text(est)  # type: ignore[attr-defined]
        return Joined(op, new_order, est, informed)

    def _inner_selectivity(self, s: int) -> float:
        """The fraction of an analyzed source's rows its own filters keep (1.0 unknown)."""
        src = self.sources[s]
        stats = table_statistics(self.env, src.table) if src.table is not None else None
        if stats is None:
            return 1.0
        return filter_selectivity(src.table, stats, self.local[s], Scope(src.columns, self.outer))

    def _hash_keys(self, a: exp.Expression, b: exp.Expression, left_scope: Scope,
                   right_scope: Scope) -> tuple[Callable, Callable]:
        """Both sides of ``a = b`` as hash keys that are equal when the comparison is TRUE:
        a FLOAT against a DECIMAL is hashed as the decimal the comparison uses."""
        ca, cb = compile_typed(a, left_scope, self.env), compile_typed(b, right_scope, self.env)
        kinds = (ca.type.kind, cb.type.kind)
        if kinds == ("FLOAT", "DECIMAL"):
            return _as_decimal(ca.fn), cb.fn
        if kinds == ("DECIMAL", "FLOAT"):
            return ca.fn, _as_decimal(cb.fn)
        return ca.fn, cb.fn

    def _try_lookup(self, joined: Joined, s: int, kind: str, eqs: list, residual_nodes: list,
                    left_scope: Scope, right_scope: Scope, both_scope: Scope,
                    costs: StepCosts) -> Joined | None:
        """A lookup join into an index of source ``s`` on the equalities, when one fits and
        it is the cheaper method (by statistics when there are any, see estimates.py; else
        when the driving side is not larger than ``s``)."""
        src = self.sources[s]
        cols: list[tuple[int, int]] = []  # (eq position, right column index)
        for pos, (_c, _a, b) in enumerate(eqs):
            b = unparen(b)
            if isinstance(b, exp.Column):
                idx = right_scope.find(b.name, b.table or None)
                if idx is not None:
                    cols.append((pos, idx))
        if not cols:
            return None
        _, right_est = self._access(s)
        informed = joined.informed or s in self.informed
        if not informed and joined.est > max(right_est, 1.0):
            return None  # the driving side is larger: one lookup per row would cost more
        candidates = [cols] + [[c] for c in cols] if len(cols) > 1 else [cols]
        for chosen in candidates:
            access = plan_lookup(src.table, src.alias, [idx for _, idx in chosen], right_scope, self.env,
                                 src.scan_columns)
            if access is None:
                continue
            per_key = float(access.est_rows_per_key)
            if informed:
                costs.per_key = per_key
                costs.lookup = lookup_join_cost(joined.est, per_key, access.primary_point)
                costs.hash = hash_join_cost(joined.est, self.scan_rows.get(s, right_est))
                if costs.lookup > costs.hash:
                    return None  # one scan of the inner side is cheaper than the lookups
            used_pos = {pos for pos, _ in chosen}
            extra = [eqs[p][0].node for p in range(len(eqs)) if p not in used_pos]
            lkeys = [self._expr(eqs[pos][1], left_scope) for pos, _ in chosen]
            rfilter = self._pred(self.local[s], right_scope)
            residual = self._pred(residual_nodes + extra, both_scope)
            text = eq_text([(eqs[pos][1], eqs[pos][2]) for pos, _ in chosen])
            op = LookupJoin(joined.operator, access, src.columns, kind, lkeys, rfilter, residual, text)
            est = joined.est * per_key
            if informed:
                est *= self._inner_selectivity(s)
                op.estimate = costs.text(est)
            return Joined(op, joined.order + [s], est, informed)
        return None


def _as_decimal(fn: Callable) -> Callable:
    return lambda r: None if (v := fn(r)) is None else float_as_decimal(v)
