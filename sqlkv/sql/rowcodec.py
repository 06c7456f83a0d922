"""Rows <-> KV pairs: the primary-index row layout and secondary-index entries.

For ``users(id INT PRIMARY KEY, name TEXT, email TEXT UNIQUE)`` (table 104) the row
``(10, 'ann', 'a@b.c')`` is stored as

    /Table/104/1/10/0        -> {2: 'ann', 3: 'a@b.c'}   primary index, family 0 (sentinel)
    /Table/104/2/"a@b.c"     -> [10]                     unique index users_email_key

Primary-index keys are ``index_prefix(t, 1) + encode_key(pk values) + family_suffix(f)``.
Family 0 is always written (its value may be an empty map) so that every row has a key even
when all its non-key columns are NULL; other families (``FAMILY f (cols)``) are written only
when one of their columns is non-NULL. Values are msgpack maps column id -> value, NULLs absent.

Secondary indexes:
- non-unique: key = prefix + indexed values + the PK columns not already indexed; value =
  msgpack list of the STORING columns (empty list when none).
- unique, no NULL among the indexed values: key = prefix + indexed values; value = the missing
  PK columns followed by the STORING columns. Written with put_if_absent, so a second row with
  the same values fails the condition (-> IntegrityError naming the index).
- unique with a NULL among the indexed values: laid out like the non-unique form (PK suffix
  in the key), because NULLs never conflict. A decoder tells the two forms apart by counting
  the values in the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import decode_key, encode_key, family_suffix, index_prefix
from sqlkv.encoding.values import decode_row_value, decode_values, encode_row_value, encode_values
from sqlkv.errors import ProgrammingError
from sqlkv.storage.kv import prefix_end

_EMPTY_LIST = encode_values([])


@dataclass
class FamilyLayout:
    id: int
    suffix: bytes
    positions: list[int]  # non-key columns stored in this family (row positions)
    column_ids: list[int]


def _index_predicate(table: TableDescriptor, index: IndexDescriptor) -> tuple[Any, set[int]]:
    """A partial index's predicate compiled to a TRUE-only row closure, and the columns it reads."""
    if index.predicate is None:
        return None, set()
    import sqlglot
    from sqlglot import exp

    from sqlkv.sql.context import Scope
    from sqlkv.sql.expr import compile_predicate
    from sqlkv.sql.expr.env import CompileEnv
    from sqlkv.sql.context import table_scope

    node = sqlglot.parse_one(index.predicate)
    positions = {table.column_index(table.column(c.name).id) for c in node.find_all(exp.Column)}
    return compile_predicate(node, Scope(table_scope(table, table.name)), CompileEnv()), positions


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
        # a partial index: only rows satisfying the predicate have an entry
        self.predicate, pred_positions = _index_predicate(table, index)
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
        return key, (encode_values(storing) if storing else _EMPTY_LIST), False

    def row_key_prefix(self, key: bytes, table_prefix: bytes) -> bytes | None:
        """The primary-index key prefix of the entry's row, cut from the entry key when it
        holds the PK (non-unique form); None when the caller must decode the entry."""
        if not self.pk_bytes_in_key:
            return None
        _vals, end = decode_key(key, len(self.key_positions), self.key_desc, len(self.prefix))
        if end >= len(key):
            return None  # unique form: the PK is in the value
        return table_prefix + key[end:]

    def decode(self, key: bytes, value: bytes) -> list:
        """A row list with the covered positions filled (others None)."""
        vals, _ = decode_key(key, None, self.full_desc, len(self.prefix))
        row: list = [None] * self.ncols
        nkey = len(self.key_positions)
        for p, v in zip(self.key_positions, vals):
            row[p] = v
        stored = decode_values(value) if value != _EMPTY_LIST else []
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


class TableCodec:
    """Encodes rows of one table version into primary-index KV pairs and index entries."""

    def __init__(self, table: TableDescriptor) -> None:
        self.table = table
        self.ncols = len(table.columns)
        self.prefix = index_prefix(table.id, 1)
        self.pk_positions = [table.column_index(cid) for cid in table.primary_index.column_ids]
        self.pk_desc = list(table.primary_index.descending)
        self.npk = len(self.pk_positions)
        self.position_of_id = {c.id: i for i, c in enumerate(table.columns)}
        self.families = self._families(table)
        if any(f.id >= 100 for f in self.families):
            raise ProgrammingError(f'table "{table.name}" has too many column families')
        self.single_family = len(self.families) == 1
        self.fam0_suffix = family_suffix(0)
        self.indexes = [IndexCodec(table, idx, self.pk_positions) for idx in table.indexes]
        # (column id, row position) of every stored (non-key) column, for the fast decoders
        self.stored_columns = [(cid, p) for cid, p in self.position_of_id.items() if p not in set(self.pk_positions)]
        self._decoders: dict[frozenset[int] | None, RowDecoder] = {}

    def _families(self, table: TableDescriptor) -> list[FamilyLayout]:
        pk = set(self.pk_positions)
        layouts: dict[int, FamilyLayout] = {0: FamilyLayout(0, family_suffix(0), [], [])}
        for f in table.families:
            layouts.setdefault(f.id, FamilyLayout(f.id, family_suffix(f.id), [], []))
        for i, col in enumerate(table.columns):
            if i in pk:
                continue
            fam = layouts.get(col.family_id) or layouts[0]
            fam.positions.append(i)
            fam.column_ids.append(col.id)
        return [layouts[k] for k in sorted(layouts)]

    # -- keys ------------------------------------------------------------------------------

    def pk_values(self, row: tuple) -> list:
        return [row[p] for p in self.pk_positions]

    def pk_prefix(self, pk_values: list) -> bytes:
        """The key prefix shared by all family keys of one row."""
        return encode_key(pk_values, self.pk_desc, self.prefix)

    def row_key(self, row: tuple) -> bytes:
        return self.pk_prefix(self.pk_values(row)) + self.fam0_suffix

    def index_codec(self, index_id: int) -> IndexCodec:
        for ic in self.indexes:
            if ic.index.id == index_id:
                return ic
        raise ProgrammingError(f"index {index_id} of table {self.table.name} does not exist")

    # -- rows -> KV ------------------------------------------------------------------------

    def primary_kvs(self, row: tuple) -> list[tuple[bytes, bytes | None]]:
        """The row's family keys; value None means 'this family is absent' (delete it)."""
        base = self.pk_prefix(self.pk_values(row))
        out: list[tuple[bytes, bytes | None]] = []
        for fam in self.families:
            values = {cid: row[p] for cid, p in zip(fam.column_ids, fam.positions) if row[p] is not None}
            if fam.id == 0 or values:
                out.append((base + fam.suffix, encode_row_value(values)))
            else:
                out.append((base + fam.suffix, None))
        return out

    def family0_value(self, row: tuple) -> bytes:
        """The value of a single-family row: every non-NULL stored column."""
        return encode_row_value({cid: row[p] for cid, p in self.stored_columns if row[p] is not None})

    # -- KV -> rows ------------------------------------------------------------------------

    def decode_rows(self, pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple]:
        """Group consecutive family keys of the same row (either scan direction) into rows."""
        if self.single_family:
            for key, value in pairs:
                yield self._single(key, value)
            return
        current = None
        row: list = []
        for key, value in pairs:
            head = key[:-1]  # family ids are < 100: a one-byte suffix
            if head != current:
                if current is not None:
                    yield tuple(row)
                current = head
                row = self._start_row(key)
            self._fill(row, value)
        if current is not None:
            yield tuple(row)

    def _single(self, key: bytes, value: bytes) -> tuple:
        row = self._start_row(key)
        self._fill(row, value)
        return tuple(row)

    def _start_row(self, key: bytes) -> list:
        pk, _ = decode_key(key, self.npk, self.pk_desc, len(self.prefix))
        row: list = [None] * self.ncols
        for p, v in zip(self.pk_positions, pk):
            row[p] = v
        return row

    def _fill(self, row: list, value: bytes) -> None:
        positions = self.position_of_id
        for cid, v in decode_row_value(value).items():
            p = positions.get(cid)
            if p is not None:  # ids of dropped columns are ignored
                row[p] = v

    def fetch(self, reader, pk_prefix: bytes, decoder: RowDecoder | None = None) -> tuple | None:
        """Read one row by its key prefix (one get when the table has a single family)."""
        if self.single_family:
            key = pk_prefix + self.fam0_suffix
            value = reader.get(key)
            if value is None:
                return None
            return self._single(key, value) if decoder is None else decoder.one(key, value)
        pairs = reader.scan(pk_prefix, prefix_end(pk_prefix))
        for row in self.decode_rows(pairs) if decoder is None else decoder.rows(pairs):
            return row
        return None

    def decoder(self, needed: set[int] | None) -> RowDecoder:
        """A decoder filling only the ``needed`` row positions (others None); cached."""
        key = None if needed is None or len(needed) >= self.ncols else frozenset(needed)
        dec = self._decoders.get(key)
        if dec is None:
            dec = self._decoders[key] = RowDecoder(self, key)
        return dec

    def index_entries(self, row: tuple) -> list[tuple[IndexCodec, bytes, bytes, bool]]:
        return [(ic, *ic.entry(row)) for ic in self.indexes]


class RowDecoder:
    """Primary-index KV pairs -> rows, decoding only the columns a plan reads.

    A GROUP BY over two columns of a wide table neither decodes the key (when no key column
    is needed) nor looks at the other stored columns. Multi-family tables use the general
    grouping decoder of `TableCodec` (then every column is decoded).
    """

    def __init__(self, codec: TableCodec, needed: frozenset[int] | None) -> None:
        self.codec = codec
        self.ncols = codec.ncols
        wanted = (lambda p: True) if needed is None else (lambda p: p in needed)
        self.pk = [(i, p) for i, p in enumerate(codec.pk_positions) if wanted(p)]
        self.columns = [(cid, p) for cid, p in codec.stored_columns if wanted(p)]
        self.offset = len(codec.prefix)
        self.rows: Callable[[Iterable[tuple[bytes, bytes]]], Iterator[tuple]] = (
            self._single_family_rows if codec.single_family else codec.decode_rows
        )

    def one(self, key: bytes, value: bytes) -> tuple:
        """One single-family row (a point get)."""
        row = [None] * self.ncols
        if self.pk:
            vals = decode_key(key, self.codec.npk, self.codec.pk_desc, self.offset)[0]
            for i, p in self.pk:
                row[p] = vals[i]
        if self.columns:
            get = decode_row_value(value).get
            for cid, p in self.columns:
                row[p] = get(cid)
        return tuple(row)

    def _single_family_rows(self, pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple]:
        codec = self.codec
        ncols, pk, columns, offset = self.ncols, self.pk, self.columns, self.offset
        npk, pk_desc = codec.npk, codec.pk_desc
        unpack = decode_row_value
        if len(pk) == 1 and npk == 1:
            pk_pos = pk[0][1]
            for key, value in pairs:
                row = [None] * ncols
                row[pk_pos] = decode_key(key, 1, pk_desc, offset)[0][0]
                if columns:
                    get = unpack(value).get
                    for cid, p in columns:
                        row[p] = get(cid)
                yield tuple(row)
            return
        for key, value in pairs:
            row = [None] * ncols
            if pk:
                vals = decode_key(key, npk, pk_desc, offset)[0]
                for i, p in pk:
                    row[p] = vals[i]
            if columns:
                get = unpack(value).get
                for cid, p in columns:
                    row[p] = get(cid)
            yield tuple(row)
