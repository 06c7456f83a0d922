"""Column-wise checks of a chunk of INSERT rows that are already exactly what would be stored.

executemany of ``INSERT INTO orders VALUES (?, ?, ?)`` mostly receives, per row, a tuple of
values that already have their columns' exact Python types (int for INT, str for TEXT...).
`RowChecker.cast_row` then changes nothing; it only range-checks ints and width-checks texts.
`stored_as_given` makes the same decision for a whole chunk a column at a time, with set, min,
max and ``in`` running at C speed over each column; the tuples are then the rows. A column it is
unsure of (another type, a value out of range or too long, a NULL where none may be) makes it
answer False, and the caller builds the chunk row by row instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlkv.sql.exec.write import RowChecker

_NONE = type(None)


def stored_as_given(checker: RowChecker, rows: list[Any], ncols: int, never_null: Sequence[int]) -> bool:
    """Whether each of ``rows`` is a tuple of ``ncols`` values that `RowChecker.cast_row` would
    leave alone and whose ``never_null`` columns (NOT NULL, auto ids) are all set."""
    if set(map(type, rows)) != {tuple} or set(map(len, rows)) != {ncols}:
        return False
    columns = list(zip(*rows))
    for i in never_null:
        if None in columns[i]:
            return False
    for (exact, limit), column in zip(checker.fast, columns):
        if not _column_fits(exact, limit, column):
            return False
    return True


def _column_fits(exact: type | None, limit: int | None, column: tuple) -> bool:
    types = set(map(type, column))
    has_null = _NONE in types
    types.discard(_NONE)
    if not types:
        return True  # all NULL: nothing to cast
    if exact is None or types != {exact}:
        return False
    if limit is None:
        return True
    values = [v for v in column if v is not None] if has_null else column
    if exact is int:
        return -limit - 1 <= min(values) and max(values) <= limit
    return max(map(len, values)) <= limit
