"""Descriptors back as SQL text: the pieces ``SHOW CREATE TABLE`` and the shell's
``.schema``/``.dump`` (sqlkv/dbapi/schema.py) share, so both write every column kind --
generated, identity, DEFAULT -- every foreign key and expression-index key the same way.

``users(id INT PRIMARY KEY, email TEXT, lo TEXT AS (lower(email)) VIRTUAL)`` with
``CREATE INDEX users_ci ON users (lower(email))``: `column_sql` gives
``lo TEXT GENERATED ALWAYS AS (LOWER(email)) VIRTUAL`` and `key_list` gives
``(LOWER(email))`` for the index (its hidden column ``sqlkv_idx_expr_1`` is never shown).
"""

from __future__ import annotations

import re
from typing import Any

from sqlkv.catalog.sequences import create_sequence_sql

_PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
# Words that cannot be bare column or table names; anything here gets double quotes.
_RESERVED = frozenset(
    """all and as asc between by case check collate column constraint create cross default
    delete desc distinct drop else end except exists false family for foreign from full group
    having in index inner insert intersect into is join key left like limit not null offset on
    or order outer primary references right select set table then to true union unique update
    using values view when where with""".split()
)


def quote_ident(name: str) -> str:
    """``name`` as a SQL identifier: bare when it is a plain lower-case word, else quoted."""
    if _PLAIN_NAME.match(name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def key_list(table: Any, index: Any) -> str:
    """An index's key columns, an expression index's hidden column written as its expression."""
    parts = []
    for col_id, desc in zip(index.column_ids, index.descending):
        col = table.column_by_id(col_id)
        computed = getattr(col, "computed", None)
        name = f"({computed})" if col.hidden and computed is not None else quote_ident(col.name)
        parts.append(f"{name} DESC" if desc else name)
    return ", ".join(parts)


def implicit_pk(table: Any) -> bool:
    """True when the primary key is the hidden rowid (a table declared without one)."""
    ids = table.primary_index.column_ids
    return len(ids) == 1 and table.column_by_id(ids[0]).hidden


def column_sql(table: Any, col: Any, sequences: dict[str, Any] | None, suffix: str = "") -> str:
    """``name TYPE [suffix] [NOT NULL] [GENERATED ... | DEFAULT ...]`` (``suffix``: PRIMARY KEY)."""
    line = f"{quote_ident(col.name)} {col.type.sql()}{suffix}"
    if not suffix and not col.nullable and not col.identity and col.id not in table.primary_index.column_ids:
        line += " NOT NULL"
    if col.computed is not None:
        line += f" GENERATED ALWAYS AS ({col.computed}) {'VIRTUAL' if col.virtual else 'STORED'}"
    elif col.identity is not None:
        # by owner, not by name: a renamed table or column keeps its sequence's old name
        seq = next((d for d in (sequences or {}).values() if d.owner == [table.id, col.id]), None)
        options = f" ({create_sequence_sql(seq)})" if seq is not None else ""
        line += f" GENERATED {col.identity} AS IDENTITY{options}"
    elif col.default_sql is not None:
        line += f" DEFAULT {col.default_sql}"
    return line


def foreign_key_sql(table: Any, fk: Any, names: dict[int, Any]) -> str:
    """``CONSTRAINT name FOREIGN KEY (...) REFERENCES parent (...) ON DELETE ... ON UPDATE ...``."""
    parent = table if fk.ref_table_id == table.id else names.get(fk.ref_table_id)
    cols = ", ".join(quote_ident(table.column_by_id(c).name) for c in fk.column_ids)
    target = quote_ident(parent.name) if parent is not None else f"<table {fk.ref_table_id}>"
    refs = ", ".join(quote_ident(parent.column_by_id(c).name) for c in fk.ref_column_ids) if parent else ""
    return (f"CONSTRAINT {quote_ident(fk.name)} FOREIGN KEY ({cols}) REFERENCES {target} ({refs}) "
            f"ON DELETE {fk.on_delete} ON UPDATE {fk.on_update}")
