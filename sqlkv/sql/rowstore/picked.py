"""Rows decoded straight into a projection's columns: `PickedDecoder`.

``SELECT id, sku, amount FROM orders WHERE id = ?`` reads one row of six columns and hands out
three. `RowDecoder` builds the table's row (a list of six, None where unread) and a projection
then picks from it, one Python step per column. A statement run by the session's fast path
(exec/fastpath.py) skips both: the row's value (a slot array or a map, encoding/values.py)
is read at the projection's column ids in its order, and the key column, if picked, is put in
its slot. The rows come out as the projection would have made them.

It decodes only rows of one column family with no VIRTUAL or exploded column (`picks_for`
says None otherwise, and the caller keeps `RowDecoder` and its projection). Its ``one`` and
``batch`` answer what `RowDecoder`'s answer for the same pairs, followed by the projection.

A column the caller holds already can be left out of the decoding (`PickedDecoder.given`):
``ORDER BY sku LIMIT 10`` over the index on ``sku`` reads each row's ``sku`` from its index
entry's key, so only ``amount`` is read out of the row values (`batch_of`'s ``given`` list
fills its slots).
"""

from __future__ import annotations

from copy import copy

from sqlkv.encoding.key_columns import first_key_values
from sqlkv.encoding.keys import decode_key
from sqlkv.encoding.single_key import single_key_value
from sqlkv.encoding.values import decode_columns, row_value_getter
from sqlkv.sql.rowstore.codec import TableCodec, never_text


class PickedDecoder:
    """Single-family primary-index pairs -> tuples of the row positions ``positions``, in
    that order (a position may repeat)."""

    def __init__(self, codec: TableCodec, positions: list[int]) -> None:
        self.width = len(positions)
        self.positions = positions
        self.offset = len(codec.prefix)
        self.npk = codec.npk
        self.pk_desc = codec.pk_desc
        self.suffix = codec.fam0_suffix
        stored = dict((p, cid) for cid, p in codec.stored_columns)
        # per output slot the column id its value map holds (None for a key column: the
        # map has no such id, so `dict.get` leaves the slot None until the key fills it)
        self.column_ids = [stored.get(p) for p in positions]
        # slots `batch_of`'s caller fills (`given`): none here
        self.given_slots: list[int] = []
        # (output slot, index in the primary key) of each picked key column
        self.key_slots = [(slot, codec.pk_positions.index(p)) for slot, p in enumerate(positions)
                          if p in codec.pk_positions]
        columns = codec.table.columns
        # slots whose values may be stored as msgpack strings (TEXT and the like)
        self.text_slots = [slot for slot, p in enumerate(positions) if p in stored and not never_text(columns[p].type)]
        self._values_read()

    def _values_read(self) -> None:
        """What the slots' column ids make of the row values: read at all, the ids, the slot
        array length a point read pads to (ids below it read by index), any string."""
        self.reads_values = any(cid is not None for cid in self.column_ids)
        self.value_ids = sorted({cid for cid in self.column_ids if cid is not None})
        self.slots = max(self.value_ids, default=0) + 1
        self.text = any(self.column_ids[slot] is not None for slot in self.text_slots)

    def given(self, position: int) -> PickedDecoder:
        """This decoder with the values of the column at ``position`` handed to `batch_of` by
        its caller (an index entry holds them) instead of decoded from the row values: a
        copy, made without looking at the table's columns again. Only `batch_of` fills them."""
        other = copy(self)
        other.given_slots = [slot for slot, p in enumerate(self.positions) if p == position]
        other.column_ids = [None if slot in other.given_slots else cid for slot, cid in enumerate(self.column_ids)]
        other.key_slots = [(slot, i) for slot, i in self.key_slots if slot not in other.given_slots]
        other._values_read()
        return other

    def one(self, key: bytes, value: bytes) -> tuple:
        """The picked columns of one row (a point get)."""
        pk = None
        if self.key_slots:
            if self.npk == 1 and not self.pk_desc[0]:
                pk = [single_key_value(key, self.offset)]
            else:
                pk = decode_key(key, self.npk, self.pk_desc, self.offset)[0]
        return self.with_key(pk, value)

    def fetch_keyed(self, reader, pk_prefix: bytes, pk_value: object) -> tuple | None:
        """The picked columns of the row at ``pk_prefix`` (one get), or None; its one key
        column's value is ``pk_value``, which ``pk_prefix`` encodes (and decodes back to)."""
        value = reader.get(pk_prefix + self.suffix)
        return None if value is None else self.with_key([pk_value], value)

    def with_key(self, pk: list | None, value: bytes) -> tuple:
        """The picked columns of the row whose primary-key values are ``pk`` (known already:
        the caller read the row by them) and whose value is ``value``."""
        if self.reads_values:
            get = row_value_getter(value, self.slots)
            out = [None if cid is None else get(cid) for cid in self.column_ids]
        else:
            out = [None] * self.width
        if pk is not None:
            for slot, i in self.key_slots:
                out[slot] = pk[i]
        return tuple(out)

    def batch(self, pairs: list[tuple[bytes, bytes]]) -> list[tuple]:
        """The picked columns of each row of ``pairs``, built a column at a time (as
        `RowDecoder.batch` builds whole rows)."""
        if not pairs:
            return []
        return self.batch_of([key for key, _value in pairs], [value for _key, value in pairs])

    def batch_of(self, keys: list[bytes], values: list[bytes], given: list | None = None) -> list[tuple]:
        """`batch` of the rows whose keys and values are the parallel ``keys`` and ``values``;
        ``given`` (parallel too) fills the slots of the decoder's ``given`` column."""
        if not keys:
            return []
        nulls = [None] * len(keys)
        columns: list = [nulls] * self.width
        for slot in self.given_slots:
            columns[slot] = given
        if self.reads_values:
            by_id = decode_columns(values, self.value_ids, self.text)
            for slot, cid in enumerate(self.column_ids):
                if cid is not None:
                    columns[slot] = by_id[cid]
        if self.key_slots:
            if self.npk == 1:
                key_values = first_key_values(keys, self.offset, bool(self.pk_desc[0]))
                for slot, _i in self.key_slots:
                    columns[slot] = key_values
            else:
                decoded = [decode_key(key, self.npk, self.pk_desc, self.offset)[0] for key in keys]
                for slot, i in self.key_slots:
                    columns[slot] = [pk[i] for pk in decoded]
        return list(zip(*columns))


def picks_for(codec: TableCodec, positions: list[int]) -> PickedDecoder | None:
    """A `PickedDecoder` of ``positions``, or None when the table's rows need `RowDecoder`
    (several column families, VIRTUAL or exploded columns)."""
    if not codec.single_family or codec.virtual or codec.exploded or not positions:
        return None
    return PickedDecoder(codec, positions)
