"""``sqlkv.Row``: a row factory with index and name access, like ``sqlite3.Row``.

    conn.row_factory = sqlkv.Row
    row = conn.execute("SELECT id, name FROM users").fetchone()
    row[0], row["name"], row["NAME"], row.keys(), dict(zip(row.keys(), row))

Names are matched case-insensitively (as sqlite3 does); two rows are equal when their
columns and values are.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlkv.errors import ProgrammingError


class Row:
    """An immutable result row addressable by position and by column name."""

    __slots__ = ("_names", "_values")

    def __init__(self, cursor: Any, values: tuple) -> None:
        description = getattr(cursor, "description", None)
        if description is None:
            raise ProgrammingError("Row needs a cursor whose last statement returned rows")
        self._names = tuple(d[0] for d in description)
        self._values = tuple(values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key: int | slice | str) -> Any:
        if isinstance(key, str):
            low = key.lower()
            for name, value in zip(self._names, self._values):
                if name.lower() == low:
                    return value
            raise IndexError(f"no column named {key!r}")
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row):
            return NotImplemented
        return self._names == other._names and self._values == other._values

    def __hash__(self) -> int:
        return hash((self._names, self._values))

    def __repr__(self) -> str:
        return f"<sqlkv.Row {dict(zip(self._names, self._values))!r}>"
