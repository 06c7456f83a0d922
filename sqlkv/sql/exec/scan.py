"""Leaf operators that read KV: index scans (incl. point gets) and virtual tables (index
lookups, the inner side of lookup joins, are in lookup.py).

``SELECT * FROM users WHERE id IN (3, 7)`` plans to an `IndexScan` of ``users@users_pkey``
whose `SpanBuilder` yields two point spans at execution time; each becomes one ``txn.get`` of
the row's family-0 key (or a scan of the row's prefix when the table has several families),
decoded by the table's `RowDecoder` into a tuple of all columns (it can fill only the columns
the query reads, leaving the others None: see `access.DECODE_ONLY_NEEDED`). A range span becomes a lazy ``txn.scan``; for a
secondary index each entry is decoded and, unless the index covers the query (index-only), the
row is fetched by primary key (whose bytes a non-unique entry key already ends with), in
batches of growing size by one ``get_many`` each (`row_fetch.fetched_rows`). KV operations and rows are counted into
``ctx.stats_for(op)`` for EXPLAIN ANALYZE (`counting.reader_for`); long scans call ``ctx.check_cancelled()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import encode_key
from sqlkv.encoding.pretty import pretty_key, pretty_span
from sqlkv.encoding.single_key import single_key, span_end
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.counting import reader_for
from sqlkv.sql.exec.operator import FIRST_SCAN_BATCH, Operator, batch_sizes, chunked
from sqlkv.sql.exec.row_fetch import (
    FETCH_BATCH, fetch_rows, fetched_rows, pk_suffix_prefixes, row_prefix_list, row_prefixes, rows_at,
    rows_by_keys, text_entry_row_keys,
)
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.exploded_reads import PartialFetch
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.picked import PickedDecoder
from sqlkv.sql.rowstore.keyspans import Span, SpanBuilder, _Empty, _Inexact, coerce_key_value
from sqlkv.storage.kv import prefix_end

_CANCEL_EVERY = 512
# key values a key decodes back to exactly (same type, same value): a point get's key value
# is then the row's
_SAME_WHEN_DECODED = (int, str)


class IndexScan(Operator):
    """Rows of a table read through one index over spans computed per execution."""

    def __init__(
        self,
        table: TableDescriptor,
        alias: str,
        columns: list[Column],
        index: IndexDescriptor,
        builder: SpanBuilder,
        reverse: bool = False,
        index_only: bool = False,
        residual: list[Callable[[tuple], bool]] | None = None,
        residual_sql: list[object] | None = None,  # str() of each: a used filter's SQL
        limit: int | None = None,
        needed: set[int] | None = None,
    ) -> None:
        self.table = table
        self.alias = alias
        self.columns = columns
        self.index = index
        self.primary = index is table.primary_index or index.id == 1
        self.builder = builder
        self.reverse = reverse
        self.index_only = index_only
        self.residual = residual or []
        self.residual_sql = residual_sql or []
        self.limit = limit
        self.codec = codec_for(table)
        self.icodec: IndexCodec | None = None if self.primary else self.codec.index_codec(index.id)
        # rows fill only the positions the query reads (None elsewhere)
        self.decoder = self.codec.decoder(needed)
        self.describe_ctx: ExecContext | None = None
        # a table with exploded columns: the point read of a row gets only what the query reads
        self.partial_fetch: PartialFetch | None = None
        # an equality on every column of a non-unique index: an entry's key is the span's start
        # followed by the row's primary key as the primary index encodes it (or, for a unique
        # index, is the span's start alone, the PK in the value)
        self.pk_after_prefix = (self.icodec is not None and self.icodec.pk_bytes_in_key
                                and builder._one_prefix and len(builder.bounds) == len(index.column_ids))
        self.whole_span = Span(builder.prefix, prefix_end(builder.prefix))  # the index's every key
        # spans of equalities on a secondary index (``a = ?``, ``a IN (...)``): each likely
        # holds a few entries, read by a short prefix read (`_span_batches`)
        self.equality_spans = (self.icodec is not None and bool(builder.bounds)
                               and builder.n_eq == len(builder.bounds))
        # an index on one ascending TEXT column of a one-family table: its entries' row keys
        # are cut in one pass (`text_entry_row_keys`)
        ic = self.icodec
        self.text_entries = (ic is not None and self.codec.single_family and ic.pk_bytes_in_key
                             and len(index.column_ids) == 1 and not ic.key_desc[0]
                             and table.columns[ic.key_positions[0]].type.kind == "TEXT")

    def _fetch_point(self, reader, prefix: bytes, decoder=None) -> tuple | None:
        if self.partial_fetch is not None:
            return self.partial_fetch.fetch(reader, prefix)
        return self.codec.fetch(reader, prefix, decoder or self.decoder)

    def _spans(self, ctx: ExecContext) -> tuple[list[Span], bool]:
        if not self.builder.bounds:
            return [self.whole_span], True
        return self.builder.spans(ctx)

    def batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        """The rows read and decoded a batch of KV pairs at a time (`Transaction.scan_batches`);
        a table with several column families streams `rows` in chunks instead."""
        if self.primary and not self.codec.single_family:
            return chunked(self.rows(ctx))
        return self._batches(ctx)

    def _batches(self, ctx: ExecContext) -> Iterator[list[tuple]]:
        spans, exact = self._spans(ctx)
        reader = reader_for(ctx, self)
        checks = None if exact else self.residual
        left = self.limit  # rows still wanted (None: all)
        # a secondary index's rows are fetched by key: grow from 1, like `fetched_rows`
        sizes = batch_sizes(FIRST_SCAN_BATCH if self.primary or self.index_only else 1)
        for span in reversed(spans) if self.reverse else spans:
            # the KV limit is only safe when every row read is a row returned
            for batch in self._span_batches(reader, span, left if checks is None else None, sizes, exact):
                ctx.check_cancelled()
                if checks is not None:
                    batch = [row for row in batch if all(c(row) for c in checks)]
                if left is not None:
                    batch = batch[:left]
                    left -= len(batch)
                if batch:
                    yield batch
                if left is not None and left <= 0:
                    return

    def _span_batches(self, reader, span: Span, kv_limit: int | None,
                      sizes: Iterator[int], exact: bool) -> Iterator[list[tuple]]:
        if span.point:  # one key, so at most one row
            rows = list(self._span_rows(reader, span, kv_limit))
            return iter([rows] if rows else [])
        if self.equality_spans and exact and not self.reverse and kv_limit is None:
            # a secondary index's span (an equality, say): its few entries by one short
            # prefix read, recording exactly the span; more than a batch are scanned
            entries = reader.read_prefix(span.start, span.end, FETCH_BATCH)
            if entries is not None:
                return self._entry_batches(reader, span, entries, sizes, exact)
        pairs = reader.scan_batches(span.start, span.end, self.reverse, kv_limit, sizes)
        if self.primary:
            return map(self.decoder.batch, pairs)
        ic = self.icodec
        assert ic is not None
        if self.index_only:
            return ([tuple(ic.decode(key, value)) for key, value in batch] for batch in pairs)
        codec, decoder = self.codec, self.decoder
        return ([row for row in codec.fetch_many(reader, row_prefix_list(codec, ic, batch), decoder)
                 if row is not None] for batch in pairs)

    def _entry_batches(self, reader, span: Span, entries: list[tuple[bytes, bytes]],
                       sizes: Iterator[int], exact: bool) -> Iterator[list[tuple]]:
        """The rows of a secondary index's ``entries`` (all of ``span``'s), decoded from them
        (index-only) or fetched by primary key ``sizes`` rows at a time, so a LIMIT met early
        fetches few rows ahead."""
        ic = self.icodec
        assert ic is not None
        if not entries:
            return
        if self.index_only:
            yield [tuple(ic.decode(key, value)) for key, value in entries]
            return
        codec = self.codec
        if self.pk_after_prefix and exact:  # the span's start is the encoded equality values
            prefixes = pk_suffix_prefixes(codec, ic, len(span.start), entries)
        else:
            prefixes = row_prefix_list(codec, ic, entries)
        at = 0
        while at < len(prefixes):
            size = next(sizes)
            rows = [row for row in fetch_rows(codec, self.decoder, reader, prefixes[at:at + size])
                    if row is not None]
            at += size
            if rows:
                yield rows

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        spans, exact = self._spans(ctx)
        # counting wrappers only under EXPLAIN ANALYZE: plain runs read the transaction directly
        reader = reader_for(ctx, self)
        checks = None if exact else self.residual
        limit = self.limit
        produced = 0
        n = 0
        if checks is None and limit is None:
            for span in reversed(spans) if self.reverse else spans:
                for row in self._span_rows(reader, span, None, exact):
                    n += 1
                    if not n & 511:
                        ctx.check_cancelled()
                    yield row
            return
        for span in reversed(spans) if self.reverse else spans:
            # the KV limit is only safe when every row read is a row returned
            for row in self._span_rows(reader, span, limit if checks is None else None, exact):
                n += 1
                if n % _CANCEL_EVERY == 0:
                    ctx.check_cancelled()
                if checks is not None and not all(c(row) for c in checks):
                    continue
                yield row
                produced += 1
                if limit is not None and produced >= limit:
                    return

    @property
    def point_gettable(self) -> bool:
        """``pk = value`` on a one-column primary key of a one-family table (`point_get`)."""
        return (self.primary and self.codec.single_family and self.builder._single_point
                and (self.limit is None or self.limit > 0))

    def point_get(self, ctx: ExecContext, decoder=None) -> list[tuple] | None:
        """The rows of a `point_gettable` scan without spans or generators: encode the key,
        one get, decode (by ``decoder``, else the scan's). None when the value has to widen
        the span (the caller runs `rows`)."""
        builder = self.builder
        try:
            value = coerce_key_value(builder.bounds[0].eq[0][1](()), builder.types[0], "eq")  # type: ignore[index]
        except _Empty:
            return []  # NULL, or 1.5 for an INT key: no row
        except _Inexact:
            return None
        key = (encode_key([value], builder.desc, builder.prefix) if builder.desc[0]
               else single_key(value, builder.prefix))
        if decoder.__class__ is PickedDecoder and value.__class__ in _SAME_WHEN_DECODED:
            # the row's key is the one just encoded: its value is ``value``, no need to decode it
            row = decoder.fetch_keyed(ctx.txn, key, value)  # type: ignore[union-attr]
            return [] if row is None else [row]
        row = self.codec.fetch(ctx.txn, key, decoder or self.decoder)
        return [] if row is None else [row]

    def ready_rows(self, ctx: ExecContext, most: int, decoder=None) -> list[tuple] | None:
        """The rows of a scan over one span (an equality, a range) or over primary-key points
        (``IN``), read at once (``read_range``, ``get_many``) instead of streamed; None when
        the span widened (the filters must be re-checked), the spans are of another kind, or
        more than ``most`` rows match: the caller then runs `rows`. The rows are decoded by
        ``decoder`` (a `PickedDecoder`, say), else by the scan's."""
        if self.builder.bounds:
            spans, exact = self.builder.spans(ctx)
        else:  # the whole index (a LIMIT bounds the scan)
            spans, exact = [self.whole_span], True
        if not exact:
            return None
        decoder = decoder or self.decoder
        if len(spans) > 1:
            return self._point_rows(ctx, spans, most, decoder)
        if not spans:
            return []
        span = spans[0]
        txn = ctx.txn
        codec = self.codec
        if self.primary and span.point:
            row = self._fetch_point(txn, span.start, decoder)
            return [] if row is None else [row]
        if self.primary and not codec.single_family:
            return None
        if span.point:
            value = txn.get(span.start)
            pairs = [] if value is None else [(span.start, value)]
        elif not self.primary and not self.reverse and (self.limit is None or self.limit > most):
            # an equality (or a range) on a secondary index: a short prefix read, whose
            # recorded conflict span is exactly the span
            found = txn.read_prefix(span.start, span.end, most)
            if found is None:
                return None
            pairs = found
        else:
            limit = most + 1 if self.limit is None else min(self.limit, most + 1)
            pairs = txn.read_range(span.start, span.end, self.reverse, limit)
            if len(pairs) > most:
                return None
        if self.primary:
            return decoder.batch(pairs)
        ic = self.icodec
        assert ic is not None
        if self.index_only:
            return [tuple(ic.decode(key, value)) for key, value in pairs]
        if self.pk_after_prefix:  # the entries' keys are the span's prefix + the row's PK
            prefixes = pk_suffix_prefixes(codec, ic, len(span.start), pairs)
        else:
            keys = text_entry_row_keys(codec, ic, pairs) if self.text_entries else None
            if keys is not None:
                return rows_by_keys(decoder, txn, keys)
            prefixes = row_prefix_list(codec, ic, pairs)
        return rows_at(codec, decoder, txn, prefixes)

    @property
    def equality_readable(self) -> bool:
        """An equality on every column of a non-unique index, fetching rows (`equality_rows`)."""
        return self.pk_after_prefix and not self.index_only and not self.reverse and self.limit is None

    def equality_rows(self, ctx: ExecContext, most: int, decoder=None) -> list[tuple] | None:
        """The rows of an `equality_readable` scan without spans: encode the looked-up values,
        one short prefix read of the entries, the rows' keys cut from the entry keys, their
        rows fetched (`rows_at`). None when a value has to widen the span or more than
        ``most`` entries match (the caller runs `rows`). Rows decode as in `ready_rows`."""
        builder = self.builder
        bounds = builder.bounds
        try:
            if len(bounds) == 1 and not builder.desc[0]:  # the usual index on one column
                value = coerce_key_value(bounds[0].eq[0][1](()), builder.types[0], "eq")  # type: ignore[index]
                base = single_key(value, builder.prefix)
            else:
                values = [coerce_key_value(b.eq[0][1](()), t, "eq")  # type: ignore[index]
                          for b, t in zip(bounds, builder.types)]
                base = encode_key(values, builder.desc, builder.prefix)
        except _Empty:
            return []  # NULL, or 1.5 for an INT column: no row
        except _Inexact:
            return None
        txn = ctx.txn
        pairs = txn.read_prefix(base, span_end(base), most)
        if not pairs:
            return pairs  # None (too many: stream them) or none at all
        codec, ic = self.codec, self.icodec
        assert ic is not None
        return rows_at(codec, decoder or self.decoder, txn, pk_suffix_prefixes(codec, ic, len(base), pairs))

    def _point_rows(self, ctx: ExecContext, spans: list[Span], most: int, decoder) -> list[tuple] | None:
        """Primary-key points (``id IN (...)``) read by one ``get_many``, in scan order."""
        if not (self.primary and self.codec.single_family) or len(spans) > most \
                or not all(span.point for span in spans):
            return None
        ordered = reversed(spans) if self.reverse else spans
        rows = [row for row in self.codec.fetch_many(ctx.txn, [span.start for span in ordered], decoder)
                if row is not None]
        return rows if self.limit is None else rows[:self.limit]

    def _span_rows(self, reader, span: Span, limit: int | None, exact: bool = False) -> Iterator[tuple]:
        codec = self.codec
        decoder = self.decoder
        if self.primary:
            if span.point:
                row = self._fetch_point(reader, span.start)
                if row is not None:
                    yield row
                return
            kv_limit = limit if codec.single_family else None
            yield from decoder.rows(reader.scan(span.start, span.end, self.reverse, kv_limit))
            return
        ic = self.icodec
        assert ic is not None
        pairs = None
        if span.point:
            value = reader.get(span.start)
            pairs = [] if value is None else [(span.start, value)]
        elif self.equality_spans and exact and not self.reverse and limit is None:
            pairs = reader.read_prefix(span.start, span.end, FETCH_BATCH)  # see _span_batches
        if pairs is None:
            pairs = reader.scan(span.start, span.end, self.reverse, limit)
        if self.index_only:
            for key, value in pairs:
                yield tuple(ic.decode(key, value))
            return
        yield from fetched_rows(codec, decoder, reader, row_prefixes(codec, ic, pairs))

    # -- EXPLAIN -------------------------------------------------------------------------

    def describe(self) -> str:
        verb = "scan"
        text = f"{self.table.name}@{self.index.name}"
        if self.index.predicate is not None:
            text += f" (partial: WHERE {self.index.predicate})"
        if self.index_only:
            text += " (index-only)"
        if self.reverse:
            text += " reverse"
        spans_txt = self._spans_text()
        if spans_txt is not None and all_points(self._spans_cache):
            verb = "get"
        line = f"{verb} {text}"
        if spans_txt:
            line += " " + spans_txt
        if self.partial_fetch is not None and verb == "get" and self.partial_fetch.element_reads:
            spans = self._spans_cache
            line += " " + self.partial_fetch.describe(spans[0].start if spans and len(spans) == 1 else None)
        if self.limit is not None:
            line += f" limit {self.limit}"
        return line

    _spans_cache: list[Span] | None = None

    def _spans_text(self) -> str | None:
        self._spans_cache = None
        if not self.builder.bounds:
            return "full scan " + pretty_span(self.builder.prefix, prefix_end(self.builder.prefix))
        ctx = self.describe_ctx or ExecContext()
        try:
            spans, exact = self.builder.spans(ctx)
        except Exception:  # parameters not bound yet: show the constraints instead
            return "spans: " + " AND ".join(map(str, self.residual_sql))
        self._spans_cache = spans
        if not spans:
            return "spans: (empty)"
        shown = []
        like = bool(self.builder.bounds) and self.builder.bounds[-1].like_prefix is not None
        for s in spans[:8]:
            if like:  # strings starting with the prefix: show the prefix as a string, then "…"
                shown.append(pretty_key(s.start + b"\x00\x01") + "…")
            elif s.point:
                shown.append(pretty_key(s.start))
            else:
                shown.append(pretty_span(s.start, s.end))
        more = f" (+{len(spans) - 8} more)" if len(spans) > 8 else ""
        return ("" if exact else "(widened) ") + ", ".join(shown) + more


def all_points(spans: list[Span] | None) -> bool:
    return bool(spans) and all(s.point for s in spans)  # type: ignore[union-attr]


class VirtualScan(Operator):
    """Rows of a virtual table (information_schema, sqlkv_internal) produced on the fly.

    ``only`` (a constant expression for ``table_name = ...``) restricts the rows to one table;
    the caller still applies the filter itself.
    """

    def __init__(self, table: TableDescriptor, alias: str, columns: list[Column], only=None) -> None:
        self.table = table
        self.alias = alias
        self.columns = columns
        self.only = only

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        only = None
        if self.only is not None:
            only = self.only(())
            if not isinstance(only, str):
                return
        for i, row in enumerate(self.table.virtual(ctx, only)):
            if i % _CANCEL_EVERY == 0:
                ctx.check_cancelled()
            yield row

    def describe(self) -> str:
        return f"virtual scan {self.table.name}"
