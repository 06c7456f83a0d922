"""Writing rows: the KV puts and deletes of one row insert, delete or update, index by index.

``INSERT INTO users VALUES (10, 'ann', 'a@b.c')`` reaches `RowWriter.insert` with the row
tuple; it issues ``put_if_absent(/Table/104/1/10/0, ...)`` (a duplicate primary key fails the
condition) and one entry per secondary index, conditional for unique indexes. A failed
condition becomes an IntegrityError naming the constraint. Updates are split in two phases
(`remove_changed` for all rows, then `add_changed`) so that statements such as
``UPDATE t SET id = id + 1`` do not trip over rows they are about to move. An inverted index
(`InvertedCodec`) has a set of entries per row: an update deletes the old set minus the new and
writes the new minus the old.
"""

from __future__ import annotations

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import ConditionFailedError, IntegrityError, UniqueViolation
from sqlkv.sql.rowstore.codec import TableCodec
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.inverted import EMPTY_LIST


class DuplicatePrimaryKey(UniqueViolation):
    """A row with the same primary key exists (lets INSERT retry an auto-assigned id)."""


def pkey_name(table: TableDescriptor) -> str:
    return table.primary_index.name


class RowWriter:
    """Applies row-level changes of one table to a transaction."""

    def __init__(self, table: TableDescriptor, codec: TableCodec, txn) -> None:
        self.table = table
        self.codec = codec
        self.txn = txn

    def _duplicate(self, constraint: str, columns: list[int], row: tuple) -> IntegrityError:
        cols = [self.table.columns[p] for p in columns]
        names = ", ".join(c.computed if c.hidden and c.computed is not None else c.name for c in cols)
        vals = ", ".join("NULL" if row[p] is None else str(row[p]) for p in columns)
        cls = DuplicatePrimaryKey if constraint == pkey_name(self.table) else UniqueViolation
        return cls(
            f'duplicate key value violates unique constraint "{constraint}" (Key ({names})=({vals}) already exists)'
        )

    def insert(self, row: tuple) -> None:
        txn = self.txn
        codec = self.codec
        if codec.single_family:
            base = codec.pk_prefix([row[p] for p in codec.pk_positions])
            try:
                txn.put_if_absent(base + codec.fam0_suffix, codec.family0_value(row))
            except ConditionFailedError:
                raise self._duplicate(pkey_name(self.table), codec.pk_positions, row) from None
            if codec.indexes:
                pk_bytes = base[len(codec.prefix):]
                for ic in codec.indexes:
                    if ic.predicate is None or ic.predicate(row):
                        self._put_entry(ic, row, *ic.entry(row, pk_bytes))
            if codec.inverted:
                self._put_inverted(row)
            return
        self.insert_primary(row)
        for ic in self.codec.indexes:
            if ic.holds(row):
                self._put_entry(ic, row, *ic.entry(row))
        self._put_inverted(row)

    def _put_inverted(self, row: tuple) -> None:
        for inv in self.codec.inverted:
            for key in sorted(inv.keys(row)):
                self.txn.put(key, EMPTY_LIST)

    def _put_entry(self, ic: IndexCodec, row: tuple, key: bytes, value: bytes, conditional: bool) -> None:
        if conditional:
            try:
                self.txn.put_if_absent(key, value)
            except ConditionFailedError:
                raise self._duplicate(ic.name, ic.key_positions, row) from None
        else:
            self.txn.put(key, value)

    def delete(self, row: tuple) -> None:
        txn = self.txn
        for key, value in self.codec.primary_kvs(row):
            if value is not None:  # an all-NULL family has no key to delete
                txn.delete(key)
        for ic in self.codec.indexes:
            if ic.holds(row):
                txn.delete(ic.entry(row)[0])
        for inv in self.codec.inverted:
            for key in sorted(inv.keys(row)):
                txn.delete(key)

    def update(self, old: tuple, new: tuple) -> None:
        self.remove_changed(old, new)
        self.add_changed(old, new)

    def remove_changed(self, old: tuple, new: tuple) -> None:
        """Phase 1 of an update: delete the KV entries whose key changes."""
        codec = self.codec
        if codec.pk_values(old) != codec.pk_values(new):
            for key, value in codec.primary_kvs(old):
                if value is not None:
                    self.txn.delete(key)
        for ic in codec.indexes:
            if not _changed(ic.all_positions, old, new):
                continue  # none of the index's columns changed: its entry stays as it is
            if ic.predicate is not None and not ic.predicate(old):
                continue  # a partial index without an entry for the old row
            old_key = ic.entry(old)[0]
            if not ic.holds(new) or old_key != ic.entry(new)[0]:
                self.txn.delete(old_key)
        for inv in codec.inverted:
            if _changed(inv.all_positions, old, new):
                for key in sorted(inv.keys(old) - inv.keys(new)):  # only the entries that go away
                    self.txn.delete(key)

    def add_changed(self, old: tuple, new: tuple) -> None:
        """Phase 2 of an update: write the new row's entries (conditionally where keys moved)."""
        codec = self.codec
        moved = codec.pk_values(old) != codec.pk_values(new)
        if moved:
            self.insert_primary(new)
        elif codec.single_family:
            self.txn.put(codec.row_key(new), codec.family0_value(new))
        else:
            base = codec.pk_prefix(codec.pk_values(new))
            # family 0 is rewritten even when unchanged, except beside exploded columns, where
            # ``SET tags[3] = x`` must be one put (the UPDATE read the row: OCC still sees conflicts)
            skip_family0 = bool(codec.exploded)
            for fam in codec.families:
                exploded = codec.exploded.get(fam.id)
                if exploded is not None and exploded.position is not None:
                    pos = exploded.position
                    if old[pos] is new[pos]:
                        continue  # not assigned; an assigned value is compared element by element
                    pairs = exploded.changes(base, old[pos], new[pos])
                elif (fam.id != 0 or skip_family0) and not _changed(fam.positions, old, new):
                    continue  # a family none of whose columns changed keeps its KV pairs
                else:
                    pairs = codec.family_kvs(base, fam, new)
                for key, value in pairs:
                    if value is None:
                        self.txn.delete(key)
                    else:
                        self.txn.put(key, value)
        for ic in codec.indexes:
            if not _changed(ic.all_positions, old, new):
                continue
            if ic.predicate is not None:
                if not ic.predicate(new):
                    continue  # the new row has no entry (an old one was deleted in phase 1)
                if not ic.predicate(old):
                    self._put_entry(ic, new, *ic.entry(new))
                    continue
            old_entry = ic.entry(old)
            new_entry = ic.entry(new)
            if old_entry[0] != new_entry[0]:
                self._put_entry(ic, new, *new_entry)
            elif old_entry[1] != new_entry[1]:
                self.txn.put(new_entry[0], new_entry[1])
        for inv in codec.inverted:
            if _changed(inv.all_positions, old, new):
                for key in sorted(inv.keys(new) - inv.keys(old)):  # only the entries that are new
                    self.txn.put(key, EMPTY_LIST)

    def insert_primary(self, row: tuple) -> None:
        """The row's primary-index pairs; family 0 conditionally (a duplicate key fails)."""
        sentinel = self.codec.row_key(row)
        for key, value in self.codec.primary_kvs(row):
            if value is None:
                continue
            if key == sentinel:
                try:
                    self.txn.put_if_absent(key, value)
                except ConditionFailedError:
                    raise self._duplicate(pkey_name(self.table), self.codec.pk_positions, row) from None
            else:
                self.txn.put(key, value)


def _changed(positions: list[int], old: tuple, new: tuple) -> bool:
    """Whether any of these columns differs. Floats always count as changed (0.0 == -0.0 but
    they may encode differently), so the caller compares the encoded entries then."""
    for p in positions:
        o, n = old[p], new[p]
        if o is n:
            continue
        if type(o) is not type(n) or type(o) is float or o != n:
            return True
    return False
