"""FROM-clause planning: access paths per relation, join order and join method.

``SELECT * FROM users u, orders o WHERE o.user_id = u.id AND o.total > 100``: the WHERE
conjuncts are split and sorted by the relations they reference. ``o.total > 100`` only touches
``o``, so it goes to ``plan_table_access(orders, ...)`` (an index span if one fits). With only
inner joins the order is free: the relation with the fewest estimated rows drives, then each
step adds the cheapest relation connected to the joined set by an equality. For each step the
method is a lookup join when the new relation has an index on the join key and the driving
side is not larger than it, a hash join on the equalities otherwise, a nested-loop join when
there is no equality at all. Outer joins keep the written order. The result's columns always
come back in FROM order (a `Reorder` is added when the chosen order differs), so ``*`` and
positions do not depend on the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.join import HashJoin, LookupJoin, LookupScan, NestedLoopJoin, Reorder
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter, Values
from sqlkv.sql.expr import compile_expr, compile_predicate
from sqlkv.sql.plan.access import plan_lookup, plan_table_access
from sqlkv.sql.plan.names import LazySql, refs_or_subquery, split_conjuncts

DERIVED_EST_ROWS = 1000.0
Pred = Callable[[tuple], bool]


@dataclass
class Source:
    """One FROM item: a base table (access planned with its filters) or a planned operator."""

    alias: str
    columns: list[Column]
    table: Any = None             # TableDescriptor for base tables
    operator: Operator | None = None
    merged: set[int] = field(default_factory=set)  # USING/NATURAL columns hidden from `*`


@dataclass
class JoinSpec:
    """How source i (i >= 1) joins what precedes it."""

    kind: str                      # inner | left | right | full | cross
    on: exp.Expression | None = None
    using: list[str] | None = None
    natural: bool = False


class MergedScope(Scope):
    """A join's scope where USING/NATURAL columns resolve unqualified to one side's column."""

    def __init__(self, columns: list[Column], outer: Scope | None, preferred: dict[str, int]) -> None:
        super().__init__(columns, outer)
        self.preferred = preferred

    def find(self, name: str, table: str | None = None) -> int | None:
        if table is None and name.lower() in self.preferred:
            return self.preferred[name.lower()]
        return super().find(name, table)


@dataclass
class Conjunct:
    node: exp.Expression
    refs: frozenset[int] | None  # sources used; None = needs every source (has a subquery)
    on_join: int | None = None   # index of the join whose ON clause it came from
    used: bool = False


@dataclass
class FromResult:
    operator: Operator
    scope: Scope
    remaining: list[exp.Expression]
    ordered: bool = False


@dataclass
class Joined:
    """The relations joined so far: operator, sources in row order, estimated rows."""

    operator: Operator
    order: list[int]
    est: float


def and_predicates(preds: list[Pred]) -> Pred | None:
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return lambda row: all(p(row) for p in preds)


def _eq_text(pairs: list[tuple[exp.Expression, exp.Expression]]) -> LazySql:
    parts: list = []
    for a, b in pairs:
        parts += (["AND"] if parts else []) + [a, "=", b]
    return LazySql(parts, " ")


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


class FromPlanner:
    """Plans one FROM clause (sources + joins) given the WHERE conjuncts."""

    def __init__(self, sources: list[Source], joins: list[JoinSpec | None], outer: Scope | None,
                 env: Any) -> None:
        self.sources = sources
        self.joins = joins          # joins[i] describes source i; joins[0] is None
        self.outer = outer
        self.env = env
        self.offsets: list[int] = []
        pos = 0
        for src in sources:
            self.offsets.append(pos)
            pos += len(src.columns)
        self.using_pref: dict[str, tuple[int, int]] = {}
        self.access_plans: dict[int, Any] = {}
        self.local: dict[int, list[exp.Expression]] = {i: [] for i in range(len(sources))}
        self.referenced: dict[str, set[str | None]] | None = None  # None: every column needed

    def set_referenced(self, query: exp.Expression) -> None:
        """Records the column names the query mentions, for index-only scans (`needed`)."""
        if any(j is not None and j.natural for j in self.joins):
            return
        names: dict[str, set[str | None]] = {}
        for node in query.walk():
            if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count):
                return  # SELECT * / t.*: all columns
            if isinstance(node, exp.Column):
                names.setdefault(node.name.lower(), set()).add(node.table.lower() if node.table else None)
            elif isinstance(node, exp.Join):
                # JOIN ... USING (a): `a` is read from both sides though no Column node names it.
                for ident in node.args.get("using") or ():
                    names.setdefault(ident.name.lower(), set()).add(None)
        self.referenced = names

    def needed(self, s: int) -> set[int] | None:
        if self.referenced is None:
            return None
        src = self.sources[s]
        alias = src.alias.lower()
        out = set()
        for i, col in enumerate(src.columns):
            quals = self.referenced.get(col.name.lower())
            if quals and (None in quals or alias in quals):
                out.add(i)
        return out

    # -- compile helpers ---------------------------------------------------------------------

    def _pred(self, nodes: list[exp.Expression], scope: Scope) -> Pred | None:
        return and_predicates([compile_predicate(n, scope, self.env) for n in nodes])

    def _expr(self, node: exp.Expression, scope: Scope) -> Callable[[tuple], Any]:
        return compile_expr(node, scope, self.env)

    # -- reference analysis ------------------------------------------------------------------

    def _refs(self, node: exp.Expression) -> frozenset[int] | None:
        cols = refs_or_subquery(node)
        if cols is None:
            return None
        refs: set[int] = set()
        for col in cols:
            table = col.table.lower() if col.table else None
            name = col.name.lower()
            hits = [i for i, s in enumerate(self.sources)
                    if any(c.name.lower() == name and (table is None or (c.table or "").lower() == table)
                           for c in s.columns)]
            if table is None and name in self.using_pref and len(hits) > 1:
                hits = [self.using_pref[name][0]]
            refs.update(hits)
        return frozenset(refs)

    def _add_using(self, i: int, spec: JoinSpec) -> list[exp.Expression]:
        """USING/NATURAL -> equality conditions; the right side's columns merge into the left's."""
        right = self.sources[i]
        names = list(spec.using or [])
        if spec.natural:
            left_names = {c.name.lower() for s in self.sources[:i] for c in s.columns if not c.hidden}
            names = [c.name for c in right.columns if not c.hidden and c.name.lower() in left_names]
        eqs: list[exp.Expression] = []
        for name in names:
            lname = name.lower()
            ridx = next((k for k, c in enumerate(right.columns) if c.name.lower() == lname), None)
            left = next(((j, k) for j in range(i) for k, c in enumerate(self.sources[j].columns)
                         if c.name.lower() == lname and k not in self.sources[j].merged), None)
            if ridx is None or left is None:
                raise ProgrammingError(f'column "{name}" specified in USING clause does not exist '
                                       f"in {'right' if ridx is None else 'left'} table")
            j, k = left
            lsrc = self.sources[j].columns[k]
            lcol = exp.column(lsrc.name, lsrc.table or self.sources[j].alias)
            rcol = exp.column(right.columns[ridx].name, right.columns[ridx].table or right.alias)
            eqs.append(exp.EQ(this=lcol, expression=rcol))
            right.merged.add(ridx)
            self.using_pref.setdefault(lname, (j, k))
        return eqs

    def _collect(self, where: list[exp.Expression]) -> list[Conjunct]:
        conjuncts: list[Conjunct] = []
        for i, spec in enumerate(self.joins):
            if spec is None:
                continue
            nodes = self._add_using(i, spec) if (spec.using or spec.natural) else []
            if spec.on is not None:
                nodes += split_conjuncts(spec.on)
            conjuncts.extend(Conjunct(n, None, on_join=i) for n in nodes)
        for c in conjuncts:
            c.refs = self._refs(c.node)
        conjuncts.extend(Conjunct(n, self._refs(n)) for n in where)
        return conjuncts

    # -- scopes ------------------------------------------------------------------------------

    def scope_for(self, order: list[int]) -> Scope:
        cols: list[Column] = []
        pos: dict[int, int] = {}
        for s in order:
            pos[s] = len(cols)
            cols.extend(self.sources[s].columns)
        preferred = {name: pos[j] + k for name, (j, k) in self.using_pref.items() if j in pos}
        if preferred:
            return MergedScope(cols, self.outer, preferred)
        return Scope(cols, self.outer)

    # -- entry -------------------------------------------------------------------------------

    def prepare(self, where: list[exp.Expression]) -> None:
        """Resolves USING/NATURAL (fixing which columns ``*`` skips) and classifies conjuncts."""
        self.where = list(where)
        self.conjuncts = self._collect(where) if self.sources else []

    def plan(self, want_order: list[tuple[int, bool]] | None, limit: int | None) -> FromResult:
        if not self.sources:
            return FromResult(Values([], [[]]), Scope([], self.outer), self.where)
        conjuncts = self.conjuncts
        if len(self.sources) == 1:
            return self._single(conjuncts, want_order, limit)
        kinds = [j.kind for j in self.joins[1:] if j is not None]
        if all(k in ("inner", "cross") for k in kinds):
            joined = self._plan_inner(conjuncts)
        else:
            joined = self._plan_written_order(conjuncts)
        op = joined.operator
        n = len(self.sources)
        if joined.order != list(range(n)):
            positions: list[int] = []
            start = {}
            p = 0
            for s in joined.order:
                start[s] = p
                p += len(self.sources[s].columns)
            for s in range(n):
                positions.extend(range(start[s], start[s] + len(self.sources[s].columns)))
            op = Reorder(op, positions)
        remaining = [c.node for c in conjuncts if not c.used]
        return FromResult(op, self.scope_for(list(range(n))), remaining)

    def _single(self, conjuncts: list[Conjunct], want_order: list[tuple[int, bool]] | None,
                limit: int | None) -> FromResult:
        src = self.sources[0]
        scope = self.scope_for([0])
        local = [c.node for c in conjuncts if c.refs is not None]
        post = [c.node for c in conjuncts if c.refs is None]
        if src.table is None:
            assert src.operator is not None
            return FromResult(src.operator, scope, local + post)
        op, rest, _est, ordered = self._table_access(0, scope, local, want_order,
                                                     None if (post or local) else limit)
        return FromResult(op, scope, rest + post, ordered)

    def _table_access(self, s: int, scope: Scope, local: list[exp.Expression],
                      want_order: list[tuple[int, bool]] | None = None, limit: int | None = None,
                      ) -> tuple[Operator, list[exp.Expression], float, bool]:
        """plan_table_access for base-table source ``s``; when an equality with an outer
        (correlated) value is left unused and an index fits it, a per-execution index lookup.

        (operator, remaining filters, estimated rows, ordered)"""
        src = self.sources[s]
        ap = plan_table_access(src.table, src.alias, local, scope, self.env, want_order=want_order,
                               limit=limit, needed=self.needed(s))
        remaining = list(ap.remaining)
        outer_eqs = []  # (conjunct, column index, outer-side expression)
        for node in remaining:
            eq = _unparen(node)
            if not isinstance(eq, exp.EQ):
                continue
            for col, other in ((eq.this, eq.expression), (eq.expression, eq.this)):
                col = _unparen(col)
                if isinstance(col, exp.Column) and self._refs(other) == frozenset() \
                        and refs_or_subquery(other):
                    idx = scope.find(col.name, col.table or None) if self._refs(col) == {s} else None
                    if idx is not None:
                        outer_eqs.append((node, idx, other))
                        break
        if not outer_eqs:
            return ap.operator, remaining, float(ap.est_rows), bool(ap.ordered)
        choices = [outer_eqs] + ([[e] for e in outer_eqs] if len(outer_eqs) > 1 else [])
        for chosen in choices:
            access = plan_lookup(src.table, src.alias, [idx for _, idx, _ in chosen], scope, self.env)
            if access is None or access.est_rows_per_key >= ap.est_rows:
                continue
            used = {id(n) for n, _, _ in chosen}
            keys = [self._expr(other, scope) for _, _, other in chosen]
            text = _eq_text([(exp.column(scope.columns[i].name, scope.columns[i].table), o)
                             for _, i, o in chosen])
            op = LookupScan(access, keys, text, src.columns)
            rest = [n for n in local if id(n) not in used]
            return op, rest, float(access.est_rows_per_key), False
        return ap.operator, remaining, float(ap.est_rows), bool(ap.ordered)

    # -- per-source access -------------------------------------------------------------------

    def _access(self, s: int) -> tuple[Operator, float]:
        """Operator for source ``s`` with its local filters applied, and its row estimate."""
        src = self.sources[s]
        scope = Scope(src.columns, self.outer)
        if src.table is not None:
            planned = self.access_plans.get(s)
            if planned is None:
                planned = self._table_access(s, scope, self.local[s])
                self.access_plans[s] = planned
            op, rest, est, _ordered = planned
            rest = list(rest)
        else:
            assert src.operator is not None
            op = src.operator
            rest = list(self.local[s])
            est = DERIVED_EST_ROWS
        if rest:
            op = Filter(op, self._pred(rest, scope), LazySql(rest))
        return op, est

    # -- join orders -------------------------------------------------------------------------

    def _nullable(self) -> set[int]:
        out: set[int] = set()
        for i, spec in enumerate(self.joins):
            if spec is None:
                continue
            if spec.kind in ("left", "full"):
                out.add(i)
            if spec.kind in ("right", "full"):
                out.update(range(i))
        return out

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
        joined = Joined(op, [first], est)
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
        joined = Joined(op, [0], est)
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
            node = _unparen(c.node)
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
        if kind == "cross":
            kind = "inner"
        if eqs and kind in ("inner", "left") and src.table is not None:
            lookup = self._try_lookup(joined, s, kind, eqs, residual_nodes, left_scope,
                                      right_scope, both_scope)
            if lookup is not None:
                return lookup
        right_op, right_est = self._access(s)
        if eqs:
            residual = self._pred(residual_nodes, both_scope)
            lkeys = [self._expr(a, left_scope) for _, a, _ in eqs]
            rkeys = [self._expr(b, right_scope) for _, _, b in eqs]
            text = _eq_text([(a, b) for _, a, b in eqs])
            op: Operator = HashJoin(joined.operator, right_op, kind, lkeys, rkeys, residual, text,
                                    build_left=kind == "inner" and joined.est < right_est)
            est = max(joined.est, right_est)
        else:
            pred = self._pred(residual_nodes, both_scope)
            text = LazySql(residual_nodes) if residual_nodes else ""
            op = NestedLoopJoin(joined.operator, right_op, kind, pred, text)
            est = joined.est * right_est * (0.3 if residual_nodes else 1.0)
        return Joined(op, new_order, est)

    def _try_lookup(self, joined: Joined, s: int, kind: str, eqs: list, residual_nodes: list,
                    left_scope: Scope, right_scope: Scope, both_scope: Scope) -> Joined | None:
        src = self.sources[s]
        cols: list[tuple[int, int]] = []  # (eq position, right column index)
        for pos, (_c, _a, b) in enumerate(eqs):
            b = _unparen(b)
            if isinstance(b, exp.Column):
                idx = right_scope.find(b.name, b.table or None)
                if idx is not None:
                    cols.append((pos, idx))
        if not cols:
            return None
        _, right_est = self._access(s)
        if joined.est > max(right_est, 1.0):
            return None  # the driving side is larger: one lookup per row would cost more
        candidates = [cols] + [[c] for c in cols] if len(cols) > 1 else [cols]
        for chosen in candidates:
            access = plan_lookup(src.table, src.alias, [idx for _, idx in chosen], right_scope, self.env)
            if access is None:
                continue
            used_pos = {pos for pos, _ in chosen}
            extra = [eqs[p][0].node for p in range(len(eqs)) if p not in used_pos]
            lkeys = [self._expr(eqs[pos][1], left_scope) for pos, _ in chosen]
            rfilter = self._pred(self.local[s], right_scope)
            residual = self._pred(residual_nodes + extra, both_scope)
            text = _eq_text([(eqs[pos][1], eqs[pos][2]) for pos, _ in chosen])
            op = LookupJoin(joined.operator, access, src.columns, kind, lkeys, rfilter, residual, text)
            per_key = float(getattr(access, "est_rows_per_key", 1.0) or 1.0)
            return Joined(op, joined.order + [s], joined.est * per_key)
        return None
