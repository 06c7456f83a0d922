"""The INSERT operator: source rows -> full rows -> KV writes, with ON CONFLICT handling.

``INSERT INTO users (name, email) VALUES (?, ?) ON CONFLICT (email) DO NOTHING`` is planned
(`sqlkv.sql.plan.insert`) into an `Insert` holding the compiled VALUES, the target positions,
the column defaults, the row checker and the conflict mode. Each execution, per source row:

1. `build_row` places the values, fills defaults and auto ids, casts and checks the row;
2. the conflict mode decides: ``error`` writes (a duplicate key fails its conditional put),
   ``replace`` deletes every row conflicting on any unique key first, ``nothing`` skips a row
   whose arbiter key exists, ``update`` rewrites the existing row with the SET list (UPSERT,
   ON CONFLICT DO UPDATE);
3. `RowWriter` issues the puts (``put_if_absent`` for the primary key and unique entries).

An INSERT ... SELECT reads its whole source first, so it never sees its own writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.defaults import Defaults
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.exec.write import Assignments, Returning, RowChecker, WriteOperator, WriteResult, touch
from sqlkv.sql.rowstore.writer import DuplicatePrimaryKey, RowWriter

DEFAULT = object()  # a VALUES item written DEFAULT
_MISSING = object()


class Insert(WriteOperator):
    """INSERT / UPSERT / INSERT OR REPLACE|IGNORE / ON CONFLICT into one table."""

    def __init__(
        self,
        table: TableDescriptor,
        kind: str,
        targets: list[int],
        value_rows: list[list[Any]] | None,
        query: Operator | None,
        defaults: Defaults,
        checker: RowChecker,
        returning: Returning,
    ) -> None:
        self.table = table
        self.kind = kind  # INSERT or UPSERT
        self.codec = codec_for(table)
        self.targets = targets  # row position of each source value
        self.value_rows = value_rows  # compiled VALUES (DEFAULT items as `DEFAULT`), or None
        self.query = query  # INSERT ... SELECT
        self.defaults = defaults
        self.checker = checker
        self.returning = returning
        self.columns: list[Column] | None = returning.columns
        # ON CONFLICT: mode error | replace | nothing | update; arbiters: None = primary key,
        # else an IndexCodec; update: the SET list over existing + excluded row
        self.mode = "error"
        self.arbiters: list[Any] = []
        self.update: Assignments | None = None
        self.update_where: Callable[[tuple], bool] | None = None
        self.fks = None  # this execution's FkRun
        # VALUES (?, ?, ...): the parameter index of each item (executemany binds in batches)
        self.param_keys: list[int] | None = None

    def children(self) -> list[Operator]:
        return [self.query] if self.query is not None else []

    def fk_changes(self) -> tuple[bool, bool, set[int] | None]:
        if self.mode in ("error", "nothing"):
            return True, False, set()
        return True, True, None  # OR REPLACE deletes rows; DO UPDATE / UPSERT change them

    def describe(self) -> str:
        text = f"{self.kind.lower()} {self.table.name}"
        if self.mode != "error":
            text += f" (on conflict: {self.mode})"
        if self.value_rows is not None:
            text += f" values ({len(self.value_rows)} row{'s' if len(self.value_rows) != 1 else ''})"
        return text

    # -- execution -------------------------------------------------------------------------

    def _source_rows(self, ctx: ExecContext) -> Iterator[list[Any]]:
        if self.value_rows is not None:
            for fns in self.value_rows:
                yield [DEFAULT if f is DEFAULT else f(()) for f in fns]
            return
        assert self.query is not None
        yield from [list(r) for r in counted(self.query, ctx)]  # materialised: see module doc

    def build_row(self, values: list[Any], txn) -> tuple[tuple, bool]:
        """The full, cast and checked row; and whether an auto id was assigned."""
        n = len(self.table.columns)
        defaults = self.defaults
        row: list[Any] = [_MISSING] * n
        for pos, v in zip(self.targets, values):
            row[pos] = v
        for i in range(n):
            if row[i] is _MISSING or row[i] is DEFAULT:
                row[i] = None if i in defaults.auto and defaults.fns[i] is None else defaults.value(i)
        self.checker.cast_row(row)
        assigned = False
        for i in defaults.auto:
            if row[i] is None:
                row[i] = defaults.next_auto(txn)
                assigned = True
            elif isinstance(row[i], int):
                defaults.saw_value(txn, row[i])
        if self.checker.generated:
            self.checker.compute(row)
        out = tuple(row)
        self.checker.check(out)
        return out, assigned

    def execute(self, ctx: ExecContext) -> WriteResult:
        txn = ctx.txn
        touch(ctx, self.table.id)
        writer = RowWriter(self.table, self.codec, txn)
        count = 0
        last_id = None
        returned: list[tuple] = []
        auto = self.defaults.auto
        self.fks = self.fk.start(ctx) if self.fk is not None else None
        for values in self._source_rows(ctx):
            row, assigned = self.build_row(values, txn)
            try:
                written = self._write(writer, row, txn)
            except DuplicatePrimaryKey:
                # an auto-assigned id can collide with a key written since the counter was
                # read (e.g. an UPDATE moved a row): re-read the maximum once and retry
                if not assigned or len(auto) != 1:
                    raise
                retry = list(row)
                retry[auto[0]] = self.defaults.next_auto(txn, refresh=True)
                written = self._write(writer, tuple(retry), txn)
            if written is None:
                continue
            count += 1
            if auto:
                last_id = written[auto[0]]
            if self.columns is not None:
                returned.append(self.returning.project(written))
        if self.fks is not None:
            self.fks.finish()
        return WriteResult(returned if self.columns is not None else None, count, last_id)

    def _write(self, writer: RowWriter, row: tuple, txn) -> tuple | None:
        """Write one row as the conflict mode says; the row written, or None if skipped."""
        fks = self.fks
        if self.mode == "error":
            writer.insert(row)
            if fks is not None:
                fks.inserted(row)
            return row
        if self.mode == "replace":
            for arb in self.arbiters:
                existing = self._conflicting(arb, row, txn)
                if existing is not None:
                    writer.delete(existing)
                    if fks is not None:
                        fks.deleted(existing)
            writer.insert(row)
            if fks is not None:
                fks.inserted(row)
            return row
        existing = None
        for arb in self.arbiters:
            existing = self._conflicting(arb, row, txn)
            if existing is not None:
                break
        if existing is None:
            writer.insert(row)
            if fks is not None:
                fks.inserted(row)
            return row
        if self.mode == "nothing":
            return None
        assert self.update is not None
        combined = existing + row
        if self.update_where is not None and not self.update_where(combined):
            return None
        new = self.checker.finish(self.update.apply(existing, combined))
        writer.update(existing, new)
        if fks is not None:
            fks.updated(existing, new)
        return new

    def _conflicting(self, arbiter, row: tuple, txn) -> tuple | None:
        """The stored row that ``row`` conflicts with on ``arbiter``'s key, if any."""
        codec = self.codec
        if arbiter is None:
            return codec.fetch(txn, codec.pk_prefix(codec.pk_values(row)))
        if not arbiter.holds(row):
            return None  # outside a partial index's predicate: nothing to conflict with
        key, _value, conditional = arbiter.entry(row)
        if not conditional:
            return None  # a NULL in a unique column never conflicts
        stored = txn.get(key)
        if stored is None:
            return None
        partial = arbiter.decode(key, stored)
        return codec.fetch(txn, codec.pk_prefix([partial[p] for p in codec.pk_positions]))
