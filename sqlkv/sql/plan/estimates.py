"""Row estimates and join costs from table statistics (ANALYZE, sqlkv/catalog/statistics.py).

Without statistics every table counts as `DEFAULT_TABLE_ROWS` rows and the join method follows
the fixed rule of join_order.py (a lookup join whenever the driving side is not larger than the
inner side's estimate). Once a table is analyzed, its estimates use its row count and, for an
equality on an index's leading columns, the average rows per distinct value of that prefix;
the filters the scan does not serve count with fixed selectivities, except an equality on an
analyzed column: one over its distinct values (exact for a column that leads an index,
sketched for the others). A join step then compares two
costs, in units of "one row read by a scan":

- lookup join: per driving row, one index probe (`PROBE_COST`: a short range read or a get)
  plus each matching row fetched by primary key (`FETCH_COST`, batched by ``get_many``);
- hash join: one scan of the inner side (`SCAN_ROW_COST` per row it reads) plus a hash probe
  per driving row (`HASH_PROBE_COST`).

So 10 driving rows against a 100k-row table take the lookup join (10 x (4 + 10 x 2) = 240
against 100,000), and 10k driving rows the hash join (240,000 against 100,000 + 3,000). The
constants were measured on `sqlkv bench sql` (grammar-notes/benchmarks.md, round five).
Estimates only steer the choice: every plan returns the same rows.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.catalog.statistics import TableStatistics
from sqlkv.sql.context import Scope
from sqlkv.sql.plan.constraints import column_pos

DEFAULT_TABLE_ROWS = 1000.0
EQ_SELECTIVITY = 0.1      # col = value on a column no analyzed index leads
OTHER_SELECTIVITY = 1 / 3  # any other filter (ranges, LIKE, OR, functions)

SCAN_ROW_COST = 1.0    # a row read (and decoded) by a scan of the table
PROBE_COST = 4.0       # one index lookup of a lookup join (read_range or get of its entries)
FETCH_COST = 2.0       # one row fetched by primary key in a batch (get_many + decode)
HASH_PROBE_COST = 0.3  # hashing a driving row's key and probing the table


def table_statistics(env: Any, table: TableDescriptor) -> TableStatistics | None:
    """The table's statistics through the planning catalog, None when never analyzed."""
    catalog = getattr(getattr(env, "ctx", None), "catalog", None)
    if table.virtual is not None or catalog is None or not hasattr(catalog, "statistics"):
        return None
    return catalog.statistics(table.id)


def table_rows(stats: TableStatistics | None) -> float:
    return float(stats.rows) if stats is not None else DEFAULT_TABLE_ROWS


def rows_per_key(stats: TableStatistics | None, index_id: int, columns: int) -> float | None:
    """Rows per distinct value of an index's first ``columns`` key columns (None: unknown)."""
    return None if stats is None else stats.rows_per_key(index_id, columns)


def _column_distinct(table: TableDescriptor, stats: TableStatistics, position: int) -> int | None:
    """Distinct values of the column at ``position``: from an analyzed index it leads, else
    from its sketch (columns no index leads)."""
    for index in table.all_indexes():
        if index.inverted or index.predicate is not None or not index.column_ids:
            continue
        if table.column_index(index.column_ids[0]) == position:
            n = stats.distinct(index.id, 1)
            if n:
                return n
    column = stats.columns.get(table.columns[position].id)
    return column.distinct if column is not None and column.distinct else None


def filter_selectivity(table: TableDescriptor, stats: TableStatistics, filters: list[exp.Expression],
                       scope: Scope) -> float:
    """The fraction of rows the ``filters`` (conjuncts) are estimated to keep."""
    fraction = 1.0
    for node in filters:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.EQ):
            fraction *= _equality_selectivity(table, stats, node, scope)
        else:
            fraction *= OTHER_SELECTIVITY
    return fraction


def _equality_selectivity(table: TableDescriptor, stats: TableStatistics, node: exp.EQ, scope: Scope) -> float:
    for side in (node.this, node.expression):
        if isinstance(side, exp.Column):
            pos = column_pos(side, scope)
            distinct = _column_distinct(table, stats, pos) if pos is not None else None
            if distinct:
                return 1.0 / distinct
    return EQ_SELECTIVITY


def lookup_join_cost(outer_rows: float, per_key: float, primary_point: bool) -> float:
    """Cost of looking ``outer_rows`` keys up in an index with ``per_key`` rows each."""
    if primary_point:
        return outer_rows * FETCH_COST  # the row itself is the index entry: one get
    return outer_rows * (PROBE_COST + per_key * FETCH_COST)


def hash_join_cost(outer_rows: float, inner_scan_rows: float) -> float:
    """Cost of one scan of the inner side plus a probe per driving row."""
    return inner_scan_rows * SCAN_ROW_COST + outer_rows * HASH_PROBE_COST
