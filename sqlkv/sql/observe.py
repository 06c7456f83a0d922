"""The engine explains itself in SQL: the ``sqlkv_internal`` figure tables.

``SELECT name, value FROM sqlkv_internal.engine_stats WHERE name LIKE 'bloom%'`` resolves,
like every virtual table (virtual.py), to a descriptor whose rows are produced when the scan
runs -- here from the figures the layers below keep about themselves: the storage engine's
`stats()`, `latencies()`, `recent_compactions()` and `approximate_sizes()` (the KV interface;
the memory engine answers fewer of them), the transaction manager's `TxnFigures`, and the
per-statement `StatementStats`. Nothing here is stored: each query reads the figures as they
are at that moment; filters, joins and ORDER BY apply as to any table. Every table is
read-only: INSERT/UPDATE/DELETE and DDL refuse virtual tables (dmlcommon.py, ddl.py).

Figures that count since some moment say so in a ``since`` column: the LSM's cumulative
counters persist in its MANIFEST and count from the database's creation; latencies, the block
cache, statement and transaction figures count from when the database was opened.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from typing import Any

from sqlkv.sql.types import BOOL, FLOAT, INT, TEXT, TIMESTAMP
from sqlkv.encoding.keys import index_prefix, table_prefix
from sqlkv.encoding.pretty import pretty_key, pretty_span
from sqlkv.storage.kv import prefix_end

_LATENCY = [("count", INT), ("mean_ms", FLOAT), ("p50_ms", FLOAT), ("p90_ms", FLOAT),
            ("p99_ms", FLOAT), ("max_ms", FLOAT)]

SCHEMAS = {
    "sqlkv_internal.engine_stats": [("name", TEXT), ("value", FLOAT), ("text", TEXT), ("since", TIMESTAMP)],
    "sqlkv_internal.latencies": [("operation", TEXT), *_LATENCY, ("since", TIMESTAMP)],
    "sqlkv_internal.compactions": [
        ("started", TIMESTAMP), ("reason", TEXT), ("kind", TEXT), ("level", INT), ("output_level", INT),
        ("input_files", INT), ("input_bytes", INT), ("output_files", INT), ("output_bytes", INT),
        ("duration_ms", FLOAT),
    ],
    "sqlkv_internal.statement_stats": [
        ("statement", TEXT), ("kind", TEXT), ("count", INT), ("errors", INT), ("retries", INT),
        ("total_ms", FLOAT), ("mean_ms", FLOAT), ("p50_ms", FLOAT), ("p99_ms", FLOAT), ("max_ms", FLOAT),
        ("rows", INT), ("kv_gets", INT), ("kv_scans", INT), ("kv_keys_read", INT), ("kv_puts", INT),
        ("last_run", TIMESTAMP),
    ],
    "sqlkv_internal.table_stats": [
        ("table_name", TEXT), ("index_name", TEXT), ("key_span", TEXT), ("keys", INT), ("bytes", INT),
        ("reads", INT), ("writes", INT), ("since", TIMESTAMP),
    ],
    "sqlkv_internal.transactions": [
        ("state", TEXT), ("txn_id", INT), ("at", TIMESTAMP), ("read_only", BOOL), ("snapshot_seq", INT),
        ("reads", INT), ("writes", INT), ("conflict_seq", INT), ("conflict_key", TEXT),
        ("conflict_span", TEXT), ("reason", TEXT),
    ],
    "sqlkv_internal.hot_ranges": [
        ("key_span", TEXT), ("table_name", TEXT), ("index_name", TEXT), ("reads", INT), ("writes", INT),
        ("window_start", TIMESTAMP),
    ],
}

# The catalog's own tables (catalog.py), named for hot_ranges.
_SYSTEM_TABLES = {1: "system.namespace", 2: "system.descriptor", 3: "system.sequences", 4: "system.timeline"}


def _when(unix: float | None) -> _dt.datetime | None:
    """A Unix time as a local TIMESTAMP (the type now() has), to the millisecond."""
    if unix is None:
        return None
    return _dt.datetime.fromtimestamp(round(unix, 3))


def _manager(catalog):
    return catalog.txn.manager


# -- engine_stats and latencies ------------------------------------------------------------------


def engine_stat_rows(engine, manager) -> Iterator[tuple]:
    """(name, value, text, since): one row per figure of the engine and the transaction layer."""
    stats = engine.stats()
    since = stats.get("since")
    opened = stats.get("opened", since)
    persisted = set(stats.get("persisted", ()))
    for name, value in _flatten(stats):
        if name in ("since", "opened", "persisted"):
            continue
        yield _figure(name, value, since if name.split(".")[0] in persisted else opened)
    for name, value in manager.stats().items():
        yield _figure(f"txn.{name}", value, manager.figures.since)


def _figure(name: str, value: Any, since: float | None) -> tuple:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return (name, None, None if value is None else str(value), _when(since))
    return (name, float(value), None, _when(since))


def _flatten(stats: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in stats.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        elif key == "levels" and isinstance(value, list):  # [{level: 0, files: ..}, ..]
            for level in value:
                for field, figure in level.items():
                    if field != "level":
                        yield f"{prefix}level.{level['level']}.{field}", figure
        else:
            yield f"{prefix}{key}", value


def _engine_stats(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    return engine_stat_rows(manager.engine, manager)


def latency_rows(engine, manager) -> Iterator[tuple]:
    figures = manager.figures
    yield _latency_row("commit", figures.commit_latency.summary(), figures.since)
    latencies = engine.latencies()
    if latencies is not None:
        for name, histogram in latencies.by_name.items():
            yield _latency_row(name, histogram.summary(), latencies.since)


def _latency_row(name: str, summary: dict[str, Any], since: float) -> tuple:
    return (name, *(summary[field] for field, _ in _LATENCY), _when(since))


def _latencies(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    return latency_rows(manager.engine, manager)


# -- compactions, statements, transactions ---------------------------------------------------------


def _compactions(catalog, only=None) -> Iterator[tuple]:
    for c in _manager(catalog).engine.recent_compactions():
        yield (_when(c["started"]), c["reason"], c["kind"], c["level"], c["output_level"], c["input_files"],
               c["input_bytes"], c["output_files"], c["output_bytes"], c["duration_ms"])


def statement_rows(manager) -> Iterator[tuple]:
    from sqlkv.sql.stmtstats import StatementStats

    stats = StatementStats.of(manager)
    for f in stats.all():
        if not f.count:
            continue  # still running its first execution (the query reading this table, say)
        summary = f.latency.summary()
        yield (f.statement, f.kind, f.count, f.errors, f.retries, round(f.latency.total / 1e6, 6),
               summary["mean_ms"], summary["p50_ms"], summary["p99_ms"], summary["max_ms"], f.rows,
               f.kv_gets, f.kv_scans, f.kv_keys_read, f.kv_puts, _when(stats.clock_offset + f.last_run / 1e9))


def _statement_stats(catalog, only=None) -> Iterator[tuple]:
    return statement_rows(_manager(catalog))


def _transactions(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    names = _names(catalog)
    for t in sorted(manager.active_transactions(), key=lambda t: t["txn_id"]):
        yield ("open", t["txn_id"], _when(t["started"]), t["read_only"], t["snapshot_seq"], t["reads"],
               t["writes"], None, None, None, None)
    for f in manager.figures.failures.recent():
        key = pretty_key(f["key"], names) if f["key"] is not None else None
        span = pretty_span(*f["span"], names) if f["span"] is not None else None
        yield ("serialization failure", f["txn_id"], _when(f["time"]), False, f["snapshot_seq"], None, None,
               f["conflict_seq"], key, span, f["reason"])


# -- table_stats and hot_ranges --------------------------------------------------------------------


def _names(catalog):
    from sqlkv.sql.rowstore.display import names_lookup

    tables = {t.id: t for t in catalog.list_tables()}
    user = names_lookup(tables)

    def names(table_id: int, index_id: int | None):
        if table_id in _SYSTEM_TABLES:
            return (_SYSTEM_TABLES[table_id], None if index_id is None else "primary" if index_id == 1 else str(index_id))
        return user(table_id, index_id)

    return names


def _table_stats(catalog, only: str | None = None) -> Iterator[tuple]:
    from sqlkv.sql.virtual import _selected

    manager = _manager(catalog)
    tables = [t for t in _selected(catalog, only) if getattr(t, "virtual", None) is None]
    spans, labels = [], []
    for t in tables:
        for idx in t.all_indexes():
            prefix = index_prefix(t.id, idx.id)
            spans.append((prefix, prefix_end(prefix)))
            labels.append((t, idx))
    sizes = manager.engine.approximate_sizes(spans) if spans else []
    totals = manager.figures.totals()
    names = _names(catalog)
    since = _when(manager.figures.since)
    for (t, idx), (start, _end), (keys, size) in zip(labels, spans, sizes):
        reads, writes = totals.get((t.id, idx.id), (0, 0))
        yield (t.name, idx.name, pretty_key(start, names), keys, size, reads, writes, since)


def _hot_ranges(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    counts, start = manager.figures.hot()
    names = _names(catalog)
    ranked = sorted(counts.items(), key=lambda item: (-(item[1][0] + item[1][1]), item[0][0], item[0][1] or 0))
    for (table_id, index_id), (reads, writes) in ranked:
        prefix = index_prefix(table_id, index_id) if index_id is not None else table_prefix(table_id)
        table_name, index_name = names(table_id, index_id)
        yield (pretty_key(prefix, names), table_name, index_name, reads, writes, _when(start))


PRODUCERS = {
    "sqlkv_internal.engine_stats": _engine_stats,
    "sqlkv_internal.latencies": _latencies,
    "sqlkv_internal.compactions": _compactions,
    "sqlkv_internal.statement_stats": _statement_stats,
    "sqlkv_internal.table_stats": _table_stats,
    "sqlkv_internal.transactions": _transactions,
    "sqlkv_internal.hot_ranges": _hot_ranges,
}
