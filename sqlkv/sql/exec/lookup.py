"""`IndexLookup`: rows by the values of an index's leading columns, the inner side of a lookup
join (``FROM c JOIN o ON o.cid = c.id`` looks each ``c.id`` up in ``o``'s index on ``cid``).

`lookup` streams one key's rows; `lookup_many` serves a batch of outer rows at once: the keys'
index entries (one ``get_many`` for a unique index, else one ``read_prefixes``: a short prefix
read per key against one read state), then all their rows by primary key in one ``get_many``.
KV requests are counted for EXPLAIN ANALYZE as `IndexScan` counts its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import encode_key
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.counting import reader_for
from sqlkv.sql.exec.row_fetch import fetch_rows, fetched_rows, pk_suffix_prefixes, row_prefix_list, row_prefixes
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.keyspans import _Empty, _Inexact, coerce_key_value
from sqlkv.storage.kv import prefix_end

LOOKUP_KEY_ROWS = 64  # a lookup join's rows per outer key read in its batch; more stream


class IndexLookup(Operator):
    """Rows whose leading index columns equal a given key (the inner side of lookup joins)."""

    def __init__(self, table: TableDescriptor, alias: str, columns: list[Column], index: IndexDescriptor, order: list[int]) -> None:
        self.table = table
        self.alias = alias
        self.columns = columns
        self.index = index
        self.order = order  # position in the caller's key tuple of each leading index column
        self.primary = index.id == 1
        self.codec = codec_for(table)
        self.icodec = None if self.primary else self.codec.index_codec(index.id)
        self.prefix = self.codec.prefix if self.primary else self.icodec.prefix  # type: ignore[union-attr]
        positions = [table.column_index(c) for c in index.column_ids][: len(order)]
        self.types = [table.columns[p].type for p in positions]
        self.desc = list(index.descending[: len(order)])
        self.full = len(order) == len(index.column_ids) and (self.primary or index.unique)
        self.decoder = self.codec.decoder(None)
        # every index column looked up on a non-unique index: an entry's key is the looked-up
        # prefix followed by the row's primary key (`scan.pk_suffix_prefixes`)
        self.pk_after_prefix = (self.icodec is not None and self.icodec.pk_bytes_in_key
                                and len(order) == len(index.column_ids))

    def _base(self, key: tuple) -> bytes | None:
        """The encoded index prefix of ``key``; None when no row can match it."""
        try:
            vals = [coerce_key_value(key[i], t, "eq") for i, t in zip(self.order, self.types)]
        except (_Empty, _Inexact):
            return None  # NULL never joins; a value of another type never equals a key value
        return encode_key(vals, self.desc, self.prefix)

    def _reader(self, ctx: ExecContext):
        return reader_for(ctx, self)

    def lookup_many(self, ctx: ExecContext, keys: list[tuple]) -> list[Iterable[tuple]]:
        """The rows of each of ``keys``, as `lookup` gives them, with the rows of the whole
        batch fetched by one ``get_many`` (a lookup join's batch of outer rows). A key with
        more than `LOOKUP_KEY_ROWS` entries gets `lookup`'s lazy rows instead, so a batch holds
        at most that many rows per key in memory."""
        if self.primary and not self.full:
            return [self.lookup(ctx, key) for key in keys]  # a primary-key prefix: streamed
        reader = self._reader(ctx)
        bases = [self._base(key) for key in keys]
        per_key: list[list[bytes] | None]
        if self.primary:
            per_key = [[] if base is None else [base] for base in bases]
        elif self.full:  # a unique index: one entry per key, read together
            present = [base for base in bases if base is not None]
            entries = dict(zip(present, reader.get_many(present)))
            per_key = [[] if base is None or entries[base] is None
                       else list(row_prefixes(self.codec, self.icodec, [(base, entries[base])])) for base in bases]
        else:
            per_key = self._entry_prefixes(reader, bases)
        rows = fetch_rows(self.codec, self.decoder, reader,
                          [p for prefixes in per_key if prefixes for p in prefixes])
        out: list[Iterable[tuple]] = []
        at = 0
        for key, prefixes in zip(keys, per_key):
            if prefixes is None:
                out.append(self.lookup(ctx, key))
                continue
            out.append([row for row in rows[at:at + len(prefixes)] if row is not None])
            at += len(prefixes)
        return out

    def _entry_prefixes(self, reader, bases: list[bytes | None]) -> list[list[bytes] | None]:
        """For each of ``bases`` the row prefixes of the index entries under it (none for a
        None base: no row matches), the entries of the whole batch read by one call of short
        prefix reads; None for a base with more than `LOOKUP_KEY_ROWS` entries (the caller
        streams that key's rows)."""
        distinct = sorted({base for base in bases if base is not None})
        found = dict(zip(distinct, reader.read_prefixes([(base, prefix_end(base)) for base in distinct],
                                                        LOOKUP_KEY_ROWS)))
        codec, ic = self.codec, self.icodec
        assert ic is not None
        out: list[list[bytes] | None] = []
        for base in bases:
            if base is None:
                out.append([])
                continue
            pairs = found[base]
            if pairs is None:
                out.append(None)
            elif self.pk_after_prefix:
                out.append(pk_suffix_prefixes(codec, ic, len(base), pairs))
            else:
                out.append(row_prefix_list(codec, ic, pairs))
        return out

    def lookup(self, ctx: ExecContext, key: tuple) -> Iterator[tuple]:
        base = self._base(key)
        if base is None:
            return
        reader = self._reader(ctx)
        if self.primary:
            if self.full:
                row = self.codec.fetch(reader, base, self.decoder)
                if row is not None:
                    yield row
                return
            yield from self.decoder.rows(reader.scan(base, prefix_end(base), False, None))
            return
        if self.full:
            value = reader.get(base)
            pairs = [] if value is None else [(base, value)]
        else:
            pairs = reader.scan(base, prefix_end(base), False, None)
        yield from fetched_rows(self.codec, self.decoder, reader, row_prefixes(self.codec, self.icodec, pairs))

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        raise NotImplementedError("IndexLookup produces rows through lookup(ctx, key)")

    def describe(self) -> str:
        cols = ", ".join(self.table.column_by_id(c).name for c in self.index.column_ids[: len(self.order)])
        return f"lookup {self.table.name}@{self.index.name} ({cols})"
