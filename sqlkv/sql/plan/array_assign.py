"""``UPDATE t SET tags[3] = 'x'``: assigning one element of an ARRAY column.

The new array is the old one with element 3 replaced; assigning past the end extends the array
with NULLs first, as PostgreSQL does (``{a}`` with ``[3] = 'x'`` gives ``{a,NULL,x}``). A NULL
array is extended from empty (PostgreSQL would give the array the lower bound 3, which sqlkv's
1-based arrays cannot hold). Several elements of one column may be set in one UPDATE
(``SET a[1] = 0, a[2] = 0``); they apply left to right. The new array then goes through the
column's assignment rules like any value (element types are strict) -- except in a plain
UPDATE, where the assigned element is cast here and the row checker trusts the array
(`RowChecker.trust_arrays`): its other elements are stored values, already of the column's
type, and re-casting a 1,000-element array for each element assignment was most of its cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.arraycasts import as_array, assign_element, element_type, is_array
from sqlkv.sql.casts import assign_cast
from sqlkv.sql.expr import compile_for_column, compile_typed

RowFn = Callable[[tuple], Any]
MAX_EXTENSION = 1_000_000  # PostgreSQL refuses huge arrays too; an element far out is a mistake


def is_element_target(node: exp.Expression) -> bool:
    return isinstance(node, exp.Bracket)


def element_target(node: exp.Bracket) -> tuple[exp.Column, exp.Expression]:
    """The column and subscript of ``col[i]`` (slices and other shapes refused)."""
    if not isinstance(node.this, exp.Column) or len(node.expressions) != 1:
        raise ProgrammingError(f"unsupported SET target: {node.sql()}")
    index = node.expressions[0]
    if isinstance(index, exp.Slice):
        raise NotSupportedError(f"assigning an array slice is not supported: {node.sql()}")
    return node.this, index


def element_assignment(col: Any, pos: int, index: exp.Expression, value: exp.Expression, scope, env,
                       previous: RowFn | None) -> RowFn:
    """The closure computing the column's new array (``previous``: an earlier element assignment)."""
    if not is_array(col.type):
        raise ProgrammingError(f'cannot subscript column "{col.name}" of type {col.type.sql()}: it is not an array')
    index_part = compile_typed(index, scope, env)
    if index_part.type.known and index_part.type.kind != "INT":
        raise ProgrammingError(f"array subscript must be type INT, not type {index_part.type.sql()}")
    value_fn = compile_for_column(value, element_type(col.type), scope, env)
    old = previous if previous is not None else (lambda r: r[pos])
    fi = index_part.fn
    name, col_type = col.name, col.type

    def assign(r: tuple) -> object:
        i = fi(r)
        if i is None:
            raise DataError(f'array subscript in assignment to "{name}" must not be NULL')
        if not isinstance(i, int) or isinstance(i, bool):
            raise DataError(f'array subscript in assignment to "{name}" must be an integer')
        base = old(r)
        items = list(as_array(base).items) if base is not None else []
        if i < 1 or i > len(items) + MAX_EXTENSION:
            raise DataError(f'array subscript {i} out of range in assignment to "{name}" '
                            f"(sqlkv arrays start at 1)")
        if i > len(items):
            items.extend([None] * (i - len(items)))
        items[i - 1] = assign_element(value_fn(r), i, col_type, name, assign_cast)  # cast here: see above
        return SqlArray(items)

    return assign
