"""SQLAlchemy's JSON type on sqlkv's JSONB (issue 15).

``Column("data", JSON)`` is a ``JSONB`` column. SQLAlchemy serializes bound values itself (the
engine's ``json_serializer``, json.dumps by default) and sqlkv parses the text into the column;
results come back as JSON text (the dialect sets the driver's ``jsonb_as_text``) for the engine's
``json_deserializer``. ``data["key"]`` is ``data -> ?``, ``data[("a", 1)]`` is ``data #> ?`` with
the path bound as PostgreSQL's text-array literal ``{"a","1"}``; ``.as_integer()`` and the other
typed accessors read ``->>`` / ``#>>`` text and CAST it, as on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import types as sqltypes


class JSON(sqltypes.JSON):
    """JSONB: values bound as JSON text, read back as JSON text and deserialized."""


class JSONIndexType(sqltypes.JSON.JSONIndexType):
    """``data[key]``: a text key or an integer subscript, bound as it is."""


def path_literal(elements: Any) -> str:
    """A path as PostgreSQL's text[] literal: ``{"a","1"}`` (quotes and backslashes escaped)."""
    quoted = ('"' + str(e).replace("\\", "\\\\").replace('"', '\\"') + '"' for e in elements)
    return "{" + ",".join(quoted) + "}"


class JSONPathType(sqltypes.JSON.JSONPathType):
    """``data[("a", 1)]``: the path bound as a text-array literal."""

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> str | None:
            return None if value is None else path_literal(value)

        return process

    def literal_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> str:
            return "'" + path_literal(value).replace("'", "''") + "'"

        return process


COLSPECS = {sqltypes.JSON: JSON, sqltypes.JSON.JSONIndexType: JSONIndexType,
            sqltypes.JSON.JSONPathType: JSONPathType}
