"""What the SQL layer's planner, expression compiler and operators share: columns, scopes, contexts.

A query such as ``SELECT u.name FROM users u WHERE u.id = ?`` is planned once into a tree of
operators. Each operator produces rows as plain tuples; its `columns` say what each position
holds. Expressions are compiled against a `Scope` (the columns of the row they will see) into
Python callables ``fn(row) -> value``. Values that change per execution -- parameters, the
transaction, the statement time -- are not baked into the callables: they read them from the
plan's `ExecContext`, which the session fills in before each execution of the cached plan.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlkv.errors import OperationalError, ProgrammingError, UndefinedColumn

if TYPE_CHECKING:
    from sqlkv.sql.types import SqlType


@dataclass(frozen=True)
class Column:
    """One position of a row: its output name, the table alias qualifying it, its SQL type."""

    name: str
    table: str | None = None
    type: SqlType | None = None
    hidden: bool = False  # not expanded by SELECT * (the implicit rowid)


class Scope:
    """The columns an expression can see, plus the enclosing query's scope for correlated refs.

    ``cell`` holds the current row of this scope while a correlated subquery runs: the
    expression that evaluates a subquery stores its input row in ``scope.cell[0]`` first, and
    column references that resolve to an outer scope compile to ``lambda r: cell[0][i]``.
    """

    def __init__(self, columns: list[Column], outer: Scope | None = None,
                 names: dict[str, list[tuple[int, str]]] | None = None) -> None:
        self.columns = columns
        self.outer = outer
        self.cell: list[Any] = [None]
        # lower-cased name -> [(position, lower-cased table)], made on the first `find` (a plan
        # resolves each column reference through it); remade if ``columns`` grew since.
        # ``names``: that index of ``columns`` made already (it is only read, never changed)
        self._by_name: dict[str, list[tuple[int, str]]] | None = names
        self._indexed = len(columns) if names is not None else 0

    def find(self, name: str, table: str | None = None) -> int | None:
        """Index of the column named ``name`` (qualified by ``table`` if given), None if absent.

        Raises ProgrammingError when the name is ambiguous in this scope.
        """
        by_name = self._by_name
        if by_name is None or self._indexed != len(self.columns):
            by_name = self._index_names()
        hits = by_name.get(name.lower())
        if hits is None:
            return None
        if table:
            ltable = table.lower()
            hits = [h for h in hits if h[1] == ltable]
            if not hits:
                return None
        if len(hits) > 1:
            raise ProgrammingError(f'column reference "{name}" is ambiguous')
        return hits[0][0]

    def _index_names(self) -> dict[str, list[tuple[int, str]]]:
        self._by_name = by_name = name_index(self.columns)
        self._indexed = len(self.columns)
        return by_name

    def resolve(self, name: str, table: str | None = None) -> tuple[int, int]:
        """(depth, index) of a column: depth 0 is this scope, 1 the enclosing one, ...

        Raises ProgrammingError naming the column when no scope has it.
        """
        scope: Scope | None = self
        depth = 0
        while scope is not None:
            idx = scope.find(name, table)
            if idx is not None:
                return depth, idx
            scope = scope.outer
            depth += 1
        qualified = f"{table}.{name}" if table else name
        raise UndefinedColumn(f'column "{qualified}" does not exist')

    def at_depth(self, depth: int) -> Scope:
        scope = self
        for _ in range(depth):
            assert scope.outer is not None
            scope = scope.outer
        return scope


def name_index(columns: list[Column]) -> dict[str, list[tuple[int, str]]]:
    """What `Scope.find` looks names up in: lower-cased name -> [(position, lower-cased table)]."""
    by_name: dict[str, list[tuple[int, str]]] = {}
    for i, col in enumerate(columns):
        by_name.setdefault(col.name.lower(), []).append((i, (col.table or "").lower()))
    return by_name


def table_scope(table: Any, alias: str) -> list[Column]:
    """The columns of a table's rows (a `TableDescriptor`), qualified by ``alias``."""
    return [Column(c.name, alias, c.type, c.hidden) for c in table.columns]


@dataclass
class OperatorStats:
    """Per-operator figures for EXPLAIN ANALYZE."""

    rows: int = 0
    kv_gets: int = 0
    kv_scans: int = 0
    kv_keys_read: int = 0
    kv_puts: int = 0  # writes buffered by a DML operator
    keys_counted: bool = True  # False: kv_keys_read misses the keys gets found (a DML root's own reads)
    time_ns: int = 0  # inclusive: this operator and its inputs (observe_explain.py)


def _unwrapped(iterable: Any, total: int | None = None, label: str = "") -> Any:
    return iterable


@dataclass
class ExecContext:
    """Per-execution state of a plan. One instance belongs to one prepared plan.

    ``txn`` is the `sqlkv.txn.Transaction` the statement runs in (reads see its own writes);
    ``params`` the bound parameters (a sequence for ``?``, a mapping for ``:name``);
    ``now`` the statement's timestamp (now()/current_timestamp are stable within a statement);
    ``stats`` is a dict keyed by ``id(operator)`` when EXPLAIN ANALYZE is collecting, else None.
    """

    txn: Any = None
    params: Any = ()
    now: datetime | None = None
    catalog: Any = None
    stats: dict[int, OperatorStats] | None = None
    cancelled: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def check_cancelled(self) -> None:
        """Long loops call this now and then so Ctrl-C can stop a statement."""
        if self.cancelled:
            self.cancelled = False
            raise OperationalError("statement cancelled")

    def progress(self, title: str) -> AbstractContextManager[Any]:
        """``with ctx.progress("indexing t") as wrap: for row in wrap(rows): ...``.

        The session's progress hook (the shell sets one that draws a bar on a terminal for
        long loops); without one, ``wrap`` hands the rows back untouched.
        """
        hook = self.extra.get("progress")
        return hook(title) if hook is not None else nullcontext(_unwrapped)

    def stats_for(self, operator: object) -> OperatorStats | None:
        if self.stats is None:
            return None
        st = self.stats.get(id(operator))
        if st is None:
            st = self.stats[id(operator)] = OperatorStats()
        return st
