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
from sqlkv.sql.exec.inverted_scan import InvertedScan
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.scan import IndexScan
from sqlkv.sql.exec.write import WriteOperator


def _walk(op: Operator) -> Iterator[Operator]:
    yield op
    for child in op.children():
        yield from _walk(child)


def explain(root: Operator, ctx: ExecContext, analyze: bool = False) -> list[str]:
    """The lines of ``root``'s plan; with ``analyze``, after running it in ``ctx``."""
    scans = [op for op in _walk(root) if isinstance(op, (IndexScan, InvertedScan))]
    for op in scans:
        op.describe_ctx = ctx
    try:
        if not analyze:
            return root.explain(None)
        ctx.stats = {}
        before = _txn_counts(ctx.txn)
        started = perf_counter_ns()
        rowcount = _run(root, ctx)
        elapsed = perf_counter_ns() - started
        spent = [after - b for after, b in zip(_txn_counts(ctx.txn), before)]
        if isinstance(root, WriteOperator):
            _charge_write(root, ctx, rowcount, elapsed, spent)
        lines = root.explain(ctx)
        totals = [0, 0, 0]
        for st in ctx.stats.values():
            totals[0] += st.kv_gets
            totals[1] += st.kv_scans
            totals[2] += st.kv_keys_read
        lines.append(f"total: rows={_count(rowcount)} time={elapsed / 1e6:.3f}ms kv_gets={totals[0]} kv_scans={totals[1]} "
                     f"kv_keys={totals[2]} kv_puts={spent[3]}")
        return lines
    finally:
        ctx.stats = None
        for op in scans:
            op.describe_ctx = None


def _count(rows: int) -> str:
    return "?" if rows < 0 else str(rows)


def _txn_counts(txn) -> tuple[int, int, int, int]:
    """The transaction's KV requests so far: gets, scans, keys read, puts."""
    if txn is None:
        return (0, 0, 0, 0)
    return (getattr(txn, "kv_gets", 0), getattr(txn, "kv_scans", 0), getattr(txn, "kv_keys_read", 0),
            getattr(txn, "kv_puts", 0))


def _charge_write(root: WriteOperator, ctx: ExecContext, rowcount: int, elapsed: int, spent: list[int]) -> None:
    """The DML root's own figures: rows affected, the statement's time, the puts it buffered,
    and the reads its operators below did not make (uniqueness, foreign key and index checks)."""
    st = ctx.stats_for(root)
    below = [s for key, s in ctx.stats.items() if key != id(root)]
    st.rows = rowcount  # -1 (TRUNCATE: not counted) shows as rows=?
    st.time_ns = elapsed
    st.kv_puts = spent[3]
    st.kv_gets = max(0, spent[0] - sum(s.kv_gets for s in below))
    st.kv_scans = max(0, spent[1] - sum(s.kv_scans for s in below))
    st.keys_counted = False  # the transaction counts the keys its scans pull, not those gets find


def _run(root: Operator, ctx: ExecContext) -> int:
    if isinstance(root, WriteOperator):
        return root.execute(ctx).rowcount
    n = 0
    for _ in counted(root, ctx):
        n += 1
    return n
