"""Facts the planner derives from a table descriptor, made once per descriptor object and version.

Planning ``SELECT id, sku FROM orders ORDER BY sku LIMIT 10`` asks the same questions of the
``orders`` descriptor every time a new text names it: its columns qualified by the alias, each
index's key positions and directions, which indexes a span can use. The answers depend only on
the descriptor, so they are kept with it -- by object identity (descriptors are mutable
dataclasses, not hashable) and by its ``version``, which `Catalog.update` bumps on every stored
change. Descriptors read through the catalog are not edited in place (DDL edits a private copy,
`ddl.names.copy_table`, and stores it); a copy edited before it is stored is a new object, and
its version moves when it is stored. The memo is dropped when its descriptor object dies, as the
row codecs are (`rowstore.codec.codec_for`).
"""

from __future__ import annotations

import weakref
from typing import Any

from sqlkv.sql.context import Scope, name_index, table_scope

# id(descriptor) -> (a weak reference to it, its version then, the facts made from it)
_MEMOS: dict[int, tuple[weakref.ref, int, dict[Any, Any]]] = {}


def table_memo(table: Any) -> dict[Any, Any]:
    """The facts dict of one descriptor object at its current version (empty when new)."""
    key = id(table)
    entry = _MEMOS.get(key)
    if entry is not None and entry[1] == table.version and entry[0]() is table:
        return entry[2]
    memo: dict[Any, Any] = {}
    ref = weakref.ref(table, lambda _ref, key=key, memos=_MEMOS: memos.pop(key, None))
    _MEMOS[key] = (ref, table.version, memo)
    return memo


def memo_table_scope(table: Any, alias: str) -> Scope:
    """A `Scope` of `table_scope(table, alias)` (a fresh list of the memoized, immutable columns)
    whose name index is made already (it is only read)."""
    memo = table_memo(table)
    made = memo.get(("scope", alias))
    if made is None:
        columns = table_scope(table, alias)
        made = memo[("scope", alias)] = (columns, name_index(columns))
    return Scope(list(made[0]), None, made[1])
