"""``.kv TABLE``: a table's raw KV pairs, keys in the key grammar beside their decoded values.

For ``users(id INT PRIMARY KEY, name TEXT)`` with an index on ``name``, ``.kv users`` shows::

    /users/users_pkey/1/0             {name: 'alice'}
    /users/users_name_idx/"alice"/1   []

The pairs come from an engine snapshot scanned over the table's prefix ``/<table id>``, so
they are what is committed (a transaction's unwritten buffer is not shown). Keys and values
are rendered as ``sqlkv_internal.kv`` renders them (`sqlkv.sql.rowstore.display`).
"""

from __future__ import annotations

from typing import Any

from sqlkv.sql.rowstore.display import names_lookup, table_pairs


def kv_rows(session: Any, table: Any, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` (key, value) display pairs of ``table``, in key order."""
    names = names_lookup({table.id: table})
    with session.db.engine.snapshot() as snap:
        return [(key, value) for _index, key, _raw, value in table_pairs(snap, table, names, max(limit, 0))]
