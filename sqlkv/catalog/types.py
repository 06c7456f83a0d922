"""Column types as the catalog stores them: `SqlType` and the named types.

A descriptor holds each column's `SqlType` (``DECIMAL(10,2)`` is ``SqlType("DECIMAL",
precision=10, scale=2)``) and writes it with `SqlType.to_dict`. What the types mean -- parsing a
type name, casts, assignment rules, formatting -- is the SQL layer's (`sqlkv.sql.types`): the
catalog needs neither the parser nor the casts.
"""

from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True)
class SqlType:
    """A SQL type. ``kind`` is one of INT FLOAT DECIMAL TEXT BOOL BYTES DATE TIMESTAMP NULL ARRAY ..."""

    kind: str
    width: int | None = None  # VARCHAR(n)/CHAR(n): maximum length in characters; INT2/INT4: bits
    precision: int | None = None  # DECIMAL(p, s): total digits
    scale: int | None = None  # DECIMAL(p, s): digits after the point
    fixed: bool = False  # CHAR(n): same storage as VARCHAR(n); see grammar-notes/expressions.md
    tz: bool = False  # TIMESTAMPTZ: a TIMESTAMP read and written in the session time zone
    element: SqlType | None = None  # ARRAY: the element type (one dimension; sqlkv/sql/arraytypes.py)


    def sql(self) -> str:
        if self.element is not None:
            return f"{self.element.sql()}[]"
        if self.kind == "INT" and self.width is not None:
            return f"INT{self.width // 8}"
        if self.kind == "TEXT" and self.width is not None:
            return f"{'CHAR' if self.fixed else 'VARCHAR'}({self.width})"
        if self.kind == "DECIMAL" and self.precision is not None:
            if self.scale is not None:
                return f"DECIMAL({self.precision},{self.scale})"
            return f"DECIMAL({self.precision})"
        if self.tz:
            return "TIMESTAMPTZ"
        return self.kind

    def __str__(self) -> str:
        return self.sql()

    @property
    def known(self) -> bool:
        """False for the NULL/unknown type (parameters, NULL literals)."""
        return self.kind != "NULL"

    @property
    def numeric(self) -> bool:
        return self.kind in ("INT", "FLOAT", "DECIMAL")

    def to_dict(self) -> dict:
        d: dict = {"kind": self.kind}
        for name in ("width", "precision", "scale"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        if self.fixed:
            d["fixed"] = True
        if self.tz:
            d["tz"] = True
        if self.element is not None:
            d["element"] = self.element.to_dict()
        return d

    @staticmethod
    def from_dict(d: dict) -> SqlType:
        return SqlType(
            kind=d["kind"],
            width=d.get("width"),
            precision=d.get("precision"),
            scale=d.get("scale"),
            fixed=bool(d.get("fixed", False)),
            tz=bool(d.get("tz", False)),
            element=SqlType.from_dict(d["element"]) if d.get("element") else None,
        )


INT = SqlType("INT")
FLOAT = SqlType("FLOAT")
DECIMAL = SqlType("DECIMAL")
TEXT = SqlType("TEXT")
BOOL = SqlType("BOOL")
BYTES = SqlType("BYTES")
DATE = SqlType("DATE")
TIMESTAMP = SqlType("TIMESTAMP")
NULLTYPE = SqlType("NULL")
