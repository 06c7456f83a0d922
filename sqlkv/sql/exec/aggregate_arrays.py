"""``array_agg(x)``: the group's values as an ARRAY, NULLs included (PostgreSQL).

With ``ORDER BY`` inside the call the values arrive sorted (aggregate_more's `OrderedInputs`);
``array_agg(DISTINCT x)`` keeps each value once, NULL included, in ascending order with NULL
last, which is the order PostgreSQL's sort-based DISTINCT gives. No input rows: NULL.
"""

from __future__ import annotations

from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import NotSupportedError
from sqlkv.sql.exec.aggregate import Accumulator
from sqlkv.sql.expr.ordering import sort_key


class ArrayAgg(Accumulator):
    __slots__ = ("values", "distinct")

    def __init__(self, distinct: bool = False) -> None:
        self.values: list = []
        self.distinct = distinct

    def add(self, value: Any) -> None:
        if isinstance(value, SqlArray):
            raise NotSupportedError("array_agg() of arrays would build a multi-dimensional array, "
                                    "which sqlkv does not support")
        self.values.append(value)

    def result(self) -> Any:
        if not self.values:
            return None
        if self.distinct:
            return SqlArray(sorted(set(self.values), key=sort_key(False, False)))
        return SqlArray(self.values)
