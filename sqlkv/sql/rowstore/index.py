"""Secondary-index entries: one `IndexCodec` per index encodes a row's entry and decodes it.

For ``users(id INT PRIMARY KEY, name TEXT, email TEXT UNIQUE)`` (table 104) the row
``(10, 'ann', 'a@b.c')`` has the entry ``/Table/104/2/"a@b.c" -> [10]`` in ``users_email_key``:

- non-unique: key = prefix + indexed values + the PK columns not already indexed; value =
  msgpack list of the STORING columns (empty list when none).
- unique, no NULL among the indexed values: key = prefix + indexed values; value = the missing
  PK columns followed by the STORING columns. Written with put_if_absent, so a second row with
  the same values fails the condition (-> IntegrityError naming the index).
- unique with a NULL among the indexed values: laid out like the non-unique form (PK suffix
  in the key), because NULLs never conflict. A decoder tells the two forms apart by counting
  the values in the key.
- partial (``WHERE ...``): only rows satisfying the predicate have an entry.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.key_ends import end_finder, ends_finder
from sqlkv.encoding.keys import decode_key, encode_key, index_prefix
from sqlkv.encoding.values import decode_values, encode_values
from sqlkv.errors import UniqueViolation
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.expr import CompileEnv, compile_schema_expr
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&

EMPTY_LIST = encode_values([])


def _index_predicate(table: TableDescriptor, index: IndexDescriptor) -> tuple[Any, set[int]]:
    """A partial index's predicate compiled to a TRUE-only row closure, and the columns it reads."""
    if index.predicate is None:
        return None, set()
    node = parse_expression(index.predicate)
    positions = {table.column_index(table.column(c.name).id) for c in node.find_all(exp.Column)}
    scope = Scope(table_scope(table, table.name))
    return compile_schema_expr(node, scope, CompileEnv(), predicate=True), positions


class IndexCodec:
    """Encodes and decodes the entries of one secondary index."""

    def __init__(self, table: TableDescriptor, index: IndexDescriptor, pk_positions: list[int]) -> None:
        self.index = index
        self.name = index.name
        self.prefix = index_prefix(table.id, index.id)
        self.key_positions = [table.column_index(cid) for cid in index.column_ids]
        self.key_desc = list(index.descending)
        self.extra_pk_positions = [p for p in pk_positions if p not in self.key_positions]
        self.storing_positions = [table.column_index(cid) for cid in index.storing]
        self.unique = index.unique
        self.full_desc = self.key_desc + [False] * len(self.extra_pk_positions)
        self.ncols = len(table.columns)
        pk_desc = list(table.primary_index.descending)
        for i, p in enumerate(self.extra_pk_positions):
            self.full_desc[len(self.key_desc) + i] = pk_desc[pk_positions.index(p)]
        # every column position an index-only scan can fill
        self.covered = set(self.key_positions) | set(self.extra_pk_positions) | set(self.storing_positions)
        # the key ends with the whole PK encoded as the primary index encodes it: a row fetch
        # can reuse those bytes instead of decoding and re-encoding the PK
        self.pk_bytes_in_key = self.extra_pk_positions == list(pk_positions)
        # where the indexed values end in an entry key, found without decoding them
        self._values_end = end_finder(len(self.key_positions), self.key_desc)
        self._values_ends = ends_finder(len(self.key_positions), self.key_desc)
        # a partial index: only rows satisfying the predicate have an entry
        self.predicate, pred_positions = _index_predicate(table, index)
        self.predicate_positions = sorted(pred_positions)
        # every column whose change can change this index's entry (or whether there is one)
        self.all_positions = sorted(self.covered | pred_positions)

    def holds(self, row: tuple) -> bool:
        """Whether the row has an entry in this index (always, unless the index is partial)."""
        return self.predicate is None or self.predicate(row)

    def entry(self, row: tuple, pk_bytes: bytes | None = None) -> tuple[bytes, bytes, bool]:
        """``(key, value, conditional)``: conditional entries are put with put_if_absent.

        ``pk_bytes`` (the row's encoded PK, as in its primary key) saves encoding the PK again
        when the entry key ends with the whole PK."""
        key_vals = [row[p] for p in self.key_positions]
        storing = [row[p] for p in self.storing_positions]
        if self.unique and None not in key_vals:
            key = encode_key(key_vals, self.key_desc, self.prefix)
            return key, encode_values([row[p] for p in self.extra_pk_positions] + storing), True
        if pk_bytes is not None and self.pk_bytes_in_key:
            key = encode_key(key_vals, self.key_desc, self.prefix) + pk_bytes
        else:
            key = encode_key(key_vals + [row[p] for p in self.extra_pk_positions], self.full_desc, self.prefix)
        return key, (encode_values(storing) if storing else EMPTY_LIST), False

    def row_key_prefix(self, key: bytes, table_prefix: bytes) -> bytes | None:
        """The primary-index key prefix of the entry's row, cut from the entry key when it
        holds the PK (non-unique form); None when the caller must decode the entry."""
        if not self.pk_bytes_in_key:
            return None
        end = self._values_end(key, len(self.prefix))
        if end >= len(key):
            return None  # unique form: the PK is in the value
        return table_prefix + key[end:]

    def row_key_prefixes(self, keys: list[bytes], table_prefix: bytes) -> list[bytes | None]:
        """`row_key_prefix` of each of ``keys``."""
        if not self.pk_bytes_in_key:
            return [None] * len(keys)
        ends = self._values_ends(keys, len(self.prefix))
        return [table_prefix + key[end:] if end < len(key) else None for key, end in zip(keys, ends)]

    def decode(self, key: bytes, value: bytes) -> list:
        """A row list with the covered positions filled (others None)."""
        vals, _ = decode_key(key, None, self.full_desc, len(self.prefix))
        row: list = [None] * self.ncols
        nkey = len(self.key_positions)
        for p, v in zip(self.key_positions, vals):
            row[p] = v
        stored = decode_values(value) if value != EMPTY_LIST else []
        if len(vals) == nkey and self.extra_pk_positions:  # unique form: PK rest in the value
            extra, stored = stored[: len(self.extra_pk_positions)], stored[len(self.extra_pk_positions) :]
        elif len(vals) == nkey:
            extra = []
        else:
            extra = vals[nkey:]
        for p, v in zip(self.extra_pk_positions, extra):
            row[p] = v
        for p, v in zip(self.storing_positions, stored):
            row[p] = v
        return row


def unique_violation(table: TableDescriptor, idx: IndexDescriptor, ic: IndexCodec, row: tuple) -> UniqueViolation:
    """The error of a unique index whose backfill met ``row`` repeating an earlier row's key."""
    names = ", ".join(table.columns[p].name for p in ic.key_positions)
    vals = ", ".join(str(row[p]) for p in ic.key_positions)
    return UniqueViolation(
        f'could not create unique index "{idx.name}": duplicate key value violates unique '
        f'constraint "{idx.name}" (Key ({names})=({vals}) is duplicated)'
    )
