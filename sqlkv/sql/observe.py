"""The engine explains itself in SQL: the ``sqlkv_internal`` figure tables.

``SELECT name, value FROM sqlkv_internal.engine_stats WHERE name LIKE 'bloom%'`` resolves,
like every virtual table (virtual.py), to a descriptor whose rows are produced when the scan
runs -- here from the figures the layers below keep about themselves: the storage engine's
`stats()`, `latencies()`, `recent_compactions()` and `approximate_sizes()` (the KV interface;
the memory engine answers fewer of them), the transaction manager's `TxnFigures`, and the
per-statement `StatementStats`. Nothing here is stored: each query reads the figures as they
are at that moment; filters, joins and ORDER BY apply as to any table. Every table is
read-only: INSERT/UPDATE/DELETE and DDL refuse virtual tables (plan/dml_parts.py, ddl/).

Figures that count since some moment say so in a ``since`` column: the LSM's cumulative
counters persist in its MANIFEST and count from the database's creation; latencies, the block
cache, statement and transaction figures count from when the database was opened.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from typing import Any

from sqlkv.encoding.keys import index_prefix, table_prefix
from sqlkv.encoding.pretty import pretty_key, pretty_span
from sqlkv.sql.catalog_tables import selected_tables
from sqlkv.sql.rowstore.display import names_lookup
from sqlkv.sql.stmtstats import StatementStats
from sqlkv.sql.types import BOOL, FLOAT, INT, TEXT, TIMESTAMP
from sqlkv.storage.kv import prefix_end
from sqlkv.storage.metrics import SAMPLE_EVERY

_LATENCY = [("count", INT), ("mean_ms", FLOAT), ("p50_ms", FLOAT), ("p90_ms", FLOAT),
            ("p99_ms", FLOAT), ("max_ms", FLOAT)]

SCHEMAS = {
    "sqlkv_internal.engine_stats": [("name", TEXT), ("value", FLOAT), ("text", TEXT), ("since", TIMESTAMP)],
    "sqlkv_internal.latencies": [("operation", TEXT), *_LATENCY, ("since", TIMESTAMP), ("note", TEXT)],
    "sqlkv_internal.compactions": [
        ("started", TIMESTAMP), ("reason", TEXT), ("kind", TEXT), ("level", INT), ("output_level", INT),
        ("input_files", INT), ("input_bytes", INT), ("output_files", INT), ("output_bytes", INT),
        ("duration_ms", FLOAT), ("since", TIMESTAMP),
    ],
    "sqlkv_internal.statement_stats": [
        ("statement", TEXT), ("kind", TEXT), ("count", INT), ("errors", INT), ("retries", INT),
        ("total_ms", FLOAT), ("mean_ms", FLOAT), ("p50_ms", FLOAT), ("p99_ms", FLOAT), ("max_ms", FLOAT),
        ("rows", INT), ("kv_gets", INT), ("kv_scans", INT), ("kv_keys_read", INT), ("kv_puts", INT),
        ("last_run", TIMESTAMP), ("since", TIMESTAMP),
    ],
    "sqlkv_internal.table_stats": [
        ("table_name", TEXT), ("index_name", TEXT), ("key_span", TEXT), ("keys", INT), ("bytes", INT),
        ("reads", INT), ("writes", INT), ("since", TIMESTAMP),
    ],
    "sqlkv_internal.transactions": [
        ("state", TEXT), ("txn_id", INT), ("at", TIMESTAMP), ("read_only", BOOL), ("snapshot_seq", INT),
        ("reads", INT), ("writes", INT), ("conflict_seq", INT), ("conflict_key", TEXT),
        ("conflict_span", TEXT), ("reason", TEXT), ("since", TIMESTAMP),
    ],
    "sqlkv_internal.hot_ranges": [
        ("key_span", TEXT), ("table_name", TEXT), ("index_name", TEXT), ("reads", INT), ("writes", INT),
        ("window_start", TIMESTAMP),
    ],
}

# The catalog's own tables (catalog.py), named for hot_ranges.
_SYSTEM_TABLES = {1: "system.namespace", 2: "system.descriptor", 3: "system.sequences", 4: "system.timeline",
                  6: "system.statistics"}


def _when(unix: float | None) -> _dt.datetime | None:
    """A Unix time as a local TIMESTAMP (the type now() has), to the millisecond."""
    if unix is None:
        return None
    return _dt.datetime.fromtimestamp(round(unix, 3))


def _manager(catalog):
    return catalog.txn.manager


# -- engine_stats and latencies ------------------------------------------------------------------


# The figures the LSM engine keeps that another engine may lack. An engine without one still
# gets its row, value NULL and the text saying so, so that a query naming it never comes back
# empty-handed (``WHERE name = 'bloom_useful'`` on the memory engine).
STORAGE_FIGURES = (
    "levels", "total_bytes", "space_amplification", "user_bytes_written", "write_amplification",
    "read_amplification", "pending_compaction_bytes", "write_stalls", "write_stall_seconds",
    "write_stops", "write_stop_seconds", "memtable_bytes", "block_cache.hits", "block_cache.misses",
    "block_cache.hit_rate", "bloom_useful", "bloom_positives", "bloom_false_positives",
    "bloom_useful_rate", "bloom_false_positive_rate", "flushes", "compactions", "wal_fsyncs",
)


def engine_stat_rows(engine, manager) -> Iterator[tuple]:
    """(name, value, text, since): one row per figure of the engine and the transaction layer."""
    stats = engine.stats()
    since = stats.get("since")
    opened = stats.get("opened", since)
    persisted = set(stats.get("persisted", ()))
    seen = set()
    for name, value in _flatten(stats):
        if name in ("since", "opened", "persisted"):
            continue
        seen.add(name)
        yield _figure(name, value, since if name.split(".")[0] in persisted else opened)
    absent = f"not applicable: the {stats.get('engine', 'storage')} engine does not keep this figure"
    for name in STORAGE_FIGURES:
        if name not in seen:
            yield (name, None, absent, _when(opened))
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
            yield f"{prefix}levels", len(value)
            for level in value:
                for field, figure in level.items():
                    if field != "level":
                        yield f"{prefix}level.{level['level']}.{field}", figure
        else:
            yield f"{prefix}{key}", value


def _engine_stats(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    return engine_stat_rows(manager.engine, manager)


# The storage operations the latencies table always lists; an engine that keeps no histogram
# of one still gets its row (NULL figures, and a note saying why).
STORAGE_OPERATIONS = ("get", "scan", "flush", "wal_fsync")
_NOTES = {"get": f"one get in {SAMPLE_EVERY} is timed: count is the timed ones",
          "scan": "from opening the scan to its first pair"}


def latency_rows(engine, manager) -> Iterator[tuple]:
    figures = manager.figures
    yield _latency_row("commit", figures.commit_latency.summary(), figures.since, None)
    latencies = engine.latencies()
    by_name = {} if latencies is None else latencies.by_name
    for name, histogram in by_name.items():
        yield _latency_row(name, histogram.summary(), latencies.since, _NOTES.get(name))
    engine_name = engine.stats().get("engine", "storage") if len(by_name) < len(STORAGE_OPERATIONS) else None
    for name in STORAGE_OPERATIONS:
        if name not in by_name:
            yield (name, *(None for _ in _LATENCY), _when(figures.since),
                   f"not applicable: the {engine_name} engine does not time {name}")


def _latency_row(name: str, summary: dict[str, Any], since: float, note: str | None) -> tuple:
    return (name, *(summary[field] for field, _ in _LATENCY), _when(since), note)


def _latencies(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    return latency_rows(manager.engine, manager)


# -- compactions, statements, transactions ---------------------------------------------------------


def _compactions(catalog, only=None) -> Iterator[tuple]:
    engine = _manager(catalog).engine
    compactions = engine.recent_compactions()
    if not compactions:
        return
    stats = engine.stats()  # the log is per process: it lists compactions since the engine opened
    since = _when(stats.get("opened", stats.get("since")))
    for c in compactions:
        yield (_when(c["started"]), c["reason"], c["kind"], c["level"], c["output_level"], c["input_files"],
               c["input_bytes"], c["output_files"], c["output_bytes"], c["duration_ms"], since)


def statement_rows(manager) -> Iterator[tuple]:
    stats = StatementStats.of(manager)
    for f in stats.all():
        if not f.count:
            continue  # still running its first execution (the query reading this table, say)
        summary = f.latency.summary()
        yield (f.statement, f.kind, f.count, f.errors, f.retries, round(f.latency.total / 1e6, 6),
               summary["mean_ms"], summary["p50_ms"], summary["p99_ms"], summary["max_ms"], f.rows,
               f.kv_gets, f.kv_scans, f.kv_keys_read, f.kv_puts, _when(stats.clock_offset + f.last_run / 1e9),
               _when(stats.since))


def _statement_stats(catalog, only=None) -> Iterator[tuple]:
    return statement_rows(_manager(catalog))


def _transactions(catalog, only=None) -> Iterator[tuple]:
    manager = _manager(catalog)
    names = _names(catalog)
    since = _when(manager.figures.since)
    for t in sorted(manager.active_transactions(), key=lambda t: t["txn_id"]):
        yield ("open", t["txn_id"], _when(t["started"]), t["read_only"], t["snapshot_seq"], t["reads"],
               t["writes"], None, None, None, None, since)
    for f in manager.figures.failures.recent():
        key = pretty_key(f["key"], names) if f["key"] is not None else None
        span = pretty_span(*f["span"], names) if f["span"] is not None else None
        yield ("serialization failure", f["txn_id"], _when(f["time"]), False, f["snapshot_seq"], None, None,
               f["conflict_seq"], key, span, f["reason"], since)


# -- table_stats and hot_ranges --------------------------------------------------------------------


def _names(catalog):
    tables = {t.id: t for t in catalog.list_tables()}
    user = names_lookup(tables)

    def names(table_id: int, index_id: int | None):
        if table_id in _SYSTEM_TABLES:
            return (_SYSTEM_TABLES[table_id], None if index_id is None else "primary" if index_id == 1 else str(index_id))
        return user(table_id, index_id)

    return names


def _table_stats(catalog, only: str | None = None) -> Iterator[tuple]:
    manager = _manager(catalog)
    tables = [t for t in selected_tables(catalog, only) if getattr(t, "virtual", None) is None]
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
    live = {t.id: {i.id for i in t.all_indexes()} for t in catalog.list_tables()}
    for (table_id, index_id), (reads, writes) in ranked:
        prefix = index_prefix(table_id, index_id) if index_id is not None else table_prefix(table_id)
        table_name, index_name = names(table_id, index_id)
        if table_id not in _SYSTEM_TABLES:  # dropped since: the span stays numeric, the names NULL
            if table_id not in live:
                table_name = None
            if index_id is not None and index_id not in live.get(table_id, ()):
                index_name = None
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
