"""Pieces shared by INSERT, UPDATE and DELETE: targets, constraint checks, defaults, RETURNING.

For ``INSERT INTO t (a) VALUES (1) RETURNING a, b`` the insert plan builds a `RowChecker`
(assignment casts, NOT NULL, CHECK constraints compiled once against the table's scope), a
`Defaults` evaluator for the columns not given (DEFAULT expressions, auto-assigned rowid /
INTEGER PRIMARY KEY), and a `Returning` projection compiled against the table's scope.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import IntegrityError, ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.scan import codec_for
from sqlkv.sql.plan.access import table_scope
from sqlkv.sql.types import assign_cast


@dataclass
class StatementResult:
    rows: Any = None  # list/iterator of tuples for statements returning rows
    rowcount: int = -1
    lastrowid: int | None = None


def compile_expr(node, scope, env):
    from sqlkv.sql.expr import compile_expr as _compile

    return _compile(node, scope, env)


def target_table(node: exp.Expression, catalog) -> tuple[TableDescriptor, str]:
    """The descriptor and alias of a DML target (``t`` or ``t AS x``)."""
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table):
        shown = node.sql() if isinstance(node, exp.Expression) else repr(node)
        raise ProgrammingError(f"unsupported DML target: {shown}")
    name = table.name
    if table.db:
        name = f"{table.db}.{name}"
    desc = catalog.find_table(name)
    if desc is None:
        if catalog.get_view(name) is not None:
            raise ProgrammingError(f'cannot modify view "{name}"')
        raise ProgrammingError(f'relation "{name}" does not exist')
    if desc.virtual is not None:
        raise ProgrammingError(f'cannot modify virtual table "{name}"')
    alias = table.alias or table.name
    return desc, alias


_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_EXACT = {"FLOAT": float, "BOOL": bool, "BYTES": bytes}


def _exact_type(typ) -> tuple[type | None, int | None]:
    """(Python type stored unchanged, limit): ints are range-checked, texts width-checked."""
    if typ.kind == "INT":
        return int, _INT_MAX
    if typ.kind == "TEXT":
        return str, typ.width
    return _EXACT.get(typ.kind), None


class RowChecker:
    """Casts values to their column types and enforces NOT NULL and CHECK constraints."""

    def __init__(self, table: TableDescriptor, alias: str, env) -> None:
        self.table = table
        self.types = [(c.type, c.name) for c in table.columns]
        self.not_null = [i for i, c in enumerate(table.columns) if not c.nullable]
        self.fast = [_exact_type(c.type) for c in table.columns]
        scope = Scope(table_scope(table, alias))
        self.checks = [
            (chk.name, compile_expr(sqlglot.parse_one(chk.expr_sql), scope, env)) for chk in table.checks
        ]

    def cast_row(self, row: list) -> list:
        fast = self.fast
        for i, (typ, name) in enumerate(self.types):
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
                    if _INT_MIN <= v <= _INT_MAX:
                        continue
                elif len(v) <= limit:
                    continue
            row[i] = assign_cast(v, typ, name)
        return row

    def check(self, row: tuple) -> None:
        for i in self.not_null:
            if row[i] is None:
                col = self.table.columns[i].name
                raise IntegrityError(
                    f'null value in column "{col}" of relation "{self.table.name}" violates not-null constraint'
                )
        for name, fn in self.checks:
            if fn(row) is False:
                raise IntegrityError(
                    f'new row for relation "{self.table.name}" violates check constraint "{name}"'
                )


_AUTO_COUNTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # txn -> {table id: next}


def forget_auto_counter(txn, table_id: int) -> None:
    """UPDATE/DELETE/TRUNCATE may change max(id): the next auto id is read again (SQLite's max+1)."""
    counters = _AUTO_COUNTERS.get(txn)
    if counters is not None:
        counters.pop(table_id, None)


class Defaults:
    """Values for columns an INSERT does not mention: DEFAULT expressions or auto ids."""

    def __init__(self, table: TableDescriptor, env) -> None:
        self.table = table
        empty = Scope([])
        self.fns: list[Callable[[tuple], Any] | None] = []
        for col in table.columns:
            if col.default_sql is not None:
                self.fns.append(compile_expr(sqlglot.parse_one(col.default_sql), empty, env))
            else:
                self.fns.append(None)
        self.auto = [i for i, c in enumerate(table.columns) if c.auto_increment]

    def value(self, i: int) -> Any:
        fn = self.fns[i]
        return None if fn is None else fn(())

    def _counters(self, txn) -> dict[int, int]:
        # Shared by every plan running in the transaction: two INSERT texts into one table
        # must not hand out the same id.
        counters = _AUTO_COUNTERS.get(txn)
        if counters is None:
            counters = _AUTO_COUNTERS[txn] = {}
        return counters

    def next_auto(self, txn, refresh: bool = False) -> int:
        """max(auto column)+1, read once per transaction and then counted locally."""
        counters = self._counters(txn)
        nxt = None if refresh else counters.get(self.table.id)
        if nxt is None:
            nxt = self._read_max(txn) + 1
        counters[self.table.id] = nxt + 1
        return nxt

    def saw_value(self, txn, v: int) -> None:
        """An explicit value for the auto column: keep the counter past it."""
        counters = self._counters(txn)
        if self.table.id in counters and v >= counters[self.table.id]:
            counters[self.table.id] = v + 1

    def _read_max(self, txn) -> int:
        codec = codec_for(self.table)
        from sqlkv.storage.kv import prefix_end

        desc = codec.pk_desc[0]
        for key, _ in txn.scan(codec.prefix, prefix_end(codec.prefix), reverse=not desc, limit=1):
            row_pk = codec._start_row(key)[codec.pk_positions[0]]
            return row_pk if isinstance(row_pk, int) else 0
        return 0


class Returning:
    """RETURNING expressions compiled against the table's row."""

    def __init__(self, node: exp.Returning | None, table: TableDescriptor, alias: str, env) -> None:
        self.columns: list[Column] | None = None
        self.fns: list[Callable[[tuple], Any]] = []
        if node is None:
            return
        scope = Scope(table_scope(table, alias))
        cols: list[Column] = []
        for e in node.expressions:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
                for i, c in enumerate(table.columns):
                    if not c.hidden:
                        cols.append(Column(c.name, alias, c.type))
                        self.fns.append(lambda r, i=i: r[i])
                continue
            inner = e.this if isinstance(e, exp.Alias) else e
            name = e.alias if isinstance(e, exp.Alias) else (e.name if isinstance(e, exp.Column) else e.sql())
            cols.append(Column(name, None, None))
            self.fns.append(compile_expr(inner, scope, env))
        self.columns = cols

    def project(self, row: tuple) -> tuple:
        return tuple(fn(row) for fn in self.fns)


def split_conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.Where):
        node = node.this
    while isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        node = node.this
    if isinstance(node, exp.And):
        return split_conjuncts(node.this) + split_conjuncts(node.expression)
    return [node]
