"""Fast paths for prepared statements whose plan is one index read.

``SELECT id, sku FROM orders WHERE id = ?`` plans to ``Project(IndexScan)`` with a point span.
Run the normal way, each execution stacks five generators (the result's, the time-zone
wrapper, the error guard, the projection, the scan) and a streaming result with its callbacks.
`compile_index_read` recognises such plans when they are cached and gives the session a
function that runs the scan itself and returns the (few) rows as a list: encode the key, get,
decode, pick the columns.

It applies only where the shortcut cannot change what the statement does: the span values are
parameters or literals (no function that reads the clock or a sequence), the projection picks
columns (nothing that can fail or read the context), and the scan is exact or re-checks its own
filters as it always does. A scan that finds more than `MAX_READY_ROWS` rows gives up (returns
None): such a result streams through the normal path, which does not hold it all in memory.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from sqlglot import exp

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Project
from sqlkv.sql.exec.scan import IndexScan

MAX_READY_ROWS = 256

IndexRead = Callable[[ExecContext], "list[tuple] | None"]

_PICK = operator.itemgetter


def compile_index_read(plan: Operator) -> IndexRead | None:
    """A function running ``plan`` to a list of rows, or None when ``plan`` is not one
    equality read of an index (see the module docstring)."""
    picks = None
    scan = plan
    if type(plan) is Project:
        if not all(type(f) is _PICK for f in plan.exprs):
            return None
        picks = list(plan.exprs)
        scan = plan.child
    if type(scan) is not IndexScan or not _equality_on_constants(scan):
        return None
    generic = _reader(scan, picks)
    if scan.point_gettable:
        return _primary_get(scan, picks, generic)
    return generic


def _equality_on_constants(scan: IndexScan) -> bool:
    """One equality span whose values are parameters or literals."""
    builder = scan.builder
    if not builder.bounds or not (builder._single_point or builder._one_prefix):
        return False
    return all(_constant(node) for b in builder.bounds for node, _fn in b.eq or ())


def _constant(node: exp.Expression) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, (exp.Placeholder, exp.Literal, exp.Boolean))


def _reader(scan: IndexScan, picks: list[Callable[[tuple], object]] | None) -> IndexRead:
    rows_of = scan.rows
    limit = MAX_READY_ROWS

    def read(ctx: ExecContext) -> list[tuple] | None:
        rows = []
        for row in rows_of(ctx):
            if len(rows) == limit:
                return None  # a long result: let it stream
            rows.append(row)
        if picks is None:
            return rows
        if len(picks) == 1:
            pick = picks[0]
            return [(pick(row),) for row in rows]
        return [tuple([pick(row) for pick in picks]) for row in rows]

    return read


def _primary_get(scan: IndexScan, picks: list[Callable[[tuple], object]] | None,
                 generic: IndexRead) -> IndexRead:
    get = scan.point_get

    def read(ctx: ExecContext) -> list[tuple] | None:
        rows = get(ctx)
        if rows is None:
            return generic(ctx)  # a value to widen for: the scan re-checks, as it always does
        if picks is None or not rows:
            return rows
        row = rows[0]
        return [tuple([pick(row) for pick in picks])]

    return read
