"""ARRAY types: their names, PostgreSQL's text form, and the casts to and from them.

``CREATE TABLE t (tags TEXT[])`` hands the parsed ``TEXT[]`` to `array_type`, giving
``SqlType("ARRAY", element=TEXT)``. ``INSERT INTO t VALUES ('{a,"b c",NULL}')`` assigns the
untyped literal through `assign_array`, which parses PostgreSQL's text form (`parse_array_text`)
and assigns each element with the element type's strict rules, naming the column on error;
``tags::TEXT`` formats it back with `format_array`. Runtime values are `SqlArray`s
(`sqlkv.encoding.arrays`); a Python ``list`` bound as a parameter is one too (the driver converts).

Only one dimension: ``INT[][]`` and ``'{{1,2}}'`` are refused with NotSupportedError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.catalog.types import SqlType

ARRAY_KIND = "ARRAY"
_BLANKS = " \t\n\r\v\f"  # PostgreSQL's array_isspace: other characters (U+001F ...) are data
_SPECIAL = set('{},"\\') | set(_BLANKS)


def array_of(element: SqlType) -> SqlType:
    """The type ``element[]``."""
    if element.kind == ARRAY_KIND:
        raise NotSupportedError(f"multi-dimensional arrays are not supported: {element.sql()}[]")
    if element.tz:  # elements are not converted to the session time zone
        raise NotSupportedError("TIMESTAMPTZ[] is not supported: use TIMESTAMP[] (UTC values)")
    return SqlType(ARRAY_KIND, element=element)


def is_array(typ: SqlType) -> bool:
    return typ.kind == ARRAY_KIND


def element_type(typ: SqlType) -> SqlType:
    """The element type of an ARRAY type (NULL/unknown when not known statically)."""
    return typ.element if typ.element is not None else SqlType("NULL")


def as_array(value: Any, what: str = "value") -> SqlArray:
    """A runtime value that must be an array (a Python list/tuple counts, as the driver binds it)."""
    if isinstance(value, SqlArray):
        return value
    if isinstance(value, (list, tuple)):
        return SqlArray(value)
    raise ProgrammingError(f"{what} must be an array, not {type(value).__name__}")


# ---------------------------------------------------------------- text form


def format_array(value: SqlArray, to_text: Callable[[Any], str]) -> str:
    """PostgreSQL's text form: ``{1,2,NULL}``, strings quoted when they need it (``{"a b",c}``);
    ``to_text`` formats an element (casts.py's)."""
    parts = []
    for item in value.items:
        if item is None:
            parts.append("NULL")
            continue
        if isinstance(item, bool):
            text = "t" if item else "f"
        elif isinstance(item, bytes):
            text = "\\x" + item.hex()  # PostgreSQL's bytea output (quoted below: it holds a backslash)
        else:
            text = to_text(item)
        if text == "" or text.upper() == "NULL" or any(ch in _SPECIAL for ch in text):
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(text)
    return "{" + ",".join(parts) + "}"


def parse_array_text(text: str, convert: Callable[[str], Any]) -> SqlArray:
    """Parse ``{a,"b c",NULL}``; each element's text goes through ``convert`` (None stays NULL)."""
    s = text.strip(_BLANKS)
    if s.startswith("[") or (s.startswith("{") and s[1:].lstrip(_BLANKS).startswith("{")):
        raise NotSupportedError(f'multi-dimensional arrays and array bounds are not supported: "{text}"')
    if not (s.startswith("{") and s.endswith("}")):
        raise DataError(f'malformed array literal: "{text}" (an array starts with "{{" and ends with "}}")')
    items: list[Any] = []
    body = s[1:-1]
    if body.strip(_BLANKS) == "":
        return SqlArray()
    pos = 0
    while True:
        element, quoted, pos = _next_element(body, pos, text)
        items.append(None if not quoted and element.upper() == "NULL" else convert(element))
        if pos >= len(body):
            return SqlArray(items)
        pos += 1  # the comma


def _next_element(body: str, pos: int, text: str) -> tuple[str, bool, int]:
    """One element from ``pos``: (its text, whether it was quoted, the position of the next comma or end)."""
    n = len(body)
    while pos < n and body[pos] in _BLANKS:
        pos += 1
    out: list[str] = []
    quoted = False
    if pos < n and body[pos] == '"':
        quoted = True
        pos += 1
        while True:
            if pos >= n:
                raise DataError(f'malformed array literal: "{text}" (unterminated quoted element)')
            ch = body[pos]
            if ch == "\\" and pos + 1 < n:
                out.append(body[pos + 1])
                pos += 2
            elif ch == '"':
                pos += 1
                break
            else:
                out.append(ch)
                pos += 1
        while pos < n and body[pos] in _BLANKS:
            pos += 1
    else:
        while pos < n and body[pos] != ",":
            ch = body[pos]
            if ch in '{}"':
                raise DataError(f'malformed array literal: "{text}" (unexpected "{ch}")')
            if ch == "\\" and pos + 1 < n:
                out.append(body[pos + 1])
                pos += 2
                continue
            out.append(ch)
            pos += 1
        element = "".join(out).strip(_BLANKS)
        if element == "":
            raise DataError(f'malformed array literal: "{text}" (empty element)')
        return element, False, pos
    if pos < n and body[pos] != ",":
        raise DataError(f'malformed array literal: "{text}" (junk after a quoted element)')
    return "".join(out), quoted, pos


# ---------------------------------------------------------------- casts


def element_parser(elem: SqlType, cast: Callable[[Any, SqlType], Any]) -> Callable[[str], Any]:
    """How one element's text becomes a value: the element type's cast, and for BYTES also
    PostgreSQL's ``\\x<hex>`` form, which `format_array` writes."""
    if elem.kind != "BYTES":
        return lambda text: cast(text, elem)

    def parse_bytes(text: str) -> Any:
        if text.startswith("\\x"):
            try:
                return bytes.fromhex(text[2:])
            except ValueError:
                raise DataError(f'invalid hexadecimal data in array element: "{text}"') from None
        return cast(text, elem)

    return parse_bytes


def assign_array(value: Any, typ: SqlType, column: str, assign: Callable[[Any, SqlType, str], Any],
                 cast: Callable[[Any, SqlType], Any]) -> SqlArray:
    """Strict assignment to an ARRAY column: each element by the element type's assignment rules
    (``assign``: casts.py's assign_cast; ``cast`` parses the elements of a text literal)."""
    elem = element_type(typ)
    if isinstance(value, str):  # an untyped literal in PostgreSQL's text form
        try:
            return parse_array_text(value, element_parser(elem, cast))
        except DataError as exc:
            raise DataError(f'invalid value for column "{column}" of type {typ.sql()}: {exc}') from None
    if isinstance(value, Jsonb) and isinstance(value.tree, list) and any(isinstance(v, list) for v in value.tree):
        # the driver binds a nested list as JSONB (no array holds it): say what it was
        raise NotSupportedError(f'multi-dimensional arrays are not supported (column "{column}")')
    if not isinstance(value, (SqlArray, list, tuple)):
        shown = value if isinstance(value, str) else repr(value)
        raise DataError(f'value "{shown}" ({type(value).__name__}) is not valid for column "{column}" '
                        f"of type {typ.sql()}")
    return SqlArray([assign_element(item, i, typ, column, assign) for i, item in enumerate(value, start=1)])


def assign_element(item: Any, index: int, typ: SqlType, column: str,
                   assign: Callable[[Any, SqlType, str], Any]) -> Any:
    """Element ``index`` (1-based) of a value for ARRAY column ``column`` of type ``typ``, by the
    element type's assignment rules (`assign_array`; ``UPDATE t SET tags[3] = x`` for one)."""
    if isinstance(item, (SqlArray, list, tuple)):
        raise NotSupportedError(f'multi-dimensional arrays are not supported (column "{column}")')
    elem = element_type(typ)
    try:
        return assign(item, elem, column) if elem.known else item
    except DataError as exc:
        raise type(exc)(f"array element {index}: {exc} (column type {typ.sql()})") from None


def cast_array(value: Any, typ: SqlType, cast: Callable[[Any, SqlType], Any]) -> SqlArray:
    """CAST(value AS T[]): text parses; an array casts element by element."""
    elem = element_type(typ)
    if isinstance(value, str):
        return parse_array_text(value, element_parser(elem, cast))
    if isinstance(value, (SqlArray, list, tuple)):
        if any(isinstance(v, (SqlArray, list, tuple)) for v in value):
            raise NotSupportedError("multi-dimensional arrays are not supported")
        return SqlArray(cast(v, elem) for v in value)
    raise DataError(f"cannot cast {type(value).__name__} to {typ.sql()}")


def array_value_type(value: SqlArray, value_type: Callable[[Any], SqlType]) -> SqlType:
    """The type of an array value: the type of its first non-NULL element, ``[]``."""
    for item in value:
        if item is not None:
            return array_of(value_type(item))
    return SqlType(ARRAY_KIND, element=SqlType("NULL"))


def common_array_type(a: SqlType, b: SqlType, common: Callable[[SqlType, SqlType], SqlType | None]) -> SqlType | None:
    """The common type of two array types (of their elements), None if incompatible."""
    ea, eb = element_type(a), element_type(b)
    elem = common(ea, eb)
    return None if elem is None else SqlType(ARRAY_KIND, element=elem)
