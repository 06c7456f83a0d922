"""Inverted-index entries: one KV pair per element of an ARRAY or per path of a JSONB value.

``CREATE INVERTED INDEX t_tags_idx ON t (tags)`` (table 104, index 2) gives the row
``(7, ARRAY['a', 'b', 'a'])`` the entries ``/Table/104/2/"a"/7`` and ``/Table/104/2/"b"/7``: the
key is the index prefix, one distinct non-NULL element in the order-preserving key codec, then
the primary key exactly as the primary index encodes it; the value is an empty msgpack list. An
empty array has the one entry ``/Table/104/2/ARRAY[]/7`` (so that ``tags <@ v``, true for it,
can find it); a NULL array, or one of NULLs only, has none.

A JSONB value has one entry per path to a scalar, and one per path to an empty array or object.
Each is written as the *minimal document* holding that path, in the JSONB key codec (so
``.kv`` shows it as JSON): ``{"a": {"b": 1}, "c": [2, 3], "d": {}}`` gives ``{"a": {"b": 1}}``,
``{"c": [2]}``, ``{"c": [3]}`` and ``{"d": {}}``. Array positions are not part of a path (PostgreSQL
containment ignores them). These serve ``@>`` (every minimal document of the query must be an
entry of the row) and ``?`` (all minimal documents of an object with key k start with the same
bytes: the encoding of ``{"k": ...}`` up to the value; an array holding the string k has the
entry ``["k"]``).

Entry sets are exact: a row's entries are a function of its indexed value and its primary key,
so an UPDATE writes ``new - old`` and deletes ``old - new`` (`RowWriter`).
"""

from __future__ import annotations

from typing import Any

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.encoding.values import encode_values
from sqlkv.errors import CorruptionError

EMPTY_LIST = encode_values([])
_ASC = [False]


def inverted_column_kind(type_kind: str, has_element: bool) -> str | None:
    """"ARRAY" or "JSONB" when a column of this type can carry an inverted index, else None."""
    if has_element:
        return "ARRAY"
    if type_kind == "JSONB":
        return "JSONB"
    return None


def minimal_documents(tree: Any) -> list[Any]:
    """The minimal documents of a JSONB tree (module docstring), duplicates included."""
    if isinstance(tree, dict):
        if not tree:
            return [{}]
        return [{k: sub} for k, v in tree.items() for sub in minimal_documents(v)]
    if isinstance(tree, list):
        if not tree:
            return [[]]
        return [[sub] for v in tree for sub in minimal_documents(v)]
    return [tree]


def element_key(prefix: bytes, element: Any) -> bytes:
    """The key bytes of one element (an array element, or a minimal document as Jsonb)."""
    return encode_key([element], _ASC, prefix)


# the one entry of an empty array: an array-typed key, apart from every element's key, so that
# ``tags <@ v`` (true for the empty array) can find those rows
EMPTY_ARRAY = SqlArray([])


def value_elements(value: Any, kind: str) -> list[Any]:
    """The distinct-able elements an indexed value contributes (NULL: none)."""
    if value is None:
        return []
    if kind == "ARRAY":
        return [v for v in value if v is not None] if len(value) else [EMPTY_ARRAY]
    tree = value.tree
    if not tree and getattr(tree, "stored_count", 0):
        return []  # a partial object (exploded_reads.PartialObject) that read no attribute: not empty
    return [Jsonb(doc) for doc in minimal_documents(tree)]


class InvertedCodec:
    """Encodes the entries of one inverted index (see the module docstring)."""

    def __init__(self, table: TableDescriptor, index: IndexDescriptor, pk_positions: list[int]) -> None:
        self.index = index
        self.name = index.name
        self.prefix = index_prefix(table.id, index.id)
        self.position = table.column_index(index.column_ids[0])
        col_type = table.columns[self.position].type
        kind = inverted_column_kind(col_type.kind, col_type.element is not None)
        if kind is None:  # CREATE refuses it and ALTER COLUMN TYPE is refused under the index
            raise CorruptionError(f'inverted index "{index.name}" of table "{table.name}" is on column '
                                  f'"{table.columns[self.position].name}" of type {col_type.sql()}')
        self.kind = kind
        self.element_type = col_type.element
        self.pk_positions = pk_positions
        self.pk_desc = list(table.primary_index.descending)
        self.all_positions = sorted({self.position, *pk_positions})
        self.predicate = None  # inverted indexes are never partial

    def holds(self, row: tuple) -> bool:
        return True

    def keys(self, row: tuple) -> set[bytes]:
        """The keys of the row's entries (a set: one entry per distinct element)."""
        elements = value_elements(row[self.position], self.kind)
        if not elements:
            return set()
        pk = encode_key([row[p] for p in self.pk_positions], self.pk_desc)
        return {element_key(self.prefix, e) + pk for e in elements}

    def entries(self, row: tuple) -> dict[bytes, bytes]:
        return dict.fromkeys(self.keys(row), EMPTY_LIST)
