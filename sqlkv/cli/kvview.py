"""``.kv TABLE``: a table's raw KV pairs, keys in the key grammar beside their decoded values.

For ``users(id INT PRIMARY KEY, name TEXT)`` with an index on ``name``, ``.kv users`` shows::

    /users/primary/1/0         {name: "alice"}
    /users/users_name_idx/"alice"/1   []

The pairs come from an engine snapshot scanned over the table's prefix ``/<table id>``, so
they are what is committed (a transaction's unwritten buffer is not shown). Values are decoded
as row values (column id -> value, shown by column name) when they are maps, as value lists
(index STORING columns) when they are arrays, and as hex otherwise.
"""

from __future__ import annotations

from typing import Any

from sqlkv.encoding.keys import table_prefix
from sqlkv.encoding.pretty import pretty_key, pretty_value
from sqlkv.encoding.values import decode_row_value, decode_values
from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import prefix_end


def kv_rows(session: Any, table: Any, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` (key, value) display pairs of ``table``, in key order."""
    indexes = {index.id: index.name for index in table.all_indexes()}

    def names(table_id: int, index_id: int | None) -> tuple[str, str | None]:
        if table_id != table.id:
            return ("", None)
        return (table.name, indexes.get(index_id) if index_id is not None else None)

    prefix = table_prefix(table.id)
    rows = []
    with session.db.engine.snapshot() as snap:
        for key, value in snap.scan(prefix, prefix_end(prefix), limit=max(limit, 0)):
            rows.append((pretty_key(key, names), describe_value(table, value)))
    return rows


def describe_value(table: Any, value: bytes) -> str:
    """A stored value as text: a row value by column name, a value list, or hex."""
    if not value:
        return "(empty)"
    try:
        row = decode_row_value(value)
    except CorruptionError:
        row = None
    if row is not None:
        parts = []
        for col_id, v in row.items():
            col = next((c for c in table.columns if c.id == col_id), None)
            parts.append(f"{col.name if col else f'#{col_id}'}: {pretty_value(v)}")
        return "{" + ", ".join(parts) + "}"
    try:
        return "[" + ", ".join(pretty_value(v) for v in decode_values(value)) + "]"
    except CorruptionError:
        return "0x" + value.hex()
