"""Table statistics: row counts and distinct key prefixes, kept in system table 6 for the planner.

``ANALYZE orders`` (sqlkv/sql/analyze.py) counts, in one streaming pass over each index, the
table's rows and, for every index, how many distinct values each prefix of its key columns
takes (``orders_customer (customer_id)``: 10,000 distinct ``customer_id`` over 100,000 rows, so
a lookup by one customer reads about 10 rows), plus how many entries have a NULL first column; for the columns no index leads, the distinct
values are estimated by a sketch in the same pass over the rows (and their NULLs counted).
The result is stored at ``/Table/6/1/<table id>`` as msgpack::

    {"rows": 100000, "at": 1790000000.0,
     "indexes": {1: {"distinct": [100000], "nulls": 0, "entries": 100000},
                 3: {"distinct": [10000], "nulls": 0, "entries": 100000}},
     "columns": {4: [20, 0], 6: [4, 19876]}}

Statistics are hints: the planner uses them to estimate row counts and choose join methods,
never to decide what a query returns, so stale or missing statistics only make a plan slower.
A committed ANALYZE bumps the descriptor cache's version (`Catalog.note_statistics`), so cached
plans are made again with the new figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack

from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import CorruptionError

STATISTICS_TABLE_ID = 6
STATISTICS = index_prefix(STATISTICS_TABLE_ID, 1)


@dataclass
class IndexStatistics:
    """One index: distinct values of each key prefix (``distinct[0]`` = first column alone)."""

    distinct: list[int]
    nulls: int = 0     # entries whose first key column is NULL
    entries: int = 0   # index entries (a partial index's rows; the table's rows otherwise)


@dataclass
class ColumnStatistics:
    """A column no index leads: its distinct non-NULL values (sketched) and NULL rows."""

    distinct: int
    nulls: int = 0


@dataclass
class TableStatistics:
    rows: int
    indexes: dict[int, IndexStatistics] = field(default_factory=dict)
    at: float = 0.0    # Unix time the ANALYZE that collected them started
    columns: dict[int, ColumnStatistics] = field(default_factory=dict)  # by column id

    def distinct(self, index_id: int, columns: int) -> int | None:
        """Distinct values of the first ``columns`` key columns of the index, when known."""
        ix = self.indexes.get(index_id)
        if ix is None or columns < 1 or columns > len(ix.distinct):
            return None
        return ix.distinct[columns - 1]

    def rows_per_key(self, index_id: int, columns: int) -> float | None:
        """Average rows sharing one value of the first ``columns`` key columns (NULLs, which
        never match an equality, left out), or None without figures for that prefix."""
        ix = self.indexes.get(index_id)
        n = self.distinct(index_id, columns)
        if ix is None or n is None:
            return None
        non_null = max(0, ix.entries - (ix.nulls if columns == 1 else 0))
        keys = max(1, n - (1 if ix.nulls and columns == 1 else 0))
        return non_null / keys if non_null else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "at": self.at,
                "indexes": {i: {"distinct": s.distinct, "nulls": s.nulls, "entries": s.entries}
                            for i, s in self.indexes.items()},
                "columns": {c: [s.distinct, s.nulls] for c, s in self.columns.items()}}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TableStatistics:
        indexes = {int(i): IndexStatistics([int(n) for n in s["distinct"]], int(s.get("nulls", 0)),
                                           int(s.get("entries", 0)))
                   for i, s in d.get("indexes", {}).items()}
        columns = {int(c): ColumnStatistics(int(n), int(nulls)) for c, (n, nulls) in d.get("columns", {}).items()}
        return TableStatistics(int(d["rows"]), indexes, float(d.get("at", 0.0)), columns)


def statistics_key(table_id: int) -> bytes:
    return STATISTICS + encode_key([table_id])


def read_statistics(reader: Any, table_id: int) -> TableStatistics | None:
    """The stored statistics of a table, None when it was never analyzed."""
    key = statistics_key(table_id)
    raw = reader.get(key)
    if raw is None:
        return None
    try:
        return TableStatistics.from_dict(msgpack.unpackb(raw, strict_map_key=False))
    except (ValueError, KeyError, TypeError, AttributeError, msgpack.UnpackException) as exc:
        raise CorruptionError(f"statistics of table {table_id}: undecodable entry {pretty_key(key)}: {exc}") from None


def write_statistics(txn: Any, table_id: int, stats: TableStatistics) -> None:
    txn.put(statistics_key(table_id), msgpack.packb(stats.to_dict()))


def delete_statistics(txn: Any, table_id: int) -> None:
    txn.delete(statistics_key(table_id))
