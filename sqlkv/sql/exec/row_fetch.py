"""Fetching rows by primary key for a secondary index's entries.

A non-unique secondary index entry's key ends with the row's primary-key columns, so the row's
key prefix is the table prefix followed by that suffix (`row_prefixes`, or `pk_suffix_prefixes`
which cuts it without decoding when every index column was matched by equality). The rows are
then read by one `get_many` per batch and decoded as one batch (`fetch_rows`), or, for a
streaming scan, in batches growing from 1 to `FETCH_BATCH` rows (`fetched_rows`), so a LIMIT
that stops early reads little ahead.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, repeat
from operator import itemgetter

from sqlkv.encoding import markers as M
from sqlkv.sql.rowstore.codec import RowDecoder, TableCodec
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.picked import PickedDecoder

FETCH_BATCH = 128  # rows fetched by primary key in one get_many (index scans, lookups)
_TEXT_END = b"\x00\x01"  # ends an ascending string (a NUL inside is escaped as 00 ff)
_STRING_MARKER = bytes((M.STRING,))
_KEY_OF = itemgetter(0)


def row_prefixes(codec: TableCodec, ic: IndexCodec, pairs) -> Iterator[bytes]:
    """The primary-key prefix of the row each secondary index entry points at."""
    table_prefix = codec.prefix
    for key, value in pairs:
        row_prefix = ic.row_key_prefix(key, table_prefix)
        if row_prefix is None:
            partial = ic.decode(key, value)
            row_prefix = codec.pk_prefix([partial[p] for p in codec.pk_positions])
        yield row_prefix


def row_prefix_list(codec: TableCodec, ic: IndexCodec, pairs: list[tuple[bytes, bytes]]) -> list[bytes]:
    """`row_prefixes` of a list of entries, their primary keys cut as one batch."""
    cut = ic.row_key_prefixes([key for key, _value in pairs], codec.prefix)
    if all(cut):  # no None (a row key prefix is never empty)
        return cut  # type: ignore[return-value]
    return [prefix if prefix is not None else next(row_prefixes(codec, ic, [pair]))
            for prefix, pair in zip(cut, pairs)]


def pk_suffix_prefixes(codec: TableCodec, ic: IndexCodec, prefix_len: int,
                       pairs: list[tuple[bytes, bytes]]) -> list[bytes]:
    """`row_prefixes` of entries whose keys all begin with the same ``prefix_len`` bytes of
    encoded index values (an equality on every index column): the row's key prefix is the
    table's followed by the rest of the entry key, cut without decoding it. An entry with
    nothing after the values (a unique index's) is decoded as `row_prefixes` does."""
    table_prefix = codec.prefix
    out = []
    for key, value in pairs:
        if len(key) > prefix_len:
            out.append(table_prefix + key[prefix_len:])
        else:
            out.extend(row_prefixes(codec, ic, [(key, value)]))
    return out


def text_entry_row_keys(codec: TableCodec, ic: IndexCodec, pairs: list[tuple[bytes, bytes]],
                        texts: list[str] | None = None) -> list[bytes] | None:
    """The family-0 keys of the rows of a one-family table that the entries of an index on
    one ascending TEXT column point at (non-unique form: the key ends with the row's PK),
    each cut after the string's terminator in one pass; None when an entry is of another form
    (a NULL, a non-ASCII or escaped string, a unique entry): the caller cuts them the general
    way, which checks the UTF-8 and names a corrupt key. ``texts``, if given, gets each
    entry's indexed string (its row's value of the column: an ASCII string is stored as is)."""
    if not pairs:
        return []
    start = len(ic.prefix) + 1
    head, suffix = codec.prefix, codec.fam0_suffix
    out = []
    append = out.append
    strings: list[bytes] = []
    string = strings.append
    try:
        for key, _value in pairs:
            stop = key.index(_TEXT_END, start)  # (ValueError: no terminator)
            string(key[start:stop])
            append(head + key[stop + 2:] + suffix)
    except ValueError:
        return None
    # what every entry must be, checked at once (no step per entry): a string (its marker),
    # of ASCII, followed by a primary key (a row key longer than the table's head and suffix)
    if (not all(map(bytes.startswith, map(_KEY_OF, pairs), repeat(ic.prefix + _STRING_MARKER)))
            or not b"".join(strings).isascii() or min(map(len, out)) <= len(head) + len(suffix)):
        return None
    if texts is not None:
        texts += map(bytes.decode, strings)
    return out


def rows_by_keys(decoder: RowDecoder | PickedDecoder, reader, keys: list[bytes],
                 given: list | None = None) -> list[tuple]:
    """The rows of a one-family table at ``keys`` that exist, in order: one ``get_many``,
    decoded as one batch (``given``: the values, parallel to ``keys``, of the column a
    `PickedDecoder` leaves to its caller)."""
    values = reader.get_many(keys)
    if None in values:  # rows that are not there
        present = [value is not None for value in values]
        keys = list(compress(keys, present))
        values = list(compress(values, present))
        if given is not None:
            given = list(compress(given, present))
    if decoder.__class__ is PickedDecoder:
        return decoder.batch_of(keys, values, given)  # type: ignore[attr-defined]
    return decoder.batch(list(zip(keys, values)))


def rows_at(codec: TableCodec, decoder: RowDecoder, reader, prefixes: list[bytes]) -> list[tuple]:
    """The rows at ``prefixes`` that exist, in order: one get for one row, else one
    ``get_many`` (`fetch_rows`)."""
    if len(prefixes) == 1:
        row = codec.fetch(reader, prefixes[0], decoder)
        return [] if row is None else [row]
    if not prefixes:
        return []
    if codec.single_family:
        suffix = codec.fam0_suffix
        return rows_by_keys(decoder, reader, [prefix + suffix for prefix in prefixes])
    return [row for row in codec.fetch_many(reader, prefixes, decoder) if row is not None]


def fetch_rows(codec: TableCodec, decoder: RowDecoder, reader, prefixes: list[bytes]) -> list[tuple | None]:
    """`TableCodec.fetch_many`'s answer (the row at each prefix, None where there is none)
    with the rows of a one-family table decoded as one batch (`RowDecoder.batch`: column by
    column) rather than one by one."""
    if not codec.single_family or len(prefixes) < 2:
        return codec.fetch_many(reader, prefixes, decoder)
    suffix = codec.fam0_suffix
    keys = [prefix + suffix for prefix in prefixes]
    values = reader.get_many(keys)
    rows = iter(decoder.batch([(key, value) for key, value in zip(keys, values) if value is not None]))
    return [None if value is None else next(rows) for value in values]


def fetched_rows(codec: TableCodec, decoder: RowDecoder, reader, prefixes: Iterator[bytes]) -> Iterator[tuple]:
    """The rows at ``prefixes`` in their order, fetched in batches (`TableCodec.fetch_many`)
    growing from 1 to `FETCH_BATCH` rows, so a LIMIT that stops early reads few rows ahead."""
    fetch_many = codec.fetch_many
    batch: list[bytes] = []
    size = 1
    for prefix in prefixes:
        batch.append(prefix)
        if len(batch) >= size:
            yield from _present(fetch_many(reader, batch, decoder))
            batch = []
            size = min(size * 2, FETCH_BATCH)
    if batch:
        yield from _present(fetch_many(reader, batch, decoder))


def _present(rows: list[tuple | None]) -> Iterator[tuple]:
    return (row for row in rows if row is not None)
