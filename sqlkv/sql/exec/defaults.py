"""Values for the columns an INSERT does not give: DEFAULT expressions and auto-assigned ids.

``INSERT INTO users (name) VALUES ('ann')`` on ``users(id INT PRIMARY KEY, name TEXT, joined
DATE DEFAULT current_date)``: ``joined`` takes its compiled DEFAULT, and ``id`` (a single INT
primary key, or the hidden ``rowid``) is auto-assigned max(id)+1 as SQLite does. The maximum is
read with one reverse scan per table and transaction, then counted locally in `AUTO_IDS`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.storage.kv import prefix_end

# The next auto id per transaction and table: {txn: {table id: next id}}. Shared by every plan
# running in the transaction (two INSERT texts into one table must not hand out the same id);
# weak, so it ends with the transaction object.
AUTO_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def forget_auto_counter(txn, table_id: int) -> None:
    """UPDATE/DELETE/TRUNCATE may change max(id): the next auto id is read again (SQLite's max+1)."""
    counters = AUTO_IDS.get(txn)
    if counters is not None:
        counters.pop(table_id, None)


class Defaults:
    """The compiled DEFAULT of each column (None: no default) and the auto-id columns."""

    def __init__(self, table: TableDescriptor, fns: list[Callable[[tuple], Any] | None]) -> None:
        self.table = table
        self.fns = fns
        self.auto = [i for i, c in enumerate(table.columns) if c.auto_increment]

    def value(self, i: int) -> Any:
        fn = self.fns[i]
        return None if fn is None else fn(())

    def _counters(self, txn) -> dict[int, int]:
        counters = AUTO_IDS.get(txn)
        if counters is None:
            counters = AUTO_IDS[txn] = {}
        return counters

    def next_auto(self, txn, refresh: bool = False) -> int:
        """max(auto column)+1, read once per transaction and then counted locally."""
        counters = self._counters(txn)
        nxt = None if refresh else counters.get(self.table.id)
        if nxt is None:
            nxt = self._read_max(txn) + 1
        counters[self.table.id] = nxt + 1
        return nxt

    def saw_value(self, txn, v: int) -> None:
        """An explicit value for the auto column: keep the counter past it."""
        counters = self._counters(txn)
        if self.table.id in counters and v >= counters[self.table.id]:
            counters[self.table.id] = v + 1

    def _read_max(self, txn) -> int:
        codec = codec_for(self.table)
        desc = codec.pk_desc[0]
        for key, _ in txn.scan(codec.prefix, prefix_end(codec.prefix), reverse=not desc, limit=1):
            row_pk = codec._start_row(key)[codec.pk_positions[0]]
            return row_pk if isinstance(row_pk, int) else 0
        return 0
