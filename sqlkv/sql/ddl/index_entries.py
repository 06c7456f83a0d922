"""CREATE INDEX's backfill entries, built a batch of table rows at a time (index_ingest.py).

A row's entry costs what `IndexCodec.entry` costs for one row: a list of the indexed values,
one `encode_key` call walking them, the key and value concatenated. Here, when every entry of
the index is *distinct* by construction -- a non-unique index, whose key ends with the row's
primary key, on a single-family table -- a batch of the scan's pairs (`BATCH_ROWS`) becomes
columns at once (`column_batches`: only the indexed and stored columns, read from the
batch's unpacked values without building rows when no predicate needs them; when none of them
is a string column the values are unpacked with strings left undecoded), each indexed
column is encoded down the batch (`key_columns.encode_column_pieces`), and each key is one C-level join of the
prefix, the encoded columns and the primary key's bytes cut verbatim from the row's key
(keys.md: an entry's primary key suffix is the primary key's encoding, same directions).

Distinct entries need no ordinal to report a unique violation, and with no STORING column
their values are all `EMPTY_LIST`: such a run sorts as a list of bytes, far cheaper than
sorting ``(key, ordinal, value)`` tuples. A unique index whose key holds every primary key
column is distinct too (no two rows can share its key). Other unique indexes build a batch at
a time with ordinals (`unique_batch`: index_ingest.py reports a violation from the ordinal);
multi-family tables keep the row-at-a-time entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import getitem, is_

from sqlkv.encoding.key_columns import encode_column_pieces, first_key_values
from sqlkv.encoding.values import _packer, decode_columns, encode_values
from sqlkv.sql.rowstore.index import EMPTY_LIST, IndexCodec

# Column kinds whose values are never msgpack strings (ints, floats, bools, ext types): a batch
# whose read columns are all of these may be unpacked with strings left as bytes (`decode_columns`).
_NO_STRING_KINDS = frozenset({"INT", "FLOAT", "BOOL", "DECIMAL", "DATE", "TIMESTAMP", "TIME", "INTERVAL", "UUID"})
BATCH_ROWS = 4_096  # table pairs read and decoded at once (fewer: the per-read and per-call setup shows)


def distinct_entries(codec, ic: IndexCodec) -> bool:
    """Whether ``ic``'s entries can be built column-wise here, on a single-family table (one
    pair per row, whose key is prefix + primary key + family 0): a non-unique index whose key
    ends with the table's whole primary key, or a unique index (not partial) whose indexed
    columns include every primary key column -- no two rows share its key, and every entry,
    NULLs or not, is the indexed values and the stored ones (`IndexCodec.entry`'s two forms
    agree when the key lacks no primary key column)."""
    if not codec.single_family or codec.exploded:
        return False
    if ic.unique:
        return ic.predicate is None and not ic.extra_pk_positions
    return ic.pk_bytes_in_key


def unique_entries(codec, ic: IndexCodec) -> bool:
    """Whether a unique index's entries can be built a batch at a time (`unique_batch`): no
    predicate (every row has an entry, so a row's ordinal is its place in the scan), on a
    single-family table."""
    return codec.single_family and not codec.exploded and ic.unique and ic.predicate is None


def needed_positions(ic: IndexCodec, pk_from_key: bool) -> set[int]:
    """The row positions an entry reads: the primary key's only when it is not taken as
    bytes from the row's key (or the index also reads it: indexed, stored, predicate)."""
    needed = set(ic.key_positions) | set(ic.storing_positions) | set(ic.predicate_positions)
    if not pk_from_key:
        needed |= set(ic.extra_pk_positions)
    return needed


def column_batches(codec, ic: IndexCodec, batches: Iterable[tuple[list[bytes], list[bytes]]]
                   ) -> Iterator[tuple[dict[int, Sequence], list[bytes]]]:
    """Per batch of a single-family table's pairs, as ``(keys, values)`` lists, for the rows
    the index holds: the values of each indexed and stored column (by row position) and each
    row's primary key bytes, cut from its key. Without a predicate, and when those columns are
    stored in the value or are a one-column primary key (none computed), no row is built: each
    column is read from the batch's unpacked values by one C-level ``map`` (`decode_columns`),
    the key column by `first_key_values`."""
    start, cut = len(codec.prefix), -len(codec.fam0_suffix)
    # a unique entry's value holds the primary key columns the key lacks
    wanted = [*ic.key_positions, *ic.storing_positions, *(ic.extra_pk_positions if ic.unique else ())]
    stored = {p: cid for cid, p in codec.stored_columns}
    in_key = codec.pk_positions[0] if codec.npk == 1 and codec.pk_positions[0] in wanted else None
    in_value = [p for p in wanted if p != in_key]
    if ic.predicate is None and not codec.virtual and all(p in stored for p in in_value):
        columns_ = codec.table.columns
        raw = all(columns_[p].type.kind in _NO_STRING_KINDS and columns_[p].type.element is None for p in in_value)
        ids = [stored[p] for p in in_value]
        for keys, values in batches:
            columns = {}
            if in_value:
                by_id = decode_columns(values, ids, text=not raw)
                columns = {p: by_id[stored[p]] for p in in_value}
            if in_key is not None:
                columns[in_key] = first_key_values(keys, start, bool(codec.pk_desc[0]))
            yield columns, list(map(getitem, keys, repeat(slice(start, cut))))
        return
    decode = codec.decoder(needed_positions(ic, not ic.unique)).batch
    for keys, values in batches:
        rows = decode(list(zip(keys, values)))
        pks = list(map(getitem, keys, repeat(slice(start, cut))))
        if ic.predicate is not None:
            kept = [i for i, row in enumerate(rows) if ic.predicate(row)]
            rows, pks = [rows[i] for i in kept], [pks[i] for i in kept]
        transposed = list(zip(*rows))
        yield {p: transposed[p] if rows else () for p in wanted}, pks


def distinct_batch(ic: IndexCodec, columns: dict[int, Sequence], pks: list[bytes]
                   ) -> tuple[list[bytes], list[bytes] | None]:
    """The entry keys of a batch (`column_batches`) and their values, None when every
    value is `EMPTY_LIST` (no STORING column). A unique index's keys hold the primary key
    columns already: no primary key bytes after them."""
    pieces = _key_pieces(ic, columns)
    keys = list(map(b"".join, zip(*pieces) if ic.unique else zip(*pieces, pks)))
    if not ic.storing_positions:
        return keys, None
    stored = [columns[p] for p in ic.storing_positions]
    return keys, _values_of(zip(*stored))


def unique_batch(ic: IndexCodec, columns: dict[int, Sequence], pks: list[bytes], first: int
                 ) -> list[tuple[bytes, int, bytes]]:
    """``(key, ordinal, value)`` of a unique index's entries for a batch (`column_batches`)
    whose first row is row number ``first`` of the scan: `IndexCodec.entry`'s bytes. A row
    with no NULL among its indexed values gets the unique form (the key is the indexed
    values alone, the value the primary key columns the key lacks and the stored ones); a
    row with a NULL gets `IndexCodec.entry` itself (the key then ends with the primary key,
    so it repeats nothing)."""
    n = len(pks)
    key_columns = [columns[p] for p in ic.key_positions]
    keys = list(map(b"".join, zip(*_key_pieces(ic, columns))))
    in_value = [columns[p] for p in (*ic.extra_pk_positions, *ic.storing_positions)]
    values = _values_of(zip(*in_value)) if in_value else [EMPTY_LIST] * n
    with_null: set[int] = set()
    for column in key_columns:
        if None in column:
            with_null.update(compress(range(n), map(is_, column, repeat(None))))
    for i in with_null:
        keys[i], values[i], _conditional = ic.entry({p: column[i] for p, column in columns.items()}, pks[i])
    return list(zip(keys, range(first, first + n), values))


def _key_pieces(ic: IndexCodec, columns: dict[int, Sequence]) -> list[list[bytes]]:
    """The indexed columns of a batch encoded down each column (`encode_column_pieces`: an
    int column as markers and payloads), in key order, the index's prefix before the first:
    joined row by row, they are the entry keys up to the primary key."""
    desc = ic.key_desc + [False] * (len(ic.key_positions) - len(ic.key_desc))  # missing: ascending
    prefixes = [ic.prefix] + [b""] * (len(ic.key_positions) - 1)
    return [piece for p, d, prefix in zip(ic.key_positions, desc, prefixes)
            for piece in encode_column_pieces(columns[p], d, prefix)]


def _values_of(rows: Iterable[tuple]) -> list[bytes]:
    """`encode_values` of each of ``rows`` (tuples of stored values), by the packer's own C
    method mapped over them; should it fail, `encode_values` row by row raises its error."""
    rows = list(rows)
    try:
        return list(map(_packer(), rows))
    except Exception:  # noqa: BLE001 -- re-raised as encode_values reports it
        return [encode_values(row) for row in rows]
