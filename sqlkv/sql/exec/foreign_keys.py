"""Foreign keys at run time: parent lookups, referencing-row scans, cascades, deferred checks.

``child(id INT PRIMARY KEY, pid INT REFERENCES parent ON DELETE CASCADE)``: the plan of every
INSERT/UPDATE/DELETE on ``parent`` or ``child`` holds an `FkPlan` (built by
`sqlkv.sql.plan.foreign_keys`), one `TableFk` per table a statement can reach through the
constraints. The write operators report each row they write to an `FkRun`:

- ``INSERT INTO child VALUES (1, 7)`` records the outbound check ``parent key (7)``; at the end
  of the statement (so rows of one statement may reference each other, as in PostgreSQL and
  SQLite) `FkRun.finish` does one ``get(/Table/<parent>/1/7/0)`` -- a point read in the
  statement's transaction, so the key joins its read set;
- ``DELETE FROM parent WHERE id = 7`` records the deleted row; `finish` scans the child's
  index on ``pid`` over the span ``/Table/<child>/<idx>/7`` - ``.../8`` (a read span too) and
  deletes what it finds (CASCADE), nulls it (SET NULL), sets the default (SET DEFAULT), or --
  NO ACTION / RESTRICT -- fails if a referencing row is left at the end of the statement.

Cascades run in waves: all referencing rows of one wave's changes are read before any of them
is written, so ``UPDATE parent SET id = id + 1`` with ON UPDATE CASCADE moves each child row
once. A cascaded change is a change like any other: it cascades further (several levels,
self-references) and its new values are checked against their own parents.

Concurrency: the check reads (the parent key, the child index span) are ordinary transaction
reads, so SERIALIZABLE commit validation covers them. A child INSERT racing a parent DELETE:
whichever commits second finds a key it read written by the first, and fails with
SerializationFailure; no orphan can commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlkv.catalog.descriptors import ForeignKeyDescriptor, TableDescriptor
from sqlkv.encoding.keys import encode_key
from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import ForeignKeyViolation, OperationalError
from sqlkv.sql.exec.defaults import forget_auto_counter
from sqlkv.sql.rowstore.codec import TableCodec, codec_for
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.writer import RowWriter
from sqlkv.storage.kv import prefix_end

MAX_CASCADE_WAVES = 10_000  # a cascade deeper than this is refused rather than run forever


def _text(vals: tuple) -> str:
    return ", ".join("NULL" if v is None else str(v) for v in vals)


@dataclass
class KeyLookup:
    """Whether a referenced key exists: one get on the parent's primary key or unique index.

    ``order`` maps the referenced key's columns (index column order) to positions in the
    foreign key's value tuple."""

    table: TableDescriptor
    prefix: bytes
    order: list[int]
    descending: list[bool]
    suffix: bytes  # the family-0 suffix for a primary key, b"" for a unique index entry

    def exists(self, txn, vals: tuple) -> bool:
        key = encode_key([vals[i] for i in self.order], self.descending, self.prefix) + self.suffix
        return txn.get(key) is not None

    def shown(self) -> str:
        return pretty_key(self.prefix)


@dataclass
class ReferencingScan:
    """The rows of a child table whose foreign-key columns equal a key: one prefix scan of
    the child's primary key or of an index led by those columns."""

    codec: TableCodec
    index: IndexCodec | None  # None: the primary key leads with the FK columns
    order: list[int]  # FK value positions in the scanned index's column order
    descending: list[bool]

    def rows(self, txn, vals: tuple) -> Iterator[tuple]:
        codec = self.codec
        ordered = [vals[i] for i in self.order]
        if self.index is None:
            start = encode_key(ordered, self.descending, codec.prefix)
            yield from codec.decode_rows(txn.scan(start, prefix_end(start)))
            return
        ic = self.index
        start = encode_key(ordered, self.descending, ic.prefix)
        for key, value in list(txn.scan(start, prefix_end(start))):
            partial = ic.decode(key, value)
            row = codec.fetch(txn, codec.pk_prefix([partial[p] for p in codec.pk_positions]))
            if row is not None:
                yield row

    def shown(self) -> str:
        return pretty_key(self.codec.prefix if self.index is None else self.index.prefix)

    def any(self, txn, vals: tuple) -> bool:
        return next(iter(self.rows(txn, vals)), None) is not None


@dataclass
class Outbound:
    """A constraint of this table: its rows' key must exist in the parent."""

    fk: ForeignKeyDescriptor
    table: TableDescriptor
    positions: list[int]  # FK columns' row positions, in constraint order
    parent: KeyLookup


@dataclass
class Inbound:
    """A constraint of a child table on this one: what a change of a referenced key does."""

    fk: ForeignKeyDescriptor
    parent: TableDescriptor
    parent_positions: list[int]  # referenced columns' row positions, in constraint order
    child: TableFk
    child_positions: list[int]
    referencing: ReferencingScan
    parent_lookup: KeyLookup
    defaults: Callable[[int], Any]  # SET DEFAULT: the child column's default by row position


@dataclass
class TableFk:
    """Everything a statement needs to change rows of one table under its foreign keys."""

    table: TableDescriptor
    codec: TableCodec
    finish_row: Callable[[list], tuple]  # cast, NOT NULL and CHECK of a cascaded update
    outbound: list[Outbound] = field(default_factory=list)
    inbound: list[Inbound] = field(default_factory=list)


@dataclass
class FkPlan:
    """The foreign-key work of one write statement: its target and every table it can reach."""

    root: TableFk
    tables: dict[int, TableFk]

    def start(self, ctx) -> FkRun:
        if ctx.catalog is not None:
            for table_id in self.tables:
                ctx.catalog.touch(table_id)  # a concurrent DROP/ALTER of any of them conflicts
        return FkRun(self, ctx.txn)

    def describe(self, inserts: bool = True, deletes: bool = True, updated: set[int] | None = None) -> list[str]:
        """EXPLAIN's lines for the checks: the key reads the statement adds to its own (a DELETE
        checks no parent key; an UPDATE only the constraints over the columns it changes)."""
        def changes(positions: list[int]) -> bool:
            return updated is None or bool(updated.intersection(positions))

        lines = []
        for o in self.root.outbound:
            if not (inserts or changes(o.positions)):
                continue
            cols = ", ".join(o.table.columns[p].name for p in o.positions)
            lines.append(f"fk check {o.fk.name}: get {o.parent.shown()}/({cols}) in {o.parent.table.name}")
        for i in self.root.inbound:
            if not (deletes or changes(i.parent_positions)):
                continue
            cols = ", ".join(i.parent.columns[p].name for p in i.parent_positions)
            lines.append(f"fk {i.fk.name}: scan {i.referencing.shown()}/({cols}) in {i.child.table.name} "
                         f"(on delete {i.fk.on_delete.lower()}, on update {i.fk.on_update.lower()})")
        return lines


class FkRun:
    """One execution's record of row changes, cascaded and checked in `finish`."""

    def __init__(self, plan: FkPlan, txn) -> None:
        self.plan = plan
        self.txn = txn
        self.changes: list[tuple[TableFk, tuple, tuple | None]] = []
        # (table id, constraint, key) -> the constraint and the rows written with that key
        self.out_checks: dict[tuple[int, str, tuple], tuple[Outbound, list[tuple]]] = {}
        self.in_checks: dict[tuple[int, str, tuple], tuple[Inbound, str]] = {}

    # -- what the write operators report ---------------------------------------------------

    def inserted(self, row: tuple, tf: TableFk | None = None) -> None:
        self._outbound(tf or self.plan.root, None, row)

    def deleted(self, row: tuple, tf: TableFk | None = None) -> None:
        tf = tf or self.plan.root
        if tf.inbound:
            self.changes.append((tf, row, None))

    def updated(self, old: tuple, new: tuple, tf: TableFk | None = None) -> None:
        tf = tf or self.plan.root
        if tf.inbound:
            self.changes.append((tf, old, new))
        self._outbound(tf, old, new)

    def _outbound(self, tf: TableFk, old: tuple | None, new: tuple) -> None:
        for o in tf.outbound:
            vals = tuple(new[p] for p in o.positions)
            if None in vals:
                continue  # MATCH SIMPLE: a key with a NULL references nothing
            if old is not None and vals == tuple(old[p] for p in o.positions):
                continue
            self.out_checks.setdefault((tf.table.id, o.fk.name, vals), (o, []))[1].append(new)

    # -- end of statement ------------------------------------------------------------------

    def finish(self) -> None:
        waves = 0
        while self.changes:
            waves += 1
            if waves > MAX_CASCADE_WAVES:
                raise OperationalError(f"foreign key cascade deeper than {MAX_CASCADE_WAVES} levels")
            self._wave()
        self._check_inbound()
        self._check_outbound()

    def _wave(self) -> None:
        """Read the rows referencing this wave's changed keys, then write their changes."""
        changes, self.changes = self.changes, []
        planned: dict[tuple, list] = {}
        for tf, old, new in changes:
            for inb in tf.inbound:
                old_vals = tuple(old[p] for p in inb.parent_positions)
                if None in old_vals:
                    continue
                if new is None:
                    action = inb.fk.on_delete
                else:
                    if tuple(new[p] for p in inb.parent_positions) == old_vals:
                        continue
                    action = inb.fk.on_update
                if action in ("NO ACTION", "RESTRICT"):
                    self.in_checks.setdefault((inb.child.table.id, inb.fk.name, old_vals), (inb, action))
                    continue
                for crow in inb.referencing.rows(self.txn, old_vals):
                    self._plan_child(planned, inb, action, crow, new)
        self._apply(planned)

    def _plan_child(self, planned: dict, inb: Inbound, action: str, crow: tuple, new: tuple | None) -> None:
        ctf = inb.child
        key = (ctf.table.id, tuple(ctf.codec.pk_values(crow)))
        entry = planned.get(key)
        if entry is not None and entry[2] is None:
            return  # already being deleted
        if action == "CASCADE" and new is None:
            planned[key] = [ctf, crow if entry is None else entry[1], None]
            return
        row = list(crow if entry is None else entry[2])
        for cp, pp in zip(inb.child_positions, inb.parent_positions):
            if action == "CASCADE":
                row[cp] = new[pp]  # type: ignore[index]
            elif action == "SET NULL":
                row[cp] = None
            else:
                row[cp] = inb.defaults(cp)
        planned[key] = [ctf, crow if entry is None else entry[1], tuple(row)]

    def _apply(self, planned: dict) -> None:
        txn = self.txn
        updates = []
        for ctf, old, new in planned.values():
            forget_auto_counter(txn, ctf.table.id)
            writer = RowWriter(ctf.table, ctf.codec, txn)
            if new is None:
                writer.delete(old)
                self.deleted(old, ctf)
            else:
                new = ctf.finish_row(list(new))
                updates.append((ctf, writer, old, new))
                writer.remove_changed(old, new)
        for ctf, writer, old, new in updates:
            writer.add_changed(old, new)
            self.updated(old, new, ctf)

    def _check_inbound(self) -> None:
        for (_tid, _name, vals), (inb, action) in self.in_checks.items():
            if action == "NO ACTION" and inb.parent_lookup.exists(self.txn, vals):
                continue  # the statement put the key back (e.g. UPDATE t SET id = id + 1)
            if inb.referencing.any(self.txn, vals):
                parent, child = inb.parent, inb.child.table
                cols = ", ".join(parent.columns[p].name for p in inb.parent_positions)
                raise ForeignKeyViolation(
                    f'update or delete on table "{parent.name}" violates foreign key constraint "{inb.fk.name}" '
                    f'on table "{child.name}" (Key ({cols})=({_text(vals)}) is still referenced from table '
                    f'"{child.name}")'
                )

    def _check_outbound(self) -> None:
        for (_tid, _name, vals), (o, written) in self.out_checks.items():
            if o.parent.exists(self.txn, vals):
                continue
            codec = codec_for(o.table)
            for row in written:
                current = codec.fetch(self.txn, codec.pk_prefix(codec.pk_values(row)))
                if current is None or tuple(current[p] for p in o.positions) != vals:
                    continue  # the row was deleted or changed again later in the statement
                raise fk_missing(o.table, o.fk, [o.table.columns[p].name for p in o.positions], vals,
                                 o.parent.table)


def fk_missing(child: TableDescriptor, fk: ForeignKeyDescriptor, cols: list[str], vals: tuple,
               parent: TableDescriptor) -> ForeignKeyViolation:
    """PostgreSQL's message for a row whose key has no parent."""
    return ForeignKeyViolation(
        f'insert or update on table "{child.name}" violates foreign key constraint "{fk.name}" '
        f'(Key ({", ".join(cols)})=({_text(vals)}) is not present in table "{parent.name}")'
    )
