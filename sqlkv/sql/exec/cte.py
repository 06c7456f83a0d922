"""Common table expressions: the working table and the fixpoint loop of WITH RECURSIVE.

``WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c``
plans the recursive member once, with ``c`` bound to a `WorkingTable` that reads whatever rows
the shared `WorkingSet` holds. `RecursiveUnion` emits the base rows, puts them in the working
set, reruns the recursive member, and repeats with each new batch until a batch is empty. With
UNION (not ALL) rows already produced are dropped, which is what makes graph walks terminate.
Non-recursive CTEs are planned inline at each reference, like a derived table.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlkv.errors import OperationalError
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator, counted

MAX_ITERATIONS = 1_000_000


class WorkingSet:
    """The rows of the previous iteration, shared by the loop and its WorkingTable readers."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []


class WorkingTable(Operator):
    def __init__(self, name: str, columns: list[Column], working: WorkingSet) -> None:
        self.name = name
        self.columns = columns
        self.working = working

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        return iter(self.working.rows)

    def describe(self) -> str:
        return f"working table {self.name}"


class RecursiveUnion(Operator):
    def __init__(self, name: str, base: Operator, recursive: Operator, working: WorkingSet,
                 distinct: bool, columns: list[Column]) -> None:
        self.name = name
        self.base = base
        self.recursive = recursive
        self.working = working
        self.distinct = distinct
        self.columns = columns

    def children(self) -> list[Operator]:
        return [self.base, self.recursive]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        seen: set | None = set() if self.distinct else None
        batch = self._fresh(counted(self.base, ctx), seen)
        iterations = 0
        while batch:
            yield from batch
            self.working.rows = batch
            iterations += 1
            if iterations > MAX_ITERATIONS:
                raise OperationalError(f'recursive query "{self.name}" exceeded {MAX_ITERATIONS} iterations')
            ctx.check_cancelled()
            batch = self._fresh(counted(self.recursive, ctx), seen)
        self.working.rows = []

    @staticmethod
    def _fresh(rows: Iterator[tuple], seen: set | None) -> list[tuple]:
        if seen is None:
            return list(rows)
        out = []
        for row in rows:
            if row not in seen:
                seen.add(row)
                out.append(row)
        return out

    def describe(self) -> str:
        return f"recursive cte {self.name}{'' if self.distinct else ' (union all)'}"
