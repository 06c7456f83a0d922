"""FROM-clause planning: access paths per relation, join order and join method.

``SELECT * FROM users u, orders o WHERE o.user_id = u.id AND o.total > 100``: the WHERE
conjuncts are split and sorted by the relations they reference. ``o.total > 100`` only touches
``o``, so it goes to ``plan_table_access(orders, ...)`` (an index span if one fits). With only
inner joins the order is free: the relation with the fewest estimated rows drives, then each
step adds the cheapest relation connected to the joined set by an equality. For each step the
method is a lookup join when the new relation has an index on the join key and the driving
side is not larger than it (with statistics: when its estimated cost is lower, estimates.py),
a hash join on the equalities otherwise, a nested-loop join when there is no equality at all. Outer joins keep the written order. The result's columns always
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
from sqlkv.sql.exec.join import LookupScan, Reorder
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter, Values
from sqlkv.sql.expr import compile_expr, compile_predicate
from sqlkv.sql.expr.batch_filters import with_conjunction_batch
from sqlkv.sql.expr.env import column_parts
from sqlkv.sql.plan.access import plan_lookup, plan_table_access
from sqlkv.sql.plan.element_uses import element_uses
from sqlkv.sql.plan.estimates import filter_selectivity, table_statistics
from sqlkv.sql.plan.join_order import Conjunct, JoinOrdering, eq_text, unparen
from sqlkv.sql.plan.names import LazySql, column_refs, refs_or_subquery, split_conjuncts

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
    lateral_cell: list | None = None  # LATERAL: the cell its enclosing scope reads the left row from
    scan_columns: list[Column] | None = None  # a base table's columns as its scan returns them (not renamed)


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
class FromResult:
    operator: Operator
    scope: Scope
    remaining: list[exp.Expression]
    ordered: bool = False


def needed_positions(referenced: dict[str, set[str | None]] | None, alias: str,
                     columns: list[Column]) -> set[int] | None:
    """The positions of ``columns`` (a source named ``alias``) that the query's column names
    (`QueryFacts.names`) may read; None when every column is needed."""
    if referenced is None:
        return None
    alias = alias.lower()
    if None in referenced.get(alias, ()):  # row_to_json(t): a whole-row reference (expr/row_json.py)
        return None
    out = set()
    for i, col in enumerate(columns):
        quals = referenced.get(col.name.lower())
        if quals and (None in quals or alias in quals):
            out.add(i)
    return out


def and_predicates(preds: list[Pred]) -> Pred | None:
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    # the conjuncts' batch filters and column terms, when they all have them, serve the AND
    return with_conjunction_batch(lambda row: all(p(row) for p in preds), preds)


class FromPlanner(JoinOrdering):
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
        # USING/NATURAL names whose value is not one side's column: after a FULL join it is
        # COALESCE(left, right), after a RIGHT join the right side's (PostgreSQL's rule)
        self.merged_values: dict[str, exp.Expression] = {}
        self.access_plans: dict[int, Any] = {}
        self.accessed: dict[int, tuple[Operator, float]] = {}  # see _access
        self.local: dict[int, list[exp.Expression]] = {i: [] for i in range(len(sources))}
        self.referenced: dict[str, set[str | None]] | None = None  # None: every column needed
        self.query: exp.Expression | None = None  # for element reads of exploded columns
        self.scan_rows: dict[int, float] = {}  # per base-table source: rows its access path reads
        self.informed: set[int] = set()  # sources whose estimates come from statistics
        self._owners: dict[str, list[tuple[int, str]]] | None = None  # see _index_owners
        self._single_scope: Scope | None = None  # see single_scope

    def set_referenced(self, query: exp.Expression, names: dict[str, set[str | None]] | None) -> None:
        """Records the column names the query mentions (`query_facts`), for index-only scans
        (`needed`); None when it uses ``*``."""
        if any(j is not None and j.natural for j in self.joins):
            return
        if names is None:
            return
        self.query = query
        self.referenced = names

    def needed(self, s: int) -> set[int] | None:
        src = self.sources[s]
        return needed_positions(self.referenced, src.alias, src.columns)

    def _elements(self, s: int) -> dict[int, list[Any]] | None:
        """The element keys a one-table query reads of each exploded column it uses only that way."""
        table = self.sources[s].table
        if self.referenced is None or self.query is None or len(self.sources) != 1 or table is None:
            return None
        return element_uses(self.query, table)

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
        owners = self._owners if self._owners is not None else self._index_owners()
        for col in cols:
            name, table = column_parts(col)
            name, table = name.lower(), table.lower() if table else None
            hits = sorted({i for i, ltable in owners.get(name, ()) if table is None or ltable == table})
            if table is None and name in self.using_pref and len(hits) > 1:
                hits = [self.using_pref[name][0]]
            refs.update(hits)
        return frozenset(refs)

    def _index_owners(self) -> dict[str, list[tuple[int, str]]]:
        """Column name -> (source, lower-cased table) of each column so named, made once."""
        owners: dict[str, list[tuple[int, str]]] = {}
        for i, src in enumerate(self.sources):
            for c in src.columns:
                owners.setdefault(c.name.lower(), []).append((i, (c.table or "").lower()))
        self._owners = owners
        return owners

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
            lcol = self.merged_values.get(lname) or exp.column(lsrc.name, lsrc.table or self.sources[j].alias)
            rcol = exp.column(right.columns[ridx].name, right.columns[ridx].table or right.alias)
            eqs.append(exp.EQ(this=lcol.copy(), expression=rcol))
            right.merged.add(ridx)
            self.using_pref.setdefault(lname, (j, k))
            if spec.kind == "full":
                self.merged_values[lname] = exp.Coalesce(this=lcol.copy(), expressions=[rcol.copy()])
            elif spec.kind == "right":
                self.merged_values[lname] = rcol.copy()
        return eqs

    def merge_using(self, node: exp.Expression) -> exp.Expression:
        """``node`` with unqualified references to a FULL/RIGHT-joined USING column replaced by
        the merged value (subqueries keep their own names)."""
        if not self.merged_values:
            return node
        hits = [c for c in column_refs(node) if not c.table and c.name.lower() in self.merged_values]
        if not hits:
            return node
        if isinstance(node, exp.Column):
            return self.merged_values[node.name.lower()].copy()
        node = node.copy()
        for col in column_refs(node):
            if not col.table and col.name.lower() in self.merged_values:
                col.replace(self.merged_values[col.name.lower()].copy())
        return node

    def _collect(self, where: list[exp.Expression]) -> list[Conjunct]:
        conjuncts: list[Conjunct] = []
        for i, spec in enumerate(self.joins):
            if spec is None:
                continue
            nodes = self._add_using(i, spec) if (spec.using or spec.natural) else []
            if spec.on is not None:
                nodes += [self.merge_using(n) for n in split_conjuncts(spec.on)]
            conjuncts.extend(Conjunct(n, None, on_join=i) for n in nodes)
        for c in conjuncts:
            c.refs = self._refs(c.node)
        self.where = where = [self.merge_using(n) for n in where]
        conjuncts.extend(Conjunct(n, self._refs(n)) for n in where)
        return conjuncts

    # -- scopes ------------------------------------------------------------------------------

    def single_scope(self) -> Scope:
        """The scope of the only source, made once: the select list's ORDER BY analysis
        resolves names in it before the source is planned in it."""
        if self._single_scope is None:
            self._single_scope = self.scope_for([0])
        return self._single_scope

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
        lateral = any(src.lateral_cell is not None for src in self.sources[1:])
        if all(k in ("inner", "cross") for k in kinds) and not lateral:
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
        scope = self.single_scope()
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
                               limit=limit, needed=self.needed(s), elements=self._elements(s),
                               joined=len(self.sources) > 1, columns=src.scan_columns)
        remaining = list(ap.remaining)
        outer_eqs = []  # (conjunct, column index, outer-side expression)
        for node in remaining:
            eq = unparen(node)
            if not isinstance(eq, exp.EQ):
                continue
            for col, other in ((eq.this, eq.expression), (eq.expression, eq.this)):
                col = unparen(col)
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
            access = plan_lookup(src.table, src.alias, [idx for _, idx, _ in chosen], scope, self.env,
                                 src.scan_columns)
            if access is None or access.est_rows_per_key >= ap.est_rows:
                continue
            used = {id(n) for n, _, _ in chosen}
            keys = [self._expr(other, scope) for _, _, other in chosen]
            text = eq_text([(exp.column(scope.columns[i].name, scope.columns[i].table), o)
                             for _, i, o in chosen])
            op = LookupScan(access, keys, text, src.columns)
            rest = [n for n in local if id(n) not in used]
            return op, rest, float(access.est_rows_per_key), False
        return ap.operator, remaining, float(ap.est_rows), bool(ap.ordered)

    # -- per-source access -------------------------------------------------------------------

    def _access(self, s: int) -> tuple[Operator, float]:
        """Operator for source ``s`` with its local filters applied, and its row estimate.

        Made once per source: the join order asks every source's estimate first, a join step
        asks again (and a lookup join only for the estimate); the operator joins the plan once."""
        made = self.accessed.get(s)
        if made is None:
            made = self.accessed[s] = self._make_access(s)
        return made

    def _make_access(self, s: int) -> tuple[Operator, float]:
        src = self.sources[s]
        scope = Scope(src.columns, self.outer)
        if src.table is not None:
            planned = self.access_plans.get(s)
            if planned is None:
                planned = self._table_access(s, scope, self.local[s])
                self.access_plans[s] = planned
            op, rest, est, _ordered = planned
            rest = list(rest)
            self.scan_rows[s] = est
            stats = table_statistics(self.env, src.table)
            if stats is not None:  # analyzed: the rows its other filters keep, not all it reads
                self.informed.add(s)
                est *= filter_selectivity(src.table, stats, rest, scope)
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
