"""EXPLAIN ANALYZE's timing: how long each operator took, and rows per KV batch.

`counted` (exec/operator.py) hands an operator's rows to its parent; while EXPLAIN ANALYZE
collects, it pulls them through `timed_rows`, which reads the clock around every ``next()``
of the operator's generator. The time is *inclusive*: what the operator and everything below
it spent producing its rows (the root's time is the statement's), the way PostgreSQL reports
``actual time``. Only EXPLAIN ANALYZE pays for the clock reads; plain runs never come here.

A *batch* is one KV request (a get or a scan): ``rows/batch`` is the keys an operator read
per request, which shows whether a lookup join or an index scan fetches one key per round
trip (1.0) or streams many.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from time import perf_counter_ns
from typing import Any

from sqlkv.sql.context import OperatorStats


def timed_rows(op: Any, ctx: Any, st: Any) -> Iterator[tuple]:
    """``op.rows(ctx)``, counting the rows and the time producing them into ``st``.

    ``rows()`` itself is timed too: some operators (a sort) do their work before returning
    an iterator."""
    return _timed(op.rows, ctx, st, False)


def timed_batches(op: Any, ctx: Any, st: Any) -> Iterator[list[tuple]]:
    """`timed_rows` for ``op.batches(ctx)``: the rows of each batch counted, each batch timed."""
    return _timed(op.batches, ctx, st, True)


def timed_column_batches(produce: Any, ctx: Any, st: Any) -> Iterator[Any]:
    """`timed_batches` for a producer of column batches (exec/columnar.py): ``len`` of each
    is its rows."""
    return _timed(produce, ctx, st, True)


def _timed(produce: Any, ctx: Any, st: Any, batches: bool) -> Iterator[Any]:
    started = perf_counter_ns()
    it = iter(produce(ctx))
    st.time_ns += perf_counter_ns() - started
    while True:
        started = perf_counter_ns()
        try:
            item = next(it)
        except StopIteration:
            st.time_ns += perf_counter_ns() - started
            return
        st.time_ns += perf_counter_ns() - started
        st.rows += len(item) if batches else 1
        yield item


def merged_stats(stats: dict[int, Any], op: Any) -> Any:
    """``op``'s figures with the KV requests of its `kv_parts` added (None: it never ran)."""
    st = stats.get(id(op))
    parts = [stats[id(p)] for p in op.kv_parts() if id(p) in stats]
    if not parts:
        return st
    merged = replace(st) if st is not None else OperatorStats()
    for part in parts:
        merged.kv_gets += part.kv_gets
        merged.kv_scans += part.kv_scans
        merged.kv_keys_read += part.kv_keys_read
    return merged


def analyze_suffix(st: Any) -> str:
    """The figures EXPLAIN ANALYZE appends to one operator's line."""
    extra = f"rows={'?' if st.rows < 0 else st.rows} time={st.time_ns / 1e6:.3f}ms"
    if st.kv_gets or st.kv_scans:
        batches = st.kv_gets + st.kv_scans
        extra += f" kv_gets={st.kv_gets} kv_scans={st.kv_scans}"
        if st.keys_counted:
            extra += f" kv_keys={st.kv_keys_read} rows/batch={st.kv_keys_read / batches:.1f}"
    if st.kv_puts:
        extra += f" kv_puts={st.kv_puts}"
    return extra
