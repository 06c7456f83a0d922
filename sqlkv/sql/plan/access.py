"""Single-table access paths: which index to read, which spans, in which direction.

``SELECT email FROM users WHERE email LIKE 'a%' ORDER BY email LIMIT 5`` asks
`plan_table_access(users, "users", [email LIKE 'a%'], ..., want_order=[(2, False)], limit=5,
needed={2})`. For every index (the primary index first) it collects `ColumnBounds` on the
index's leading columns from the filter conjuncts (equalities and IN lists on a prefix, then one
range: comparisons, BETWEEN, IS [NOT] NULL, LIKE 'prefix%'), estimates a cost, and keeps the
cheapest: a point get on the primary key beats a unique-index lookup, which beats the
narrowest range, which beats a full scan. An index that holds every needed column is read
alone (index-only); otherwise each index entry fetches its row by primary key. An index whose
order matches ``want_order`` (forwards or backwards) saves the caller's sort, and then the
LIMIT can be pushed into the scan. Here the plan is an index-only scan of users_email_key on
the span ``/Table/104/2/"a" - /Table/104/2/"b"``.

Constants and parameters in the filters are compiled now but evaluated by the scan at
execution time, since plans are cached per SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import index_prefix
from sqlkv.sql.context import Column, Scope, table_scope
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.lookup import IndexLookup
from sqlkv.sql.exec.scan import IndexScan, VirtualScan
from sqlkv.sql.expr import compile_predicate
from sqlkv.sql.plan.estimates import rows_per_key, table_rows, table_statistics
from sqlkv.sql.plan.expression_index import use_expression_columns
from sqlkv.sql.plan.inverted import plan_inverted
from sqlkv.sql.plan.constraints import bounds_for, column_pos, const_fn, constraints_by_column
from sqlkv.sql.plan.names import LazySql, conjunct_key, split_conjuncts
from sqlkv.sql.plan.table_memo import table_memo
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.exploded_reads import PartialFetch
from sqlkv.sql.rowstore.keyspans import ColumnBounds, SpanBuilder
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&
from sqlkv.sql.parse_tree import walk_nodes


# Whether primary-index scans decode only the ``needed`` columns (the rest stay None). On since
# the join planner's ``needed`` lists the columns of ``JOIN ... USING (a)`` too (no column
# reference names them); NATURAL joins and whole-row references still decode every column.
DECODE_ONLY_NEEDED = True


@dataclass
class AccessPlan:
    operator: Operator
    remaining: list[exp.Expression]
    ordered: bool
    est_rows: float


@dataclass
class _Candidate:
    index: IndexDescriptor
    primary: bool
    spans: tuple  # SpanBuilder's arguments but the prefix: made only for the index chosen
    used: list[exp.Expression]
    covering: bool
    reverse: bool
    ordered: bool
    est_rows: float
    cost: float = 0.0
    point: bool = False  # equalities on a whole unique key: at most one row per value
    n_eq: int = 0  # leading key columns fixed by equalities (or IN lists)
    n_values: int = 1  # key values those equalities name (the product of the IN lists' sizes)
    ranged: bool = False  # a range on the column after the equalities
    sorts: bool = False  # the caller wants an order this index does not give: it sorts


def _positions_by_id(table: TableDescriptor) -> dict[int, int]:
    """Each column id's position in the table's rows (one pass, for every index's key)."""
    return {col.id: i for i, col in enumerate(table.columns)}


@dataclass
class _IndexFacts:
    """What planning reads of one index of one descriptor version (plan/table_memo.py)."""

    positions: list[int]  # the full key order's row positions (PK suffix included): only read
    desc: list[bool]  # their directions
    covered: set[int] | None  # the positions a secondary index's entries hold (None: the primary)
    orders: dict[tuple, tuple[bool, bool]]  # wanted order -> `_order_match` of the whole index


def _index_facts(table: TableDescriptor, index: IndexDescriptor, primary: bool, memo: dict) -> _IndexFacts:
    facts = memo.get(("index", index.id))
    if facts is None:
        positions, desc = _make_index_columns(table, index, primary)
        covered = None if primary else codec_for(table).index_codec(index.id).covered
        facts = memo[("index", index.id)] = _IndexFacts(positions, desc, covered, {})
    return facts


def _make_index_columns(table: TableDescriptor, index: IndexDescriptor, primary: bool) -> tuple[list[int], list[bool]]:
    """Positions and directions of the full key order of an index (PK suffix included)."""
    positions_by_id = _positions_by_id(table)
    positions = [positions_by_id[c] for c in index.column_ids]
    desc = list(index.descending)
    if not primary:
        for cid, d in zip(table.primary_index.column_ids, table.primary_index.descending):
            p = positions_by_id[cid]
            if p not in positions:
                positions.append(p)
                desc.append(d)
    return positions, desc


def _order_match(positions: list[int], desc: list[bool], bounds: list[ColumnBounds], want: list[tuple[int, bool]]) -> tuple[bool, bool]:
    """(served, reverse): whether reading the index forwards/backwards yields ``want`` order."""
    if not want:
        return True, False
    fixed = set()
    for p, b in zip(positions, bounds):
        if b.eq is not None and not b.is_in or b.is_null:
            fixed.add(p)
    want = [w for w in want if w[0] not in fixed]
    if not want:
        return True, False
    cols = [(p, d) for p, d in zip(positions, desc) if p not in fixed]
    if len(want) > len(cols):
        return False, False
    # IN lists before the first ordered column would interleave spans out of order
    first = want[0][0]
    for p, b in zip(positions, bounds):
        if p == first:
            break
        if b.is_in:
            return False, False
    for direction in (False, True):
        if all(cols[i][0] == wp and (cols[i][1] != direction) == wd for i, (wp, wd) in enumerate(want)):
            return True, direction
    return False, False


def plan_table_access(
    table: TableDescriptor,
    alias: str,
    filters: list[exp.Expression],
    scope: Scope,
    env,
    want_order: list[tuple[int, bool]] | None = None,
    limit: int | None = None,
    needed: set[int] | None = None,
    elements: dict[int, list] | None = None,
    joined: bool = False,
    columns: list[Column] | None = None,
) -> AccessPlan:
    """The cheapest way to read ``table`` under ``filters`` (see module docstring); ``columns``
    is ``table_scope(table, alias)`` when the caller has made it already."""
    if columns is None:
        columns = table_scope(table, alias)
    if table.virtual is not None:
        only = None
        for c in constraints_by_column(filters, scope).get(0, []):  # column 0 is table_name everywhere
            if c.kind == "eq" and table.columns[0].name == "table_name":
                only = const_fn(c.values[0], scope, env)
                break
        op = VirtualScan(table, alias, columns, only)
        return AccessPlan(op, list(filters), not want_order, table_rows(None))
    filters = use_expression_columns(table, alias, filters)  # lower(email) -> its index's column
    cons = constraints_by_column(filters, scope)
    all_positions = set(range(len(table.columns)))
    needed = all_positions if needed is None else needed
    memo = table_memo(table)
    usable = _usable_indexes(table, filters, memo)
    candidates = [_candidate(table, index, index is table.primary_index, cons, scope, env, want_order or [],
                             needed, memo) for index in usable]
    # statistics are read only when an estimate can change the plan: a choice between indexes
    # (a get by a whole unique key needs none), or the order and method of a join; without a
    # point candidate the cheapest is no point get, so they are read before any estimate
    choice = joined or len(usable) > 1
    read = choice and not any(c.point for c in candidates)
    stats = table_statistics(env, table) if read else None
    best = _cheapest(candidates, stats, limit, len(filters))
    if choice and not read and not best.point:
        # the candidates' spans and orders stay, only their estimates are made again
        stats = table_statistics(env, table)
        if stats is not None:
            best = _cheapest(candidates, stats, limit, len(filters))
    inverted = plan_inverted(table, alias, filters, scope, env, needed)
    if inverted is not None:
        inv_op, fraction = inverted
        est = table_rows(stats) * fraction
        if est * 3.0 + 1.0 + (est * 0.5 if want_order else 0.0) < best.cost:
            # a superset of the rows: every filter is checked again on them
            return AccessPlan(inv_op, list(filters), not want_order, est)
    used_ids = {id(n) for n in best.used}
    remaining = [f for f in filters if id(f) not in used_ids]
    scan_limit = limit if (limit is not None and not remaining and best.ordered) else None
    op = IndexScan(
        table,
        alias,
        columns,
        best.index,
        SpanBuilder(index_prefix_of(table, best.index), *best.spans),
        reverse=best.reverse,
        index_only=best.covering and not best.primary,
        residual=[_predicate(n, scope, env) for n in best.used],
        residual_sql=[LazySql(n) for n in best.used],  # SQL text only if EXPLAIN shows it
        limit=scan_limit,
        needed=_decoded_positions(table, best, needed, scope) if DECODE_ONLY_NEEDED else None,
    )
    codec = codec_for(table)
    if best.primary and codec.exploded and elements is not None and not codec.virtual:
        # point reads get only the exploded columns' elements (or values) the query reads
        op.partial_fetch = PartialFetch(codec, needed, elements)
    return AccessPlan(op, remaining, best.ordered and bool(want_order), best.est_rows)


def _usable_indexes(table: TableDescriptor, filters: list[exp.Expression], memo: dict) -> list[IndexDescriptor]:
    """The table's indexes in planning order, without partial ones the filters do not imply
    (``memo``: the table's, plan/table_memo.py)."""
    ordered = memo.get("ordered indexes")
    if ordered is None:
        ordered = memo["ordered indexes"] = table.ordered_indexes()
    if all(index.predicate is None for index in ordered):
        return ordered  # only read by the caller
    out = []
    filter_keys: set[str] | None = None
    for index in ordered:
        if index.predicate is not None:
            if filter_keys is None:
                filter_keys = {conjunct_key(f) for f in filters}
            if not partial_index_applies(index, filter_keys):
                continue  # the index lacks the rows outside its predicate
        out.append(index)
    return out


def _cheapest(candidates: list[_Candidate], stats, limit: int | None, n_filters: int) -> _Candidate:
    """The cheapest candidate once each is estimated under ``stats`` (None: no statistics)."""
    for cand in candidates:
        _estimate(cand, stats)
        if limit is not None and cand.ordered and len(cand.used) == n_filters:
            # the scan stops after LIMIT rows: it reads (and fetches) only those
            cand.cost = min(cand.est_rows, float(limit)) * (1.0 if cand.covering else 3.0) + (0 if cand.primary else 0.5)
    return min(candidates, key=lambda c: (c.cost, not c.primary))


def partial_index_applies(index: IndexDescriptor, filter_keys: set[str]) -> bool:
    """A partial index serves a query when each conjunct of its predicate is one of the query's
    (so every row the query can return satisfies the predicate and is in the index)."""


    pred = parse_expression(index.predicate)
    return all(conjunct_key(c) in filter_keys for c in split_conjuncts(pred))


def _decoded_positions(table: TableDescriptor, best: _Candidate, needed: set[int], scope: Scope) -> set[int]:
    """The row positions the scan must decode: the caller's, plus what its residual checks read."""
    out = set(needed)
    for node in best.used:
        for col in walk_nodes(node):  # what find_all(exp.Column) gives, without its generators
            if not isinstance(col, exp.Column):
                continue
            pos = column_pos(col, scope)
            if pos is None:
                return set(range(len(table.columns)))  # be safe: decode everything
            out.add(pos)
    return out


def _predicate(node: exp.Expression, scope: Scope, env):
    return compile_predicate(node, scope, env)


def _candidate(table, index, primary, cons, scope, env, want, needed, memo) -> _Candidate:
    """An index's spans, order and coverage under the filters; `_estimate` fills its cost."""
    facts = _index_facts(table, index, primary, memo)
    positions, desc = facts.positions, facts.desc
    if not cons.get(positions[0]):  # no span: the same for every query but for its order and columns
        return _unbounded_candidate(index, primary, facts, want, needed)
    key_count = len(index.column_ids)
    bounds: list[ColumnBounds] = []
    types = []
    for i, p in enumerate(positions[: key_count if not primary else len(positions)]):
        col_cons = cons.get(p, [])
        # a LIKE prefix is a span only over an ascending TEXT column
        like_ok = table.columns[p].type.kind == "TEXT" and not desc[i]
        b = bounds_for(col_cons, scope, env, True, like_ok)
        if b is None:
            break
        bounds.append(b)
        types.append(table.columns[p].type)
        if not b.is_equality:
            break
    used = [n for b in bounds for n in b.used]
    n_eq = sum(1 for b in bounds if b.is_equality)
    unique = primary or index.unique
    point_width = key_count if unique else -1
    spans = (types, desc[: len(bounds)], bounds, point_width)
    covering = primary or needed <= facts.covered
    served, reverse = _order_match(positions, desc, bounds, want)
    n_values = 1
    for b in bounds:
        if b.eq is not None:
            n_values *= max(1, len(b.eq))
    point = unique and n_eq == key_count and not any(b.is_null for b in bounds)
    return _Candidate(index, primary, spans, used, covering, reverse, served, 0.0, 0.0, point,
                      n_eq, n_values, len(bounds) > n_eq, bool(want) and not served)


def _unbounded_candidate(index, primary, facts: _IndexFacts, want, needed) -> _Candidate:
    """`_candidate` of an index without a constraint on its leading column (no bounds: the
    whole index), its order match made once per descriptor version and wanted order."""
    key = tuple(want)
    order = facts.orders.get(key)
    if order is None:
        order = facts.orders[key] = _order_match(facts.positions, facts.desc, [], want)
    served, reverse = order
    covering = primary or needed <= facts.covered
    spans = ([], [], [], len(index.column_ids) if primary or index.unique else -1)
    return _Candidate(index, primary, spans, [], covering, reverse, served, 0.0, 0.0, False,
                      0, 1, False, bool(want) and not served)


def _estimate(cand: _Candidate, stats) -> None:
    """Sets the candidate's row estimate and cost, from ``stats`` when there are some."""
    if cand.point:
        est = float(cand.n_values)
    else:
        per_key = rows_per_key(stats, cand.index.id, cand.n_eq) if cand.n_eq else None
        base = table_rows(stats) * (0.05**cand.n_eq) if per_key is None else per_key
        est = base * cand.n_values
        if cand.ranged:
            est *= 0.25
    fetch = 1.0 if cand.covering else 3.0
    cost = est * fetch + (0 if cand.primary else 0.5)
    if cand.sorts:
        cost += est * 0.5  # the caller's sort
    cand.est_rows = est
    cand.cost = cost


def index_prefix_of(table: TableDescriptor, index: IndexDescriptor) -> bytes:
    return index_prefix(table.id, index.id)


@dataclass
class LookupAccess:
    """Rows of a table by the values of some key columns (for lookup joins)."""

    lookup_op: IndexLookup
    est_rows_per_key: float
    primary_point: bool = False  # one get of the row by its whole primary key per lookup

    def lookup(self, ctx, key: tuple):
        return self.lookup_op.lookup(ctx, key)

    def lookup_many(self, ctx, keys: list[tuple]) -> list:
        return self.lookup_op.lookup_many(ctx, keys)

    def describe(self) -> str:
        return self.lookup_op.describe()


def plan_lookup(table: TableDescriptor, alias: str, key_columns: list[int], scope: Scope, env,
                columns: list[Column] | None = None) -> LookupAccess | None:
    """An index whose leading columns are exactly the set ``key_columns`` (PK preferred);
    ``columns`` as in `plan_table_access`."""
    if table.virtual is not None or not key_columns:
        return None
    want = set(key_columns)
    best = None
    for index in table.ordered_indexes():
        primary = index is table.primary_index
        if index.predicate is not None:
            continue  # a lookup has no filter that could imply a partial index's predicate
        lead = [table.column_index(c) for c in index.column_ids][: len(key_columns)]
        if set(lead) != want or len(lead) != len(key_columns):
            continue
        full = len(index.column_ids) == len(key_columns) and (primary or index.unique)
        rank = (0 if full else 1, 0 if primary else 1)
        if best is None or rank < best[0]:
            best = (rank, index, lead, full)
    if best is None:
        return None
    _rank, index, lead, full = best
    order = [key_columns.index(p) for p in lead]
    op = IndexLookup(table, alias, table_scope(table, alias) if columns is None else columns, index, order)
    per_key = None if full else rows_per_key(table_statistics(env, table), index.id, len(key_columns))
    return LookupAccess(op, 1.0 if full else 10.0 if per_key is None else per_key, primary and full)
