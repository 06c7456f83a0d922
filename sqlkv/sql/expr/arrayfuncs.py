"""Functions on ARRAY values, with PostgreSQL's semantics, registered in the function table.

``array_length(a, 1)`` (NULL for an empty array or another dimension), ``cardinality(a)``,
``array_position(a, x [, start])`` / ``array_positions(a, x)`` (found by IS NOT DISTINCT FROM:
NULL finds a NULL element), ``array_append/prepend/cat`` (a NULL array acts as empty),
``array_remove/replace`` (IS NOT DISTINCT FROM), ``array_to_string(a, sep [, null_text])``
(NULL elements skipped unless ``null_text``), ``string_to_array(s, sep [, null_text])`` (NULL
``sep`` splits into characters), and the regular-expression functions that return arrays:
``regexp_match``, ``regexp_matches`` (scalar form: the first match; flag ``g`` needs FROM),
``regexp_split_to_array``.

sqlglot parses several of these into their own node classes (``exp.ArraySize`` ...); `_as_call`
turns those back into the plain call the function table knows.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import DataError, NotSupportedError
from sqlkv.sql.arraycasts import array_of, as_array, element_type, is_array
from sqlkv.sql.casts import to_text
from sqlkv.sql.expr import regex
from sqlkv.sql.expr.arrays import element_equal
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled
from sqlkv.sql.expr.functions import ANY, INTS, TEXTS, call_shape, compile_function, register
from sqlkv.sql.types import INT, NULLTYPE, SqlType, TEXT

TEXT_ARRAY = array_of(TEXT)
INT_ARRAY = array_of(INT)


def _same_array(types: list[SqlType]) -> SqlType:
    for t in types:
        if is_array(t):
            return t
    return SqlType("ARRAY", element=NULLTYPE)


def _element_of_first(types: list[SqlType]) -> SqlType:
    """array_append(a, x): a's type, or x's type [] when a's is unknown."""
    if types and is_array(types[0]) and element_type(types[0]).known:
        return types[0]
    if len(types) > 1 and types[-1].known and not is_array(types[-1]):
        return array_of(types[-1])
    return _same_array(types)


def _not_distinct(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return element_equal(a, b)


def array_length(a: Any, dim: int) -> int | None:
    a = as_array(a, "array_length() argument 1")
    return len(a) if dim == 1 and len(a) else None


def cardinality(a: Any) -> int:
    return len(as_array(a, "cardinality() argument"))


def array_position(a: Any, x: object, start: int | None = 1) -> int | None:
    if a is None:
        return None
    items = as_array(a, "array_position() argument 1").items
    if start is None:
        raise DataError("array_position(): initial position must not be null")
    for i in range(max(start, 1) - 1, len(items)):
        if _not_distinct(items[i], x):
            return i + 1
    return None


def array_positions(a: Any, x: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(i for i, v in enumerate(as_array(a, "array_positions() argument 1").items, 1)
                    if _not_distinct(v, x))


def array_append(a: Any, x: object) -> SqlArray:
    return SqlArray((as_array(a).items if a is not None else ()) + (x,))


def array_prepend(x: object, a: Any) -> SqlArray:
    return SqlArray((x,) + (as_array(a).items if a is not None else ()))


def array_cat(a: Any, b: Any) -> SqlArray | None:
    if a is None and b is None:
        return None
    return SqlArray((as_array(a).items if a is not None else ()) + (as_array(b).items if b is not None else ()))


def array_remove(a: Any, x: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(v for v in as_array(a, "array_remove() argument 1") if not _not_distinct(v, x))


def array_replace(a: Any, old: object, new: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(new if _not_distinct(v, old) else v for v in as_array(a, "array_replace() argument 1"))


def element_text(v: object) -> str:
    """An element as array_to_string writes it (booleans as t/f, as PostgreSQL's output)."""
    return ("t" if v else "f") if isinstance(v, bool) else to_text(v)


def array_to_string(a: Any, sep: str | None, null_text: str | None = None) -> str | None:
    if a is None or sep is None:
        return None
    parts = [element_text(v) if v is not None else null_text
             for v in as_array(a, "array_to_string() argument 1")]
    return sep.join(p for p in parts if p is not None)


def string_to_array(s: str | None, sep: str | None, null_text: str | None = None) -> SqlArray | None:
    if s is None:
        return None
    if s == "":
        return SqlArray()
    if sep is None:
        parts = list(s)
    elif sep == "":
        parts = [s]
    else:
        parts = s.split(sep)
    return SqlArray(None if null_text is not None and p == null_text else p for p in parts)


# -- regular expressions returning arrays


def regexp_match(source: str, pattern: str, flags: str = "") -> SqlArray | None:
    """The first match: its capture groups (or the whole match when there are none); NULL if none."""
    re_flags, every = regex.regex_flags(flags, "regexp_match")
    if every:
        raise DataError("regexp_match() does not support the \"global\" option (use regexp_matches in FROM)")
    m = regex.compile_regex(pattern, re_flags).search(source)
    if m is None:
        return None
    return SqlArray(m.groups()) if m.re.groups else SqlArray([m.group(0)])


def regexp_matches_scalar(source: str, pattern: str, flags: str = "") -> SqlArray | None:
    if "g" in flags:
        raise NotSupportedError("regexp_matches(..., 'g') returns a set of rows: sqlkv accepts it in FROM "
                                "(SELECT m FROM regexp_matches(s, p, 'g') AS m), not in an expression")
    return regexp_match(source, pattern, flags)


def regexp_matches_rows(source: str, pattern: str, flags: str = "") -> SqlArray:
    """regexp_matches in FROM: one TEXT[] per match (every match with flag g, else the first)."""
    re_flags, every = regex.regex_flags(flags, "regexp_matches")
    rx = regex.compile_regex(pattern, re_flags)
    matches = rx.finditer(source) if every else filter(None, [rx.search(source)])
    return SqlArray(SqlArray(m.groups()) if m.re.groups else SqlArray([m.group(0)]) for m in matches)


def regexp_split_to_array(source: str, pattern: str, flags: str = "") -> SqlArray:
    return SqlArray(regexp_split(source, pattern, flags, "regexp_split_to_array"))


def regexp_split(source: str, pattern: str, flags: str, name: str) -> list[str]:
    """PostgreSQL's split: empty matches split between characters, never at the ends."""
    re_flags, every = regex.regex_flags(flags, name)
    if every:
        raise DataError(f'{name}() does not support the "global" option')
    rx = regex.compile_regex(pattern, re_flags)
    out: list[str] = []
    start, previous_end = 0, None
    for m in rx.finditer(source):
        if m.start() == m.end() and (m.start() in (0, len(source)) or m.start() == previous_end):
            continue  # an empty match at either end, or right after a match, splits nothing
        out.append(source[start:m.start()])
        start = previous_end = m.end()
    out.append(source[start:])
    return out


register("array_length", 2, 2, array_length, INT, (ANY, INTS))
register("cardinality", 1, 1, cardinality, INT, (ANY,))
register("array_position", 2, 3, array_position, INT, (ANY, ANY, INTS), null_ok=True)
register("array_positions", 2, 2, array_positions, INT_ARRAY, (ANY,), null_ok=True)
register("array_append", 2, 2, array_append, _element_of_first, (ANY,), null_ok=True)
register("array_prepend", 2, 2, array_prepend, _same_array, (ANY,), null_ok=True)
register("array_cat", 2, 2, array_cat, _same_array, (ANY,), null_ok=True)
register("array_remove", 2, 2, array_remove, _same_array, (ANY,), null_ok=True)
register("array_replace", 3, 3, array_replace, _same_array, (ANY,), null_ok=True)
register("array_to_string", 2, 3, array_to_string, TEXT, (ANY, TEXTS, TEXTS), null_ok=True)
register("string_to_array", 2, 3, string_to_array, TEXT_ARRAY, (TEXTS,), null_ok=True)
register("regexp_match", 2, 3, regexp_match, TEXT_ARRAY, (TEXTS,))
register("regexp_matches", 2, 3, regexp_matches_scalar, TEXT_ARRAY, (TEXTS,))
register("regexp_split_to_array", 2, 3, regexp_split_to_array, TEXT_ARRAY, (TEXTS,))

# sqlglot's own node classes for some of them (arguments in the order the user wrote them)
_NODE_NAMES = {
    exp.ArraySize: "array_length", exp.ArrayPosition: "array_position", exp.ArrayConcat: "array_cat",
    exp.ArrayAppend: "array_append", exp.ArrayPrepend: "array_prepend", exp.ArrayRemove: "array_remove",
    exp.ArrayToString: "array_to_string", exp.StringToArray: "string_to_array",
}


@handles(*_NODE_NAMES)
def _as_call(c: Compiler, node: exp.Func) -> Compiled:
    _name, args = call_shape(node)
    return compile_function(c, exp.Anonymous(this=_NODE_NAMES[type(node)], expressions=[a.copy() for a in args]))
