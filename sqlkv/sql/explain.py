"""EXPLAIN [ANALYZE]: a plan's tree, one operator per line, with exact spans in key grammar.

``EXPLAIN SELECT * FROM users WHERE email = 'a@b.c'``: the session plans the inner statement
(through its plan cache) and binds the parameters given with the EXPLAIN; `explain` takes that
plan and context and returns the lines, e.g. ``get users@users_email_key /Table/104/2/"a@b.c"``
(scans compute their spans from the bound context). With ``analyze`` the statement really runs
(DML writes, as in PostgreSQL), collecting per-operator rows, time and KV operations in
``ctx.stats``; each line gets its figures (observe_explain.py), and a total line follows.
"""

from __future__ import annotations

from collections.abc import Iterator
from time import perf_counter_ns

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.scan import IndexScan
from sqlkv.sql.exec.write import WriteOperator


def _walk(op: Operator) -> Iterator[Operator]:
    yield op
    for child in op.children():
        yield from _walk(child)


def explain(root: Operator, ctx: ExecContext, analyze: bool = False) -> list[str]:
    """The lines of ``root``'s plan; with ``analyze``, after running it in ``ctx``."""
    scans = [op for op in _walk(root) if isinstance(op, IndexScan)]
    for op in scans:
        op.describe_ctx = ctx
    try:
        if not analyze:
            return root.explain(None)
        ctx.stats = {}
        started = perf_counter_ns()
        rowcount = _run(root, ctx)
        elapsed_ms = (perf_counter_ns() - started) / 1e6
        lines = root.explain(ctx)
        totals = [0, 0, 0]
        for st in ctx.stats.values():
            totals[0] += st.kv_gets
            totals[1] += st.kv_scans
            totals[2] += st.kv_keys_read
        lines.append(f"total: rows={rowcount} time={elapsed_ms:.3f}ms kv_gets={totals[0]} kv_scans={totals[1]} "
                     f"kv_keys={totals[2]}")
        return lines
    finally:
        ctx.stats = None
        for op in scans:
            op.describe_ctx = None


def _run(root: Operator, ctx: ExecContext) -> int:
    if isinstance(root, WriteOperator):
        return root.execute(ctx).rowcount
    n = 0
    for _ in counted(root, ctx):
        n += 1
    return n
