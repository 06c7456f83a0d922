"""The workloads of ``sqlkv bench sql``, each plain PEP 249 code run unchanged on every engine.

A workload is a function ``(engine, dataset, stopwatch, rep) -> results``. It draws its inputs
from the dataset (so every engine gets the same keys), runs its statements with only the
database work inside ``with stopwatch:``, and returns what the engine answered, one entry per
operation. For example `point_select` at scale 100,000 picks 10,000 keys, then for each key
times ``execute(SELECT ... WHERE id = ?)`` + ``fetchall()`` and appends the rows; the runner
compares the 10,000 answers with sqlite3's. Writing workloads return rowcounts and name a
``check`` query the runner runs (untimed) afterwards, so a lost or doubled write shows as a
mismatch too. grammar-notes/benchmarks.md describes each workload in prose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlkv.bench.sql_data import (
    INSERT_CUSTOMER,
    INSERT_ORDER,
    SCHEMA,
    Dataset,
    scattered_keys,
)
from sqlkv.bench.sql_engines import BenchEngine
from sqlkv.bench.sql_timing import Stopwatch
from sqlkv.bench.sql_report import UNKNOWN

Results = list[Any]
WorkloadFn = Callable[[BenchEngine, Dataset, Stopwatch, int], Results]

BATCH_PER_COMMIT = 10


@dataclass(frozen=True)
class Workload:
    """One benchmarked workload and how the runner should treat it."""

    name: str  # as given to --only / --profile
    title: str  # as printed in the table
    unit: str  # what one operation is, e.g. "selects"
    count: Callable[[Dataset], int]  # operations per repetition
    run: WorkloadFn
    # Each operation's rows are compared as a multiset (the SQL has no ORDER BY).
    unordered_rows: bool = False
    # Changes the database, so each repetition uses fresh keys and all repetitions' answers count.
    writes: bool = False
    # False for the load: it creates the tables, so it runs once whatever --repeat says.
    repeatable: bool = True
    # Queries run untimed after the workload; their answers must agree across engines.
    check: tuple[str, ...] = ()


def _fetch_each(cursor: Any, sql: str, params: list[tuple], watch: Stopwatch) -> Results:
    """Run ``sql`` once per parameter tuple, timing only execute + fetchall."""
    results: Results = []
    append = results.append
    with watch:
        for args in params:
            cursor.execute(sql, args)
            append(cursor.fetchall())
    return results


# 1. Bulk insert -------------------------------------------------------------------------------

def bulk_insert(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    cursor = engine.cursor()
    for statement in SCHEMA:
        cursor.execute(statement)
    engine.commit()
    engine.begin()
    for chunk in data.customer_chunks():
        with watch:
            cursor.executemany(INSERT_CUSTOMER, chunk)
    for chunk in data.order_chunks():
        with watch:
            cursor.executemany(INSERT_ORDER, chunk)
    with watch:
        engine.commit()
        # The LSM owes flushes and compactions for what it just took in; they are part of the
        # load's cost, and left running they would share the interpreter with later workloads.
        engine.settle()
    engine.analyze()  # untimed: table statistics, as a user would collect after a load
    return []


# 2-4. Lookups ---------------------------------------------------------------------------------

POINT_SELECT = "SELECT id, customer_id, sku, quantity, amount, status FROM orders WHERE id = ?"


def point_select(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    rng = data.rng("point_select")
    keys = [(rng.randint(1, data.scale),) for _ in range(_point_selects(data))]
    return _fetch_each(engine.cursor(), POINT_SELECT, keys, watch)


def _point_selects(data: Dataset) -> int:
    return min(10_000, data.scale)


INDEX_LOOKUP = "SELECT id, customer_id, quantity FROM orders WHERE sku = ?"


def index_lookup(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    rng = data.rng("index_lookup")
    # One in ten looks for a sku that does not exist, so misses are measured too.
    skus = [
        (data.sku_of(rng.randint(1, data.scale)) if i % 10 else f"sku-missing-{i}",)
        for i in range(_index_lookups(data))
    ]
    return _fetch_each(engine.cursor(), INDEX_LOOKUP, skus, watch)


def _index_lookups(data: Dataset) -> int:
    return min(10_000, data.scale)


RANGE_SCAN = "SELECT id, sku, amount FROM orders WHERE id BETWEEN ? AND ?"


def range_scan(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    rng = data.rng("range_scan")
    starts = [rng.randint(1, max(1, data.scale - 99)) for _ in range(_range_scans(data))]
    return _fetch_each(engine.cursor(), RANGE_SCAN, [(k, k + 99) for k in starts], watch)


def _range_scans(data: Dataset) -> int:
    return min(1_000, data.scale)


# 5-6. Analytics -------------------------------------------------------------------------------

GROUP_BY = (
    "SELECT status, COUNT(*), SUM(quantity), MIN(amount), MAX(amount), AVG(amount) "
    "FROM orders GROUP BY status"
)


def group_by(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    return _fetch_each(engine.cursor(), GROUP_BY, [()], watch)


JOIN = (
    "SELECT c.id, c.name, c.region, o.id, o.sku, o.amount "
    "FROM customers c JOIN orders o ON o.customer_id = c.id "
    "WHERE c.id BETWEEN ? AND ? AND o.quantity > 10"
)
JOIN_CUSTOMERS_PER_QUERY = 10


def join(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    rng = data.rng("join")
    last_start = max(1, data.customers - JOIN_CUSTOMERS_PER_QUERY + 1)
    starts = [rng.randint(1, last_start) for _ in range(_joins(data))]
    params = [(k, k + JOIN_CUSTOMERS_PER_QUERY - 1) for k in starts]
    return _fetch_each(engine.cursor(), JOIN, params, watch)


def _joins(data: Dataset) -> int:
    return min(200, data.customers)


# 12. The whole customers x orders join ---------------------------------------------------------

JOIN_ALL = (
    "SELECT c.region, count(*), sum(o.amount) "
    "FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.region"
)
JOIN_ALL_QUERIES = 3


def join_all(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    """Every customer joined with its orders (10k x N): one pass over orders (a hash join)
    against a lookup per customer in orders_customer."""
    return _fetch_each(engine.cursor(), JOIN_ALL, [()] * JOIN_ALL_QUERIES, watch)


# 7-8. Small write transactions ----------------------------------------------------------------

UPDATE = "UPDATE orders SET quantity = quantity + 1, amount = ? WHERE id = ?"
TOTALS_CHECK = "SELECT COUNT(*), SUM(id), SUM(customer_id), SUM(quantity), SUM(amount) FROM orders"


def update(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    rng = data.rng("update", rep)
    params = [(rng.randrange(100, 100_000), rng.randint(1, data.scale)) for _ in range(_updates(data))]
    return _write_in_batches(engine, UPDATE, params, watch)


def _updates(data: Dataset) -> int:
    return min(2_000, data.scale)


DELETE = "DELETE FROM orders WHERE id = ?"


def delete(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    count = _deletes(data)
    keys = scattered_keys(data.scale, rep * count, count)
    return _write_in_batches(engine, DELETE, [(k,) for k in keys], watch)


def _deletes(data: Dataset) -> int:
    # At most a tenth of the table per repetition, so repeated runs still find rows to delete.
    return min(2_000, max(1, data.scale // 10))


def _write_in_batches(engine: BenchEngine, sql: str, params: list[tuple], watch: Stopwatch) -> Results:
    """Execute ``sql`` once per parameter tuple, committing every `BATCH_PER_COMMIT` statements."""
    cursor = engine.cursor()
    rowcounts: Results = []
    with watch:
        for first in range(0, len(params), BATCH_PER_COMMIT):
            engine.begin()
            for args in params[first : first + BATCH_PER_COMMIT]:
                cursor.execute(sql, args)
                rowcounts.append(cursor.rowcount)
            engine.commit()
    # DuckDB's rowcount is always -1; the check query still catches lost writes there.
    return rowcounts if engine.reports_rowcount else [UNKNOWN] * len(rowcounts)


# 9-10. Top-N and reopening --------------------------------------------------------------------

ORDER_LIMIT = (
    "SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10",
    "SELECT id, sku, amount FROM orders ORDER BY sku DESC LIMIT 10",
)


def order_limit(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    cursor = engine.cursor()
    results: Results = []
    with watch:
        for i in range(_order_limits(data)):
            cursor.execute(ORDER_LIMIT[i % 2])
            results.append(cursor.fetchall())
    return results


def _order_limits(data: Dataset) -> int:
    # Few, because an engine that sorts the whole table instead of walking the index needs
    # a full scan per query; 20 is still plenty to time an engine that walks the index.
    return 20


REOPEN_QUERY = "SELECT id, sku, amount FROM orders WHERE id = ?"


def reopen(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    key = data.rng("reopen").randint(1, data.scale)
    with watch:
        engine.reopen()
        cursor = engine.cursor()
        cursor.execute(REOPEN_QUERY, (key,))
        rows = cursor.fetchall()
    return [rows]


# 11. Full scan through a filter ----------------------------------------------------------------

SCAN_FILTER = "SELECT COUNT(*), SUM(amount) FROM orders WHERE quantity > 10"


def scan_filter(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    """Every row read, decoded and tested: the per-row cost of the read path, no grouping."""
    return _fetch_each(engine.cursor(), SCAN_FILTER, [()], watch)


# 12. Index build on the populated table ---------------------------------------------------------

CREATE_INDEX = "CREATE INDEX orders_amount ON orders (amount, quantity)"
INDEX_CHECK = "SELECT COUNT(*), SUM(quantity), MIN(id) FROM orders WHERE amount BETWEEN 1000 AND 1100"


def create_index(engine: BenchEngine, data: Dataset, watch: Stopwatch, rep: int) -> Results:
    """Last in the list, so the extra index changes no other workload's figures."""
    engine.run_ddl("DROP INDEX IF EXISTS orders_amount")  # an earlier repetition's
    engine.settle()
    with watch:
        engine.run_ddl(CREATE_INDEX)
    return []


WORKLOADS: tuple[Workload, ...] = (
    Workload("bulk_insert", "bulk insert (executemany, 1 txn)", "rows",
             lambda d: d.scale + d.customers, bulk_insert, writes=True, repeatable=False,
             check=(TOTALS_CHECK, "SELECT MIN(sku), MAX(sku) FROM orders",
                    "SELECT COUNT(*), SUM(tier), MIN(region), MAX(region) FROM customers")),
    Workload("point_select", "point select by primary key", "selects", _point_selects, point_select),
    Workload("index_lookup", "lookup by secondary index", "lookups", _index_lookups, index_lookup,
             unordered_rows=True),
    Workload("range_scan", "range scan, 100 keys", "scans", _range_scans, range_scan,
             unordered_rows=True),
    Workload("group_by", "full-scan GROUP BY aggregate", "queries", lambda d: 1, group_by,
             unordered_rows=True),
    Workload("join", "join 10k x N on index, filtered", "queries", _joins, join,
             unordered_rows=True),
    Workload("update", f"UPDATE by key, {BATCH_PER_COMMIT}/commit", "updates", _updates, update,
             writes=True, check=(TOTALS_CHECK,)),
    Workload("delete", f"DELETE by key, {BATCH_PER_COMMIT}/commit", "deletes", _deletes, delete,
             writes=True, check=(TOTALS_CHECK, "SELECT COUNT(*) FROM orders WHERE id <= 1000")),
    Workload("order_limit", "ORDER BY indexed col LIMIT 10", "queries", _order_limits, order_limit),
    Workload("reopen", "close + connect + first query", "reopens", lambda d: 1, reopen),
    Workload("scan_filter", "full-scan filter + count", "queries", lambda d: 1, scan_filter),
    Workload("join_all", "join 10k x N whole, GROUP BY", "queries", lambda d: JOIN_ALL_QUERIES, join_all,
             unordered_rows=True),
    Workload("create_index", "CREATE INDEX on the populated table", "indexes", lambda d: 1, create_index,
             writes=True, check=(INDEX_CHECK,)),
)

WORKLOADS_BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}
