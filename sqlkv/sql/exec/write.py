"""What the write operators share: the result of a write, row checks, RETURNING, SET lists.

The planner (`sqlkv.sql.plan.dml_parts`) compiles, once per SQL text, the closures these
objects hold: a `RowChecker` gets the CHECK constraints, a `Returning` the RETURNING list, an
`Assignments` the ``SET col = expr`` list. At execution the write operators
(`sqlkv.sql.exec.insert`, `sqlkv.sql.exec.modify`) call them per row and hand the rows to the
row store (`sqlkv.sql.rowstore.RowWriter`), which turns them into KV puts and deletes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import NotNullViolation, CheckViolation
from sqlkv.sql.casts import assign_cast
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.types import int_limit

RowFn = Callable[[tuple], Any]


@dataclass
class WriteResult:
    """What a write operator reports: RETURNING rows (or None), row count, last auto id."""

    rows: list[tuple] | None = None
    rowcount: int = -1
    lastrowid: int | None = None


class WriteOperator(Operator):
    """A plan root that changes data. ``columns`` are the RETURNING columns, None without
    RETURNING; `execute` runs the statement once and reports a `WriteResult`."""

    columns: list[Column] | None  # type: ignore[assignment]
    fk = None  # an FkPlan (sqlkv.sql.exec.foreign_keys) when the table has foreign keys

    def explain(self, ctx: ExecContext | None = None, indent: int = 0) -> list[str]:
        lines = super().explain(ctx, indent)
        if self.fk is not None:
            pad = "  " * (indent + 1)
            lines[1:1] = [pad + line for line in self.fk.describe(*self.fk_changes())]
        return lines

    def fk_changes(self) -> tuple[bool, bool, set[int] | None]:
        """(inserts rows, deletes rows, row positions updated -- None: any): which foreign-key
        reads the statement can make, so EXPLAIN lists only those."""
        return True, True, None

    def execute(self, ctx: ExecContext) -> WriteResult:
        raise NotImplementedError


def touch(ctx: ExecContext, table_id: int) -> None:
    """Mark the table as written in this transaction (the catalog's schema-change check)."""
    if ctx.catalog is not None:
        ctx.catalog.touch(table_id)


_EXACT = {"FLOAT": float, "BOOL": bool, "BYTES": bytes}


def _exact_type(typ) -> tuple[type | None, int | None]:
    """(Python type stored unchanged, limit): ints are range-checked, texts width-checked."""
    if typ.kind == "INT":
        return int, int_limit(typ)
    if typ.kind == "TEXT":
        return str, typ.width
    return _EXACT.get(typ.kind), None


class RowChecker:
    """Casts values to their column types and enforces NOT NULL and CHECK constraints."""

    def __init__(self, table: TableDescriptor, checks: list[tuple[str, RowFn]],
                 generated: list[tuple[int, RowFn]] | None = None) -> None:
        self.table = table
        self.generated = generated or []  # (row position, compiled expression) of computed columns
        self.types = [(c.type, c.name) for c in table.columns]
        self.not_null = [i for i, c in enumerate(table.columns) if not c.nullable]
        self.fast = [_exact_type(c.type) for c in table.columns]
        self.checks = checks  # (constraint name, compiled expression)
        self.cast_positions = list(range(len(table.columns)))  # the row positions cast_row casts

    def cast_row(self, row: list) -> list:
        fast, types = self.fast, self.types
        for i in self.cast_positions:
            v = row[i]
            if v is None:
                continue
            # the common case -- the value already has the column's exact Python type -- skips
            # assign_cast (ints still get their 64-bit range check, texts their width check)
            exact, limit = fast[i]
            if type(v) is exact:
                if limit is None:
                    continue
                if exact is int:
                    if -limit - 1 <= v <= limit:
                        continue
                elif len(v) <= limit:
                    continue
            typ, name = types[i]
            row[i] = assign_cast(v, typ, name)
        return row

    def trust_stored(self, positions: set[int]) -> None:
        """The values at these positions are the stored row's (the columns an UPDATE does not
        assign), cast when they were written: `cast_row` leaves them (NOT NULL and CHECK still
        see the whole row)."""
        self.cast_positions = [p for p in self.cast_positions if p not in positions]

    def trust_arrays(self, positions: set[int]) -> None:
        """ARRAY values at these positions arrive cast (``UPDATE t SET tags[3] = x``: the new
        element is cast by the assignment, the others are stored values): `cast_row` skips them."""
        for p in positions:
            self.fast[p] = (SqlArray, None)

    def check(self, row: tuple) -> None:
        for i in self.not_null:
            if row[i] is None:
                col = self.table.columns[i].name
                raise NotNullViolation(
                    f'null value in column "{col}" of relation "{self.table.name}" violates not-null constraint'
                )
        for name, fn in self.checks:
            if fn(row) is False:
                raise CheckViolation(
                    f'new row for relation "{self.table.name}" violates check constraint "{name}"'
                )

    def compute(self, row: list) -> None:
        """Fill the generated columns from the row's other columns (cast to their types)."""
        for pos, fn in self.generated:
            typ, name = self.types[pos]
            row[pos] = assign_cast(fn(row), typ, name)

    def finish(self, row: list) -> tuple:
        """Cast, compute the generated columns, then check: the row as it will be stored."""
        self.cast_row(row)
        if self.generated:
            self.compute(row)
        out = tuple(row)
        self.check(out)
        return out


@dataclass
class Returning:
    """RETURNING expressions compiled against the table's row (columns None: no RETURNING)."""

    columns: list[Column] | None = None
    fns: list[RowFn] | None = None

    def project(self, row: tuple) -> tuple:
        return tuple(fn(row) for fn in self.fns or ())


@dataclass
class Assignments:
    """``SET col = expr, ...``: (row position, compiled expression) pairs."""

    items: list[tuple[int, RowFn]]

    def apply(self, row: tuple, source: tuple | None = None) -> list:
        """The new row: ``row`` with each assigned position replaced by its expression's value
        over ``source`` (the row itself, or ON CONFLICT's existing + excluded row)."""
        src = row if source is None else source
        new = list(row)
        for pos, fn in self.items:
            new[pos] = fn(src)
        return new
