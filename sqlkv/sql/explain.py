"""EXPLAIN [ANALYZE]: the plan tree of a statement, with exact spans in key grammar.

``EXPLAIN SELECT * FROM users WHERE email = 'a@b.c'`` plans the inner statement (through the
session's plan cache), binds the parameters given with the EXPLAIN so spans can be computed,
and prints the tree one operator per line, e.g. ``get users@users_email_key
/Table/104/2/"a@b.c"``. EXPLAIN ANALYZE runs the statement (DML really writes, as in
PostgreSQL), collecting per-operator rows, time and KV operations in ``ctx.stats`` and appends
them to each line (observe_explain.py), plus a total.
"""

from __future__ import annotations

from time import perf_counter_ns

from sqlkv.errors import NotSupportedError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.scan import IndexScan

_EXPLAINABLE = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"}


def _walk(op: Operator):
    yield op
    for child in op.children():
        yield from _walk(child)


def explain_statement(session, stmt, params):
    from sqlkv.sql.session import Result

    inner = stmt.inner
    if inner is None or inner.kind not in _EXPLAINABLE:
        raise NotSupportedError(f"EXPLAIN is not supported for {inner.kind if inner else 'this statement'}")
    prepared = session.prepare(inner)
    ctx = session._bind(prepared, params)
    root = prepared.plan.explain_root()
    for op in _walk(root):
        if isinstance(op, IndexScan):
            op.describe_ctx = ctx
    lines: list[str]
    if stmt.explain_analyze:
        ctx.stats = {}
        started = perf_counter_ns()
        rowcount = _run(prepared, ctx)
        elapsed_ms = (perf_counter_ns() - started) / 1e6
        lines = root.explain(ctx)
        totals = [0, 0, 0]
        for st in ctx.stats.values():
            totals[0] += st.kv_gets
            totals[1] += st.kv_scans
            totals[2] += st.kv_keys_read
        lines.append(f"total: rows={rowcount} time={elapsed_ms:.3f}ms kv_gets={totals[0]} kv_scans={totals[1]} "
                     f"kv_keys={totals[2]}")
        ctx.stats = None
    else:
        lines = root.explain(None)
    for op in _walk(root):
        if isinstance(op, IndexScan):
            op.describe_ctx = None
    return Result("EXPLAIN", [Column("info")], [(line,) for line in lines], -1)


def _run(prepared, ctx: ExecContext) -> int:
    plan = prepared.plan
    if hasattr(plan, "execute"):
        res = plan.execute(ctx)
        return res.rowcount
    from sqlkv.sql.exec.operator import counted

    n = 0
    for _ in counted(plan.op, ctx):
        n += 1
    return n
