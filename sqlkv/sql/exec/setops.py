"""Set operations: UNION [ALL], INTERSECT [ALL], EXCEPT [ALL].

``SELECT a FROM t UNION SELECT b FROM u`` streams t's rows then u's through one `seen` set,
dropping repeats. INTERSECT and EXCEPT first read their right input into a counter (memory
proportional to the right result), then stream the left input against it. Rows compare as
whole tuples, with NULLs equal to each other, as SQL set operations require.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator, counted


class SetOp(Operator):
    def __init__(self, kind: str, distinct: bool, left: Operator, right: Operator,
                 columns: list[Column]) -> None:
        self.kind = kind  # union | intersect | except
        self.distinct = distinct
        self.left = left
        self.right = right
        self.columns = columns

    def children(self) -> list[Operator]:
        return [self.left, self.right]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        if self.kind == "union":
            return self._union(ctx)
        if self.kind == "intersect":
            return self._intersect(ctx)
        return self._except(ctx)

    def _union(self, ctx: ExecContext) -> Iterator[tuple]:
        if not self.distinct:
            yield from counted(self.left, ctx)
            yield from counted(self.right, ctx)
            return
        seen: set = set()
        for source in (self.left, self.right):
            for row in counted(source, ctx):
                if row not in seen:
                    seen.add(row)
                    yield row

    def _intersect(self, ctx: ExecContext) -> Iterator[tuple]:
        right = Counter(counted(self.right, ctx))
        for row in counted(self.left, ctx):
            if right[row] > 0:
                if self.distinct:
                    right[row] = 0
                else:
                    right[row] -= 1
                yield row

    def _except(self, ctx: ExecContext) -> Iterator[tuple]:
        right = Counter(counted(self.right, ctx))
        seen: set = set()
        for row in counted(self.left, ctx):
            if self.distinct:
                if row in seen or right[row] > 0:
                    continue
                seen.add(row)
                yield row
            elif right[row] > 0:
                right[row] -= 1
            else:
                yield row

    def describe(self) -> str:
        return f"{self.kind}{'' if self.distinct else ' all'}"
