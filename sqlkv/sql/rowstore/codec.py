"""Rows <-> primary-index KV pairs: `TableCodec` (rows to keys and values) and `RowDecoder`.

For ``users(id INT PRIMARY KEY, name TEXT, email TEXT UNIQUE)`` (table 104) the row
``(10, 'ann', 'a@b.c')`` is stored as

    /Table/104/1/10/0        -> [nil, nil, 'ann', 'a@b.c']   primary index, family 0 (sentinel)
    /Table/104/2/"a@b.c"     -> [10]                         unique index users_email_key

Primary-index keys are ``index_prefix(t, 1) + encode_key(pk values) + family_suffix(f)``.
Family 0 is always written (its value may be an empty map) so that every row has a key even
when all its non-key columns are NULL; other families (``FAMILY f (cols)``) are written only
when one of their columns is non-NULL. A one-family table's values are slot arrays indexed by
column id (nil for NULL), other values msgpack maps column id -> value, NULLs absent
(encoding/values.py; both forms are read everywhere).
An exploded family (exploded.py) holds one ARRAY/JSONB column as a header key plus one key per
element; tables with one decode through `exploded_rows`, the others keep the decoders below.

Secondary-index entries are `IndexCodec`'s (index.py); `codec_for` gives the one codec of a
descriptor object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter

import weakref

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.encoding.key_columns import first_key_values
from sqlkv.encoding.keys import decode_key, encode_key, family_suffix, index_prefix
from sqlkv.encoding.values import (
    decode_columns, decode_row_value, encode_row_value, encode_slots, row_value_getter, slot_width,
)
from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.expr import CompileEnv, compile_schema_expr
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.exploded import ExplodedColumn, exploded_columns, exploded_rows
from sqlkv.sql.rowstore.inverted import InvertedCodec
from sqlkv.sql.casts import assign_cast
from sqlkv.storage.kv import prefix_end
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


@dataclass
class FamilyLayout:
    id: int
    suffix: bytes
    positions: list[int]  # non-key columns stored in this family (row positions)
    column_ids: list[int]


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
        # VIRTUAL generated columns: never stored, computed from each decoded row
        self.virtual = virtual_columns(table)
        self.families = self._families(table)
        if any(f.id >= 100 for f in self.families):
            raise ProgrammingError(f'table "{table.name}" has too many column families')
        self.single_family = len(self.families) == 1
        self.fam0_suffix = family_suffix(0)
        # exploded ARRAY/JSONB columns (header + one pair per element): their own row grouping
        self.exploded: dict[int, ExplodedColumn] = exploded_columns(table)
        if self.exploded:
            self.decode_rows = lambda pairs: exploded_rows(self, pairs)  # type: ignore[method-assign]
        self.indexes = [IndexCodec(table, idx, self.pk_positions) for idx in table.indexes if not idx.inverted]
        self.inverted = [InvertedCodec(table, idx, self.pk_positions) for idx in table.indexes if idx.inverted]
        # (column id, row position) of every stored (non-key) column, for the fast decoders
        skip = set(self.pk_positions) | {p for p, _fn in self.virtual}
        self.stored_columns = [(cid, p) for cid, p in self.position_of_id.items() if p not in skip]
        # a one-family row's value: slots indexed by column id (encoding/values.py), unless sparse;
        # `slots_of` picks them from the row with a None appended, in one C-level step
        self.value_width = slot_width([cid for cid, _p in self.stored_columns]) if self.single_family else None
        self.slots_of: Callable[[tuple], tuple] | None = None
        if self.value_width is not None and self.value_width > 1:
            where = dict(self.stored_columns)
            self.slots_of = itemgetter(*[where.get(cid, self.ncols) for cid in range(self.value_width)])
        self._decoders: dict[frozenset[int] | None, RowDecoder] = {}
        if self.virtual:  # every decoding entry point completes the row (no cost for other tables)
            single, rows = self._single, self.decode_rows
            self._single = lambda key, value: self.complete(single(key, value))  # type: ignore[method-assign]
            if not self.single_family:
                self.decode_rows = lambda pairs: map(self.complete, rows(pairs))  # type: ignore[method-assign]

    def complete(self, row: tuple) -> tuple:
        """The row with its VIRTUAL columns computed from the others."""
        out = list(row)
        for p, fn in self.virtual:
            out[p] = fn(out)
        return tuple(out)

    def _families(self, table: TableDescriptor) -> list[FamilyLayout]:
        pk = set(self.pk_positions)
        layouts: dict[int, FamilyLayout] = {0: FamilyLayout(0, family_suffix(0), [], [])}
        for f in table.families:
            layouts.setdefault(f.id, FamilyLayout(f.id, family_suffix(f.id), [], []))
        for i, col in enumerate(table.columns):
            if i in pk or (col.computed is not None and col.virtual):
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
        """The row's family keys (and an exploded family's element keys); value None means
        'this family is absent' (delete it)."""
        base = self.pk_prefix(self.pk_values(row))
        out: list[tuple[bytes, bytes | None]] = []
        for fam in self.families:
            out.extend(self.family_kvs(base, fam, row))
        return out

    def family_kvs(self, base: bytes, fam: FamilyLayout, row: tuple) -> list[tuple[bytes, bytes | None]]:
        """The pairs of one family of the row whose key prefix is ``base``."""
        exploded = self.exploded.get(fam.id)
        if exploded is not None:
            return exploded.kvs(base, None if exploded.position is None else row[exploded.position])
        values = {cid: row[p] for cid, p in zip(fam.column_ids, fam.positions) if row[p] is not None}
        if fam.id == 0 or values:
            return [(base + fam.suffix, encode_row_value(values, self.value_width))]
        return [(base + fam.suffix, None)]

    def family0_value(self, row: tuple) -> bytes:
        """The value of a single-family row: every non-NULL stored column."""
        if self.slots_of is not None:
            return encode_slots(self.slots_of((*row, None)))
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

    def fetch_many(self, reader, pk_prefixes: list[bytes], decoder: RowDecoder) -> list[tuple | None]:
        """The row of each of ``pk_prefixes`` (None where there is none): one ``get_many``
        when the table has a single family (the reader shares its work between the keys)."""
        if not self.single_family:
            return [self.fetch(reader, prefix, decoder) for prefix in pk_prefixes]
        suffix = self.fam0_suffix
        keys = [prefix + suffix for prefix in pk_prefixes]
        one = decoder.one
        return [None if value is None else one(key, value) for key, value in zip(keys, reader.get_many(keys))]

    def decoder(self, needed: set[int] | None) -> RowDecoder:
        """A decoder filling only the ``needed`` row positions (others None); cached."""
        key = None if needed is None or len(needed) >= self.ncols or self.virtual else frozenset(needed)
        dec = self._decoders.get(key)
        if dec is None:
            dec = self._decoders[key] = RowDecoder(self, key)
        return dec

    def index_entries(self, row: tuple) -> list[tuple[IndexCodec, bytes, bytes, bool]]:
        return [(ic, *ic.entry(row)) for ic in self.indexes]


# Column kinds whose values msgpack never stores as a string (numbers, booleans, raw bytes,
# ext types): reading only such columns, a batch may leave the row's strings undecoded.
_NEVER_TEXT = frozenset({"INT", "FLOAT", "DECIMAL", "BOOL", "BYTES", "DATE", "TIMESTAMP", "TIME",
                         "INTERVAL", "UUID"})


def never_text(column_type) -> bool:
    """Whether values of ``column_type`` are never stored as a msgpack string."""
    return column_type.kind in _NEVER_TEXT and column_type.element is None


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
        self.column_ids = [cid for cid, _p in self.columns]
        self.width = max(self.column_ids, default=0) + 1  # slots a point read pads a row's array to
        columns = codec.table.columns
        # no needed column is stored as a msgpack string: the batch skips decoding UTF-8
        self.text = any(columns[p].type.kind not in _NEVER_TEXT or columns[p].type.element is not None
                        for _cid, p in self.columns)
        self.offset = len(codec.prefix)
        self.rows: Callable[[Iterable[tuple[bytes, bytes]]], Iterator[tuple]] = (
            self._single_family_rows if codec.single_family else codec.decode_rows
        )
        if codec.virtual and codec.single_family:
            one, rows, batch = self.one, self.rows, self.batch
            self.one = lambda key, value: codec.complete(one(key, value))  # type: ignore[method-assign]
            self.rows = lambda pairs: map(codec.complete, rows(pairs))
            self.batch = lambda pairs: list(map(codec.complete, batch(pairs)))  # type: ignore[method-assign]

    def batch(self, pairs: list[tuple[bytes, bytes]]) -> list[tuple]:
        """The rows of a list of single-family pairs, as a list (a scan's batch), built a
        column at a time: the values are unpacked in one pass and each needed column read
        from all of them by one C-level ``map`` (`decode_columns`), the key columns decoded
        for the batch, and the rows assembled by ``zip`` (no Python work per row: a per-row
        ``tuple(map(values.get, layout))`` cost four times as much)."""
        n = len(pairs)
        nulls = [None] * n  # a list, not one shared iterator: zip reads each column once
        columns: list[Iterable[object]] = [nulls] * self.ncols
        if self.columns:
            values = decode_columns([value for _key, value in pairs], self.column_ids, self.text)
            for cid, p in self.columns:
                columns[p] = values[cid]
        # else only key columns, or none (count(*)): the values are not even unpacked
        if self.pk:
            for p, values in self._key_columns([key for key, _value in pairs]):
                columns[p] = values
        return list(zip(*columns))

    def column_lists(self, keys: list[bytes], values: list[bytes]) -> dict[int, list]:
        """The needed columns of single-family rows given as their keys and values (parallel
        lists) as lists (row position -> values): what `batch` would put at those positions,
        without building the rows."""
        out: dict[int, list] = {}
        if self.columns:
            decoded = decode_columns(values, self.column_ids, self.text)
            for cid, p in self.columns:
                out[p] = decoded[cid]
        if self.pk:
            for p, column in self._key_columns(keys):
                out[p] = column
        return out

    def _key_columns(self, keys: list[bytes]) -> list[tuple[int, list[object]]]:
        """(row position, values) of each needed primary-key column over ``keys``."""
        codec = self.codec
        npk, pk_desc, offset = codec.npk, codec.pk_desc, self.offset
        if npk == 1:  # the usual one-column key, decoded for the whole batch at once
            return [(self.pk[0][1], first_key_values(keys, offset, bool(pk_desc and pk_desc[0])))]
        decoded = [decode_key(key, npk, pk_desc, offset)[0] for key in keys]
        return [(p, list(map(itemgetter(i), decoded))) for i, p in self.pk]

    def one(self, key: bytes, value: bytes) -> tuple:
        """One single-family row (a point get)."""
        row = [None] * self.ncols
        if self.pk:
            vals = decode_key(key, self.codec.npk, self.codec.pk_desc, self.offset)[0]
            for i, p in self.pk:
                row[p] = vals[i]
        if self.columns:
            get = row_value_getter(value, self.width)
            for cid, p in self.columns:
                row[p] = get(cid)
        return tuple(row)

    def _single_family_rows(self, pairs: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple]:
        codec = self.codec
        ncols, pk, columns, offset = self.ncols, self.pk, self.columns, self.offset
        npk, pk_desc = codec.npk, codec.pk_desc
        unpack, width = row_value_getter, self.width
        if len(pk) == 1 and npk == 1:
            pk_pos = pk[0][1]
            for key, value in pairs:
                row = [None] * ncols
                row[pk_pos] = decode_key(key, 1, pk_desc, offset)[0][0]
                if columns:
                    get = unpack(value, width)
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
                get = unpack(value, width)
                for cid, p in columns:
                    row[p] = get(cid)
            yield tuple(row)


def virtual_columns(table: TableDescriptor) -> list[tuple[int, Callable[[list], object]]]:
    """(row position, closure) of each VIRTUAL generated column, cast to the column's type."""
    out = []
    for i, col in enumerate(table.columns):
        if col.computed is None or not col.virtual:
            continue
        fn = compile_schema_expr(parse_expression(col.computed), Scope(table_scope(table, table.name)), CompileEnv())
        out.append((i, lambda row, fn=fn, typ=col.type, name=col.name: assign_cast(fn(row), typ, name)))
    return out


# One codec per descriptor object, by identity: descriptors are mutable dataclasses (not
# hashable), and a new descriptor object (a schema change) must get a new codec.
_CODECS: dict[int, tuple[weakref.ref, TableCodec]] = {}


def codec_for(table: TableDescriptor) -> TableCodec:
    """The TableCodec of one descriptor object (cached while the object lives)."""
    key = id(table)
    entry = _CODECS.get(key)
    if entry is not None and entry[0]() is table:
        return entry[1]
    codec = TableCodec(table)
    _CODECS[key] = (weakref.ref(table, lambda _ref, key=key, codecs=_CODECS: codecs.pop(key, None)), codec)
    return codec
