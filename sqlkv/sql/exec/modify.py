"""The UPDATE, DELETE and TRUNCATE operators.

``UPDATE users SET email = lower(email) WHERE id BETWEEN ? AND ?`` is planned
(`sqlkv.sql.plan.modify`) into ``Update(Filter(IndexScan))`` (no Filter when the spans answer
the whole WHERE). Each execution:

1. reads every target row from its input and computes each new row (assignment casts, NOT
   NULL, CHECK) -- all target rows are collected before any write, so the scan never sees the
   statement's own writes (the "Halloween problem"); the transaction buffers every write in
   memory anyway, so this costs the same order of memory;
2. deletes, for all rows, the KV entries whose keys change (`RowWriter.remove_changed`);
3. writes the new entries, conditionally where a key moved (`RowWriter.add_changed`), so
   ``SET id = id + 1`` works whatever the row order, and a real duplicate fails.

The session runs each execution under a savepoint, so a failure leaves no partial writes.
"""

from __future__ import annotations

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.catalog.sequences import counter_key
from sqlkv.encoding.keys import index_prefix
from sqlkv.errors import NotSupportedError as FeatureNotSupported
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.defaults import forget_auto_counter
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.exec.write import Assignments, Returning, RowChecker, WriteOperator, WriteResult, touch
from sqlkv.sql.rowstore.writer import RowWriter
from sqlkv.storage.kv import prefix_end


class Update(WriteOperator):
    def __init__(self, table: TableDescriptor, source: Operator, sets: Assignments, checker: RowChecker,
                 returning: Returning) -> None:
        self.table = table
        self.source = source  # the target rows (whole rows of the table)
        self.codec = codec_for(table)
        self.sets = sets
        self.checker = checker
        self.returning = returning
        self.columns = returning.columns
        self.joined = False  # UPDATE ... FROM: source rows are the target row + other tables' columns

    def children(self) -> list[Operator]:
        return [self.source]

    def fk_changes(self) -> tuple[bool, bool, set[int] | None]:
        # the assigned columns, and the STORED generated ones computed from them
        computed = {i for i, c in enumerate(self.table.columns) if c.computed is not None}
        return False, False, {p for p, _ in self.sets.items} | computed

    def describe(self) -> str:
        return f"update {self.table.name} set " + ", ".join(self.table.columns[p].name for p, _ in self.sets.items)

    def execute(self, ctx: ExecContext) -> WriteResult:
        touch(ctx, self.table.id)
        finish, apply = self.checker.finish, self.sets.apply
        others: dict[tuple, tuple] = {}  # UPDATE ... FROM: target row -> the other tables' columns
        if self.joined:  # the first joined row of each target row decides
            width = len(self.table.columns)
            first: dict[tuple, list] = {}
            for row in counted(self.source, ctx):
                old = row[:width]
                if old not in first:
                    first[old] = finish(apply(old, row))
                    others[old] = row[width:]
            changes = list(first.items())
        else:
            changes = [(old, finish(apply(old))) for old in counted(self.source, ctx)]
        writer = RowWriter(self.table, self.codec, ctx.txn)
        forget_auto_counter(ctx.txn, self.table.id)
        for old, new in changes:
            if old != new:
                writer.remove_changed(old, new)
        fks = self.fk.start(ctx) if self.fk is not None else None
        for old, new in changes:
            if old != new:
                writer.add_changed(old, new)
                if fks is not None:
                    fks.updated(old, new)
        if fks is not None:
            fks.finish()
        if self.columns is None:
            rows = None
        elif self.joined:  # RETURNING sees the new row and the FROM tables' columns
            rows = [self.returning.project(tuple(n) + others[o]) for o, n in changes]
        else:
            rows = [self.returning.project(n) for _, n in changes]
        return WriteResult(rows, len(changes))


class Delete(WriteOperator):
    def __init__(self, table: TableDescriptor, source: Operator, returning: Returning) -> None:
        self.table = table
        self.source = source
        self.codec = codec_for(table)
        self.returning = returning
        self.columns = returning.columns
        self.joined = False  # DELETE ... USING: source rows are the target row + other tables' columns

    def children(self) -> list[Operator]:
        return [self.source]

    def fk_changes(self) -> tuple[bool, bool, set[int] | None]:
        return False, True, set()

    def describe(self) -> str:
        return f"delete {self.table.name}"

    def execute(self, ctx: ExecContext) -> WriteResult:
        touch(ctx, self.table.id)
        victims = list(counted(self.source, ctx))  # read all before deleting (see module doc)
        joined_rows = victims
        if self.joined:  # DELETE ... USING: each target row once, however many rows it joined
            width = len(self.table.columns)
            firsts = {}
            for row in joined_rows:
                firsts.setdefault(row[:width], row)
            victims, joined_rows = list(firsts), list(firsts.values())
        writer = RowWriter(self.table, self.codec, ctx.txn)
        forget_auto_counter(ctx.txn, self.table.id)
        fks = self.fk.start(ctx) if self.fk is not None else None
        for row in victims:
            writer.delete(row)
            if fks is not None:
                fks.deleted(row)
        if fks is not None:
            fks.finish()
        rows = [self.returning.project(r) for r in joined_rows] if self.columns is not None else None
        return WriteResult(rows, len(victims))


class Truncate(WriteOperator):
    """One range delete per index of each table; restarts the auto ids."""

    columns = None

    def __init__(self, tables: list[TableDescriptor], sequence_ids: list[int] | None = None) -> None:
        self.tables = tables
        self.sequence_ids = sequence_ids or []  # identity sequences of the tables: restarted too

    def describe(self) -> str:
        return "truncate " + ", ".join(t.name for t in self.tables)

    def execute(self, ctx: ExecContext) -> WriteResult:
        ids = {t.id for t in self.tables}
        for table in self.tables:
            for child_id in table.referenced_by:
                if child_id not in ids:
                    child = ctx.catalog.table_by_id(child_id) if ctx.catalog is not None else None
                    raise FeatureNotSupported(
                        f'cannot truncate a table referenced in a foreign key constraint: table '
                        f'"{child.name if child else child_id}" references "{table.name}" '
                        "(truncate it in the same statement)"
                    )
        for table in self.tables:
            touch(ctx, table.id)
            forget_auto_counter(ctx.txn, table.id)
            for index in table.all_indexes():
                start = index_prefix(table.id, index.id)
                ctx.txn.delete_range(start, prefix_end(start))
        for seq_id in self.sequence_ids:  # absent counter: the next nextval gives START again
            ctx.txn.delete(counter_key(seq_id))
        return WriteResult(None, -1)
