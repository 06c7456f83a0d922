"""DISTINCT ON (exprs): the first row of each group of equal ``exprs``, in ORDER BY order.

``SELECT DISTINCT ON (dept) dept, name FROM emp ORDER BY dept, salary DESC`` sorts, then
`DistinctOn` keeps the first row for each ``dept`` (the best paid). Only the keys seen are kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.relational import value_key


class DistinctOn(Operator):
    def __init__(self, child: Operator, positions: list[int], text: str) -> None:
        self.child = child
        self.positions = positions
        self.columns = child.columns
        self.text = text

    def children(self) -> list[Operator]:
        return [self.child]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        seen: set = set()
        positions = self.positions
        for row in counted(self.child, ctx):
            # value_key: 1 and 1.0 are one key, as DISTINCT compares them
            key = tuple(None if row[i] is None else value_key(row[i]) for i in positions)
            if key not in seen:
                seen.add(key)
                yield row

    def describe(self) -> str:
        return f"distinct on {self.text}"
